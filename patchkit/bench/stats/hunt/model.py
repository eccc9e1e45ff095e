"""The launch model fitted to every launch of a hunt: the posterior over the first bad commit, the spread, the
drift, which launches are outliers, and the test for a second step within one side of an answer.

Arrays in, values out: ``Model.fit(pos, x, t, size, sign, noise, floor)`` takes each launch's position, log value
and order, and knows nothing of rounds, budgets or commits; ``tests/test_hunt_model.py`` calls it with a few
numbers.  The split likelihood is ``likelihood.py``, the spread ``sigma.py``.

**Drift.**  Each launch carries its order (its place in the hunt).  The drift term is fitted only when the data
asks for it: its estimate is ``DRIFT_Z`` standard errors from zero without it (a trend costs the search precision,
as a level and a trend are told apart only by launches of one side at different times).  The levels are then
corrected for it, and ``drift()`` says so.

**More than one step** (``side_splits``, ``side_step``).  Each side of an answer is tested for a step of its own
among its measured commits: each commit's launches weighted against its own median (an outlier of one commit
cannot fake a step), the drift removed, each split judged by Student's t at a pooled spread that holds no step
of that split, read as the normal z of the same tail.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np

from patchkit.bench.stats.hunt.likelihood import (
    FLOOR,
    OUTLIER_WEIGHT,
    Groups,
    SplitFit,
    gap_log_prior,
    marginal_logs,
    responsibilities,
    spread_logs,
)
from patchkit.bench.stats.hunt.modes import READ_SHARES, aa_evidence, prior_without, second_mode
from patchkit.bench.stats.hunt.posterior import Posterior
from patchkit.bench.stats.hunt.report import Drift, Mode, Spread
from patchkit.bench.stats.hunt.sigma import as_normal, fit_spread, rejects, start_sigma, widen
from patchkit.bench.stats.verdict import Noise

DRIFT_Z = 3.0  # a drift estimate this many standard errors from zero is fitted, and reported as drift
DRIFT_FROM = 6  # launches before the drift term is fitted
ORDER_SCALE = 100.0  # the drift is fitted per 100 launches (conditioning)


@dataclass(frozen=True)
class SideStep:
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


class Model:
    """The contamination-mixture step model fitted to every launch: the posterior over splits, the spread,
    the drift and the launch weights of the most likely split."""

    def __init__(self) -> None:
        self.posterior: Posterior
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
        self.mode: Mode | None = None  # the launch noise's second mode, where the repeated launches show one

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
        fixed: float | None = None,
        rank: np.ndarray | None = None,
    ) -> Model:
        """The model of launches at positions ``pos`` (GOOD at 0 and BAD at ``size - 1`` among them, ascending)
        with log values ``x`` and orders ``t``; ``sign``: the step's direction (+1 BAD higher, -1 lower, 0 not
        known yet); ``floor``: the least spread (a quantized metric's resolution).  The posterior integrates the
        spread out, or with ``fixed`` is taken at that many times the fitted spread (the confirmation's check at
        the spread's upper bound).  ``rank`` (pruned): ``rank[p]`` relevant positions in ``1..p``; only they can
        be the first bad one (``gap_log_prior``)."""
        marks = np.unique(pos)
        if len(marks) < 2 or marks[0] != 0 or marks[-1] != size - 1:
            raise ValueError("the posterior needs GOOD and BAD measured")
        m = cls()
        m.pos, m.x, m.t = pos, x, (t - t.mean()) / ORDER_SCALE
        m.noise, m.floor = noise, floor
        index = np.searchsorted(marks, pos)  # each launch's mark
        can_drift = len(x) >= DRIFT_FROM and len(np.unique(t)) >= 3
        left = index[None, :] <= np.arange(len(marks) - 1)[:, None]  # splits x launches: on GOOD's side
        prior = gap_log_prior(marks, rank)
        groups = Groups.of(index, len(marks))
        sigma = start_sigma(noise, x, index, floor)
        start = SplitFit.start(left, x, index)
        # The launch noise with one mode, and, where the repeated launches (and the prior's A/A run) hint at a
        # second one, with that mode too: the posterior is the one-mode model's and the second mode's readings'
        # posteriors, weighed by the evidence for the mode (``modes``), so that a hint of a mode already keeps a
        # boundary from reading as certain.
        plain = _fit_drift(start, left, x, m.t, prior, sigma, sign, noise, floor, groups, can_drift, None)
        readings = second_mode(x - plain.fit.beta[plain.best] * m.t, groups, plain.sigma, noise, plain.spread.hunt)
        chosen, probs = plain, plain.probs(left, prior, sign, noise, floor, fixed)
        mode = None
        if readings:
            # Which way round the mode is, and its share, are weighed by every launch of the hunt and of the A/A
            # run, each reading at each of ``READ_SHARES``, the split and the spread integrated out.  Not by the
            # repeated launches that found the mode: the hunt launched those commits again because their launches
            # disagreed, so they over-represent the small mode, and each at its own best level keeps its larger
            # cluster as the main mode, so their share comes out too small (docs/hunt.md, "The stress cells").
            # Each reading is fitted once, at the share the repeated launches gave; its levels barely move with
            # the share, so the other shares are weighed at the same fit.
            weight = readings[0].weight
            offsets = noise.offsets if noise is not None else ()
            weighed: list[tuple[Mode, _Fitted, float, np.ndarray]] = []
            for reading in readings:
                own = prior_without(noise, reading)
                fitted = _fit_drift(start, left, x, m.t, prior, sigma, sign, own, floor, groups, can_drift, reading)
                for share in READ_SHARES:
                    each = fitted.at_share(share)
                    evidence, posterior = each.weigh(left, prior, sign, own, floor, fixed, offsets)
                    weighed.append((replace(reading, share=share), each, evidence, posterior))
            evidences = np.array([w[2] for w in weighed])
            odds = np.exp(evidences - evidences.max())
            odds = odds / odds.sum()
            probs = (1 - weight) * probs
            for (_, _, _, posterior), share in zip(weighed, odds.tolist(), strict=True):
                probs = probs + weight * share * posterior
            mode, top, _, _ = weighed[int(odds.argmax())]
            if weight >= 0.5:
                chosen = top
        fit, best = chosen.fit, chosen.best
        m.drift_beta, m.drift_se = chosen.drift_beta, chosen.drift_se
        m.split = best
        m.split_at = int(marks[best])
        m.spread = chosen.spread
        if mode is not None:
            m.spread = replace(m.spread, source=f"{m.spread.source}; {mode.describe()}", mode=mode)
        m.weights = fit.weights[best]
        m.mu_left, m.mu_right = float(fit.mu_l[best]), float(fit.mu_r[best])
        m.drift_on = chosen.drift
        m.mode = mode
        ranks = () if rank is None else tuple(int(v) for v in rank)
        m.posterior = Posterior(marks=tuple(int(v) for v in marks), masses=tuple(probs.tolist()), rank=ranks)
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
        return max(math.sqrt(ss / df) * widen(df), self.floor, FLOOR)

    def _prior_too_small(self) -> bool:
        """Whether the repeated launches scatter more than the prior allows (the variance-ratio test at
        ``STALE_P``).  Not the spread's ``stale``: the step model's spread also holds a second step, and a test
        on it would call the prior stale exactly where a second step is to be judged."""
        if self.noise is None:
            return False
        ss, df = self._replicates(())
        return rejects(self.noise, ss, df)

    def _replicates(self, leave: Collection[int]) -> tuple[float, float]:
        """The weighted sum of squares of repeated launches about their commit's mean, and its degrees of freedom,
        over the measured commits not in ``leave``."""
        ss, df = 0.0, 0.0
        for p in np.unique(self.pos).tolist():
            x = self.x[self.pos == p] - self.correction * self.t[self.pos == p]
            if len(x) < 2 or p in leave:
                continue
            w = responsibilities(x - float(np.median(x)), self.spread.sigma)
            mean = float(np.sum(w * x) / np.sum(w))
            ss += float(np.sum(w * (x - mean) ** 2))
            df += float(np.sum(w)) - 1
        return ss, df

    def side_splits(self, lo: int, hi: int) -> list[tuple[int, int, float, float, float]]:
        """Every split between the measured commits of ``lo..hi`` (one side of the answer) with launches on both
        sides of it: the measured commits either side, its z, its size (log scale) and the launches (weighted) on
        its thinner side (while pruned, only the splits with a relevant commit between).  Each commit's launches
        are weighted by the mixture against the commit's own median (an outlier of one commit cannot fake a
        step), the drift removed; the z is Student's t at the split's pooled spread, as a normal z (``as_normal``)."""
        marks = [p for p in np.unique(self.pos).tolist() if lo <= p <= hi]
        if len(marks) < 2:
            return []
        sigma = self.replicate_sigma
        sums, counts, squares = [], [], []
        for p in marks:
            x = self.x[self.pos == p] - self.correction * self.t[self.pos == p]
            w = responsibilities(x - float(np.median(x)), sigma)
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
            if nl < 0.5 or nr < 0.5 or not self.posterior.count(marks[j], marks[j + 1]):
                continue  # (while pruned, a step lies on a relevant commit: none between two of one block)
            sl, sr = float(cs[j]), float(cs[-1] - cs[j])
            diff = sr / nr - sl / nl
            spread, df = split_ss + float(cq[-1]) - sl * sl / nl - sr * sr / nr, split_df + nl + nr - 2
            if prior is not None and not rejects(prior, spread, df):
                spread, df = spread + prior.df * prior.sigma**2, df + prior.df
            if df < 1 or spread <= 0:
                continue
            t = diff / (math.sqrt(spread / df) * math.sqrt(1 / nl + 1 / nr))
            out.append((marks[j], marks[j + 1], as_normal(t, df), diff, min(nl, nr)))
        return out

    def side_step(self, lo: int, hi: int) -> SideStep | None:
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
        return SideStep(found[first][0], found[last][1], best[0], best[1], best[2], best[3], best[4])

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


@dataclass
class _Fitted:
    """One launch model's fit to every split (with or without a second mode): the split fit, the most likely
    split, its spread and the drift."""

    fit: SplitFit
    best: int
    sigma: float
    spread: Spread
    drift: bool
    drift_beta: float
    drift_se: float

    def at_share(self, share: float) -> _Fitted:
        """This fit with its second mode at another share, the levels, the weights and the spread kept."""
        assert self.fit.mode is not None
        if share == self.fit.mode.share:
            return self
        return replace(self, fit=replace(self.fit, mode=replace(self.fit.mode, share=share)))

    def weigh(
        self,
        left: np.ndarray,
        prior: np.ndarray,
        sign: float,
        noise: Noise | None,
        floor: float,
        fixed: float | None,
        offsets: tuple[float, ...],
    ) -> tuple[float, np.ndarray]:
        """The evidence of this model with a second mode, and its posterior mass of each split (``probs``).

        The evidence is the log likelihood of every launch of the hunt and of the A/A run (``offsets``), the split
        and the spread integrated out (Jeffreys' prior on the spread, up to a constant shared by every model of the
        same launches): how the readings of a mode are weighed.  The A/A run's launches are data here, not the
        prior on the spread, since each reading explains them its own way."""
        assert self.fit.mode is not None
        grid = spread_logs(self.fit, left, prior, self.sigma, sign, floor)
        aa = np.array([aa_evidence(offsets, spread, self.fit.mode) for spread in grid[0]])
        stack = grid[1] + aa[:, None]  # d sigma / sigma = d log sigma: the grid's even steps
        top = float(stack.max())
        evidence = top + math.log(float(np.exp(stack - top).sum()))
        return evidence, self.probs(left, prior, sign, noise, floor, fixed, grid)

    def probs(
        self,
        left: np.ndarray,
        prior: np.ndarray,
        sign: float,
        noise: Noise | None,
        floor: float,
        fixed: float | None,
        grid: tuple[list[float], np.ndarray] | None = None,
    ) -> np.ndarray:
        """The posterior mass of each split: the spread integrated out, or at ``fixed`` times the fitted one
        (``grid``: the split's logs on the spread grid, where they were taken already)."""
        if fixed is not None:  # the confirmation's check at the spread's upper bound
            logs = self.fit.logs(left, prior, self.sigma * fixed, sign)
        else:
            logs = marginal_logs(self.fit, left, prior, self.sigma, sign, noise, floor, grid)
        probs = np.exp(logs - logs.max())
        return probs / probs.sum()


def _fit_drift(
    start: SplitFit,
    left: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
    prior: np.ndarray,
    sigma: float,
    sign: float,
    noise: Noise | None,
    floor: float,
    groups: Groups,
    can_drift: bool,
    mode: Mode | None,
) -> _Fitted:
    """Every split fitted with the spread of the most likely split, refitted while that spread moves; without the
    drift term and, where the data asks for it, with it.  Under a second mode EM runs from each of
    ``SplitFit.moved``'s starts and each split keeps the fit it is likeliest under: the likelihood has a level
    in each mode, and EM climbs to the nearest."""
    drift = False
    starts = [start] if mode is None else start.moved(mode)
    while True:
        fit, best = start, 0
        for _ in range(3):
            fit = SplitFit.best_of([s.refine(left, x, t, sigma, drift, groups, mode) for s in starts],
                                   left, prior, sigma, sign)  # fmt: skip
            best = int(np.argmax(fit.logs(left, prior, sigma, sign)))
            params = 3 if drift else 2
            new_sigma, spread = fit_spread(fit.adjusted[best], fit.weights[best], noise, floor, params, sigma)
            moved = abs(new_sigma - sigma) > 0.05 * sigma
            sigma = new_sigma
            if not moved:
                break
        beta, se = fit.drift_of(best, left, t, sigma)
        z = beta / se if math.isfinite(se) and se > 0 else 0.0
        # The drift term is fitted only where the data asks for it: it costs the search precision (a level
        # and a trend are told apart only by launches of one side at different times).
        if drift or not can_drift or abs(z) < DRIFT_Z:
            return _Fitted(fit, best, sigma, spread, drift, beta, se)
        drift = True
