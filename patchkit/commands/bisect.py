"""`patchkit bisect`: the first commit on the first-parent line from GOOD to BAD where a metric is bad.

Everything is checked before the first launch (``patchkit.bench.execution.bisecting.plan_bisect``):
the line (``Repo.commit_range``), every manifest at all of its commits from
the blobs (``check_range``, no checkout: a commit where a required patch
FAILs is skipped, never prepared nor benchmarked), where the launches run and
the noise prior there.  ``BisectPlan.run`` hands the search to
``patchkit.bench.stats.search.bisect`` with a measure that benchmarks one commit in
the session (every run is stored).

The search is noise-aware (``patchkit.bench.stats.hunt``): launches are the
replicates, a probed commit gets more launches (interleaved with GOOD's and
BAD's) while the data cannot tell which side it is on, up to
``--max-launches``; the answer is a first bad commit with the evidence, or a
range it could not narrow with why.  The ``patchkit noise`` spread of where
the launches run (this host, or the Slurm partition), for the profile and
metric, is the prior.  ``--slots K`` probes K commits per round; the local
executor has one slot, so K > 1 needs ``--executor slurm`` (each round one
job array, ``execution.scheduled.ScheduledRounds``; without ``--slots``,
``[bench.slurm].slots``).

``--budget N`` caps the launches of the whole search (default
``hunt.default_budget``); ``--dry-run`` checks everything, launches nothing
and says what the hunt would likely cost (``patchkit.bench.stats.plan``, the hunt
simulated at the prior's spread).

Optional criteria, judged on the launches of GOOD and BAD: ``--min X``
(bad when the median is below X), ``--max X`` (bad when above X), ``--ratio
R`` (bad when median / GOOD's median is below R for a ``better = "higher"``
metric, above R for ``better = "lower"``).  Without one, BAD must differ from
GOOD in the worse direction by the verdict.

Pruning (#49, ``bench.execution.pruning``): the hunt launches only where code that ran changed.  The line's
footprints are read when the bisect is planned; once GOOD and BAD have both run, the suspects are listed (the
commits that changed code that ran, each with why), and the search judges the line again after every round.
The report says how many commits it skipped as inert and why (``--json``: each with its rule), or why pruning
was off.  ``--every-commit`` turns it off; ``--dry-run`` lists the suspects from GOOD's and BAD's stored runs
and plans the hunt with and without pruning.

After the hunt, the GPU hygiene of its launches (``BisectPlan.gpu_hygiene``,
``hygiene.hunt_report``): a launch on a dirty GPU, one warning each, and each
way any launch's GPUs were set up unlike GOOD's first, one warning naming the
runs; "no GPU facts" once when no launch had nvidia-smi's answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.bench.execution.bisecting import (
    BisectPlan,
    Rule,
    check_ends,
    check_slots,
    plan_bisect,
    plan_costs,
    plan_pruned_costs,
)
from patchkit.bench.execution.launches import BenchArgs, measuring, open_bench
from patchkit.bench.execution.session import Interrupted
from patchkit.errors import ExitCode
from patchkit.report.documents import save_latest_bisect
from patchkit.views.bench import SUBMITTER_INTERRUPTED, launch_note, show_gpu_hygiene
from patchkit.views.bisect import bisect_header, show_bisect, show_pruning, show_suspects, step_printer
from patchkit.views.console import print_json, say
from patchkit.views.progress import progress
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def bisect(
    args: BenchArgs,
    *,
    good: str,
    bad: str,
    metric: str,
    min_value: float | None,
    max_value: float | None,
    ratio: float | None,
    profile: str | None,
    json_out: bool,
    console: Console,
    max_launches: int = 10,
    slots: int | None = None,  # --slots; with --executor slurm, default [bench.slurm].slots
    threshold: float = 0.0,
    budget: int | None = None,
    dry_run: bool = False,
    every_commit: bool = False,
) -> int:
    rule = Rule(min_value, max_value, ratio)
    check_slots(args, slots)
    with open_bench(args, first=lambda repo: check_ends(repo, good, bad)) as opened:
        plan = plan_bisect(
            opened, good=good, bad=bad, metric=metric, profile=profile, rule=rule, slots=slots,
            max_launches=max_launches, threshold=threshold, budget=budget, every_commit=every_commit,
        )  # fmt: skip
        if dry_run:
            return _dry_run(plan, json_out=json_out, console=console)
        with progress(console, "bisect", live=not json_out) as show, measuring(opened.session, show):
            if not json_out:
                say(console, bisect_header(plan))
            try:
                report = plan.run(
                    on_step=step_printer(console, plan.metric.name, quiet=json_out),
                    note=launch_note(console, "bisect", quiet=json_out, executor=plan.executor.name),
                    on_suspects=(lambda _s: None) if json_out else (lambda s: show_suspects(console, s, plan.line)),
                )
            except Interrupted as stop:
                say(console, f"interrupted: run {stop.record.run_id} is stored as interrupted", "bold yellow")
                return int(ExitCode.INTERRUPTED)
            except KeyboardInterrupt:  # the submitter, waiting on Slurm: the jobs go on
                say(console, SUBMITTER_INTERRUPTED, "bold yellow")
                return int(ExitCode.INTERRUPTED)
            gpus = plan.gpu_hygiene(report)  # the hunt's launches read back while the store is open
            result = plan.document(report, gpus)  # the suspects read stored coverage: the store is open too
    save_latest_bisect(opened.session.store.path, result)  # `runs --plot` and `report` mark its first bad commit
    if json_out:
        print_json(result)
    else:
        show_bisect(console, report, plan.metric.name)
        show_pruning(console, report, plan.judge is not None)
        show_gpu_hygiene(console, gpus)
    return int(ExitCode.OK if report.first_bad is not None else ExitCode.REFUSED)


def _dry_run(plan: BisectPlan, *, json_out: bool, console: Console) -> int:
    """``bisect --dry-run``: everything checked, nothing launched; the suspects from GOOD's and BAD's stored runs,
    and what the hunt would likely cost: over every commit, and, where the suspects are known, the pruned hunt
    simulated on their mask beside the same hunts with ``--every-commit``."""
    plans = plan_costs(plan)
    suspects = plan.stored_suspects()
    usable = suspects is not None and suspects.off is None and suspects.blind is None
    relevant = max(len(suspects.commits), 1) if suspects is not None and usable else None  # none: BAD (Mask.of)
    pruned = plan_pruned_costs(plan, suspects) if suspects is not None and usable else []
    if json_out:
        print_json(
            {
                **plan.document_plan(),
                "plans": [p.as_json() for p in plans],
                "suspects": None if suspects is None else suspects.to_json(plan.subjects),
                "relevant": relevant,
                "plans_pruned": [p.as_json() for p in pruned],
            }
        )
        return int(ExitCode.OK)
    say(console, bisect_header(plan))
    if suspects is not None:
        show_suspects(console, suspects, plan.line)
    if not plans:
        say(console, "no launch spread to plan with: run `patchkit noise` where the launches run first", "bold yellow")
    for p in plans:
        say(console, f"  {p.line()}")
    if pruned:
        hunts, on = pruned[0].pruned.seeds, plural(relevant or 1, "relevant commit")
        say(
            console,
            f"with pruning, the step on one of the {on}: {hunts} simulated hunts, "
            "each run pruned and with --every-commit (an estimate from GOOD's and BAD's runs: a hunt's launches "
            "add to what ran, and may make more commits relevant):",
        )
        for q in pruned:
            say(console, f"  {q.line()}")
    say(console, "nothing was launched (--dry-run)", "dim")
    return int(ExitCode.OK)
