"""The search of ``patchkit bisect``: ``bisect(line, measure, is_bad) -> BisectReport``, a pure function.

``line`` is the first-parent history from GOOD (first) to BAD (last);
``measure(commit)`` starts one server launch of a commit and returns its
value (the verb passes a function that runs a job and stores the run; tests
pass a plain function); ``is_bad(value, good_value)``, when given, is the
criterion the first launches of GOOD and BAD must meet (GOOD not bad, BAD bad).

The search itself is ``patchkit.bench.hunt.hunt``, the one implementation:
launches are the replicates, more are added where the data is unclear (up to
``max_launches`` per commit), up to ``slots`` launches per round, and the
answer is a first bad commit only with ``1 - alpha`` of the posterior behind
it; otherwise a range of commits with why.

1. GOOD and BAD are launched once each, in one round when ``slots >= 2``
   (one job array on Slurm; with more slots, evenly spaced probes fill it, as
   ``hunt`` would), else GOOD first; a launch that is not usable (not ``ok``,
   or no value) or a criterion they fail is an ``error``, no answer.
2. ``hunt`` over the whole line.  A commit listed in ``skipped`` (its patches
   cannot apply, known before anything runs) is never measured; a launch that
   is not usable makes its commit skipped too.  Skipped commits stay
   candidates: a first bad commit right after skipped ones is answered as
   "this one, or one of the skipped just before it" (``maybe``), the only
   way data can leave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from patchkit.bench.hunt import HuntReport, Round, Side, ahead, hunt
from patchkit.bench.record import Outcome
from patchkit.bench.verdict import Noise, Verdict
from patchkit.git import Commit

StepVerdict = Literal["good", "bad", "unclear", "skip"]
SURE = 0.99  # a step is called good / bad when its commit's posterior is this sure


@dataclass(frozen=True)
class Measurement:
    """What one launch of a commit gave: the metric's value (the median of its runs), and the run that holds it."""

    value: float | None
    outcome: Outcome = Outcome.OK
    run: int | None = None
    why: str | None = None  # the run's reason, when it is not ok
    details: tuple[str, ...] = ()  # what a step line cannot hold: e.g. each STRAY that refused the run

    @property
    def usable(self) -> bool:
        return self.outcome is Outcome.OK and self.value is not None


@dataclass(frozen=True)
class Step:
    """One launch: its commit, what it measured, and what the data said of the commit after its round."""

    commit: Commit
    measurement: Measurement
    verdict: StepVerdict
    launch: int = 1  # this commit's launch number
    p_bad: float | None = None  # posterior that the commit is bad, after this launch's round
    why: str = ""  # why the search asked for this launch

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "run": self.measurement.run,
            "outcome": self.measurement.outcome.value,
            "median": self.measurement.value,
            "verdict": self.verdict,
            "launch": self.launch,
            "p_bad": self.p_bad,
            "why": self.why,
        }


@dataclass(frozen=True)
class Skip:
    """A commit the search has no value for, and why: its patches cannot apply, or its launch gave no usable
    value.  It stays a candidate for the first bad commit."""

    commit: Commit
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit.sha, "subject": self.commit.subject, "why": self.why}


@dataclass(frozen=True)
class BisectReport:
    """What ``bisect`` answers: a first bad commit (``found``), a range of commits with why (``range``), no step
    between GOOD and BAD (``no-step``) or no answer (``error``), with every launch and the evidence behind it."""

    good: Commit
    bad: Commit
    steps: tuple[Step, ...]
    skipped: tuple[Skip, ...]  # never measured (cannot apply), or measured without a usable value
    first_bad: Commit | None
    last_good: Commit | None
    maybe: tuple[Skip, ...]  # skipped commits right before first_bad
    error: str | None  # why there is no answer
    good_value: float | None
    kind: str = "error"  # found | range | no-step | error
    range: tuple[Commit, Commit] | None = None  # the first bad commit is one of these two and those between
    why: str = ""  # the search's account of its answer
    probability: float | None = None  # posterior mass of the answer
    evidence: Verdict | None = None  # the launches after first_bad against those before it
    adjacent: Verdict | None = None  # first_bad's launches against those of the commit before it
    sides: tuple[tuple[Commit, Side], ...] = ()  # every measured commit: its launches and P(bad)
    rounds: int = 0
    slots: int = 1
    max_launches: int = 1
    unsure: tuple[tuple[Commit, Side], ...] = field(default=())  # range: measured commits left unsettled to alpha
    likely: Commit | None = None  # range: the most likely first bad commit
    likely_probability: float | None = None  # its posterior mass (short of 1 - alpha)

    def to_json(self) -> dict[str, Any]:
        first = self.first_bad
        return {
            "good": self.good.sha,
            "bad": self.bad.sha,
            "skipped": [{"commit": s.commit.sha, "why": s.why} for s in self.skipped],
            "steps": [s.to_json() for s in self.steps],
            "first_bad": None if first is None else {"commit": first.sha, "subject": first.subject, "date": first.date},
            "last_good": None if self.last_good is None else {"commit": self.last_good.sha},
            "maybe": [s.to_json() for s in self.maybe],
            "error": self.error,
            "search": {
                "answer": self.kind,
                "range": None if self.range is None else {"first": self.range[0].sha, "last": self.range[1].sha},
                "why": self.why,
                "probability": self.probability,
                "slots": self.slots,
                "max_launches": self.max_launches,
                "rounds": self.rounds,
                "launches": len(self.steps),
                "evidence": None if self.evidence is None else self.evidence.as_json(),
                "adjacent": None if self.adjacent is None else self.adjacent.as_json(),
                "commits": [{"commit": c.sha, "launches": list(s.launches), "p_bad": s.p_bad} for c, s in self.sides],
                "likely": None
                if self.likely is None
                else {"commit": self.likely.sha, "probability": self.likely_probability},
                "unclear": [{"commit": c.sha, "p_bad": s.p_bad, "launches": len(s.launches)} for c, s in self.unsure],
            },
        }


