"""`patchkit bench`: benchmark patched trees at one or more commits, per profile, and store every run.

For each commit: a worktree (reused), every ``-m`` manifest applied, the
guard; a refused commit gets a ``refused`` record and nothing starts.  Then,
per profile, one job (``patchkit.bench.job.run_job``).  The table has one row
per commit, profile and metric: median, min-max, and the ratio of the median
to the first commit's (same profile and metric).  Ctrl-C or SIGTERM stores the
run in progress as ``interrupted`` and ends with 130.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.record import Outcome, RunRecord
from patchkit.bench.session import Interrupted, Session, parse_sets, sigterm_as_interrupt
from patchkit.commands._bench_output import explain_lines, progress, results_table, run_line, say, table_rows
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.render import emit, print_json

if TYPE_CHECKING:
    from rich.console import Console

INTERRUPTED = 130  # as the CLI answers any Ctrl-C (cli.py, BENCH_EXIT_HELP)


def bench(
    *,
    manifests: Sequence[str],
    repo: str,
    commits: Sequence[str],
    profiles: Sequence[str],
    repeat: int | None,
    sets: Sequence[str],
    json_out: bool,
    worktree_root: str | None,
    store: str | None,
    console: Console,
    allow_dirty: bool = False,
) -> int:
    loaded = [load_manifest(m) for m in manifests]
    with Repo.discover(Path(repo)) as git_repo:
        targets = [git_repo.commit(rev) for rev in (commits or ["HEAD"])]
        session = Session.open(
            git_repo,
            loaded,
            store=store,
            worktree_root_dir=worktree_root,
            sets=parse_sets(sets),
            repeat=repeat,
            allow_dirty=allow_dirty,
        )
        chosen = session.profiles(profiles)
        records: list[RunRecord] = []
        with session.store, progress(console, "bench", live=not json_out) as show, sigterm_as_interrupt():
            session.progress = show
            try:
                for commit in targets:
                    for profile in chosen:
                        records.append(session.run(commit, profile))
                        if not json_out:
                            say(console, run_line(records[-1]))
            except Interrupted as stop:
                records.append(stop.record)
        interrupted = bool(records) and records[-1].outcome is Outcome.INTERRUPTED
        rows = table_rows(records)
        if json_out:
            print_json(
                {
                    "version": 1,
                    "command": "bench",
                    "store": str(session.store.path),
                    "runs": [r.to_json() for r in records],
                    "table": rows,
                }
            )
        else:
            emit(console, results_table(rows))
            for record in records:
                for line in explain_lines(record):
                    say(console, line)
            say(console, f"stored in {session.store.path}", "dim")
        if interrupted:
            return INTERRUPTED
        return int(ExitCode.OK if all(r.outcome is Outcome.OK for r in records) else ExitCode.REFUSED)
