"""`patchkit runs`: list the runs in the bench store, oldest first."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchkit.commands.bench import OUTCOME_STYLE, fmt
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.render import emit, print_json
from patchkit.report.documents import load_runs


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
        records, path = stored.records, stored.path
        if plot is not None:
            from patchkit.report.terminal import plot_metric

            return plot_metric(git_repo, stored, plot, console)
        if json_out:
            print_json(stored.document())
            return int(ExitCode.OK)
        if not records:
            console.print(f"no runs stored in {path}", markup=False)
            return int(ExitCode.OK)
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for name in ("run", "started", "commit", "profile", "outcome", "medians"):
            table.add_column(name, no_wrap=name != "medians")
        for r in records:
            medians = ", ".join(f"{k}={fmt(v['median'])}" for k, v in r.stats().items())
            table.add_row(
                str(r.run_id),
                r.started_at[:19].replace("T", " "),
                f"{r.commit['sha'][:10]} {r.commit['subject'][:40]}",
                r.profile,
                Text(r.outcome, style=OUTCOME_STYLE.get(r.outcome, "")),
                medians or (r.reason or "-"),
            )
        emit(console, table)
        return int(ExitCode.OK)
