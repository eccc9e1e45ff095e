"""`patchkit bench`: benchmark patched trees at one or more commits, per profile, and store every run.

For each commit: a worktree (reused), every ``-m`` manifest applied, the
guard; a refused commit gets a ``refused`` record and nothing starts.  Then,
per profile, ``--launches N`` jobs (``patchkit.bench.execution.job.run_job``): N server
starts, each with its ``warmup + repeat`` client runs, interleaved round-robin
across the commits unless ``--no-interleave`` (``launch_order``); the worktree
is prepared once per commit.  The table has one row
per commit, profile and metric: median, min-max, and the ratio of the median
to the first commit's (same profile and metric).  Ctrl-C or SIGTERM stores the
run in progress as ``interrupted`` and ends with 130.

``--executor slurm`` (``bench.cluster``): every launch is a Slurm job instead,
submitted as one array after the refused commits are stored; the records come
back in the same order, and Ctrl-C stops only the waiting.  The launches
themselves, local or Slurm, are ``patchkit.bench.execution.launches.launch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkit.bench.execution.launches import BenchArgs, launch, launch_order, measuring, open_bench
from patchkit.bench.records.hygiene import report as gpu_report
from patchkit.bench.records.record import Outcome
from patchkit.commands._bench_output import (
    SUBMITTER_INTERRUPTED,
    explain_lines,
    progress,
    record_printer,
    results_table,
    say,
    show_gpu_hygiene,
    show_table,
    slurm_note,
    table_rows,
)
from patchkit.errors import ExitCode
from patchkit.render import print_json

if TYPE_CHECKING:
    from rich.console import Console


def bench(
    args: BenchArgs,
    *,
    commits: Sequence[str],
    profiles: Sequence[str],
    json_out: bool,
    console: Console,
    launches: int | None = None,
    no_interleave: bool = False,
) -> int:
    with open_bench(args) as opened:
        session = opened.session
        targets = [opened.repo.commit(rev) for rev in (commits or ["HEAD"])]
        chosen = session.profiles(profiles)
        executor = opened.executor()
        order = launch_order(targets, chosen, launches or session.config.launches, interleave=not no_interleave)
        note = slurm_note(console, "bench", quiet=json_out)
        with progress(console, "bench", live=not json_out) as show, measuring(session, show):
            done = launch(session, order, executor, command="bench", on_record=record_printer(console, quiet=json_out),
                          note=note)  # fmt: skip
        if done.submitter:
            note(SUBMITTER_INTERRUPTED, always=True)
        records = done.records
        rows = table_rows(records)
        if json_out:
            print_json(
                {
                    "version": 1,
                    "command": "bench",
                    "store": str(session.store.path),
                    "runs": [r.to_json() for r in records],
                    "table": rows,
                    "gpu_hygiene": gpu_report(records),
                }
            )
        else:
            show_table(console, results_table(rows))
            for record in records:
                for line in explain_lines(record):
                    say(console, line)
            show_gpu_hygiene(console, gpu_report(records))
            say(console, f"stored in {session.store.path}", "dim")
            stored = [r.run_id for r in records if r.run_id is not None]
            if stored:
                listed = "" if len(stored) == 1 else f" (runs stored: {', '.join(map(str, stored))})"
                say(console, f"one run whole: patchkit show {stored[-1]}{listed}", "dim")
        if done.stopped:
            return int(ExitCode.INTERRUPTED)
        return int(ExitCode.OK if all(r.outcome is Outcome.OK for r in records) else ExitCode.REFUSED)
