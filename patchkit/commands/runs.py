"""`patchkit runs`: list the runs in the bench store, oldest first (interrupted runs included)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.session import open_store
from patchkit.commands._bench_output import runs_table, say
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.render import emit, print_json

if TYPE_CHECKING:
    from rich.console import Console


def runs(
    *, repo: str, commits: Sequence[str], profiles: Sequence[str], store: str | None, json_out: bool, console: Console
) -> int:
    with Repo.discover(Path(repo)) as git_repo:
        shas = git_repo.resolve_all(list(commits)) if commits else []
        with open_store(git_repo, store) as opened:
            records = opened.runs(commits=shas, profiles=profiles)
            path = opened.path
    if json_out:
        print_json({"version": 1, "command": "runs", "store": str(path), "runs": [r.summary_json() for r in records]})
    elif not records:
        say(console, f"no runs stored in {path}")
    else:
        emit(console, runs_table(records))
    return int(ExitCode.OK)
