"""`patchkit runs`: list the runs in the bench store, oldest first (interrupted runs included)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.commands._bench_output import runs_table, say, show_table
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.render import print_json
from patchkit.report.documents import load_runs

if TYPE_CHECKING:
    from rich.console import Console


def runs(
    *,
    repo: str,
    commits: Sequence[str],
    profiles: Sequence[str],
    store: str | None,
    json_out: bool,
    console: Console,
    plot: str | None = None,
) -> int:
    with Repo.discover(Path(repo)) as git_repo:
        shas = git_repo.resolve_all(list(commits)) if commits else []
        stored = load_runs(git_repo, store, commits=shas, profiles=profiles)
        if plot is not None:
            from patchkit.report.terminal import plot_metric

            return plot_metric(git_repo, stored, plot, console)
    records, path = stored.records, stored.path
    if json_out:
        print_json(stored.document())
    elif not records:
        say(console, f"no runs stored in {path}")
    else:
        show_table(console, runs_table(records))
    return int(ExitCode.OK)
