"""What a hunt is given and what it answers: the values ``measure`` returns, the rounds, the measured commits, the
spread and drift the posterior used, other steps the launches show, and the answer itself (``HuntReport``).

Frozen values only, and free of the model: ``search.py`` turns them into bisect's report over commits, and
``--json`` prints them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from patchkit.bench.stats.hunt.mask import Pruned
from patchkit.bench.stats.verdict import Verdict


@dataclass(frozen=True)
class GiveUp:
    """What ``measure`` returns for a launch that failed in a way a retry cannot mend (the run was refused, the
    metric is missing): the commit is given up at once, where ``None`` (a server that did not come up) is retried."""

    why: str = ""


Value = float | None | GiveUp
Measure = Callable[[Sequence[int]], Sequence[Value]]


@dataclass(frozen=True)
class Round:
    """One call of ``measure``: the positions asked for, the values it gave, and why each was asked."""

    asked: tuple[int, ...]
    values: tuple[Value, ...]
    why: tuple[str, ...]


@dataclass(frozen=True)
class Side:
    """What the data says about one measured commit: its launches, the posterior that it is bad, and which of its
    launches the model treats as outliers (aligned with ``launches``)."""

    position: int
    launches: tuple[float, ...]
    p_bad: float
    outliers: tuple[bool, ...] = ()
    orders: tuple[int, ...] = ()  # each launch's place in the hunt (0 first), aligned with ``launches``


@dataclass(frozen=True)
class Mode:
    """A second mode of the launch noise: a ``share`` of launches sits ``offset`` (log scale) from its commit's
    level, at the same spread (an unlucky placement, a slow NUMA node: 20 % of launches 6 % slower); ``weight``:
    how likely the launches make it that the noise has it (``modes.second_mode``)."""

    share: float
    offset: float
    weight: float = 1.0

    def as_json(self) -> dict[str, float]:
        return {"share": self.share, "offset": self.offset, "weight": self.weight}

    def describe(self) -> str:
        way = "lower" if self.offset < 0 else "higher"
        return (f"a second mode, {self.share:.0%} of launches {abs(self.offset):.1%} {way} "
                f"(weighed at {self.weight:.2g})")  # fmt: skip


@dataclass(frozen=True)
class Spread:
    """The launch spread the posterior used, and where it came from."""

    sigma: float  # log scale: 0.01 is about 1 %
    df: float
    source: str  # one line: prior pooled with the launches, the launches alone, a stale prior ...
    prior: float | None = None  # the prior's sigma, when one was given
    hunt: float | None = None  # the hunt's own estimate, when it had degrees of freedom
    stale: bool = False  # the variance-ratio test said the prior is too small
    mode: Mode | None = None  # the second mode the posterior weighed in, where the launches hint at one

    def as_json(self) -> dict[str, object]:
        return {
            "sigma": self.sigma,
            "df": self.df,
            "source": self.source,
            "prior": self.prior,
            "hunt": self.hunt,
            "stale": self.stale,
            "mode": None if self.mode is None else self.mode.as_json(),
        }


@dataclass(frozen=True)
class Drift:
    """The fitted trend of the launches over the hunt: its total over the launches, with its z score."""

    total: float  # relative change from the first launch to the last (-0.021: 2.1 % lower at the end)
    z: float
    launches: int
    flagged: bool  # |z| >= DRIFT_Z
    why: str

    def as_json(self) -> dict[str, object]:
        return {"total": self.total, "z": self.z, "launches": self.launches, "flagged": self.flagged, "why": self.why}


@dataclass(frozen=True)
class OtherStep:
    """A second step the data shows besides the named one: between ``lo`` and ``hi`` (positions, both ends
    included as candidates), of ``ratio`` (the later level over the earlier), on the ``side`` of the answer."""

    side: str  # "before" (between GOOD and the named commit) or "after" (between it and BAD)
    lo: int
    hi: int
    ratio: float
    z: float
    same_way: bool  # the step goes the way the hunted one does (a second regression), else the other way

    def as_json(self) -> dict[str, object]:
        return {"side": self.side, "lo": self.lo, "hi": self.hi, "ratio": self.ratio, "z": self.z,
                "same_way": self.same_way}  # fmt: skip


@dataclass(frozen=True)
class Failure:
    """A launch that gave no value: where, and its place in the hunt."""

    position: int
    order: int


@dataclass(frozen=True)
class HuntReport:
    """The answer of a hunt.

    ``kind``: ``found`` (``first_bad``, with ``evidence`` and ``adjacent``),
    ``range`` (the first bad commit is one of ``lo..hi``; ``why`` says why it
    could not be narrowed, ``advice`` what would), or ``no-step`` (GOOD and BAD
    are not told apart, or differ the wrong way: ``why``).
    """

    kind: str
    first_bad: int | None
    lo: int | None
    hi: int | None
    probability: float  # posterior mass of first_bad (found) or of lo..hi (range)
    why: str
    endpoints: Verdict | None  # BAD against GOOD
    evidence: Verdict | None  # the launches of every commit after first_bad against those before it
    adjacent: Verdict | None  # first_bad's launches against those of the commit before it
    measured: tuple[Side, ...]  # every measured commit, in line order
    skipped: tuple[int, ...]  # positions that could not be measured
    rounds: tuple[Round, ...] = field(repr=False)
    likely: int | None = None  # range: the most likely first bad position
    likely_mass: float | None = None  # its posterior mass (short of 1 - alpha, or it would be found)
    unclear: tuple[int, ...] = ()  # range: measured positions left unsettled (P(bad) in alpha/2 .. 1 - alpha/2)
    spread: Spread | None = None
    drift: Drift | None = None
    others: tuple[OtherStep, ...] = ()  # other steps the launches show
    failures: tuple[Failure, ...] = ()  # every launch that gave no value
    budget: int = 0
    advice: str = ""  # range: what would likely narrow it
    pruning: Pruned | None = None  # what pruning did (None: no ``relevance`` was given)

    @property
    def starts(self) -> int:
        """Server launches asked for (failed ones included)."""
        return sum(len(r.asked) for r in self.rounds)

    @property
    def outliers(self) -> int:
        return sum(sum(s.outliers) for s in self.measured)