IsBad = Callable[[float, float | None], bool]


def criterion(kind: Literal["min", "max", "ratio"], threshold: float, better: str = "higher") -> IsBad:
    """``min``: bad below X; ``max``: bad above X; ``ratio``: bad when value / GOOD's is below R
    (``better = "higher"``) or above R (``better = "lower"``)."""

    def is_bad(value: float, good: float | None) -> bool:
        if kind == "min":
            return value < threshold
        if kind == "max":
            return value > threshold
        if not good:
            return False
        ratio = value / good
        return ratio < threshold if better == "higher" else ratio > threshold

    return is_bad


def bisect(
    line: Sequence[Commit],
    measure: Callable[[Commit], Measurement],
    is_bad: IsBad | None = None,
    *,
    skipped: Mapping[str, str] | None = None,
    on_step: Callable[[Step], None] | None = None,
    better: str = "higher",
    slots: int = 1,
    max_launches: int = 10,
    noise: Noise | None = None,
    threshold: float = 0.0,
    alpha: float = 0.001,
    measure_many: Callable[[Sequence[Commit]], Sequence[Measurement]] | None = None,
) -> BisectReport:
    """Search ``line`` (GOOD first, BAD last) for the first bad commit; ``on_step`` sees each launch as it ends.

    ``measure_many`` (an executor with ``slots``): the launches of one round
    at once; without it, ``measure`` runs them one after the other."""
    if len(line) < 2:
        raise ValueError("bisect needs a line of at least GOOD and BAD")
    good, bad = line[0], line[-1]
    known = skipped or {}
    skips: dict[str, Skip] = {c.sha: Skip(c, known[c.sha]) for c in line[1:-1] if c.sha in known}
    steps: list[Step] = []
    pending: list[Step] = []
    launches: dict[str, int] = {}
    good_value: float | None = None

    def launch(commits: Sequence[Commit], whys: Sequence[str]) -> list[float | None]:
        got = list(measure_many(commits)) if measure_many is not None else [measure(c) for c in commits]
        out: list[float | None] = []
        for commit, m, why in zip(commits, got, whys, strict=True):
            launches[commit.sha] = launches.get(commit.sha, 0) + 1
            if not m.usable:
                skips.setdefault(commit.sha, Skip(commit, f"{m.outcome.value}: {m.why}"))
            pending.append(Step(commit, m, "skip" if not m.usable else "unclear", launches[commit.sha], None, why))
            out.append(m.value if m.usable else None)
        return out

    def settle(sides: Sequence[Side], whys: Sequence[str] = ()) -> None:
        """The verdicts of the steps of the round that just ended, from the posterior after it."""
        p_bad = {line[s.position].sha: s.p_bad for s in sides}
        offset = len(pending) - len(whys)  # the round's own launches are the last ones; probes of the first before
        for index, step in enumerate(pending):
            p = p_bad.get(step.commit.sha)
            verdict: StepVerdict = step.verdict
            if verdict != "skip" and p is not None and p == p:  # not NaN
                verdict = "bad" if p >= SURE else "good" if p <= 1 - SURE else "unclear"
            why = whys[index - offset] if whys and index >= offset else step.why
            done = Step(step.commit, step.measurement, verdict, step.launch, p, why)
            steps.append(done)
            if on_step is not None:
                on_step(done)
        pending.clear()

    def failed(error: str) -> BisectReport:
        settle([])
        return BisectReport(good, bad, tuple(steps), _in_order(line, skips), None, None, (), error, good_value)

    index = {c.sha: i for i, c in enumerate(line)}
    together = slots >= 2  # GOOD and BAD in one round: the slots are there, and each round costs a launch's time
    spots = ahead(len(line), slots - 2, {index[sha] for sha in skips}) if slots > 2 else []
    if together:
        whys = ["GOOD", "BAD", *(w for _, w in spots)]
        first, last, *probed = launch([good, bad, *(line[p] for p, _ in spots)], whys)
    else:
        first, last, probed = launch([good], ["GOOD"])[0], None, []
    if first is None:
        return failed(f"--good {good.short} is not good (skip): cannot bisect")
    if is_bad is not None and is_bad(first, first):
        pending[0] = _with(pending[0], "bad")
        return failed(f"--good {good.short} is not good (bad): cannot bisect")
    good_value = first
    if not together:
        last = launch([bad], ["BAD"])[0]
    if last is None:
        return failed(f"--bad {bad.short} is not bad by the criterion (skip)")
    if is_bad is not None and not is_bad(last, good_value):
        pending[1] = _with(pending[1], "good")
        return failed(f"--bad {bad.short} is not bad by the criterion (good)")
    ends: tuple[StepVerdict, StepVerdict] = ("good", "bad")
    for step, verdict in zip(pending[:2], ends, strict=True):
        steps.append(_with(step, verdict))
        if on_step is not None:
            on_step(steps[-1])
    del pending[:2]  # the probes of the first round are settled with the search's first posterior

    def on_round(done: Round, sides: Sequence[Side]) -> None:
        settle(sides, done.why)

    def measure_positions(positions: Sequence[int]) -> list[float | None]:
        return launch([line[p] for p in positions], [""] * len(positions))

    report = hunt(
        len(line),
        measure_positions,
        slots=slots,
        max_launches=max_launches,
        alpha=alpha,
        noise=noise,
        min_effect=threshold,
        expect="lower" if better == "higher" else "higher",
        on_round=on_round,
        skipped=[index[sha] for sha in skips],
        initial={0: [good_value], len(line) - 1: [last], **{p: [v] for (p, _), v in zip(spots, probed, strict=True)}},
        label=lambda p: line[p].short,
    )
    settle(report.measured)
    before = 1 if together else 2  # the rounds of GOOD's and BAD's first launches
    return _report(line, report, steps, skips, good_value, before, slots=slots, max_launches=max_launches, alpha=alpha)


