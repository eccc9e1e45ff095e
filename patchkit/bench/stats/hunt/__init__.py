"""The noise-aware search for the first bad commit: a pure algorithm over an ordered line of commits.

Why not a binary search on one launch per commit: with launch-to-launch noise
of a few percent and a step of a few percent, one launch lands on the wrong
side of the midpoint often enough that ``git bisect run`` names a wrong commit
in a third of hunts, with full confidence (``benchmarks/bench_hunt.py``).  And
real servers are noisier than a Gaussian: a launch in a few dozen runs 20-40 %
slow (a noisy neighbour, a throttled GPU, a cold page cache), placements make
launches bimodal, and a host drifts while a long hunt runs.  The promise here
is that the hunt is never *confidently* wrong under any of that: a FIRST BAD
only with ``1 - alpha`` of the posterior behind it, and no single launch able
to decide; otherwise a range, with why.

The line is positions ``0`` (GOOD) to ``size - 1`` (BAD); ``measure(positions)``
starts one server launch per entry, in that order (interleaved: the executor
runs them round-robin or, with ``slots > 1``, at once) and returns one value
per entry (``None``: the launch failed; it is retried, up to ``MAX_FAILURES``
per commit, after which a commit without a value is skipped, like a commit
``git bisect`` cannot test, and one with values keeps them).

**The launch model** (``_Model``).  Every commit before the first bad one has
GOOD's level, every one from it on has BAD's; on the log scale a launch is
``level + drift * order + noise``, where ``order`` is the launch's place in the
hunt and the noise is a contamination mixture: with probability ``1 - EPS`` a
Gaussian of spread ``sigma``, with ``EPS`` an outlier anywhere within
``OUTLIER_WIDTH`` (a flat density).  So a launch near its side's level counts as
under a Gaussian, and one far from both levels costs the same whichever side
it is put on: it cannot move the boundary.  The levels and the drift are fitted
per split by weighted least squares (the weights are the launches'
responsibilities of the Gaussian part, from the most likely split), the split's
log likelihood is evaluated under the mixture, with the Laplace term of the
fitted parameters, the width of the gap between measured commits (a uniform
prior over the first bad commit) and the direction of the step.

**The spread.**  ``sigma`` is the mixture's spread fitted to the hunt's own
launches, pooled with the noise prior by degrees of freedom (a conjugate
update, no switch at a launch count).  The prior is checked: once the hunt
has spread of its own, a variance-ratio test against the prior (one-sided, at
``STALE_P``) that says the prior is too small makes the hunt use the larger of
the two and say so (a prior measured on a quieter day).  With few degrees of
freedom the spread is widened by the ratio of Student's to the normal quantile,
so a spread guessed from three launches cannot make anything certain.  A
quantized metric (values that repeat to the last digit) gets a floor on the
spread from its resolution.

**Rounds.**  Each round asks for up to ``slots`` launches.  A slot goes to the
commit at the ``i / (slots + 1)`` quantile of the posterior (one slot: binary
search; K: Pinpoint-style speculation); where that commit is measured, to the
measured commit whose side is least certain.

**The answer.**  ``found``: one commit ``k`` holds at least ``1 - alpha`` of
the posterior, and the answer is *confirmed*: ``k`` and ``k - 1`` each have at
least ``CONFIRM`` launches, and leaving out any single one of their launches
still names ``k`` with at least ``LOO_MASS`` of the posterior.  Only the
launches of ``k - 1`` and ``k`` can carry the boundary: any other launch sits
well inside a side, where the mixture bounds its weight; so an outlier, or one
unlucky launch of a bimodal server, is always outvoted before an answer
stands.  And ``k`` must keep ``LOO_MASS`` at the spread's one-sided 90 %
upper bound for its degrees of freedom (``_State.spread_check``): the
posterior is only as sure as its spread, and a prior from a quieter day can
make it too small.  Launches carry their order: the drift term joins the fit when its
estimate is ``DRIFT_Z`` standard errors from zero without it; while it is
``DRIFT_SUSPECT`` from zero GOOD and BAD are launched again (a reference in
each round with slots to spare, and every ``REF_EVERY // 2`` launches), and on
any long hunt every ``REF_EVERY`` launches; a flagged drift is reported and
the levels are corrected for it.  ``range``: no launch is left that
could narrow the search (every commit that could is at ``max_launches``,
skipped, or the ``budget`` of launches is spent): the equal-tailed
``1 - alpha`` credible range, with why and what would narrow it.

**More than one step.**  Once a commit is named, GOOD's level is compared with
``k - 1``'s and BAD's with ``k``'s (drift-corrected); a clear difference is a
second step, reported with its side and size (``others``).  An unclear one gets
a few more launches first.

The posterior is every split at once in numpy (per-commit sums accumulated
along the line), which keeps ``benchmarks/bench_hunt.py`` fast while it drives
this same code.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

from patchkit.bench.stats.verdict import Call, Noise, Verdict, judge, resolution_floor
from patchkit.wording import plural


@dataclass(frozen=True)
class GiveUp:
    """What ``measure`` returns for a launch that failed in a way a retry cannot mend (the run was refused, the
    metric is missing): the commit is given up at once, where ``None`` (a server that did not come up) is retried."""

    why: str = ""


Value = float | None | GiveUp
Measure = Callable[[Sequence[int]], Sequence[Value]]

EPS = 0.02  # the prior share of outlier launches in the mixture
OUTLIER_WIDTH = 1.0  # an outlier lies anywhere within this width of log values (about -40 % .. +65 %)
CONFIRM = 2  # launches at each of k - 1 and k before k is named
LOO_MASS = 0.95  # without any one launch of k - 1 or k, k must keep this much of the posterior
MAX_FAILURES = 3  # failed launches of one commit before it is given up
REF_EVERY = 16  # a long hunt launches a reference (GOOD or BAD) when it has had none for this many launches
DRIFT_Z = 3.0  # a drift estimate this many standard errors from zero is reported as drift
DRIFT_SUSPECT = 2.5  # ... and from this many on, references are re-launched
STEP_Z = 3.5  # a second step: two groups of commits on one side of the answer this many standard errors apart
STEP_SUSPECT = 2.5  # between this and STEP_Z, more launches before deciding
END_SUSPECT = 1.5  # ... or from this many, between GOOD (BAD) on one launch and the rest of its side
STEP_EXTRA = 6  # at most this many extra launches per commit to decide a suspected second step
STEP_BUDGET = 6  # ... and this many in all: most suspicions are chance, and one that is not shows in a few
OWN_FROM = 4  # degrees of freedom of its own from which the hunt's spread replaces a smaller pooled one
STALE_P = 0.01  # the variance-ratio test's level for calling the prior stale
OUTLIER_Z = 4.0  # an endpoint launch this many spreads from its end's median is left out of the endpoint verdict
OUTLIER_WEIGHT = 0.5  # a launch whose Gaussian responsibility is below this is shown as an outlier
ORDER_SCALE = 100.0  # the drift is fitted per 100 launches (conditioning)
EM_STEPS = 4  # EM steps per split fit
DRIFT_FROM = 6  # launches before the drift term is fitted
MARGINAL_POINTS = 29  # spreads on the grid the posterior integrates the spread over (x0.3 .. x5 the fitted one)
FLOOR = 1e-6  # the least launch spread the model assumes (0.0001 %), below any real noise


def default_budget(size: int, max_launches: int) -> int:
    """The total launches a hunt may start unless told otherwise: ten per binary-search step over the line
    (``log2(size)`` of them, plus GOOD and BAD), and at least three commits' worth of ``max_launches``."""
    steps = math.ceil(math.log2(max(size - 1, 2))) + 2
    return max(10 * steps, 3 * max_launches)


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
class Spread:
    """The launch spread the posterior used, and where it came from."""

    sigma: float  # log scale: 0.01 is about 1 %
    df: float
    source: str  # one line: prior pooled with the launches, the launches alone, a stale prior ...
    prior: float | None = None  # the prior's sigma, when one was given
    hunt: float | None = None  # the hunt's own estimate, when it had degrees of freedom
    stale: bool = False  # the variance-ratio test said the prior is too small

    def as_json(self) -> dict[str, object]:
        return {
            "sigma": self.sigma,
            "df": self.df,
            "source": self.source,
            "prior": self.prior,
            "hunt": self.hunt,
            "stale": self.stale,
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

    @property
    def starts(self) -> int:
        """Server launches asked for (failed ones included)."""
        return sum(len(r.asked) for r in self.rounds)

    @property
    def outliers(self) -> int:
        return sum(sum(s.outliers) for s in self.measured)


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
    initial: Mapping[int, Sequence[Value]] | None = None,
    label: Callable[[int], str] = str,
    budget: int | None = None,
    ends_check: Callable[[Sequence[float], Sequence[float]], tuple[str, str]] | None = None,
) -> HuntReport:
    """Search positions ``0..size-1`` (GOOD at 0, BAD at ``size - 1``) for the first bad one.

    ``expect`` (``"higher"`` / ``"lower"``): the direction BAD must differ from
    GOOD in; the other direction ends the hunt as ``no-step``.  ``on_round`` is
    called after each round (progress output).  ``skipped``: positions known
    not to be measurable (their patches cannot apply): never measured, still
    candidates.  ``initial``: launches already measured per position (they
    count in the posterior and in the budget, not in ``starts``; in the order
    given, before any round).  ``label`` names a position in the ``why`` of a
    range (the bisect passes the commit's short id).  ``budget``: the total
    launches (initial ones included) the hunt may use; default
    ``default_budget(size, max_launches)``.  ``ends_check(good, bad)``: a
    criterion GOOD's and BAD's launches must meet once they are told apart,
    ``("ok", "")``, ``("more", why)`` (launch both again) or ``("refuse", why)``
    (a ``no-step`` with that why).
    """
    if size < 2:
        raise ValueError(f"a hunt needs GOOD and BAD: size {size} < 2")
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if max_launches < 1:
        raise ValueError(f"max_launches must be >= 1, got {max_launches}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, got {alpha}")
    cap = default_budget(size, max_launches) if budget is None else budget
    if cap < 2:
        raise ValueError(f"budget must be >= 2 (GOOD and BAD), got {cap}")
    state = _State(size, noise, max_launches)
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

    def left() -> int:
        return cap - state.used

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
        model = state.model() if state.ready() else None
        return HuntReport(
            kind=kind, why=why, measured=tuple(state.sides(model)), skipped=tuple(sorted(state.skipped)),
            rounds=tuple(rounds), spread=model.spread if model else None, drift=model.drift() if model else None,
            failures=tuple(state.failures), budget=cap, **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    # 1. Endpoints: GOOD and BAD until the verdict tells them apart.
    ends: Verdict | None = None
    while True:
        for end, which in ((0, "GOOD"), (bad, "BAD")):
            if not state.values(end) and not state.can_launch(end):
                failed = state.failed.get(end, 0)
                tries = plural(failed, "launch", "launches")
                return report("no-step", f"{which} could not be measured ({tries} failed)", endpoints=ends)
        g_all, b_all = state.values(0), state.values(bad)
        if g_all and b_all:
            spread = state.endpoint_noise()
            g, g_unclear = _robust(g_all, spread)
            b, b_unclear = _robust(b_all, spread)
            ends = judge(g, b, threshold=min_effect, confidence=endpoint_confidence, noise=spread)
            # Only a conclusion that ends the hunt needs the ends confirmed: CONFIRM launches each, and no launch
            # that disagrees with the others of its end by more than an outlier would (one launch cannot decide).
            settled = min(len(g_all), len(b_all)) >= CONFIRM and not (g_unclear or b_unclear)
            can_more = state.can_launch(0) or state.can_launch(bad)
            if ends.call is Call.DIFFERENT:
                if expect is not None and ends.direction != expect and (settled or not can_more):
                    return report(
                        "no-step",
                        f"BAD is {ends.direction} than GOOD, not {expect}: not the regression being hunted",
                        endpoints=ends,
                    )
                if expect is None or ends.direction == expect:
                    state.sign = 1.0 if ends.direction == "higher" else -1.0
                    verdict, reason = ends_check(g, b) if ends_check is not None else ("ok", "")
                    if verdict == "ok":
                        break
                    state.sign = 0.0
                    if verdict == "refuse" or not can_more:
                        return report("no-step", reason, endpoints=ends)
            if ends.call is Call.SAME and (settled or not can_more):
                return report("no-step", f"GOOD and BAD are the same within ±{min_effect:.1%}", endpoints=ends)
            if not can_more:
                return report(
                    "no-step",
                    f"GOOD and BAD could not be told apart in {_each(len(g_all), len(b_all))} "
                    f"(ratio {_fmt_ratio(ends)}); to decide: "
                    f"{ends.next or 'more launches'}",
                    endpoints=ends,
                )
        if max_rounds is not None and len(rounds) >= max_rounds:
            return report("no-step", f"GOOD and BAD not told apart within {max_rounds} rounds", endpoints=ends)
        if left() <= 0:
            return report("no-step", f"the budget of {cap} launches was spent before GOOD and BAD were told apart",
                          endpoints=ends)  # fmt: skip
        asked: list[int] = []
        why: list[str] = []
        for _ in range(min(slots, 2, left())):
            pending = {p: asked.count(p) for p in (0, bad)}
            choice = min(
                (p for p in (0, bad) if state.can_launch(p, pending[p])),
                key=lambda p: (len(state.values(p)) + state.failed.get(p, 0) + pending[p], p),
                default=None,
            )
            if choice is None:
                break
            asked.append(choice)
            why.append("GOOD" if choice == 0 else "BAD")
        if slots > 2 and size > 2 and left() > len(asked):  # speculate: the middle, before the endpoints settle
            spots = ahead(size, min(slots - len(asked), left() - len(asked)), state.skipped)
            asked += [p for p, _ in spots]
            why += [w for _, w in spots]
        run(asked, why)

    # 2-3. Rounds over the posterior.
    checked_steps = False
    while True:
        model = state.model()
        post = model.posterior
        best = post.best_single()
        picks: list[tuple[int, str]] = []
        unconfirmed = ""
        if best is not None and best[1] >= 1 - alpha:
            k, mass = best
            picks = state.confirmations(k, model, slots)
            if not picks and not checked_steps:
                picks = state.step_checks(k, model, slots)
                state.step_used += len(picks)
                if not picks:
                    checked_steps = True
            if not picks:
                evidence, adjacent = state.evidence(k, alpha)
                if evidence.call is Call.DIFFERENT:
                    return report(
                        "found",
                        f"P(first bad) = {mass:.4f} >= {1 - alpha}; confirmed: without any one launch of "
                        f"{label(k - 1)} or {label(k)} it keeps >= {LOO_MASS}",
                        first_bad=k, lo=k, hi=k, probability=mass, endpoints=ends, evidence=evidence,
                        adjacent=adjacent, others=state.others(k, model),
                    )  # fmt: skip
                unconfirmed = (f"the plain interval of the launches from {label(k)} on against those before it "
                               f"does not exclude 1 ({evidence.why})")  # fmt: skip
                picks = [(p, f"evidence: {unconfirmed}") for p in (k - 1, k) if state.can_launch(p)][:slots]
        lo, hi = post.credible(alpha)
        if max_rounds is not None and len(rounds) >= max_rounds:
            return _range(report, state, model, (lo, hi), ends, f"{max_rounds} rounds spent", alpha)
        if left() <= 0:
            return _range(report, state, model, (lo, hi), ends, f"the budget of {cap} launches is spent", alpha)
        if not picks:
            picks = state.picks(slots, alpha, model)
        if best is not None and best[1] >= 1 - alpha and not picks:
            k = best[0]
            short = unconfirmed or f"no launch left at {label(k - 1)} or {label(k)} to leave any one out"
            return _range(report, state, model, (lo, hi), ends,
                          f"{label(k)} holds {best[1]:.4f} but could not be confirmed: {short}", alpha)  # fmt: skip
        if not picks:
            return _range(report, state, model, (lo, hi), ends, "no launch left could narrow it", alpha)
        picks = state.with_references(picks, slots, model)[: max(left(), 0)]
        run([p for p, _ in picks], [w for _, w in picks])


def _range(
    report: Callable[..., HuntReport],
    state: _State,
    model: _Model,
    bounds: tuple[int, int],
    ends: Verdict | None,
    reason: str,
    alpha: float,
) -> HuntReport:
    """A range answer, with why: what stopped the search, the measured commits whose side is not settled
    enough for an answer (P(bad) between ``alpha / 2`` and ``1 - alpha / 2``: a first bad commit needs the
    mass on both sides of it to miss by less than ``alpha`` together; at the cap, more launches would settle
    them), those that could not be measured, the most likely first bad commit with its posterior mass
    (short of ``1 - alpha``), and what would likely narrow it (``advice``)."""
    post = model.posterior
    lo, hi = bounds
    label = state.label
    unsettled = [p for p in state.measured_positions() if alpha / 2 < post.cdf(p) < 1 - alpha / 2]
    unclear = [p for p in unsettled if lo - 1 <= p <= hi]
    named = [f"{label(p)} (P(bad) {post.cdf(p):.4f}, {plural(len(state.values(p)), 'launch', 'launches')})"
             for p in unclear]  # fmt: skip
    capped = all(not state.can_launch(p) for p in unclear)
    skipped = [label(p) for p in sorted(state.skipped) if lo <= p <= hi]
    likely, mass = max(((p, post.mass_between(p, p)) for p in range(lo, hi + 1)), key=lambda pm: (pm[1], -pm[0]))
    parts = [reason]
    if named:
        at = f" at --max-launches {state.max_launches}" if capped else ""
        parts.append(f"unclear{at}: {', '.join(named)}")
    if skipped:
        parts.append(f"could not be measured: {', '.join(skipped)}")
    unmeasured = [p for p in range(lo, hi + 1) if p not in state.counts and p not in state.skipped]
    if unmeasured and not skipped:
        parts.append(f"{plural(len(unmeasured), 'commit')} in the range never measured")
    parts.append(f"most likely first bad: {label(likely)} at {mass:.4f} of the posterior ({1 - alpha:g} needed)")
    return report(
        "range", "; ".join(parts), lo=lo, hi=hi, probability=post.mass_between(lo, hi), endpoints=ends,
        likely=likely, likely_mass=mass, unclear=tuple(unclear), advice=state.advice(model, lo, hi, alpha),
    )  # fmt: skip


def ahead(size: int, count: int, skipped: Collection[int] = ()) -> list[tuple[int, str]]:
    """Up to ``count`` probes, each with why, for the round that first launches GOOD and BAD: no posterior exists
    before they have a launch each, so the slots left over speculate on evenly spaced positions."""
    spots = sorted({round(i * (size - 1) / (count + 1)) for i in range(1, count + 1)} - {0, size - 1})
    return [(p, "probe: evenly spaced, ahead of the endpoints") for p in spots if p not in skipped]


def _robust(values: Sequence[float], noise: Noise | None) -> tuple[list[float], bool]:
    """One end's launches without those the mixture would call outliers (farther than ``OUTLIER_Z`` spreads from
    the end's median), and whether that is unclear: two launches that far apart (which one is the outlier?), or
    most of them flagged."""
    if noise is None or len(values) < 2 or noise.sigma <= 0:
        return list(values), False
    logs = [math.log(v) for v in values]
    mid = float(np.median(logs))
    keep = [v for v, x in zip(values, logs, strict=True) if abs(x - mid) <= OUTLIER_Z * noise.sigma]
    if len(values) == 2:
        return list(values), len(keep) < 2
    return (keep, False) if len(keep) * 2 > len(values) else (list(values), True)


def launches_to_decide(effect: float, sigma: float, alpha: float, power: float = 0.9) -> int:
    """Launches of one commit for its side to be settled to ``alpha`` with probability ``power``, when its level
    is ``effect`` (log scale) from the other side's and the launch spread is ``sigma``: each launch adds on average
    ``effect**2 / (2 sigma**2)`` to the log likelihood ratio, with spread ``|effect| / sigma``."""
    if sigma <= 0:
        return 1
    if effect == 0:
        return 10**6
    gain = effect * effect / (2 * sigma * sigma)
    spread = abs(effect) / sigma
    target = math.log((1 - alpha) / alpha)
    z = float(stats.norm.ppf(power))
    # n * gain - z * sqrt(n) * spread >= target: a quadratic in sqrt(n).
    root = (z * spread + math.sqrt(z * z * spread * spread + 4 * gain * target)) / (2 * gain)
    return max(1, math.ceil(root * root))


def _each(good: int, bad: int) -> str:
    if good == bad:
        return f"{plural(good, 'launch', 'launches')} each"
    return f"{plural(good, 'launch', 'launches')} and {plural(bad, 'launch', 'launches')}"


def _fmt_ratio(v: Verdict) -> str:
    if v.ratio is None:
        return "unknown"
    if v.low is None or v.high is None:
        return f"{v.ratio:.3f}"
    return f"{v.ratio:.3f} [{v.low:.3f}, {v.high:.3f}]"


class _State:
    """Every launch (position, order, log value), the failures per position, and the skipped positions."""

    def __init__(self, size: int, noise: Noise | None, max_launches: int) -> None:
        self.size = size
        self.noise = noise
        self.max_launches = max_launches
        self.raw: dict[int, list[float]] = {}
        self.orders: dict[int, list[int]] = {}
        self.counts: dict[int, int] = {}
        self.failed: dict[int, int] = {}
        self.failures: list[Failure] = []
        self.skipped: set[int] = set()
        self.used = 0  # launches asked for, failed ones included (the budget's count)
        self.sign = 0.0  # -1: BAD lower than GOOD, +1: higher; 0 until the endpoints are told apart
        self.label: Callable[[int], str] = str  # how a position is named in the reasons
        self._model: _Model | None = None
        self._model_at = -1
        self.step_used = 0  # launches asked for to decide a suspected second step

    def add(self, pos: int, value: Value) -> None:
        order = self.used
        self.used += 1
        if pos in self.skipped:
            return
        if isinstance(value, GiveUp) or value is None or not (math.isfinite(value) and value > 0):
            self.failed[pos] = MAX_FAILURES if isinstance(value, GiveUp) else self.failed.get(pos, 0) + 1
            self.failures.append(Failure(pos, order))
            if self.failed[pos] >= MAX_FAILURES and not self.counts.get(pos):
                self.skipped.add(pos)
            return
        self.raw.setdefault(pos, []).append(value)
        self.orders.setdefault(pos, []).append(order)
        self.counts[pos] = self.counts.get(pos, 0) + 1

    def can_launch(self, pos: int, pending: int = 0) -> bool:
        """Whether ``pos`` may be launched again: not skipped, under ``max_launches`` and ``MAX_FAILURES``."""
        if pos in self.skipped or self.failed.get(pos, 0) >= MAX_FAILURES:
            return False
        return self.counts.get(pos, 0) + pending < self.max_launches

    def values(self, pos: int) -> list[float]:
        return self.raw.get(pos, [])

    def measured_positions(self) -> list[int]:
        return sorted(self.counts)

    def ready(self) -> bool:
        return 0 in self.counts and self.size - 1 in self.counts and self.sign != 0

    def endpoint_noise(self) -> Noise | None:
        """The spread that judges GOOD against BAD: the prior, floored by the values' resolution."""
        floor = resolution_floor([v for p in (0, self.size - 1) for v in self.values(p)])
        if self.noise is None:
            return None
        if self.noise.sigma >= floor:
            return self.noise
        return Noise(sigma=floor, df=self.noise.df)

    def model(self, exclude: tuple[int, int] | None = None, inflate: float = 1.0) -> _Model:
        """The fitted model over every launch (cached per launch count), or without one launch
        (``exclude``: position and index among its launches), or with its posterior at ``inflate`` times the
        fitted spread."""
        plain = exclude is None and inflate == 1.0
        if plain and self._model is not None and self._model_at == self.used:
            return self._model
        pos, x, t = [], [], []
        for p in self.measured_positions():
            for i, (value, order) in enumerate(zip(self.raw[p], self.orders[p], strict=True)):
                if exclude == (p, i):
                    continue
                pos.append(p)
                x.append(math.log(value))
                t.append(order)
        floor = resolution_floor([v for p in self.counts for v in self.raw[p]])
        model = _Model.fit(np.array(pos), np.array(x), np.array(t, dtype=float), self.size, self.sign,
                           self.noise, floor, inflate)  # fmt: skip
        if plain:
            self._model, self._model_at = model, self.used
        return model

    def sides(self, model: _Model | None = None) -> list[Side]:
        if model is None and self.ready():
            model = self.model()
        out = []
        for p in self.measured_positions():
            flags = model.outlier_flags(p) if model is not None else ()
            p_bad = model.posterior.cdf(p) if model is not None else math.nan
            out.append(Side(p, tuple(self.raw[p]), p_bad, tuple(flags), tuple(self.orders[p])))
        return out

    def confirmations(self, k: int, model: _Model, slots: int) -> list[tuple[int, str]]:
        """The launches that must come before ``k`` is named: up to ``CONFIRM`` launches each at ``k - 1`` and
        ``k``, then one more at a commit whose launch, left out, lets ``k`` fall below ``LOO_MASS``."""
        chosen: list[tuple[int, str]] = []
        for p in (k - 1, k):
            if self.counts.get(p, 0) < CONFIRM and self.can_launch(p):
                chosen.append(
                    (p, f"confirm: {self.label(p)} has {plural(self.counts.get(p, 0), 'launch', 'launches')}")
                )
        if chosen or any(self.counts.get(p, 0) < CONFIRM for p in (k - 1, k)):
            return chosen[:slots]
        # The launch whose absence hurts most shows where the evidence is thinnest: one more launch there, at
        # the same commit (its neighbour's launches say nothing of how that commit itself measured).
        worst: tuple[float, int, int] | None = None
        for p in (k - 1, k):
            for i in range(self.counts[p]):
                kept = self.model(exclude=(p, i)).posterior.single(k)
                if kept < LOO_MASS and (worst is None or kept < worst[0]):
                    worst = (kept, p, i)
        if worst is None:
            return self.spread_check(k, model)
        kept, p, i = worst
        where = [q for q in (p, (2 * k - 1) - p) if self.can_launch(q)]
        if not where:
            return []
        return [(where[0], f"confirm: without launch {i + 1} of {self.label(p)}, {self.label(k)} keeps {kept:.3f}")]

    def spread_check(self, k: int, model: _Model) -> list[tuple[int, str]]:
        """One more launch at ``k - 1`` or ``k`` while ``k`` would fall below ``LOO_MASS`` at the spread's
        one-sided 90 % upper bound given its degrees of freedom.

        The posterior is only as sure as its spread: a prior measured on a quieter day, and a hunt whose own
        launches happened to scatter little, both make a spread too small, and then a boundary resting on a
        few launches reads as certain.  The spread is an estimate from ``df`` degrees of freedom; the answer
        must hold at any spread the data does not rule out (a chi-square bound), which costs nothing where
        the step is several spreads and a launch or two where it is not."""
        df = max(model.spread.df, 1.0)
        upper = math.sqrt(df / float(special.chdtri(df, 0.90)))  # chdtri(df, q): the chi-square's 1-q quantile
        kept = self.model(inflate=upper).posterior.single(k)
        if kept >= LOO_MASS:
            return []
        where = sorted((q for q in (k - 1, k) if self.can_launch(q)), key=lambda q: (self.counts[q], -q))
        if not where:
            return []
        return [(where[0], f"confirm: at the spread's upper bound {model.spread.sigma * upper:.2%} "
                           f"({df:.0f} df), {self.label(k)} keeps {kept:.3f}")]  # fmt: skip

    def step_checks(self, k: int, model: _Model, slots: int) -> list[tuple[int, str]]:
        """More launches where a second step is suspected but not clear (``STEP_SUSPECT <= |z|`` within a side, and
        ``z`` below ``STEP_Z`` or one launch on a side of the split): one at the commit either side of the split
        with fewer launches, at most ``STEP_EXTRA`` extra; or at GOOD (BAD) on one launch when its own split from
        the rest of its side reaches ``END_SUSPECT`` the hunted way."""
        chosen: list[tuple[int, str]] = []
        slots = min(slots, STEP_BUDGET - self.step_used)
        for lo, hi in ((0, k - 1), (k, self.size - 1)):
            if slots <= 0:
                break
            found = model.side_step(lo, hi)
            if found is not None and found.clear:
                continue
            end = lo if lo == 0 else hi
            if self.counts.get(end, 0) == 1 and self.can_launch(end) and len(chosen) < slots:
                # GOOD or BAD on one launch: its split from the rest of its side is the one a single launch
                # decides, and the end is the commit a second step leaves alone on its level.
                at = [f for f in model.side_splits(lo, hi) if end in f[:2]]
                if at and at[0][2] * self.sign >= END_SUSPECT:  # the hunted way: a second regression
                    name = "GOOD" if end == 0 else "BAD"
                    chosen.append((end, f"second step? {name} on one launch against the rest of its side at "
                                        f"z = {at[0][2]:.1f}"))  # fmt: skip
                    continue
            if found is None or abs(found.z) < STEP_SUSPECT:
                continue
            for p in sorted((found.a, found.b), key=lambda q: self.counts[q]):
                base = CONFIRM if p in (k - 1, k) else 1
                if self.can_launch(p) and self.counts[p] < base + STEP_EXTRA and len(chosen) < slots:
                    what = f"{self.label(found.a)} vs {self.label(found.b)} at z = {found.z:.1f}"
                    chosen.append((p, f"second step? {what}"))
                    break
        return chosen

    def others(self, k: int, model: _Model) -> tuple[OtherStep, ...]:
        out = []
        for side, lo, hi in (("before", 0, k - 1), ("after", k, self.size - 1)):
            found = model.side_step(lo, hi)
            if found is not None and found.clear:
                same = (found.diff > 0) == (self.sign > 0)
                out.append(OtherStep(side, found.lo + 1, found.hi, math.exp(found.diff), found.z, same))
        return tuple(out)

    def evidence(self, k: int, alpha: float) -> tuple[Verdict, Verdict]:
        """The plain two-sided intervals behind an answer: every launch after ``k`` against those before it, and
        ``k``'s against ``k - 1``'s, without the launches the model treats as outliers."""
        model = self.model()
        kept = {p: [v for v, out in zip(self.values(p), model.outlier_flags(p), strict=True) if not out]
                for p in self.measured_positions()}  # fmt: skip
        left = [v for p, vs in kept.items() if p < k for v in vs]
        right = [v for p, vs in kept.items() if p >= k for v in vs]
        noise = Noise(sigma=model.spread.sigma, df=max(1, round(model.spread.df)))
        evidence = judge(left, right, threshold=0.0, confidence=1 - alpha, noise=noise)
        adjacent = judge(kept[k - 1], kept[k], threshold=0.0, confidence=0.99, noise=noise)
        return evidence, adjacent

    def picks(self, slots: int, alpha: float, model: _Model) -> list[tuple[int, str]]:
        """Up to ``slots`` positions for the next round, each with why."""
        post = model.posterior
        pending: dict[int, int] = {}
        chosen: list[tuple[int, str]] = []

        def room(p: int) -> bool:
            return self.can_launch(p, pending.get(p, 0))

        doubt = {p: min(c, 1 - c) for p, c in zip(post.marks, post.cum, strict=True)}  # cdf(marks[j]) = cum[j]
        unclear = sorted((p for p in post.marks if 0 < p < self.size - 1 and doubt[p] > alpha * 1e-3),
                         key=lambda p: -doubt[p])  # fmt: skip
        for i in range(1, slots + 1):
            q = i / (slots + 1)
            c = post.quantile(q)
            if c is not None and c not in self.counts and room(c):
                chosen.append((c, f"probe: the posterior's {q:.0%} point"))
                pending[c] = pending.get(c, 0) + 1
                continue
            again = next((p for p in unclear if room(p)), None)
            if again is None:
                continue
            unclear.remove(again)
            unclear.append(again)  # the next slot goes to the next most unclear commit first
            after = plural(self.counts[again], "launch", "launches")
            chosen.append((again, f"unclear: P(bad) {post.cdf(again):.3f} after {after}"))
            pending[again] = pending.get(again, 0) + 1
        if not chosen:
            # Every measured commit is settled or at its cap, yet no commit holds the mass: probe the unmeasured
            # commit of the credible range nearest to the posterior's median.
            lo, hi = post.credible(alpha)
            median = post.quantile(0.5) or lo
            spare = [p for p in range(lo, hi + 1) if p not in self.counts and room(p)]
            if spare:
                c = min(spare, key=lambda p: (abs(p - median), p))
                chosen.append((c, "probe: unmeasured, in the credible range"))
        return chosen

    def with_references(self, picks: list[tuple[int, str]], slots: int, model: _Model) -> list[tuple[int, str]]:
        """The round's picks, with GOOD or BAD launched again where the drift needs it: in each round with slots
        to spare while the drift estimate is not clearly zero, and on any hunt when a side has had no reference
        launch for ``REF_EVERY`` launches (or, with a suspected drift, for half of that)."""
        suspect = abs(model.drift_z) >= DRIFT_SUSPECT
        every = REF_EVERY // 2 if suspect else REF_EVERY
        out = list(picks)
        asked = {p for p, _ in out}
        for ref, name in sorted(((0, "GOOD"), (self.size - 1, "BAD")), key=lambda r: self.last_order(r[0])):
            if ref in asked or not self.can_launch(ref):
                continue
            stale = self.used - self.last_order(ref) > every
            spare = slots > 1 and suspect and len(out) < slots
            if stale or spare:
                why = (
                    f"reference: {name}, for the drift (z = {model.drift_z:.1f})"
                    if suspect
                    else (f"reference: {name}, not launched in {self.used - self.last_order(ref) - 1} launches")
                )
                if len(out) >= slots:
                    out[-1] = (ref, why)
                else:
                    out.append((ref, why))
                asked.add(ref)
                break
        return out

    def last_order(self, pos: int) -> int:
        orders = self.orders.get(pos)
        return orders[-1] if orders else -1

    def advice(self, model: _Model, lo: int, hi: int, alpha: float) -> str:
        """What would likely narrow a range: launches at the commits that border the credible range's most
        likely split, from ``launches_to_decide`` at the fitted step and spread."""
        effect = abs(model.step)
        sigma = model.spread.sigma
        if effect <= 0:
            return ""
        need = launches_to_decide(effect, sigma, alpha)
        near = list(range(max(lo - 1, 0), hi + 1))
        measured = [p for p in near if p in self.counts]
        more = sum(max(0, need - self.counts.get(p, 0)) for p in measured[:6])
        unmeasured = [p for p in near if p not in self.counts and p not in self.skipped]
        more += need * min(len(unmeasured), max(1, math.ceil(math.log2(len(unmeasured) + 1))))
        if more <= 0:
            return ""
        where = f"{self.label(near[0])}..{self.label(near[-1])}" if len(near) > 1 else self.label(near[0])
        cap = f" (raise --max-launches to at least {need})" if need > self.max_launches else ""
        return (f"about {plural(more, 'more launch', 'more launches')} at {where} would likely decide "
                f"({need} per commit for a {math.expm1(effect):.1%} step at {sigma:.2%} spread){cap}")  # fmt: skip


@dataclass(frozen=True)
class _SideStep:
    """The clearest step within one side of the answer: the commits that bound where it lies (``lo``, ``hi``), the
    two either side of its most likely split (``a``, ``b``), its z, its size (log scale), and the launches on the
    split's thinner side (``least``: a step with one launch on a side is one launch's word, never reported)."""

    lo: int
    hi: int
    a: int
    b: int
    z: float
    diff: float
    least: float

    @property
    def clear(self) -> bool:
        return abs(self.z) >= STEP_Z and self.least >= CONFIRM - 0.5


class _Model:
    """The contamination-mixture step model fitted to every launch: the posterior over splits, the spread,
    the drift and the launch weights of the most likely split."""

    def __init__(self) -> None:
        self.posterior: _Posterior
        self.spread: Spread
        self.split = 0  # index of the most likely split
        self.split_at = 0  # the last measured position on GOOD's side under it
        self.drift_beta = 0.0
        self.drift_se = math.inf
        self.weights: np.ndarray
        self.pos: np.ndarray
        self.x: np.ndarray
        self.t: np.ndarray
        self.mu_left = 0.0
        self.mu_right = 0.0
        self.drift_on = False  # the drift term is in the fit (its estimate was clear without it)
        self.noise: Noise | None = None
        self.floor = 0.0

    @property
    def drift_z(self) -> float:
        if not math.isfinite(self.drift_se) or self.drift_se <= 0:
            return 0.0
        return self.drift_beta / self.drift_se

    @property
    def step(self) -> float:
        return self.mu_right - self.mu_left

    @classmethod
    def fit(
        cls,
        pos: np.ndarray,
        x: np.ndarray,
        t: np.ndarray,
        size: int,
        sign: float,
        noise: Noise | None,
        floor: float,
        inflate: float = 1.0,
    ) -> _Model:
        marks = np.unique(pos)
        if len(marks) < 2 or marks[0] != 0 or marks[-1] != size - 1:
            raise ValueError("the posterior needs GOOD and BAD measured")
        m = cls()
        m.pos, m.x, m.t = pos, x, (t - t.mean()) / ORDER_SCALE
        m.noise, m.floor = noise, floor
        index = np.searchsorted(marks, pos)  # each launch's mark
        can_drift = len(x) >= DRIFT_FROM and len(np.unique(t)) >= 3
        left = index[None, :] <= np.arange(len(marks) - 1)[:, None]  # splits x launches: on GOOD's side
        sigma = _start_sigma(noise, x, index, floor)
        start = _SplitFit.start(left, x, index)
        drift = False
        while True:
            fit, logs, best, sigma, spread = _fit_all(
                start, left, x, m.t, marks, sigma, sign, noise, floor, drift, index
            )
            m.drift_beta, m.drift_se = fit.drift_of(best, left, m.t, sigma)
            # The drift term is fitted only where the data asks for it: it costs the search precision (a level
            # and a trend are told apart only by launches of one side at different times).
            if drift or not can_drift or abs(m.drift_z) < DRIFT_Z:
                break
            drift = True
        m.split = best
        m.split_at = int(marks[best])
        m.spread = spread
        m.weights = fit.weights[best]
        m.mu_left, m.mu_right = float(fit.mu_l[best]), float(fit.mu_r[best])
        m.drift_on = drift
        if inflate != 1.0:  # the same fit, its posterior at a wider spread (the confirmation's spread check)
            logs = fit.logs(left, marks, sigma * inflate, sign)
        else:
            logs = _marginal_logs(fit, left, marks, sigma, sign, noise, floor)
        probs = np.exp(logs - logs.max())
        probs /= probs.sum()
        m.posterior = _Posterior(marks=tuple(int(v) for v in marks), masses=tuple(probs.tolist()))
        return m

    def outlier_flags(self, p: int) -> list[bool]:
        return [bool(w < OUTLIER_WEIGHT) for w in self.weights[self.pos == p]]

    @property
    def correction(self) -> float:
        """The drift the levels are corrected for: the fitted one, only where the drift term is in the fit."""
        return self.drift_beta if self.drift_on else 0.0

    @property
    def replicate_sigma(self) -> float:
        """The spread of repeated launches of one commit (pooled with the prior): the step model's spread also
        holds whatever a second step adds to a side, which would hide that step from ``side_step``."""
        ss, df = self._replicates(())
        if self.noise is not None:
            ss += self.noise.df * self.noise.sigma**2
            df += self.noise.df
        if df < 2:
            return self.spread.sigma
        return max(math.sqrt(ss / df) * _widen(df), self.floor, FLOOR)

    def _prior_too_small(self) -> bool:
        """Whether the repeated launches scatter more than the prior allows (the variance-ratio test at
        ``STALE_P``).  Not the spread's ``stale``: the step model's spread also holds a second step, and a test
        on it would call the prior stale exactly where a second step is to be judged."""
        if self.noise is None:
            return False
        ss, df = self._replicates(())
        return _rejects(self.noise, ss, df)

    def _replicates(self, leave: Collection[int]) -> tuple[float, float]:
        """The weighted sum of squares of repeated launches about their commit's mean, and its degrees of freedom,
        over the measured commits not in ``leave``."""
        ss, df = 0.0, 0.0
        for p in np.unique(self.pos).tolist():
            x = self.x[self.pos == p] - self.correction * self.t[self.pos == p]
            if len(x) < 2 or p in leave:
                continue
            w = _responsibilities(x - float(np.median(x)), self.spread.sigma)
            mean = float(np.sum(w * x) / np.sum(w))
            ss += float(np.sum(w * (x - mean) ** 2))
            df += float(np.sum(w)) - 1
        return ss, df

    def side_splits(self, lo: int, hi: int) -> list[tuple[int, int, float, float, float]]:
        """Every split between the measured commits of ``lo..hi`` (one side of the answer) with launches on both
        sides of it: the measured commits either side, its z, its size (log scale) and the launches (weighted) on
        its thinner side.  Each commit's launches
        are weighted by the mixture against the commit's own median (an outlier of one commit cannot fake a
        step), the drift removed; the z is Student's t at the split's pooled spread, as a normal z (``_as_normal``)."""
        marks = [p for p in np.unique(self.pos).tolist() if lo <= p <= hi]
        if len(marks) < 2:
            return []
        sigma = self.replicate_sigma
        sums, counts, squares = [], [], []
        for p in marks:
            x = self.x[self.pos == p] - self.correction * self.t[self.pos == p]
            w = _responsibilities(x - float(np.median(x)), sigma)
            sums.append(float(np.sum(w * x)))
            counts.append(float(np.sum(w)))
            squares.append(float(np.sum(w * x * x)))
        cs, cn, cq = np.cumsum(sums), np.cumsum(counts), np.cumsum(squares)
        # Each split's spread pools the side's scatter about the split's two levels (no step of the split is in
        # it), the repeated launches of the other side, and the prior unless that scatter, or the repeated
        # launches, reject it.
        split_ss, split_df = self._replicates(marks)
        prior = None if self._prior_too_small() else self.noise
        out = []
        for j in range(len(marks) - 1):
            nl, nr = float(cn[j]), float(cn[-1] - cn[j])
            if nl < 0.5 or nr < 0.5:
                continue
            sl, sr = float(cs[j]), float(cs[-1] - cs[j])
            diff = sr / nr - sl / nl
            spread, df = split_ss + float(cq[-1]) - sl * sl / nl - sr * sr / nr, split_df + nl + nr - 2
            if prior is not None and not _rejects(prior, spread, df):
                spread, df = spread + prior.df * prior.sigma**2, df + prior.df
            if df < 1 or spread <= 0:
                continue
            t = diff / (math.sqrt(spread / df) * math.sqrt(1 / nl + 1 / nr))
            out.append((marks[j], marks[j + 1], _as_normal(t, df), diff, min(nl, nr)))
        return out

    def side_step(self, lo: int, hi: int) -> _SideStep | None:
        """The clearest step among the measured commits of ``lo..hi`` (``side_splits``): where it lies (the
        central 99 % of the splits' posterior, as the commits that bound it), its z and its size (log scale).
        Every split between measured commits is tried (``STEP_Z`` is high enough for the handful of splits a
        side has)."""
        found = self.side_splits(lo, hi)
        best = max(found, key=lambda f: abs(f[2]), default=None)
        splits = [(j, f[2] * f[2] / 2 + math.log(f[1] - f[0])) for j, f in enumerate(found)]
        if best is None:
            return None
        # Where the step lies: the splits' posterior under one step in the side (likelihood ratio exp(z^2 / 2), a
        # uniform prior over commits), its central 99 %: the clearest split alone is often a neighbour of the true one.
        top = max(w for _, w in splits)
        mass = [(j, math.exp(w - top)) for j, w in splits]
        total = sum(m for _, m in mass)
        run, first, last = 0.0, mass[0][0], mass[-1][0]
        for j, m in mass:
            if run / total <= 0.005 < (run + m) / total:
                first = j
            if run / total < 0.995 <= (run + m) / total:
                last = j
            run += m
        return _SideStep(found[first][0], found[last][1], best[0], best[1], best[2], best[3], best[4])

    def drift(self) -> Drift:
        count = len(self.x)
        span = float(self.t.max() - self.t.min()) if count else 0.0
        total = math.expm1(self.drift_beta * span)
        z = self.drift_z
        flagged = abs(z) >= DRIFT_Z
        if flagged:
            which = "slower" if total < 0 else "faster"
            why = (f"the launches drift: {abs(total):.1%} {which} from the first launch to the last "
                   f"(z = {z:.1f}); the fit corrects the levels for it")  # fmt: skip
        else:
            why = f"no clear drift ({total:+.1%} over {count} launches, z = {z:.1f})"
        return Drift(total=total, z=z, launches=count, flagged=flagged, why=why)


def _fit_all(
    start: _SplitFit,
    left: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
    marks: np.ndarray,
    sigma: float,
    sign: float,
    noise: Noise | None,
    floor: float,
    drift: bool,
    index: np.ndarray,
) -> tuple[_SplitFit, np.ndarray, int, float, Spread]:
    """Every split fitted with the spread of the most likely split, refitted while that spread moves."""
    fit, logs, best, spread = start, np.zeros(0), 0, Spread(sigma, 0.0, "")
    groups = _Groups.of(index, len(marks))
    for _ in range(3):
        fit = start.refine(left, x, t, sigma, drift, groups)
        logs = fit.logs(left, marks, sigma, sign)
        best = int(np.argmax(logs))
        new_sigma, spread = _spread(fit.resid[best], fit.weights[best], noise, floor, 3 if drift else 2, sigma)
        moved = abs(new_sigma - sigma) > 0.05 * sigma
        sigma = new_sigma
        if not moved:
            break
    return fit, logs, best, sigma, spread


def _marginal_logs(
    fit: _SplitFit, left: np.ndarray, marks: np.ndarray, center: float, sign: float, noise: Noise | None, floor: float
) -> np.ndarray:
    """Each split's log posterior with the spread integrated out rather than fixed at its estimate: the mixture
    likelihood of every launch on a grid of spreads around the fitted one, weighed by the noise prior's scaled
    inverse chi-square (its sigma and degrees of freedom; Jeffreys' 1 / sigma without a prior).

    Why: a posterior at one spread is as sure as that spread is right, and the spread is an estimate.  A prior
    from a quieter day, or a hunt whose launches happened to scatter little, made a boundary on a few launches
    read as 99.9 % certain.  Integrated, the launches and the prior weigh each spread by how well it explains
    them, and a boundary must hold across the spreads they allow (400 seeds, prior at half the truth, 512
    commits, d = 1.5 sigma: 1.5 % wrong hunts at the fitted spread, 0.5 % integrated)."""
    grid = np.maximum(center * np.exp(np.linspace(-1.2, 1.6, MARGINAL_POINTS)), max(floor, FLOOR))
    rows = []
    for spread in grid.tolist():
        if noise is not None:
            prior = -(noise.df + 1) * math.log(spread) - noise.df * noise.sigma**2 / (2 * spread * spread)
        else:
            prior = -math.log(spread)
        rows.append(fit.logs(left, marks, spread, sign) + prior + math.log(spread))  # d sigma = sigma d log sigma
    stack = np.array(rows)
    top = stack.max(axis=0)
    return top + np.log(np.exp(stack - top).sum(axis=0))


def _start_sigma(noise: Noise | None, x: np.ndarray, index: np.ndarray, floor: float) -> float:
    """A first spread for the weights: the prior, else the median absolute deviation within commits."""
    if noise is not None:
        return max(noise.sigma, floor, FLOOR)
    devs = []
    for j in np.unique(index):
        group = x[index == j]
        if len(group) >= 2:
            devs.extend(np.abs(group - np.median(group)).tolist())
    if devs:
        return max(1.4826 * float(np.median(devs)) * 1.5, floor, FLOOR)
    return max(float(np.std(x)) / 2, floor, 1e-3)


def _responsibilities(resid: np.ndarray, sigma: float) -> np.ndarray:
    """Each launch's posterior weight of the Gaussian part of the mixture."""
    core = (1 - EPS) * np.exp(-0.5 * (resid / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    return core / (core + EPS / OUTLIER_WIDTH)


def _spread(
    resid: np.ndarray, weights: np.ndarray, noise: Noise | None, floor: float, params: int, sigma: float
) -> tuple[float, Spread]:
    """The spread from the weighted residuals, pooled with the prior; the prior checked by a variance ratio.

    The hunt's own spread is what checks the prior, so it must not lean on it: the mixture's weights come from
    the spread in use (``sigma``, the prior at first), and a prior half the truth would make ordinary launches
    two of its spreads out look like outliers, shrink the hunt's own estimate toward the prior and hide the very
    staleness the check is for.  So the own estimate weighs each residual at the larger of ``sigma`` and the
    residuals' robust scale (1.4826 x their median absolute value), which a real outlier, a few launches in a
    hundred, does not move."""
    robust = 1.4826 * float(np.median(np.abs(resid))) if len(resid) else 0.0
    if robust > sigma:
        weights = np.maximum(weights, _responsibilities(resid, robust))  # a restored third level keeps its 1
    ss = float(np.sum(weights * resid * resid))
    df = float(np.sum(weights)) - params
    own = math.sqrt(ss / df) if df >= 1 else None
    lowest = max(floor, FLOOR)
    if noise is None:
        if own is None:
            sigma = max(float(np.std(resid)) * 2, lowest, 1e-3)
            return sigma, Spread(sigma, max(df, 0.0), "no prior and no spread of its own yet: a wide guess")
        sigma = max(own * _widen(df), lowest)
        return sigma, Spread(sigma, df, f"the hunt's own launches ({df:.0f} df; no noise prior)", hunt=own)
    prior_ss = noise.df * noise.sigma**2
    pooled_df = noise.df + max(df, 0.0)
    pooled = math.sqrt((prior_ss + ss) / pooled_df) if pooled_df > 0 else noise.sigma
    if own is not None and df >= 2:
        ratio = own**2 / max(noise.sigma**2, lowest**2)
        p = float(special.fdtrc(df, noise.df, ratio))  # the F distribution's survival function
        if p < STALE_P:
            sigma = max(own * _widen(df), noise.sigma, lowest)
            source = (f"the hunt's own launches, {own:.2%} ({df:.0f} df): the noise prior {noise.sigma:.2%} is too "
                      f"small for them (variance ratio {ratio:.1f}, p = {p:.1g})")  # fmt: skip
            return sigma, Spread(sigma, df, source, prior=noise.sigma, hunt=own, stale=True)
    if own is not None and df >= OWN_FROM and own > pooled:
        # The hunt's launches scatter more than the prior says: the larger spread is the honest one (a prior
        # from a quieter day must not make the hunt's own launches look decisive).
        sigma = max(own * _widen(df), lowest)
        source = (f"the hunt's own launches, {own:.2%} ({df:.0f} df), wider than the noise prior "
                  f"{noise.sigma:.2%} ({noise.df} df) pooled with them")  # fmt: skip
        return sigma, Spread(sigma, df, source, prior=noise.sigma, hunt=own)
    sigma = max(pooled * _widen(pooled_df), lowest)
    source = f"the noise prior {noise.sigma:.2%} ({noise.df} df) pooled with the hunt's launches"
    return sigma, Spread(sigma, pooled_df, source, prior=noise.sigma, hunt=own)


def _rejects(noise: Noise, ss: float, df: float) -> bool:
    """Whether a sum of squares of ``df`` degrees of freedom scatters more than the prior allows: the variance-ratio
    test at ``STALE_P`` (fewer than two degrees of freedom reject nothing)."""
    if df < 2 or ss <= 0:
        return False
    ratio = (ss / df) / max(noise.sigma**2, FLOOR**2)
    return float(special.fdtrc(df, noise.df, ratio)) < STALE_P


def _as_normal(t: float, df: float) -> float:
    """Student's t at ``df`` as the normal z of the same tail: a spread from few degrees of freedom makes a large t
    common, and ``STEP_Z`` is a normal z (at 20 df, t = 3.6 is z = 3.1)."""
    if df >= 1000:
        return t
    tail = float(special.stdtr(df, -abs(t)))
    return math.copysign(-float(special.ndtri(tail)), t) if tail > 0 else t


def _widen(df: float) -> float:
    """Student's 97.5 % quantile over the normal's at ``df``: a spread from few launches is widened by it."""
    if df >= 200:
        return 1.0
    return float(special.stdtrit(max(df, 1.0), 0.975)) / 1.959963984540054


@dataclass(frozen=True)
class _Groups:
    """The launches of each measured commit (contiguous: launches are ordered by position).

    An outlier is a launch event: one launch of a commit far from the others.  A commit whose launches agree
    with each other and all sit far from a side's level is no outlier but a level of its own (a second step, or
    the wrong split): its launches keep their weight, so that the spread, not the outlier term, pays for them."""

    starts: np.ndarray  # index of each commit's first launch
    counts: np.ndarray  # launches per commit

    @classmethod
    def of(cls, index: np.ndarray, marks: int) -> _Groups:
        counts = np.bincount(index, minlength=marks)
        return cls(np.concatenate(([0], np.cumsum(counts)[:-1])), counts)

    def agreeing(self, x: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """Per commit: whether it has two launches or more, all within ``OUTLIER_Z`` spreads of its median; and
        that median."""
        ok = np.zeros(len(self.counts), dtype=bool)
        medians = np.zeros(len(self.counts))
        for j, (a, n) in enumerate(zip(self.starts.tolist(), self.counts.tolist(), strict=True)):
            group = x[a : a + n]
            medians[j] = float(np.median(group))
            if n >= 2:
                ok[j] = bool(np.all(np.abs(group - medians[j]) <= OUTLIER_Z * sigma))
        return ok, medians

    def kept(
        self, w: np.ndarray, agree: tuple[np.ndarray, np.ndarray], mu_l: np.ndarray, mu_r: np.ndarray, sigma: float
    ) -> np.ndarray:
        """The weights, with those of an agreeing commit far from both of a split's levels restored (a third
        level; one near the other side's level is evidence against the split and keeps its outlier weight)."""
        ok, medians = agree
        if not ok.any():
            return w
        far = (np.abs(medians[None, :] - mu_l[:, None]) > OUTLIER_Z * sigma) & (
            np.abs(medians[None, :] - mu_r[:, None]) > OUTLIER_Z * sigma
        )
        mean = np.add.reduceat(w, self.starts, axis=1) / np.maximum(self.counts, 1)
        restore = np.repeat((mean < OUTLIER_WEIGHT) & ok[None, :] & far, self.counts, axis=1)
        return np.where(restore, 1.0, w)


@dataclass
class _SplitFit:
    """Every split's fit at once (rows: splits; columns: launches): the two levels and the drift, each launch's
    residual and its weight (the responsibility of the mixture's Gaussian part), by EM from the sides' medians.
    Each split is fitted on its own, so a launch is an outlier only where it is far from that split's levels."""

    mu_l: np.ndarray
    mu_r: np.ndarray
    beta: np.ndarray
    resid: np.ndarray
    weights: np.ndarray
    info: np.ndarray  # the drift's information per split (0 without drift)

    @classmethod
    def start(cls, left: np.ndarray, x: np.ndarray, index: np.ndarray) -> _SplitFit:
        """Every split starts from GOOD's and BAD's medians: GOOD is on the left of every split and BAD on the
        right, so EM climbs to the levels the endpoints anchor, and a launch far from them is an outlier."""
        rows = left.shape[0]
        mu_l = np.full(rows, float(np.median(x[index == 0])))
        mu_r = np.full(rows, float(np.median(x[index == index.max()])))
        zeros = np.zeros(rows)
        return cls(mu_l, mu_r, zeros, np.zeros(left.shape), np.ones(left.shape), zeros)

    def refine(
        self, left: np.ndarray, x: np.ndarray, t: np.ndarray, sigma: float, drift: bool, groups: _Groups
    ) -> _SplitFit:
        mu_l, mu_r, beta = self.mu_l, self.mu_r, self.beta
        med_l, med_r = mu_l, mu_r
        info = np.zeros_like(mu_l)
        agree = groups.agreeing(x, sigma)
        for step in range(EM_STEPS):
            resid = x[None, :] - np.where(left, mu_l[:, None], mu_r[:, None]) - beta[:, None] * t[None, :]
            w = groups.kept(_responsibilities(resid, sigma), agree, mu_l, mu_r, sigma)
            wl_all, wr_all = w * left, w * ~left
            wl, wr = wl_all.sum(axis=1), wr_all.sum(axis=1)
            xl, xr = wl_all @ x, wr_all @ x
            if drift and step > 0:  # the drift once the first weights are in
                tl, tr = wl_all @ t, wr_all @ t
                tt, xt = w @ (t * t), w @ (t * x)
                safe_l, safe_r = np.maximum(wl, 1e-9), np.maximum(wr, 1e-9)
                info = tt - tl * tl / safe_l - tr * tr / safe_r
                ok = info > 1e-9
                beta = np.where(ok, (xt - tl * xl / safe_l - tr * xr / safe_r) / np.where(ok, info, 1.0), 0.0)
                info = np.where(ok, info, 0.0)
                xl, xr = xl - tl * beta, xr - tr * beta
            # A side whose launches all look like outliers keeps its median: EM must not chase an empty side.
            mu_l = np.where(wl > 0.5, xl / np.maximum(wl, 1e-9), med_l)
            mu_r = np.where(wr > 0.5, xr / np.maximum(wr, 1e-9), med_r)
        resid = x[None, :] - np.where(left, mu_l[:, None], mu_r[:, None]) - beta[:, None] * t[None, :]
        weights = groups.kept(_responsibilities(resid, sigma), agree, mu_l, mu_r, sigma)
        return _SplitFit(mu_l, mu_r, beta, resid, weights, info)

    def drift_of(self, row: int, left: np.ndarray, t: np.ndarray, sigma: float) -> tuple[float, float]:
        """The drift of one split's residuals (per ``ORDER_SCALE`` launches, each side's mean order removed) and
        its standard error: the fitted drift when the term is in the fit, else what adding it would give."""
        w, r, side = self.weights[row], self.resid[row], left[row]
        centred = t.copy()
        for mask in (side, ~side):
            total = float(w[mask].sum())
            if total > 0:
                centred[mask] = t[mask] - float((w[mask] * t[mask]).sum()) / total
        info = float((w * centred * centred).sum())
        if info <= 1e-9:
            return 0.0, math.inf
        beta = float(self.beta[row]) + float((w * centred * r).sum()) / info
        return beta, sigma / math.sqrt(info)

    def logs(self, left: np.ndarray, marks: np.ndarray, sigma: float, sign: float) -> np.ndarray:
        """The log posterior of each split, unnormalised: the mixture likelihood at the split's fit, the Laplace
        term of its two levels, the log width of its gap, and the direction of the step."""
        z = self.resid / sigma
        core = (1 - EPS) * np.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))
        loglik = np.log(core + EPS / OUTLIER_WIDTH).sum(axis=1)
        wl = np.maximum((self.weights * left).sum(axis=1), 0.5)
        wr = np.maximum((self.weights * ~left).sum(axis=1), 0.5)
        logs = loglik - 0.5 * np.log(wl * wr) + np.log(np.diff(marks.astype(float)))
        if sign:
            se = sigma * np.sqrt(1 / wl + 1 / wr)
            logs = logs + special.log_ndtr(sign * (self.mu_r - self.mu_l) / se)
        return logs


@dataclass(frozen=True)
class _Posterior:
    """Posterior of the first bad position: mass per gap between consecutive measured positions."""

    marks: tuple[int, ...]  # measured positions, ascending (0 and size-1 among them once measured)
    masses: tuple[float, ...]  # mass of gap j: first bad in (marks[j], marks[j+1]]
    cum: tuple[float, ...] = ()  # mass of the gaps before gap j

    def __post_init__(self) -> None:
        if not self.cum:
            object.__setattr__(self, "cum", tuple(itertools.accumulate(self.masses, initial=0.0)))

    def best_single(self) -> tuple[int, float] | None:
        """The single position with the most mass, among gaps one commit wide."""
        best: tuple[int, float] | None = None
        for j, mass in enumerate(self.masses):
            if self.marks[j + 1] - self.marks[j] == 1 and (best is None or mass > best[1]):
                best = (self.marks[j + 1], mass)
        return best

    def single(self, k: int) -> float:
        """The mass of position ``k`` alone."""
        return self.mass_between(k, k)

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
