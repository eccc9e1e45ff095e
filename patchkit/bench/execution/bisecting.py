"""``patchkit bisect`` in a session: the line checked, the prior found, each launch run and stored.

``plan_bisect(opened, ...)`` checks everything the search needs before a
single launch: GOOD and BAD are two commits, BAD is on GOOD's first-parent
line (``Repo.commit_range``), the metric and profile exist, and the manifests
apply at both ends; the commits where a required patch FAILs are found from
the blobs (``unpatchable_commits``, no checkout) and are never prepared nor
benchmarked.  It also resolves where the launches run (``--executor``, the
slots: the command line over ``[bench.slurm]``) and the noise prior of that
place, profile and metric.

``BisectPlan.run(on_step, note)`` hands the line to the pure search
(``patchkit.bench.stats.search.bisect``) with a measure that launches a commit in
the session (every run stored) or, on Slurm, a round of commits as one job
array (``ScheduledRounds``: a re-run of a killed bisect reads its rounds
back).  ``BisectPlan.gpu_hygiene(report)`` reads the hunt's launches back from
the store and judges their GPUs (``hygiene.hunt_report``): a launch on a dirty
GPU, and any launch on GPUs set up unlike GOOD's first (a hunt compares every
commit with GOOD's level, not only BAD, and runs long enough for a setting to
change half-way).
``BisectPlan.document(report, gpus)`` is the ``bisect --json`` object.

Pruning (#49): unless ``--every-commit``, the plan reads the line's footprints (``pruning.line_judge``) and
hands the search a ``LineJudge``, told of every launch as it is stored; once GOOD and BAD have both run, and
before any other commit is launched, the suspects (the commits that changed code that ran) are listed
(``on_suspects``).  ``--dry-run`` lists them from GOOD's and BAD's stored runs (``stored_suspects``), with the
pruned hunt simulated on that mask beside the same hunts with ``--every-commit`` (``plan_pruned_costs``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from patchkit.bench.execution.executor import Executor, prior_place
from patchkit.bench.execution.launches import BenchArgs, Opened, run_local
from patchkit.bench.execution.local import LocalExecutor
from patchkit.bench.execution.prepare import unpatchable_commits
from patchkit.bench.execution.pruning import EVERY_COMMIT, LineJudge, Suspects, line_judge
from patchkit.bench.execution.scheduled import ScheduledRounds
from patchkit.bench.execution.session import Session
from patchkit.bench.execution.slurm import SlurmExecutor
from patchkit.bench.records.hygiene import hunt_report
from patchkit.bench.records.provenance import gpu_facts
from patchkit.bench.records.record import RunRecord
from patchkit.bench.stats.hunt import default_budget
from patchkit.bench.stats.plan import HuntPlan, PruningPlan, plan_hunt, plan_pruning
from patchkit.bench.stats.pruning import PruningReport
from patchkit.bench.stats.search import BisectReport, IsBad, Measurement, Step, criterion
from patchkit.bench.stats.search import bisect as search
from patchkit.bench.stats.verdict import Noise, gpu_label
from patchkit.errors import UsageError
from patchkit.git import Commit, Repo
from patchkit.manifest.bench import Metric
from patchkit.wording import place_label

LOCAL_SLOTS = 1  # the local executor starts one server at a time


@dataclass(frozen=True)
class Rule:
    """The optional criterion GOOD's and BAD's first launches must meet: ``--min X``, ``--max X`` or ``--ratio R``."""

    min_value: float | None = None
    max_value: float | None = None
    ratio: float | None = None

    def __post_init__(self) -> None:
        if len(self.given) > 1:
            raise UsageError("give at most one of --min X, --max X, --ratio R", hint="e.g. --ratio 0.9")
        for kind, value in self.given:
            if not math.isfinite(value):
                raise UsageError(f"--{kind} {value}: not a finite number", hint="give a plain number, e.g. 0.9")
        if self.ratio is not None and self.ratio <= 0:
            raise UsageError(
                f"--ratio {self.ratio:g}: BAD/GOOD of a metric is never {'negative' if self.ratio < 0 else 'zero'}, "
                "so no launch could be bad by it",
                hint="give the fraction of GOOD's level below which BAD is bad, e.g. --ratio 0.9 (10 % worse)",
            )

    def check(self, metric: Metric) -> None:
        """The criterion against the metric's direction, before the first launch: one that GOOD itself would
        fail, or that calls bad the better side, can only end the hunt without an answer after spending
        launches (``--ratio 1.2`` of a higher-is-better metric calls GOOD's own level bad)."""
        higher = metric.better == "higher"
        if self.ratio is not None and (self.ratio > 1 if higher else self.ratio < 1):
            worse, example = ("below", "0.9") if higher else ("above", "1.1")
            raise UsageError(
                f"--ratio {self.ratio:g}: {metric.name} is better {metric.better}, so BAD is bad when BAD/GOOD is "
                f"{worse} R; GOOD against itself is 1, {worse} {self.ratio:g} too, so GOOD would be bad by it",
                hint=f"give R {'at most' if higher else 'at least'} 1, e.g. --ratio {example}",
            )
        wrong = "max" if higher else "min"
        if (self.max_value if higher else self.min_value) is not None:
            right = "min" if higher else "max"
            raise UsageError(
                f"--{wrong} X calls a launch {'above' if higher else 'below'} X bad, but {metric.name} is better "
                f"{metric.better}: that is an improvement, not the regression a bisect hunts",
                hint=f"use --{right} X ({'below' if higher else 'above'} X is bad)",
            )

    @property
    def given(self) -> list[tuple[Literal["min", "max", "ratio"], float]]:
        named: list[tuple[Literal["min", "max", "ratio"], float | None]] = [
            ("min", self.min_value),
            ("max", self.max_value),
            ("ratio", self.ratio),
        ]
        return [(kind, value) for kind, value in named if value is not None]

    def is_bad(self, better: str) -> IsBad | None:
        return criterion(*self.given[0], better) if self.given else None

    def __str__(self) -> str:
        return f"--{self.given[0][0]} {self.given[0][1]:g}" if self.given else "BAD worse than GOOD"


@dataclass(frozen=True)
class BisectPlan:
    """A bisect, checked and ready to launch: the line (GOOD first, BAD last), what cannot apply, where the
    launches run and with how many slots, and the prior of that place."""

    session: Session
    executor: Executor
    line: tuple[Commit, ...]
    unpatchable: Mapping[str, str]
    metric: Metric
    profile: str
    rule: Rule
    prior: Noise | None
    place: str  # where the prior was looked up: this host, or the Slurm partition
    slots: int
    max_launches: int
    threshold: float
    refused_prior: str | None = None  # why the stored prior was not used (measured on other GPUs)
    budget: int | None = None  # --budget: total launches (None: hunt.default_budget)
    fresh: bool = False  # --fresh: on Slurm, the search's unfinished batch set aside, its rounds not read back
    judge: LineJudge | None = None  # which commits could matter (None: --every-commit searches them all)

    @property
    def launch_budget(self) -> int:
        return self.budget if self.budget is not None else default_budget(len(self.line), self.max_launches)

    def run(
        self,
        *,
        on_step: Callable[[Step], None] | None = None,
        note: Callable[[str], None] = lambda line: None,
        on_suspects: Callable[[Suspects], None] = lambda suspects: None,
    ) -> BisectReport:
        """The search, every launch stored; Ctrl-C or SIGTERM raises (``Interrupted`` for a local launch, which
        is stored; a plain ``KeyboardInterrupt`` while waiting on Slurm, whose jobs go on).  ``on_suspects``: the
        suspects, once GOOD and BAD have both run, after their step lines when those come first and always
        before another commit is launched."""
        rounds = None
        if isinstance(self.executor, SlurmExecutor):  # each round one Slurm array; a re-run reuses its rounds
            identity = [self.line[0].sha, self.line[-1].sha, self.metric.name, str(self.max_launches)]
            rounds = ScheduledRounds(
                self.session, self.profile, self.executor, command="bisect",
                identity=[*identity, str(self.threshold)], fresh=self.fresh, note=note,
            )  # fmt: skip
        watch = _SuspectsWatch(self.judge, on_suspects, (self.line[0].sha, self.line[-1].sha))
        measured = _Launches(self.session, self.profile, self.metric.name, rounds, self.executor, watch)

        def stepped(step: Step) -> None:
            if on_step is not None:
                on_step(step)
            watch.printed(step)

        report = search(
            self.line,
            measured.one,
            self.rule.is_bad(self.metric.better),
            skipped=self.unpatchable,
            on_step=stepped,
            better=self.metric.better or "higher",
            slots=self.slots,
            max_launches=self.max_launches,
            noise=self.prior,
            threshold=self.threshold,
            measure_many=None if rounds is None else measured.many,
            budget=self.launch_budget,
            relevance=self.judge,
        )
        if rounds is not None:
            rounds.finish()
        return report

    def stored_suspects(self) -> Suspects | None:
        """``--dry-run``: the suspects from GOOD's and BAD's stored runs of the profile (every patch given: not a
        ``bench --without`` launch); None with ``--every-commit``."""
        if self.judge is None:
            return None
        ends = [self.line[0].sha, self.line[-1].sha]
        stored = self.session.store.runs(commits=ends, profiles=[self.profile])
        self.judge.launched(r for r in stored if r.without is None)
        return self.judge.suspects()

    def pruning_json(self, report: BisectReport) -> dict[str, object]:
        """``bisect --json``'s ``pruning``: the search's (``PruningReport.to_json``), or, where its report has none,
        that pruning was off (``--every-commit``, or a search that did not use the judge), and why."""
        pruning = report.pruning
        if pruning is None:
            why = EVERY_COMMIT if self.judge is None else "the search did not use the judgements"
            pruning = PruningReport("off", why)
        return pruning.to_json()

    def suspects_json(self) -> dict[str, object] | None:
        """``bisect --json``'s ``suspects``: as listed before the search (None with ``--every-commit``)."""
        if self.judge is None:
            return None
        return (self.judge.listed or self.judge.suspects()).to_json(self.subjects)

    @property
    def subjects(self) -> dict[str, str]:
        return {c.sha: c.subject for c in self.line}

    def document_plan(self) -> dict[str, object]:
        """``bisect --dry-run --json``'s header: what would be hunted, where, with which prior."""
        return {
            "version": 1,
            "command": "bisect",
            "dry_run": True,
            "metric": self.metric.name,
            "profile": self.profile,
            "good": self.line[0].sha,
            "bad": self.line[-1].sha,
            "commits": len(self.line),
            "unpatchable": sorted(self.unpatchable),
            "slots": self.slots,
            "max_launches": self.max_launches,
            "budget": self.launch_budget,
            "noise": self._prior_json(),
            "refused_prior": self.refused_prior,
        }

    def _prior_json(self) -> dict[str, object] | None:
        prior = self.prior
        if prior is None:
            return None
        return {"sigma": prior.sigma, "df": prior.df, "place": self.place, "measured_at": prior.measured_at,
                "gpu": prior.gpu, "launches": prior.launches}  # fmt: skip

    def gpu_hygiene(self, report: BisectReport) -> dict[str, object]:
        """``hygiene.hunt_report`` of the hunt's launches as stored, in the hunt's order: each launch's problems,
        and what differs between GOOD's first launch and any other.  Read from the store, so that Slurm rounds
        read back count too."""
        runs = dict.fromkeys(s.measurement.run for s in report.steps if s.measurement.run is not None)
        return hunt_report([self.session.store.get(run) for run in runs], self.line[0].sha)

    def document(self, report: BisectReport, gpus: Mapping[str, object] | None = None) -> dict[str, object]:
        """``bisect --json`` (docs/json.md); ``gpus``: ``gpu_hygiene(report)``."""
        searched = report.to_json()
        return {
            "version": 1,
            "command": "bisect",
            "metric": self.metric.name,
            "profile": self.profile,
            "criterion": {
                "min": self.rule.min_value,
                "max": self.rule.max_value,
                "ratio": self.rule.ratio,
                "good_median": report.good_value,
                "threshold": self.threshold,
                "noise": self._prior_json(),
                "refused_prior": self.refused_prior,
            },
            "allow_dirty": self.session.allow_dirty,
            **searched,
            "pruning": self.pruning_json(report),
            "suspects": self.suspects_json(),
            "gpu_hygiene": None if gpus is None else dict(gpus),
        }


class _SuspectsWatch:
    """When to list the suspects: once GOOD and BAD have both run; after both their step lines (the search prints
    those once it has decided their labels), or at the latest before any other launch starts."""

    def __init__(self, judge: LineJudge | None, show: Callable[[Suspects], None], ends: tuple[str, str]) -> None:
        self.judge, self.show, self.ends = judge, show, set(ends)
        self.seen: set[str] = set()

    def launched(self, records: Sequence[RunRecord]) -> None:
        if self.judge is not None:
            self.judge.launched(records)

    def printed(self, step: Step) -> None:
        if step.commit.sha in self.ends:
            self.seen.add(step.commit.sha)
            if self.seen == self.ends:
                self.now()

    def before(self, commits: Sequence[Commit]) -> None:
        if any(c.sha not in self.ends for c in commits):
            self.now()

    def now(self) -> None:
        judge = self.judge
        if judge is not None and judge.listed is None and judge.ends_ran:
            judge.listed = judge.suspects()
            self.show(judge.listed)


class _Launches:
    """The search's measure: one launch of a commit, or (Slurm) a round of them, each stored, as Measurements;
    the pruning's judge is told of each."""

    def __init__(
        self,
        session: Session,
        profile: str,
        metric: str,
        rounds: ScheduledRounds | None,
        executor: Executor,
        watch: _SuspectsWatch,
    ) -> None:
        self.session, self.profile, self.metric, self.rounds, self.watch = session, profile, metric, rounds, watch
        self.local = LocalExecutor() if executor.remote else executor  # a single launch runs here

    def one(self, commit: Commit) -> Measurement:
        """One launch, in this process (a Slurm search measures by rounds: ``many``)."""
        self.watch.before([commit])
        (record,) = run_local(self.session, [(commit, self.profile)], self.local)
        self.watch.launched([record])
        return self.of(record)

    def many(self, commits: Sequence[Commit]) -> list[Measurement]:
        assert self.rounds is not None
        self.watch.before(commits)
        records = self.rounds.round(commits)
        self.watch.launched(records)
        return [self.of(record) for record in records]

    def of(self, record: RunRecord) -> Measurement:
        return Measurement(record.median(self.metric), record.outcome, record.run_id, record.reason, record.details)


PRUNED_SEEDS = 30
"""Simulated hunts per step for ``--dry-run``'s plan with pruning.  Each runs twice on one seed, pruned and with
``--every-commit`` (``plan.plan_pruning``), so that the two figures differ by what pruning does, not by the draw;
a pruned hunt (the mask's model, the parent check) costs about twice a plain one to simulate, so 30 keep the dry
run, an interactive command, as quick as the plain estimate over the relevant commits that this plan replaced."""


def _effects(plan: BisectPlan) -> list[float]:
    """The steps a plan is made for: ``--threshold`` when given, else 3, 5 and 10 times the prior's spread (the
    range where launches matter); none without a prior."""
    if plan.prior is None or plan.prior.sigma <= 0:
        return []
    sigma = plan.prior.sigma
    return [plan.threshold] if plan.threshold > 0 else [min(k * sigma, 0.5) for k in (3, 5, 10)]


def plan_costs(plan: BisectPlan) -> list[HuntPlan]:
    """What the hunt over every commit would likely cost at the prior's spread, for each of ``_effects``."""
    if plan.prior is None:
        return []
    prior = plan.prior
    return [
        plan_hunt(len(plan.line), prior.sigma, effect, slots=plan.slots, max_launches=plan.max_launches,
                  budget=plan.launch_budget, prior_launches=prior.launches or prior.df + 1)
        for effect in _effects(plan)
    ]  # fmt: skip


def plan_pruned_costs(plan: BisectPlan, suspects: Suspects) -> list[PruningPlan]:
    """What the pruned hunt would likely cost, against the same hunts with ``--every-commit``: the line's mask
    as GOOD's and BAD's runs judge it (the suspects relevant), the step on a relevant commit, the pruned hunt
    itself simulated (``plan.plan_pruning``, ``PRUNED_SEEDS`` shared seeds)."""
    if plan.prior is None:
        return []
    prior = plan.prior
    mask = relevant_mask(plan, suspects)
    return [
        plan_pruning(len(plan.line), mask, prior.sigma, effect, slots=plan.slots, max_launches=plan.max_launches,
                     budget=plan.launch_budget, prior_launches=prior.launches or prior.df + 1, seeds=PRUNED_SEEDS)
        for effect in _effects(plan)
    ]  # fmt: skip


def relevant_mask(plan: BisectPlan, suspects: Suspects) -> tuple[bool, ...]:
    """One flag per commit of the line (GOOD first): relevant where it is a suspect, as the judge tells the hunt
    after GOOD's and BAD's first launches (where none is, the hunt takes BAD as relevant: ``hunt.mask.Mask``)."""
    listed = {r.commit for r in suspects.commits}
    return tuple(i > 0 and c.sha in listed for i, c in enumerate(plan.line))


def check_prior(stored: Noise | None, gpus: str | None) -> tuple[Noise | None, str | None]:
    """The stored prior, unless it was measured on other GPUs than the launches will run on (then None and why).
    The place (host, or Slurm partition and constraint) is already the lookup's key; GPUs are compared where
    both are known: this host's for a local bisect, none before the jobs run on Slurm."""
    if stored is None or stored.gpu is None or gpus is None or stored.gpu == gpus:
        return stored, None
    where = place_label(stored.place) if stored.place else "this place"
    return None, (
        f"the noise prior of {where} was measured on {stored.gpu}, the launches run on {gpus}: "
        "not used (run `patchkit noise` on these GPUs)"
    )


def check_slots(args: BenchArgs, slots: int | None) -> None:
    """``--slots K`` needs an executor that runs K launches at once: checked before anything is opened."""
    if slots is not None and slots > LOCAL_SLOTS and args.cluster.executor == "local":
        raise UsageError(
            f"--slots {slots}: the local executor runs one launch at a time (1 slot)",
            hint="drop --slots, or add --executor slurm (each round one job array of up to K jobs)",
        )


def check_ends(repo: Repo, good: str, bad: str) -> tuple[Commit, Commit]:
    """GOOD and BAD as commits: known, and not the same one."""
    first, last = repo.commit(good), repo.commit(bad)
    if first.sha == last.sha:
        raise UsageError(
            f"--good {good} and --bad {bad} are the same commit ({first.short}): there is nothing between "
            "them to search",
            hint="give --good an older commit where the metric was fine",
        )
    return first, last


def plan_bisect(
    opened: Opened,
    *,
    good: str,
    bad: str,
    metric: str,
    profile: str | None,
    rule: Rule,
    slots: int | None,
    max_launches: int,
    threshold: float,
    budget: int | None = None,
    every_commit: bool = False,
) -> BisectPlan:
    """Everything checked before the first launch (one clear line for each problem, exit 2); unless
    ``every_commit``, the line's footprints read for the pruning (``pruning.line_judge``)."""
    check_slots(opened.args, slots)
    repo, session = opened.repo, opened.session
    first, last = check_ends(repo, good, bad)
    the_metric = session.config.metric(metric)
    rule.check(the_metric)
    chosen = profile or session.config.profile_names()[0]
    session.config.profile(chosen)
    listed = repo.commit_range(first.sha, last.sha)
    if not listed or listed[-1].sha != last.sha:
        raise UsageError(
            f"{bad} is not a first-parent descendant of {good}",
            hint="give --good an older commit on the first-parent line of --bad",
        )
    unpatchable = unpatchable_commits(opened.manifests, repo, [first, *listed])
    for end, label in ((first, "--good"), (last, "--bad")):
        if end.sha in unpatchable:
            raise UsageError(
                f"the manifests cannot apply at {label} {end.short} ({unpatchable[end.sha]})",
                hint="pick an end point where `patchkit check` says every required patch applies",
            )
    executor = opened.executor(slots=slots)
    place = prior_place(executor)  # where the launches run: the host, or the Slurm partition
    stored = session.store.noise(place, chosen, the_metric.name)
    prior, refused = check_prior(stored, None if executor.remote else gpu_label(gpu_facts()))
    line = (first, *listed)
    return BisectPlan(
        session=session,
        executor=executor,
        line=line,
        unpatchable=unpatchable,
        metric=the_metric,
        profile=chosen,
        rule=rule,
        prior=prior,
        refused_prior=refused,
        budget=budget,
        place=place,
        slots=executor.slots if executor.remote else LOCAL_SLOTS,  # the command line over [bench.slurm]
        max_launches=max_launches,
        threshold=threshold,
        fresh=opened.args.fresh,
        judge=None if every_commit else line_judge(session.store, repo, line),
    )
