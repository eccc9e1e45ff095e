"""The search of ``patchkit bisect``: ``bisect(line, measure, is_bad) -> BisectReport``, a pure function.

``line`` is the first-parent history from GOOD (first) to BAD (last);
``measure(commit)`` benchmarks one commit (the verb passes a function that
runs a server and stores the run; tests pass a plain function); ``is_bad(value,
good_value)`` says whether a measured value is bad, given GOOD's.

1. GOOD is measured first (a ratio criterion needs its value), then BAD; GOOD
   must be good and BAD bad, else the report has an ``error`` and no answer.
2. Binary search over the commits between them.  A commit listed in
   ``skipped`` (its patches cannot apply, known before anything runs) is never
   measured; a measurement that is not usable (not ``ok``, or no value) makes
   its commit skipped too, and it leaves the search.
3. The answer is the first bad commit of the searched line; the skipped
   commits right before it are ``maybe`` (the first bad one may be among them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from patchkit.bench.record import Outcome
from patchkit.git import Commit

Verdict = Literal["good", "bad", "skip"]


@dataclass(frozen=True)
class Measurement:
    """What one benchmark of a commit gave: the metric's median, and the run that holds it."""

    value: float | None
    outcome: Outcome = Outcome.OK
    run: int | None = None
    why: str | None = None  # the run's reason, when it is not ok

    @property
    def usable(self) -> bool:
        return self.outcome is Outcome.OK and self.value is not None


@dataclass(frozen=True)
class Step:
    commit: Commit
    measurement: Measurement
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "run": self.measurement.run,
            "outcome": self.measurement.outcome.value,
            "median": self.measurement.value,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Skip:
    commit: Commit
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit.sha, "subject": self.commit.subject, "why": self.why}


@dataclass(frozen=True)
class BisectReport:
    good: Commit
    bad: Commit
    steps: tuple[Step, ...]
    skipped: tuple[Skip, ...]  # never measured (cannot apply), or measured without a usable value
    first_bad: Commit | None
    last_good: Commit | None
    maybe: tuple[Skip, ...]  # skipped commits right before first_bad
    error: str | None  # why there is no answer
    good_value: float | None

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
    is_bad: IsBad,
    *,
    skipped: Mapping[str, str] | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> BisectReport:
    """Search ``line`` (GOOD first, BAD last) for the first bad commit; ``on_step`` sees each step as it ends."""
    if len(line) < 2:
        raise ValueError("bisect needs a line of at least GOOD and BAD")
    good, bad = line[0], line[-1]
    skips: dict[str, Skip] = {c.sha: Skip(c, (skipped or {})[c.sha]) for c in line[1:-1] if c.sha in (skipped or {})}
    steps: list[Step] = []
    good_value: float | None = None

    def step(commit: Commit) -> Verdict:
        m = measure(commit)
        verdict: Verdict
        if not m.usable:
            verdict = "skip"
            skips[commit.sha] = Skip(commit, f"{m.outcome.value}: {m.why}")
        else:
            assert m.value is not None
            verdict = "bad" if is_bad(m.value, m.value if good_value is None else good_value) else "good"
        steps.append(Step(commit, m, verdict))
        if on_step is not None:
            on_step(steps[-1])
        return verdict

    def report(first_bad: Commit | None, last_good: Commit | None, error: str | None) -> BisectReport:
        maybe: tuple[Skip, ...] = ()
        if first_bad is not None and last_good is not None:
            order = [c.sha for c in line]
            window = line[order.index(last_good.sha) + 1 : order.index(first_bad.sha)]
            maybe = tuple(skips[c.sha] for c in window if c.sha in skips)
        in_order = tuple(skips[c.sha] for c in line if c.sha in skips)
        return BisectReport(good, bad, tuple(steps), in_order, first_bad, last_good, maybe, error, good_value)

    first = step(good)
    if first != "good":
        return report(None, None, f"--good {good.short} is not good ({first}): cannot bisect")
    good_value = steps[-1].measurement.value
    last = step(bad)
    if last != "bad":
        return report(None, None, f"--bad {bad.short} is not bad by the criterion ({last})")
    searched = [good, *(c for c in line[1:-1] if c.sha not in skips), bad]
    lo, hi = 0, len(searched) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        verdict = step(searched[mid])
        if verdict == "skip":
            searched.pop(mid)
            hi -= 1
        elif verdict == "bad":
            hi = mid
        else:
            lo = mid
    return report(searched[hi], searched[lo], None)
