"""`patchkit bench`: benchmark patched trees at one or more commits, per profile, and store every run.

For each commit: a worktree (reused), every ``-m`` manifest applied, the
guard; a refused commit gets a ``refused`` record and nothing starts.  Then,
per profile, ``--launches N`` jobs (``patchkit.bench.execution.job.run_job``): N server
starts, each with its ``warmup + repeat`` client runs, interleaved round-robin
across the commits unless ``--no-interleave`` (``launch_order``); the worktree
is prepared once per commit.  The table has one row
per commit, profile and metric: median, min-max, and the ratio of the median
to the first commit's (same profile and metric).  Ctrl-C or SIGTERM stores the
run in progress as ``interrupted`` and ends with 130; the same command run
again resumes the batch: what was stored is read back, the rest launched
(``execution.launches.run_here``), unless ``--fresh``: a new batch, every
launch run again, the unfinished one set aside (``ledger.begin_batch``).

``--executor slurm`` (``execution.scheduled``): every launch is a Slurm job instead,
submitted as one array after the refused commits are stored; the records come
back in the same order, and Ctrl-C stops only the waiting.  The launches
themselves, local or Slurm, are ``patchkit.bench.execution.launches.launch``.

``--without PATCH`` (``bench.without``): one commit, two trees: every patch,
and every patch but that one, in a worktree of its own; their launches
alternate (with, without, with, ...), every record of the second side names
the patch it lacks, and after the table each profile gets ``compare``'s
verdict of the two sides with what it means for the patch: drop, keep, or
undecided with the launches that would decide.  In this process only: the
Slurm executor does not take it yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkit.bench.execution.launches import (
    BenchArgs,
    Opened,
    launch,
    launch_here,
    launch_order,
    measuring,
    open_bench,
)
from patchkit.bench.execution.session import Session
from patchkit.bench.records.hygiene import report as gpu_report
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.records.rows import table_rows
from patchkit.errors import ExitCode, UsageError
from patchkit.views.bench import (
    SUBMITTER_INTERRUPTED,
    explain_lines,
    launch_note,
    record_printer,
    results_table,
    show_gpu_hygiene,
)
from patchkit.views.console import emit, print_json, say
from patchkit.views.progress import progress

if TYPE_CHECKING:
    from patchkit.bench.records.without import Evidence
    from patchkit.git import Commit
    from patchkit.views.console import Console


def bench(
    args: BenchArgs,
    *,
    commits: Sequence[str],
    profiles: Sequence[str],
    json_out: bool,
    console: Console,
    launches: int | None = None,
    no_interleave: bool = False,
    without: str | None = None,
    threshold: float = 0.05,
) -> int:
    if without is not None and len(commits) > 1:
        raise UsageError(f"--without benchmarks one commit with and without {without}; {len(commits)} were given")
    if without is not None and args.cluster.executor != "local":
        raise UsageError("--without runs its launches in this process; --executor slurm does not take it yet")
    with open_bench(args) as opened:
        session = opened.session
        other = None if without is None else without_session(opened, without)
        targets = [opened.repo.commit(rev) for rev in (commits or ["HEAD"])]
        chosen = session.profiles(profiles)
        executor = opened.executor()
        order = launch_order(targets, chosen, launches or session.config.launches, interleave=not no_interleave)
        note = launch_note(console, "bench", quiet=json_out, executor=executor.name)
        printer = record_printer(console, quiet=json_out)
        with progress(console, "bench", live=not json_out) as show, measuring(session, show):
            if other is None:
                done = launch(session, order, executor, command="bench", fresh=args.fresh, on_record=printer,
                              note=note)  # fmt: skip
            else:
                other.progress = show
                order_sides = sides(session, other, order, interleave=not no_interleave)
                done = launch_here(order_sides, command="bench", fresh=args.fresh, on_record=printer, note=note)
            found = (
                [] if other is None or done.stopped else judge_sides(session, other, chosen, done.records, threshold)
            )
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
                    "without": None if other is None else other.without,
                    "evidence": [e.to_json() for e in found],
                    "batch": None if done.batch is None else done.batch.to_json(),
                }
            )
        else:
            emit(console, results_table(rows))
            for record in records:
                for line in explain_lines(record):
                    say(console, line)
            for item in found:
                say(console, item.line, DECISION_STYLE[item.decision])
            show_gpu_hygiene(console, gpu_report(records))
            say(console, f"stored in {session.store.path}", "dim")
            stored = [r.run_id for r in records if r.run_id is not None]
            if stored:
                listed = "" if len(stored) == 1 else f" (runs stored: {', '.join(map(str, stored))})"
                say(console, f"one run whole: patchkit show {stored[-1]}{listed}", "dim")
        if done.stopped:
            return int(ExitCode.INTERRUPTED)
        return int(ExitCode.OK if all(r.outcome is Outcome.OK for r in records) else ExitCode.REFUSED)


DECISION_STYLE = {"drop": "bold green", "keep": "bold", "undecided": "bold yellow"}


def without_session(opened: Opened, spec: str) -> Session:
    """The second side of ``--without``: the manifests less the patch, their own worktrees (under
    ``without/<patch>`` of the worktree root), the same store and series."""
    from patchkit.bench.records.without import leave_out

    session = opened.session
    manifests, left = leave_out(session.manifests, spec)
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{left.manifest}-{left.patch}")
    return Session(
        session.repo,
        manifests,
        session.config,
        session.store,
        session.root / "without" / slug,
        session.sets,
        session.repeat,
        session.allow_dirty,
        runs_dir=session.runs_dir,
        series=session.series,
        without=left.to_json(),
    )


def sides(
    first: Session, second: Session, order: Sequence[tuple[Commit, str]], *, interleave: bool
) -> list[tuple[Session, Commit, str]]:
    """Each launch of ``order`` twice, once a side: alternating (with, without, with, ...) so that drift falls
    on both alike, or (--no-interleave) every launch with, then every launch without."""
    if interleave:
        return [(session, commit, profile) for commit, profile in order for session in (first, second)]
    return [(session, commit, profile) for session in (first, second) for commit, profile in order]


def judge_sides(
    first: Session, second: Session, profiles: Sequence[str], records: Sequence[RunRecord], threshold: float
) -> list[Evidence]:
    """Per profile, the two sides' verdict with the noise prior stored where they ran."""
    from patchkit.bench.records.without import LeftOut, evidence
    from patchkit.commands.compare import noise_priors

    assert second.without is not None
    name, patch_id = second.without["manifest"], second.without["patch"]
    manifest = next(m for m in first.manifests if m.name == name)  # the with side's: it has the patch
    left = LeftOut(manifest.name, manifest.display, patch_id, manifest.patch(patch_id).file)
    out = []
    for profile in profiles:
        ok = [r for r in records if r.profile == profile and r.without is None and r.outcome is Outcome.OK]
        noise = noise_priors(first.store, ok[-1]) if ok else None
        out.append(evidence(left, profile, records, threshold=threshold, noise=noise))
    return out