def _with(step: Step, verdict: StepVerdict) -> Step:
    return Step(step.commit, step.measurement, verdict, step.launch, step.p_bad, step.why)


def _in_order(line: Sequence[Commit], skips: Mapping[str, Skip]) -> tuple[Skip, ...]:
    return tuple(skips[c.sha] for c in line if c.sha in skips)


def _report(
    line: Sequence[Commit],
    report: HuntReport,
    steps: Sequence[Step],
    skips: Mapping[str, Skip],
    good_value: float | None,
    before: int,
    *,
    slots: int,
    max_launches: int,
    alpha: float,
) -> BisectReport:
    sides = tuple((line[s.position], s) for s in report.measured)
    of = {s.position: s for s in report.measured}
    common: dict[str, Any] = {
        "why": report.why,
        "probability": report.probability,
        "evidence": report.evidence,
        "adjacent": report.adjacent,
        "sides": sides,
        "rounds": len(report.rounds) + before,  # with GOOD's and BAD's first launches
        "slots": slots,
        "max_launches": max_launches,
        "unsure": tuple((line[p], of[p]) for p in report.unclear),
        "likely": None if report.likely is None else line[report.likely],
        "likely_probability": report.likely_mass,
    }
    skipped = _in_order(line, skips)
    if report.kind == "found":
        assert report.first_bad is not None
        k = report.first_bad
        return BisectReport(
            line[0], line[-1], tuple(steps), skipped, line[k], line[k - 1], (), None, good_value,
            kind="found", range=(line[k], line[k]), **common,
        )  # fmt: skip
    if report.kind == "range":
        assert report.lo is not None and report.hi is not None
        lo, hi = report.lo, report.hi
        window = [line[p] for p in range(lo, hi)]
        p_hi = next((s.p_bad for s in report.measured if s.position == hi), 0.0)
        if window and all(c.sha in skips for c in window) and p_hi >= 1 - alpha:
            # Everything the data leaves open is the commits it could not measure: the first bad commit is hi or
            # one of the skipped ones just before it.
            return BisectReport(
                line[0], line[-1], tuple(steps), skipped, line[hi], line[lo - 1],
                tuple(skips[c.sha] for c in window), None, good_value, kind="found", range=(line[lo], line[hi]),
                **common,
            )  # fmt: skip
        return BisectReport(
            line[0], line[-1], tuple(steps), skipped, None, None, (), None, good_value,
            kind="range", range=(line[lo], line[hi]), **common,
        )  # fmt: skip
    return BisectReport(
        line[0], line[-1], tuple(steps), skipped, None, None, (), report.why, good_value, kind="no-step", **common
    )  # fmt: skip
