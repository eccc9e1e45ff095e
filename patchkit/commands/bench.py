"""`patchkit bench`: benchmark patched trees at one or more commits, per profile, and store every run.

For each commit: a worktree (reused), every ``-m`` manifest applied, the
guard; a refused commit gets a ``refused`` record and nothing starts.  Then,
per profile, ``--launches N`` jobs (``patchkit.bench.job.run_job``): N server
starts, each with its ``warmup + repeat`` client runs, interleaved round-robin
across the commits unless ``--no-interleave`` (``launch_order``); the worktree
is prepared once per commit.  The table has one row
per commit, profile and metric: median, min-max, and the ratio of the median
to the first commit's (same profile and metric).  Ctrl-C or SIGTERM stores the
run in progress as ``interrupted`` and ends with 130.

``--executor slurm`` (``bench.cluster``): every launch is a Slurm job instead,
submitted as one array after the refused commits are stored; the records come
back in the same order, and Ctrl-C stops only the waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.cluster import LOCAL, ClusterArgs, run_scheduled, scheduled_executor
from patchkit.bench.executor import SlurmExecutor
from patchkit.bench.record import Outcome, RunRecord
from patchkit.bench.session import Interrupted, Session, parse_sets, sigterm_as_interrupt
from patchkit.commands._bench_output import (
    SUBMITTER_INTERRUPTED,
    explain_lines,
    progress,
    results_table,
    run_line,
    say,
    show_table,
    slurm_lines,
    table_rows,
)
from patchkit.errors import ExitCode
from patchkit.git import Commit, Repo
from patchkit.manifest import load_manifest
from patchkit.render import print_json

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
    cluster: ClusterArgs = LOCAL,  # --executor and the Slurm options
    launches: int | None = None,
    no_interleave: bool = False,
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
        scheduled = scheduled_executor(session, cluster, worktree_root=worktree_root)
        count = launches or session.config.launches
        order = launch_order(targets, chosen, count, interleave=not no_interleave)
        records: list[RunRecord] = []
        interrupted = False
        with session.store, progress(console, "bench", live=not json_out) as show, sigterm_as_interrupt():
            session.progress = show
            if scheduled is not None:
                interrupted = _on_slurm(session, scheduled, order, records, console, quiet=json_out)
            else:
                try:
                    for commit, profile in order:
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
            show_table(console, results_table(rows))
            for record in records:
                for line in explain_lines(record):
                    say(console, line)
            say(console, f"stored in {session.store.path}", "dim")
        if interrupted:
            return INTERRUPTED
        return int(ExitCode.OK if all(r.outcome is Outcome.OK for r in records) else ExitCode.REFUSED)


def _on_slurm(
    session: Session,
    executor: SlurmExecutor,
    pairs: Sequence[tuple[Commit, str]],
    records: list[RunRecord],
    console: Console,
    *,
    quiet: bool,
) -> bool:
    """Every launch as a Slurm job (bench.cluster); True when the submitter itself was interrupted.

    Ctrl-C or SIGTERM here stops only the waiting: the jobs keep running on the cluster and the same
    command, run again, collects them."""
    show, note = slurm_lines(console, records, verb="bench", quiet=quiet)

    try:
        ordered = run_scheduled(session, pairs, executor, command="bench", note=note, on_record=show)
    except KeyboardInterrupt:
        note(SUBMITTER_INTERRUPTED, always=True)
        return True
    records[:] = ordered
    return False


def launch_order(
    commits: Sequence[Commit], profiles: Sequence[str], launches: int, *, interleave: bool = True
) -> list[tuple[Commit, str]]:
    """The (commit, profile) of each server launch, in the order they run.

    Interleaved (the default): round-robin, A1 B1 A2 B2 ..., so that drift of
    the machine over the session (clocks, thermals, other tenants) falls on
    every commit alike instead of on the last one.  Otherwise a commit's
    launches run back to back."""
    pairs = [(c, p) for c in commits for p in profiles]
    if interleave:
        return [pair for _ in range(launches) for pair in pairs]
    return [pair for pair in pairs for _ in range(launches)]
