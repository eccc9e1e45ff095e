"""`patchkit noise`: an A/A run, the launch-to-launch spread where launches run, stored as the prior.

One commit is benchmarked ``--launches N`` times (N server starts, each with
its ``warmup + repeat`` client runs), interleaved across the profiles, by the
launch loop ``bench`` uses (``patchkit.bench.execution.launches.launch``: in this
process, or each launch a Slurm job).  The report per profile and metric is
``patchkit.bench.records.aa``'s: each launch's value, their spread (``verdict.noise_of``)
and the odd-against-even A/A check; the spreads that pass are stored for the
profile and where the launches ran (``executor.prior_place``: this host, or
the Slurm partition and constraint, never one node of it) in the store's
``noise`` table, and ``compare`` and ``bisect`` use the latest one as the
prior where a side has few launches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkit.bench.execution.executor import prior_place
from patchkit.bench.execution.launches import BenchArgs, launch, measuring, open_bench
from patchkit.bench.records.aa import keep_priors
from patchkit.bench.records.record import Outcome
from patchkit.bench.stats.plan import plan_hunt
from patchkit.errors import ExitCode, UsageError
from patchkit.views.bench import SUBMITTER_INTERRUPTED, explain_lines, launch_note, record_printer
from patchkit.views.console import print_json, say
from patchkit.views.noise import show_noise
from patchkit.views.progress import progress

if TYPE_CHECKING:
    from patchkit.views.console import Console


def noise(
    args: BenchArgs,
    *,
    commit: str,
    profiles: Sequence[str],
    launches: int,
    threshold: float,
    json_out: bool,
    console: Console,
    plan_step: float = 0.05,
    plan_commits: int = 64,
) -> int:
    if launches < 3:
        raise UsageError(f"--launches {launches}: an A/A run needs at least 3 launches", hint="e.g. --launches 10")
    with open_bench(args) as opened:
        session = opened.session
        target = opened.repo.commit(commit)
        chosen = session.profiles(profiles)
        executor = opened.executor()
        note = launch_note(console, "noise", quiet=json_out, executor=executor.name)
        pairs = [(target, profile) for _ in range(launches) for profile in chosen]
        with progress(console, "noise", live=not json_out) as show, measuring(session, show):
            done = launch(session, pairs, executor, command="noise", fresh=args.fresh,
                          on_record=record_printer(console, quiet=json_out), note=note)  # fmt: skip
            if done.submitter:  # the jobs go on: nothing to report until the same command collects them
                note(SUBMITTER_INTERRUPTED, always=True)
                return int(ExitCode.INTERRUPTED)
            place = prior_place(executor)  # the key compare and bisect look the prior up by
            by_profile = {p: [r for r in done.records if r.profile == p] for p in chosen}
            reports = [
                keep_priors(
                    session.store,
                    records,
                    place=place,
                    profile=p,
                    threshold=threshold,
                    commit=target.sha,
                    series=session.series,
                    interrupted=done.interrupted,
                )
                for p, records in by_profile.items()
            ]
            for item in reports:
                for row in item["metrics"]:
                    row["plan"] = None
                    if row["stored"] and row["sigma"] is not None and row["df"] is not None:
                        row["plan"] = plan_hunt(
                            plan_commits, row["sigma"], plan_step, prior_launches=row["df"] + 1
                        ).as_json()
        result: dict[str, object] = {
            "version": 1,
            "command": "noise",
            "commit": target.sha,
            "subject": target.subject,
            "series": session.series,
            "launches": launches,
            "threshold": threshold,
            "runs": [r.run_id for records in by_profile.values() for r in records],
            "batch": None if done.batch is None else done.batch.to_json(),
            "profiles": reports,
        }
        if json_out:
            print_json(result)
        else:
            for record in (r for records in by_profile.values() for r in records):
                for line in explain_lines(record):
                    say(console, line)
            show_noise(console, result)
        if done.interrupted:
            return int(ExitCode.INTERRUPTED)
        return int(ExitCode.OK if all(r.outcome is Outcome.OK for r in done.records) else ExitCode.REFUSED)
