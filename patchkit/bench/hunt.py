"""The noise-aware search for the first bad commit: a pure algorithm over an ordered line of commits.

Why not a binary search on one launch per commit: with launch-to-launch noise
of a few percent and a step of a few percent, one launch lands on the wrong
side of the midpoint often enough that ``git bisect run`` names a wrong commit
in a third of hunts, with full confidence (``benchmarks/bench_hunt.py``).

The line is positions ``0`` (GOOD) to ``size - 1`` (BAD); ``measure(positions)``
starts one server launch per entry, in that order (interleaved: the executor
runs them round-robin or, with ``slots > 1``, at once) and returns one value
per entry (``None``: the launch failed, and that commit is skipped from then
on, like a commit ``git bisect`` cannot test).

1. **Endpoints.**  Launches of GOOD and BAD, alternating, until
   ``verdict.judge(GOOD, BAD)`` says ``different`` (threshold ``min_effect``,
   confidence ``endpoint_confidence``).  ``same`` or a cap reached first ends
   the hunt: there is no step to look for (``kind = "no-step"``).
2. **The posterior.**  The model is one step: every commit before the first bad
   one has GOOD's mean log value, every one from it on has BAD's, and launches
   scatter around their commit's mean with one spread (a host and profile
   property; the noise prior, when given, is its conjugate prior).  Integrating
   out the two means and the spread gives, for each split between consecutive
   measured commits, a closed-form marginal likelihood; with a uniform prior
   over the first bad commit, the posterior of a gap between measured commits
   is spread evenly over the commits in it.  Every launch of every commit on a
   side sharpens that side's mean, so GOOD and BAD are not re-launched for each
   probe.
3. **Rounds.**  Each round asks for up to ``slots`` launches.  A slot goes to the
   commit at the ``i / (slots + 1)`` quantile of the posterior (with one slot,
   the median: binary search; with K, Pinpoint-style speculation that cuts the
   candidates into K + 1 parts per round).  Where that commit is already
   measured, the posterior is unclear about a measured commit: the slot adds a
   launch to the measured commit whose side is least certain (the most
   posterior mass on its other side).  No commit gets more than
   ``max_launches``.
4. **The answer.**  ``found``: one commit holds at least ``1 - alpha`` of the
   posterior, which needs it and the one before it measured and on opposite
   sides; the evidence is the launches on both sides and the intervals.
   ``range``: no launch is left that could narrow the search (every commit
   that could is at ``max_launches`` or skipped, or ``max_rounds`` is spent):
   the answer is the equal-tailed ``1 - alpha`` credible range of the first
   bad commit, with why.  A single commit is never answered with less than
   ``1 - alpha`` posterior mass.

Only the endpoint check and the evidence call ``judge``; the posterior is
closed-form, every split at once in numpy (with scipy's Student-t for the
direction of the step), which keeps ``benchmarks/bench_hunt.py`` fast while it
drives this same code.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from patchkit.bench.verdict import Call, Noise, Verdict, judge, pooled_noise
from patchkit.render import plural

Measure = Callable[[Sequence[int]], Sequence[float | None]]
FLOOR = 1e-12  # the least squared log spread per launch the posterior assumes (a 0.0001 % launch spread)


@dataclass(frozen=True)
class Round:
    """One call of ``measure``: the positions asked for, the values it gave, and why each was asked."""

    asked: tuple[int, ...]
    values: tuple[float | None, ...]
    why: tuple[str, ...]


@dataclass(frozen=True)
class Side:
    """What the data says about one measured commit: its launches and the posterior that it is bad."""

    position: int
    launches: tuple[float, ...]
    p_bad: float


@dataclass(frozen=True)
class HuntReport:
    """The answer of a hunt.

    ``kind``: ``found`` (``first_bad``, with ``evidence`` and ``adjacent``),
    ``range`` (the first bad commit is one of ``lo..hi``; ``why`` says why it
    could not be narrowed), or ``no-step`` (GOOD and BAD are not told apart, or
    differ the wrong way: ``why``).
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
    skipped: tuple[int, ...]  # positions whose launch failed
    rounds: tuple[Round, ...] = field(repr=False)
    likely: int | None = None  # range: the most likely first bad position
    likely_mass: float | None = None  # its posterior mass (short of 1 - alpha, or it would be found)
    unclear: tuple[int, ...] = ()  # range: measured positions left unsettled (P(bad) in alpha/2 .. 1 - alpha/2)

    @property
    def starts(self) -> int:
        """Server launches asked for (failed ones included)."""
        return sum(len(r.asked) for r in self.rounds)


