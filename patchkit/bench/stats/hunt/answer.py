"""What the hunt answers, and on what evidence: GOOD against BAD, the plain intervals behind a named commit, the
other steps the launches show, and a range's why and what would narrow it.

**The ends** (``judge_ends``).  GOOD and BAD are judged by the launch verdict at the noise prior (floored by the
values' resolution), without the launches of an end that lie farther than ``OUTLIER_Z`` spreads from its median.
Only a conclusion that ends the hunt needs the ends settled: ``CONFIRM`` launches each, and no launch that
disagrees with the others of its end by more than an outlier would (one launch cannot decide).

**Found.**  The plain two-sided interval of every launch after ``k`` against those before it (outliers left out)
must exclude 1 too (``evidence``).  Each side of ``k`` is then searched for a second step (``others``).

**Range.**  When no launch is left that could narrow the search (every commit that could is at
``max_launches``, skipped, or the budget is spent): the equal-tailed ``1 - alpha`` credible range, with why
(``explain_range``) and what would narrow it (``advice``, from ``launches_to_decide``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from patchkit.bench.stats.hunt.likelihood import OUTLIER_Z
from patchkit.bench.stats.hunt.model import Model
from patchkit.bench.stats.hunt.policy import CONFIRM, Policy, clear
from patchkit.bench.stats.hunt.report import OtherStep
from patchkit.bench.stats.hunt.state import Launches
from patchkit.bench.stats.verdict import Noise, Verdict, judge, resolution_floor
from patchkit.wording import plural


@dataclass(frozen=True)
class Ends:
    """GOOD against BAD: the verdict, the launches it was judged on (outliers left out), and whether it is
    settled enough to end the hunt."""

    verdict: Verdict
    good: list[float]
    bad: list[float]
    settled: bool


def judge_ends(state: Launches, min_effect: float, confidence: float) -> Ends:
    """The verdict of BAD against GOOD on their launches so far (both measured)."""
    g_all, b_all = state.values(0), state.values(state.size - 1)
    spread = endpoint_noise(state)
    g, g_unclear = robust(g_all, spread)
    b, b_unclear = robust(b_all, spread)
    verdict = judge(g, b, threshold=min_effect, confidence=confidence, noise=spread)
    settled = min(len(g_all), len(b_all)) >= CONFIRM and not (g_unclear or b_unclear)
    return Ends(verdict, g, b, settled)


def endpoint_noise(state: Launches) -> Noise | None:
    """The spread that judges GOOD against BAD: the prior, floored by the values' resolution."""
    floor = resolution_floor([v for p in (0, state.size - 1) for v in state.values(p)])
    if state.noise is None:
        return None
    if state.noise.sigma >= floor:
        return state.noise
    return Noise(sigma=floor, df=state.noise.df)


def robust(values: Sequence[float], noise: Noise | None) -> tuple[list[float], bool]:
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


def undecided(ends: Verdict, good: int, bad: int) -> str:
    """Why GOOD and BAD could not be told apart on ``good`` and ``bad`` launches, and what would decide."""
    return (f"GOOD and BAD could not be told apart in {_each(good, bad)} (ratio {_fmt_ratio(ends)}); to decide: "
            f"{ends.next or 'more launches'}")  # fmt: skip


def evidence(state: Launches, k: int, alpha: float) -> tuple[Verdict, Verdict]:
    """The plain two-sided intervals behind an answer: every launch after ``k`` against those before it, and
    ``k``'s against ``k - 1``'s, without the launches the model treats as outliers."""
    model = state.model()
    kept = {p: [v for v, out in zip(state.values(p), model.outlier_flags(p), strict=True) if not out]
            for p in state.measured_positions()}  # fmt: skip
    left = [v for p, vs in kept.items() if p < k for v in vs]
    right = [v for p, vs in kept.items() if p >= k for v in vs]
    noise = Noise(sigma=model.spread.sigma, df=max(1, round(model.spread.df)))
    before_after = judge(left, right, threshold=0.0, confidence=1 - alpha, noise=noise)
    adjacent = judge(kept[k - 1], kept[k], threshold=0.0, confidence=0.99, noise=noise)
    return before_after, adjacent


def others(state: Launches, k: int, model: Model) -> tuple[OtherStep, ...]:
    """The clear steps within each side of ``k``: a second regression (or an improvement) besides the named one."""
    out = []
    for side, lo, hi in (("before", 0, k - 1), ("after", k, state.size - 1)):
        found = model.side_step(lo, hi)
        if found is not None and clear(found):
            same = (found.diff > 0) == (state.sign > 0)
            out.append(OtherStep(side, found.lo + 1, found.hi, math.exp(found.diff), found.z, same))
    return tuple(out)


@dataclass(frozen=True)
class RangeAnswer:
    """A range answer's fields: the credible range and its mass, why it is not narrower, the most likely first
    bad commit with its mass, the measured commits left unsettled, and what would narrow it."""

    lo: int
    hi: int
    probability: float
    why: str
    likely: int
    likely_mass: float
    unclear: tuple[int, ...]
    advice: str


def explain_range(policy: Policy, model: Model, bounds: tuple[int, int], reason: str) -> RangeAnswer:
    """A range answer, with why: what stopped the search (``reason``), the measured commits whose side is not
    settled enough for an answer (P(bad) between ``alpha / 2`` and ``1 - alpha / 2``: a first bad commit needs the
    mass on both sides of it to miss by less than ``alpha`` together; at the cap, more launches would settle
    them), those that could not be measured, the most likely first bad commit with its posterior mass
    (short of ``1 - alpha``), and what would likely narrow it (``advice``)."""
    state, label, alpha = policy.state, policy.label, policy.alpha
    post = model.posterior
    lo, hi = bounds
    unsettled = [p for p in state.measured_positions() if alpha / 2 < post.cdf(p) < 1 - alpha / 2]
    unclear = [p for p in unsettled if lo - 1 <= p <= hi]
    named = [f"{label(p)} (P(bad) {post.cdf(p):.4f}, {plural(len(state.values(p)), 'launch', 'launches')})"
             for p in unclear]  # fmt: skip
    capped = all(not policy.can_ask(p) for p in unclear)
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
    return RangeAnswer(lo, hi, post.mass_between(lo, hi), "; ".join(parts), likely, mass, tuple(unclear),
                       advice(state, model, lo, hi, alpha, label))  # fmt: skip


def advice(state: Launches, model: Model, lo: int, hi: int, alpha: float, label: Callable[[int], str]) -> str:
    """What would likely narrow a range: launches at the commits that border the credible range's most
    likely split, from ``launches_to_decide`` at the fitted step and spread."""
    effect = abs(model.step)
    sigma = model.spread.sigma
    if effect <= 0:
        return ""
    need = launches_to_decide(effect, sigma, alpha)
    near = list(range(max(lo - 1, 0), hi + 1))
    measured = [p for p in near if p in state.counts]
    more = sum(max(0, need - state.counts.get(p, 0)) for p in measured[:6])
    unmeasured = [p for p in near if p not in state.counts and p not in state.skipped]
    more += need * min(len(unmeasured), max(1, math.ceil(math.log2(len(unmeasured) + 1))))
    if more <= 0:
        return ""
    where = f"{label(near[0])}..{label(near[-1])}" if len(near) > 1 else label(near[0])
    cap = f" (raise --max-launches to at least {need})" if need > state.max_launches else ""
    return (f"about {plural(more, 'more launch', 'more launches')} at {where} would likely decide "
            f"({need} per commit for a {math.expm1(effect):.1%} step at {sigma:.2%} spread){cap}")  # fmt: skip


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