def hunt(
    size: int,
    measure: Measure,
    *,
    slots: int = 1,
    max_launches: int = 10,
    alpha: float = 0.001,
    noise: Noise | None = None,
    min_effect: float = 0.0,
    endpoint_confidence: float = 0.95,
    expect: str | None = None,
    max_rounds: int | None = None,
    on_round: Callable[[Round, Sequence[Side]], None] | None = None,
    skipped: Collection[int] = (),
    initial: Mapping[int, Sequence[float | None]] | None = None,
    label: Callable[[int], str] = str,
) -> HuntReport:
    """Search positions ``0..size-1`` (GOOD at 0, BAD at ``size - 1``) for the first bad one.

    ``expect`` (``"higher"`` / ``"lower"``): the direction BAD must differ from
    GOOD in; the other direction ends the hunt as ``no-step``.  ``on_round`` is
    called after each round (progress output).  ``skipped``: positions known
    not to be measurable (their patches cannot apply): never measured, still
    candidates.  ``initial``: launches already measured per position (they
    count in the posterior, not in ``starts``).  ``label`` names a position in
    the ``why`` of a range (the bisect passes the commit's short id).
    """
    if size < 2:
        raise ValueError(f"a hunt needs GOOD and BAD: size {size} < 2")
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if max_launches < 1:
        raise ValueError(f"max_launches must be >= 1, got {max_launches}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, got {alpha}")
    state = _State(size, noise)
    state.label = label
    state.skipped.update(p for p in skipped if 0 < p < size - 1)
    for pos, values in (initial or {}).items():
        for value in values:
            state.add(pos, value)
    rounds: list[Round] = []
    bad = size - 1

    def run(asked: list[int], why: list[str]) -> None:
        values = tuple(measure(asked))
        if len(values) != len(asked):
            raise ValueError(f"measure returned {len(values)} values for {len(asked)} launches")
        for pos, value in zip(asked, values, strict=True):
            state.add(pos, value)
        done = Round(asked=tuple(asked), values=values, why=tuple(why))
        rounds.append(done)
        if on_round is not None:
            on_round(done, state.sides())

    def report(kind: str, why: str, **kw: object) -> HuntReport:
        fields: dict[str, object] = {
            "first_bad": None,
            "lo": None,
            "hi": None,
            "probability": 0.0,
            "endpoints": None,
            "evidence": None,
            "adjacent": None,
        }
        fields.update(kw)
        return HuntReport(
            kind=kind, why=why, measured=tuple(state.sides()), skipped=tuple(sorted(state.skipped)),
            rounds=tuple(rounds), **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    # 1. Endpoints.
    ends: Verdict | None = None
    while True:
        if 0 in state.skipped or bad in state.skipped:
            which = "GOOD" if 0 in state.skipped else "BAD"
            return report("no-step", f"{which} could not be measured (its launch failed)", endpoints=ends)
        g, b = state.values(0), state.values(bad)
        if g and b:
            ends = judge(g, b, threshold=min_effect, confidence=endpoint_confidence, noise=noise)
            if ends.call is Call.DIFFERENT:
                if expect is not None and ends.direction != expect:
                    return report(
                        "no-step",
                        f"BAD is {ends.direction} than GOOD, not {expect}: not the regression being hunted",
                        endpoints=ends,
                    )
                state.sign = 1.0 if ends.direction == "higher" else -1.0
                break
            if ends.call is Call.SAME:
                return report("no-step", f"GOOD and BAD are the same within ±{min_effect:.1%}", endpoints=ends)
            if len(g) >= max_launches and len(b) >= max_launches:
                return report(
                    "no-step",
                    f"GOOD and BAD could not be told apart in {plural(max_launches, 'launch', 'launches')} each "
                    f"(ratio {_fmt_ratio(ends)}); to decide: {ends.next or 'more launches'}",
                    endpoints=ends,
                )
        if max_rounds is not None and len(rounds) >= max_rounds:
            return report("no-step", f"GOOD and BAD not told apart within {max_rounds} rounds", endpoints=ends)
        asked: list[int] = []
        why: list[str] = []
        for _ in range(min(slots, 2)):
            pending = {p: asked.count(p) for p in (0, bad)}
            choice = min(
                (p for p in (0, bad) if len(state.values(p)) + pending[p] < max_launches),
                key=lambda p: (len(state.values(p)) + pending[p], p),
                default=None,
            )
            if choice is None:
                break
            asked.append(choice)
            why.append("GOOD" if choice == 0 else "BAD")
        if slots > 2 and size > 2:  # speculate: the middle of the line, before the endpoints are settled
            picks = state.picks(slots - len(asked), max_launches, alpha, speculative=True)
            asked += [p for p, _ in picks]
            why += [w for _, w in picks]
        run(asked, why)

    # 2-3. Rounds over the posterior.
    while True:
        post = state.posterior()
        best = post.best_single()
        if best is not None and best[1] >= 1 - alpha:
            k, mass = best
            left = [v for p in state.measured_positions() if p < k for v in state.values(p)]
            right = [v for p in state.measured_positions() if p >= k for v in state.values(p)]
            evidence = judge(left, right, threshold=0.0, confidence=1 - alpha, noise=noise)
            if evidence.call is Call.DIFFERENT:  # the step model's answer, checked by the plain two-sided interval
                pooled = pooled_noise([state.values(p) for p in state.measured_positions()])
                adjacent = judge(
                    state.values(k - 1), state.values(k), threshold=0.0, confidence=0.99, noise=_merge(noise, pooled)
                )
                return report(
                    "found",
                    f"P(first bad) = {mass:.4f} >= {1 - alpha}",
                    first_bad=k,
                    lo=k,
                    hi=k,
                    probability=mass,
                    endpoints=ends,
                    evidence=evidence,
                    adjacent=adjacent,
                )
        lo, hi = post.credible(alpha)
        if max_rounds is not None and len(rounds) >= max_rounds:
            return _range(report, state, post, (lo, hi), ends, f"{max_rounds} rounds spent", max_launches, alpha)
        picks = state.picks(slots, max_launches, alpha, post=post)
        if not picks:
            return _range(report, state, post, (lo, hi), ends, "no launch left could narrow it", max_launches, alpha)
        run([p for p, _ in picks], [w for _, w in picks])


def _range(
    report: Callable[..., HuntReport],
    state: _State,
    post: _Posterior,
    bounds: tuple[int, int],
    ends: Verdict | None,
    reason: str,
    max_launches: int,
    alpha: float,
) -> HuntReport:
    """A range answer, with why: what stopped the search, the measured commits whose side is not settled
    enough for an answer (P(bad) between ``alpha / 2`` and ``1 - alpha / 2``: a first bad commit needs the
    mass on both sides of it to miss by less than ``alpha`` together; at the cap, more launches would settle
    them), those that could not be measured, and the most likely first bad commit with its posterior mass
    (short of ``1 - alpha``)."""
    lo, hi = bounds
    label = state.label
    unsettled = [p for p in state.measured_positions() if alpha / 2 < post.cdf(p) < 1 - alpha / 2]
    unclear = [p for p in unsettled if lo - 1 <= p <= hi]
    named = [f"{label(p)} (P(bad) {post.cdf(p):.4f}, {plural(len(state.values(p)), 'launch', 'launches')})"
             for p in unclear]  # fmt: skip
    capped = all(len(state.values(p)) >= max_launches for p in unclear)
    skipped = [label(p) for p in sorted(state.skipped) if lo <= p <= hi]
    likely, mass = max(((p, post.mass_between(p, p)) for p in range(lo, hi + 1)), key=lambda pm: (pm[1], -pm[0]))
    parts = [reason]
    if named:
        parts.append(f"unclear{' at --max-launches ' + str(max_launches) if capped else ''}: {', '.join(named)}")
    if skipped:
        parts.append(f"could not be measured: {', '.join(skipped)}")
    unmeasured = [p for p in range(lo, hi + 1) if p not in state.counts and p not in state.skipped]
    if unmeasured and not skipped:
        parts.append(f"{plural(len(unmeasured), 'commit')} in the range never measured")
    parts.append(f"most likely first bad: {label(likely)} at {mass:.4f} of the posterior ({1 - alpha:g} needed)")
    return report(
        "range", "; ".join(parts), lo=lo, hi=hi, probability=post.mass_between(lo, hi), endpoints=ends,
        likely=likely, likely_mass=mass, unclear=tuple(unclear),
    )  # fmt: skip


def ahead(size: int, count: int, skipped: Collection[int] = ()) -> list[tuple[int, str]]:
    """Up to ``count`` probes, each with why, for the round that first launches GOOD and BAD: no posterior exists
    before they have a launch each, so the slots left over speculate on evenly spaced positions."""
    spots = sorted({round(i * (size - 1) / (count + 1)) for i in range(1, count + 1)} - {0, size - 1})
    return [(p, "probe: evenly spaced, ahead of the endpoints") for p in spots if p not in skipped]


def _merge(prior: Noise | None, pooled: Noise | None) -> Noise | None:
    """The spread for the adjacent-commit evidence: the prior and every measured commit's spread together."""
    if prior is None:
        return pooled
    if pooled is None:
        return prior
    df = prior.df + pooled.df
    return Noise(sigma=math.sqrt((prior.df * prior.sigma**2 + pooled.df * pooled.sigma**2) / df), df=df)


def _fmt_ratio(v: Verdict) -> str:
    if v.ratio is None:
        return "unknown"
    if v.low is None or v.high is None:
        return f"{v.ratio:.3f}"
    return f"{v.ratio:.3f} [{v.low:.3f}, {v.high:.3f}]"


class _State:
    """Launch values (as logs, with running sums) per measured position, and the skipped positions."""

    def __init__(self, size: int, noise: Noise | None) -> None:
        self.size = size
        self.raw: dict[int, list[float]] = {}
        self.counts: dict[int, int] = {}
        self.sums: dict[int, float] = {}
        self.squares: dict[int, float] = {}
        self.skipped: set[int] = set()
        self.prior_ss = noise.df * noise.sigma**2 if noise is not None else 0.0
        self.prior_df = noise.df if noise is not None else 0
        self.sign = 0.0  # -1: BAD lower than GOOD, +1: higher; 0 until the endpoints are told apart
        self.label: Callable[[int], str] = str  # how a position is named in the reasons

    def add(self, pos: int, value: float | None) -> None:
        if pos in self.skipped:
            return
        if value is None or not (math.isfinite(value) and value > 0):
            self.skipped.add(pos)
            for table in (self.raw, self.counts, self.sums, self.squares):
                table.pop(pos, None)
            return
        x = math.log(value)
        self.raw.setdefault(pos, []).append(value)
        self.counts[pos] = self.counts.get(pos, 0) + 1
        self.sums[pos] = self.sums.get(pos, 0.0) + x
        self.squares[pos] = self.squares.get(pos, 0.0) + x * x

    def values(self, pos: int) -> list[float]:
        return self.raw.get(pos, [])

    def measured_positions(self) -> list[int]:
        return sorted(self.counts)

    def posterior(self) -> _Posterior:
        return _Posterior.of(self)

    def sides(self) -> list[Side]:
        post = self.posterior() if 0 in self.counts and self.size - 1 in self.counts else None
        return [
            Side(position=p, launches=tuple(self.raw[p]), p_bad=post.cdf(p) if post is not None else math.nan)
            for p in self.measured_positions()
        ]

    def picks(
        self, slots: int, max_launches: int, alpha: float, *, speculative: bool = False, post: _Posterior | None = None
    ) -> list[tuple[int, str]]:
        """Up to ``slots`` positions for the next round, each with why."""
        if 0 not in self.counts or self.size - 1 not in self.counts:
            return ahead(self.size, slots, self.skipped)
        post = post or self.posterior()
        pending: dict[int, int] = {}
        chosen: list[tuple[int, str]] = []

        def room(p: int) -> bool:
            return p not in self.skipped and self.counts.get(p, 0) + pending.get(p, 0) < max_launches

        doubt = {p: min(c, 1 - c) for p, c in zip(post.marks, post.cum, strict=True)}  # cdf(marks[j]) = cum[j]
        unclear = sorted(
            (p for p in post.marks if (0 < p < self.size - 1 or speculative) and doubt[p] > alpha * 1e-3),
            key=lambda p: -doubt[p],
        )
        for i in range(1, slots + 1):
            q = i / (slots + 1)
            c = post.quantile(q)
            if c is not None and c not in self.counts and room(c):
                chosen.append((c, f"probe: the posterior's {q:.0%} point"))
                pending[c] = pending.get(c, 0) + 1
                continue
            again = next((p for p in unclear if room(p)), None)
            if again is None or speculative:
                continue
            unclear.remove(again)
            unclear.append(again)  # the next slot goes to the next most unclear commit first
            ref = min(
                (r for r in (0, self.size - 1) if room(r)),
                key=lambda r: self.counts.get(r, 0) + pending.get(r, 0),
                default=None,
            )
            here = self.counts.get(again, 0) + pending.get(again, 0)
            if ref is not None and here > self.counts.get(ref, 0) + pending.get(ref, 0):
                # The unclear commit already has more launches than a reference: interleave one there.
                name = "GOOD" if ref == 0 else "BAD"
                chosen.append((ref, f"reference: {name}, interleaved with the launches of {self.label(again)}"))
                pending[ref] = pending.get(ref, 0) + 1
                continue
            after = plural(self.counts[again], "launch", "launches")
            chosen.append((again, f"unclear: P(bad) {post.cdf(again):.3f} after {after}"))
            pending[again] = pending.get(again, 0) + 1
        if not chosen and not speculative:
            # Every measured commit is settled or at its cap, yet no commit holds the mass: probe the unmeasured
            # commit of the credible range nearest to the posterior's median.
            lo, hi = post.credible(alpha)
            median = post.quantile(0.5) or lo
            spare = [p for p in range(lo, hi + 1) if p not in self.counts and room(p)]
            if spare:
                c = min(spare, key=lambda p: (abs(p - median), p))
                chosen.append((c, "probe: unmeasured, in the credible range"))
        return chosen


@dataclass(frozen=True)
class _Posterior:
    """Posterior of the first bad position: mass per gap between consecutive measured positions."""

    marks: tuple[int, ...]  # measured positions, ascending (0 and size-1 among them once measured)
    masses: tuple[float, ...]  # mass of gap j: first bad in (marks[j], marks[j+1]]
    cum: tuple[float, ...] = ()  # mass of the gaps before gap j

    def __post_init__(self) -> None:
        if not self.cum:
            object.__setattr__(self, "cum", tuple(itertools.accumulate(self.masses, initial=0.0)))

    @classmethod
    def of(cls, state: _State) -> _Posterior:
        marks = state.measured_positions()
        if len(marks) < 2 or marks[0] != 0 or marks[-1] != state.size - 1:
            raise ValueError("the posterior needs GOOD and BAD measured")
        n = np.array([state.counts[p] for p in marks], dtype=float)
        s1 = np.array([state.sums[p] for p in marks])
        s2 = np.array([state.squares[p] for p in marks])
        n_all, s_all, q_all = n.sum(), s1.sum(), s2.sum()
        power = (state.prior_df + n_all - 2) / 2
        # Split j: GOOD's side is marks[0..j], BAD's marks[j+1..]; every split at once.
        n_l, s_l, q_l = np.cumsum(n)[:-1], np.cumsum(s1)[:-1], np.cumsum(s2)[:-1]
        n_r, s_r, q_r = n_all - n_l, s_all - s_l, q_all - q_l
        ss = np.maximum(q_l - s_l * s_l / n_l, 0.0) + np.maximum(q_r - s_r * s_r / n_r, 0.0)
        # Launches that repeat to the last digit (a deterministic stand-in) leave no spread at all: a floor far
        # below any real noise keeps the arithmetic finite and lets such data decide at once.
        total = np.maximum(state.prior_ss + ss, FLOOR * n_all)
        logs = -0.5 * np.log(n_l * n_r) - power * np.log(total) + np.log(np.diff(np.array(marks, dtype=float)))
        if state.sign and power > 0:
            # The step goes the way BAD differs from GOOD: the posterior of (BAD's mean - GOOD's) under this split,
            # a Student-t with 2 * power degrees of freedom, on that side of zero.
            scale = np.sqrt(total / (2 * power) * (1 / n_l + 1 / n_r))
            z = state.sign * (s_r / n_r - s_l / n_l) / scale
            logs = logs + np.log(np.maximum(special.stdtr(2 * power, z), 1e-300))  # stdtr: the t CDF, a ufunc
        weights = np.exp(logs - logs.max())
        weights /= weights.sum()
        return cls(marks=tuple(marks), masses=tuple(weights.tolist()))

    def best_single(self) -> tuple[int, float] | None:
        """The single position with the most mass, among gaps one commit wide."""
        best: tuple[int, float] | None = None
        for j, mass in enumerate(self.masses):
            if self.marks[j + 1] - self.marks[j] == 1 and (best is None or mass > best[1]):
                best = (self.marks[j + 1], mass)
        return best

    def cdf(self, pos: int) -> float:
        """P(first bad <= pos): the posterior that position ``pos`` is bad."""
        j = bisect.bisect_right(self.marks, pos) - 1  # pos lies in gap j: (marks[j], marks[j+1]]
        if pos <= self.marks[0]:
            return 0.0
        if j >= len(self.masses):
            return 1.0
        if pos == self.marks[j]:
            return self.cum[j]
        a, b = self.marks[j], self.marks[j + 1]
        return min(self.cum[j] + self.masses[j] * (pos - a) / (b - a), 1.0)

    def quantile(self, q: float) -> int | None:
        """The smallest position whose cdf reaches ``q``."""
        cum = 0.0
        for j, mass in enumerate(self.masses):
            if mass > 0 and cum + mass >= q:
                a, b = self.marks[j], self.marks[j + 1]
                return a + min(b - a, max(1, round((q - cum) / mass * (b - a))))
            cum += mass
        return None

    def credible(self, alpha: float) -> tuple[int, int]:
        """The equal-tailed ``1 - alpha`` range of the first bad position."""
        lo = self._first_reaching(alpha / 2, strictly=True)
        hi = self._first_reaching(1 - alpha / 2, strictly=False)
        return (lo if lo is not None else self.marks[0] + 1), (hi if hi is not None else self.marks[-1])

    def _first_reaching(self, q: float, *, strictly: bool) -> int | None:
        """The first position whose cdf exceeds ``q`` (``strictly``) or reaches it."""
        for j, mass in enumerate(self.masses):
            a, b = self.marks[j], self.marks[j + 1]
            top = self.cum[j] + mass
            if (top > q) if strictly else (top >= q):
                if mass <= 0:
                    return b
                # cdf(a + i) = cum + mass * i / w: the least i in 1..w past q.
                i = (q - self.cum[j]) / mass * (b - a)
                step = math.floor(i) + 1 if strictly else math.ceil(i - 1e-12)
                pos = a + min(b - a, max(1, step))
                while pos > a + 1 and ((self.cdf(pos - 1) > q) if strictly else (self.cdf(pos - 1) >= q)):
                    pos -= 1
                while pos < b and not ((self.cdf(pos) > q) if strictly else (self.cdf(pos) >= q)):
                    pos += 1
                return pos
        return None

    def mass_between(self, lo: int, hi: int) -> float:
        return self.cdf(hi) - self.cdf(lo - 1)
