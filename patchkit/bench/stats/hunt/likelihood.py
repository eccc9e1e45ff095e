"""The likelihood of a split: every split between measured commits fitted at once, and its log posterior under the
contamination mixture, at one spread or with the spread integrated out.

**One step.**  Every commit before the first bad one has GOOD's level, every one from it on has BAD's; on the
log scale a launch is ``level + drift * order + noise``.  For each split between measured commits the two levels
(and the drift, when it is in the fit) are fitted by EM, every split at once in numpy (rows: splits; columns:
launches), which keeps ``benchmarks/bench_hunt.py`` fast while it drives this same code.

**Contamination mixture.**  The noise is, with probability ``1 - EPS``, a Gaussian of spread ``sigma``; with
``EPS`` an outlier anywhere within ``OUTLIER_WIDTH`` (a flat density).  So a launch near its side's level counts
as under a Gaussian, and one far from both levels costs the same whichever side it is put on: it cannot move the
boundary.  The levels and the drift are fitted per split by weighted least squares (the weights are the
launches' responsibilities of the Gaussian part), and a split's log likelihood is evaluated under the mixture,
with the Laplace term of the fitted levels, the prior mass of the split's gap (``gap_log_prior``) and the
direction of the step.  A commit whose *several* launches agree with each other, far from both levels, is no
outlier but a level of its own (``Groups``): its launches keep their weight and the spread pays.

**The spread integrated out** (``marginal_logs``).  The posterior is not taken at the one fitted spread: each
split's likelihood is evaluated on a grid of spreads and weighed by the noise prior, so a boundary must hold
across every spread the launches and the prior allow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from patchkit.bench.stats.hunt.report import Mode
from patchkit.bench.stats.verdict import Noise

EPS = 0.02  # the prior share of outlier launches in the mixture
OUTLIER_WIDTH = 1.0  # an outlier lies anywhere within this width of log values (about -40 % .. +65 %)
OUTLIER_Z = 4.0  # a launch this many spreads from its commit's (its end's) median is an outlier there
OUTLIER_WEIGHT = 0.5  # a launch whose Gaussian responsibility is below this is shown as an outlier
EM_STEPS = 4  # EM steps per split fit
MARGINAL_POINTS = 29  # spreads on the grid the posterior integrates the spread over (x0.3 .. x5 the fitted one)
FLOOR = 1e-6  # the least launch spread the model assumes (0.0001 %), below any real noise


def densities(resid: np.ndarray, sigma: float, mode: Mode | None) -> tuple[np.ndarray, np.ndarray]:
    """The two Gaussian parts of the mixture's density at each residual: the main mode and the second one (zero
    without a second mode)."""
    norm = sigma * math.sqrt(2 * math.pi)
    if mode is None:
        return (1 - EPS) * np.exp(-0.5 * (resid / sigma) ** 2) / norm, np.zeros_like(resid)
    main = (1 - EPS - mode.share) * np.exp(-0.5 * (resid / sigma) ** 2) / norm
    return main, mode.share * np.exp(-0.5 * ((resid - mode.offset) / sigma) ** 2) / norm


def responsibilities(resid: np.ndarray, sigma: float, mode: Mode | None = None) -> np.ndarray:
    """Each launch's posterior weight of the Gaussian parts of the mixture (the main mode and any second one)."""
    return weigh(resid, sigma, mode)[0]


def weigh(resid: np.ndarray, sigma: float, mode: Mode | None) -> tuple[np.ndarray, np.ndarray]:
    """Each launch's Gaussian weight and its expected offset from its level (the second mode's offset times the
    share of that weight the second mode holds; zero without one): a launch in the second mode still says where
    its commit's level is, once moved back by the offset."""
    main, second = densities(resid, sigma, mode)
    total = main + second
    weight = total / (total + EPS / OUTLIER_WIDTH)
    if mode is None:
        return weight, np.zeros_like(resid)
    return weight, mode.offset * second / np.maximum(total, 1e-300)


NO_MASS = -1e9  # the log prior of a gap that holds no relevant commit: finite, so that sums stay numbers, exp() 0


def gap_log_prior(marks: np.ndarray, rank: np.ndarray | None = None) -> np.ndarray:
    """The prior over the first bad commit, per gap between consecutive measured positions: uniform over the
    commits, so each gap's log width.  A split's posterior adds it to the split's likelihood.

    While the hunt is pruned, ``rank[p]`` counts the relevant positions in ``1..p``: the prior is uniform over the
    relevant commits, so a gap weighs its count of them, and a gap of inert commits only gets no mass
    (``NO_MASS``): an inert commit cannot be the first bad one, it takes its relevant predecessor's side."""
    if rank is None:
        return np.log(np.diff(marks.astype(float)))
    counts = np.diff(rank[marks]).astype(float)
    return np.where(counts > 0, np.log(np.maximum(counts, 1.0)), NO_MASS)


@dataclass(frozen=True)
class Groups:
    """The launches of each measured commit (contiguous: launches are ordered by position).

    An outlier is a launch event: one launch of a commit far from the others.  A commit whose launches agree
    with each other and all sit far from a side's level is no outlier but a level of its own (a second step, or
    the wrong split): its launches keep their weight, so that the spread, not the outlier term, pays for them."""

    starts: np.ndarray  # index of each commit's first launch
    counts: np.ndarray  # launches per commit

    @classmethod
    def of(cls, index: np.ndarray, marks: int) -> Groups:
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
        self,
        w: np.ndarray,
        shift: np.ndarray,
        agree: tuple[np.ndarray, np.ndarray],
        mu_l: np.ndarray,
        mu_r: np.ndarray,
        sigma: float,
        mode: Mode | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The weights and offsets, with those of an agreeing commit far from both of a split's levels restored (a
        third level; one near the other side's level, or where the second mode puts a launch of it, is evidence
        against the split and keeps its outlier weight)."""
        ok, medians = agree
        if not ok.any():
            return w, shift
        offsets = (0.0,) if mode is None else (0.0, mode.offset)
        far = np.ones((len(mu_l), len(medians)), dtype=bool)
        for level in (mu_l, mu_r):
            for offset in offsets:
                far &= np.abs(medians[None, :] - level[:, None] - offset) > OUTLIER_Z * sigma
        mean = np.add.reduceat(w, self.starts, axis=1) / np.maximum(self.counts, 1)
        restore = np.repeat((mean < OUTLIER_WEIGHT) & ok[None, :] & far, self.counts, axis=1)
        return np.where(restore, 1.0, w), np.where(restore, 0.0, shift)


@dataclass
class SplitFit:
    """Every split's fit at once (rows: splits; columns: launches): the two levels and the drift, each launch's
    residual and its weight (the responsibility of the mixture's Gaussian parts), by EM from the sides' medians.
    Each split is fitted on its own, so a launch is an outlier only where it is far from that split's levels.
    With a second mode (``Mode``), a launch's ``shift`` is its expected offset from its level (the mode's offset
    times the mode's share of its weight): the levels, the drift and the spread read ``resid - shift``."""

    mu_l: np.ndarray
    mu_r: np.ndarray
    beta: np.ndarray
    resid: np.ndarray
    weights: np.ndarray
    info: np.ndarray  # the drift's information per split (0 without drift)
    shift: np.ndarray
    mode: Mode | None = None

    @property
    def adjusted(self) -> np.ndarray:
        """Each launch's residual from its level, a launch in the second mode moved back by the mode's offset."""
        return self.resid - self.shift if self.mode is not None else self.resid

    @classmethod
    def start(cls, left: np.ndarray, x: np.ndarray, index: np.ndarray) -> SplitFit:
        """Every split starts from GOOD's and BAD's medians: GOOD is on the left of every split and BAD on the
        right, so EM climbs to the levels the endpoints anchor, and a launch far from them is an outlier.  Under a
        second mode, also from those medians with the mode's offset taken back (``moved``)."""
        rows = left.shape[0]
        mu_l = np.full(rows, float(np.median(x[index == 0])))
        mu_r = np.full(rows, float(np.median(x[index == index.max()])))
        zeros = np.zeros(rows)
        return cls(mu_l, mu_r, zeros, np.zeros(left.shape), np.ones(left.shape), zeros, np.zeros(left.shape))

    def moved(self, mode: Mode) -> list[SplitFit]:
        """The starts EM climbs from under a second mode: the endpoints' medians as they are, and each with the
        mode's offset taken back, so that an endpoint whose launches sit in the mode (BAD on one slow launch)
        still starts one run of EM at its level.  EM climbs to the nearest level: started from a BAD median in
        the slow mode, it reads the commits at BAD's real level as outliers of a split that then looks unlikely."""
        out = []
        for dl in (0.0, -mode.offset):
            for dr in (0.0, -mode.offset):
                out.append(replace(self, mu_l=self.mu_l + dl, mu_r=self.mu_r + dr))
        return out

    @staticmethod
    def best_of(fits: list[SplitFit], left: np.ndarray, prior: np.ndarray, sigma: float, sign: float) -> SplitFit:
        """Per split, the fit of ``fits`` (the same launches, EM from different starts) under which it is most
        likely."""
        if len(fits) == 1:
            return fits[0]
        pick = np.array([f.logs(left, prior, sigma, sign) for f in fits]).argmax(axis=0)

        def rows(name: str) -> np.ndarray:
            stack = np.array([getattr(f, name) for f in fits])
            return stack[pick, np.arange(len(pick))]

        return SplitFit(rows("mu_l"), rows("mu_r"), rows("beta"), rows("resid"), rows("weights"), rows("info"),
                        rows("shift"), fits[0].mode)  # fmt: skip

    def refine(
        self,
        left: np.ndarray,
        x: np.ndarray,
        t: np.ndarray,
        sigma: float,
        drift: bool,
        groups: Groups,
        mode: Mode | None = None,
    ) -> SplitFit:
        mu_l, mu_r, beta = self.mu_l, self.mu_r, self.beta
        med_l, med_r = mu_l, mu_r
        info = np.zeros_like(mu_l)
        agree = groups.agreeing(x, sigma)
        for step in range(EM_STEPS):
            resid = x[None, :] - np.where(left, mu_l[:, None], mu_r[:, None]) - beta[:, None] * t[None, :]
            w, shift = groups.kept(*weigh(resid, sigma, mode), agree, mu_l, mu_r, sigma, mode)
            wl_all, wr_all = w * left, w * ~left
            wl, wr = wl_all.sum(axis=1), wr_all.sum(axis=1)
            if mode is None:
                xl, xr = wl_all @ x, wr_all @ x
            else:  # a launch in the second mode tells its level once moved back by the mode's offset
                y = x[None, :] - shift
                xl, xr = (wl_all * y).sum(axis=1), (wr_all * y).sum(axis=1)
            if drift and step > 0:  # the drift once the first weights are in
                tl, tr = wl_all @ t, wr_all @ t
                tt = w @ (t * t)
                xt = w @ (t * x) if mode is None else (w * t[None, :] * (x[None, :] - shift)).sum(axis=1)
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
        weights, shift = groups.kept(*weigh(resid, sigma, mode), agree, mu_l, mu_r, sigma, mode)
        return SplitFit(mu_l, mu_r, beta, resid, weights, info, shift, mode)

    def drift_of(self, row: int, left: np.ndarray, t: np.ndarray, sigma: float) -> tuple[float, float]:
        """The drift of one split's residuals (per ``ORDER_SCALE`` launches, each side's mean order removed) and
        its standard error: the fitted drift when the term is in the fit, else what adding it would give."""
        w, r, side = self.weights[row], self.adjusted[row], left[row]
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

    def logs(self, left: np.ndarray, prior: np.ndarray, sigma: float, sign: float) -> np.ndarray:
        """The log posterior of each split, unnormalised: the mixture likelihood at the split's fit, the Laplace
        term of its two levels, the split's log prior (``gap_log_prior``), and the direction of the step."""
        main, second = densities(self.resid, sigma, self.mode)
        core = main + second
        loglik = np.log(core + EPS / OUTLIER_WIDTH).sum(axis=1)
        wl = np.maximum((self.weights * left).sum(axis=1), 0.5)
        wr = np.maximum((self.weights * ~left).sum(axis=1), 0.5)
        logs = loglik - 0.5 * np.log(wl * wr) + prior
        if sign:
            se = sigma * np.sqrt(1 / wl + 1 / wr)
            logs = logs + special.log_ndtr(sign * (self.mu_r - self.mu_l) / se)
        return logs


def spread_grid(center: float, floor: float) -> list[float]:
    """The spreads a posterior or an evidence integrates over: ``MARGINAL_POINTS`` of them, evenly spaced in log
    from 0.3 to 5 times ``center``, none below ``floor``."""
    return np.maximum(center * np.exp(np.linspace(-1.2, 1.6, MARGINAL_POINTS)), max(floor, FLOOR)).tolist()


def spread_logs(
    fit: SplitFit, left: np.ndarray, prior: np.ndarray, center: float, sign: float, floor: float
) -> tuple[list[float], np.ndarray]:
    """Each split's log posterior at each spread of ``spread_grid`` (rows: spreads), unweighed: what
    ``marginal_logs`` integrates, and what a reading of a second mode is weighed by (``Model.fit``)."""
    spreads = spread_grid(center, floor)
    return spreads, np.array([fit.logs(left, prior, spread, sign) for spread in spreads])


def marginal_logs(
    fit: SplitFit,
    left: np.ndarray,
    prior: np.ndarray,
    center: float,
    sign: float,
    noise: Noise | None,
    floor: float,
    grid: tuple[list[float], np.ndarray] | None = None,
) -> np.ndarray:
    """Each split's log posterior with the spread integrated out rather than fixed at its estimate: the mixture
    likelihood of every launch on a grid of spreads around the fitted one, weighed by the noise prior's scaled
    inverse chi-square (its sigma and degrees of freedom; Jeffreys' 1 / sigma without a prior).  ``grid``: the
    unweighed logs (``spread_logs``), where they were taken already.

    Why: a posterior at one spread is as sure as that spread is right, and the spread is an estimate.  A prior
    from a quieter day, or a hunt whose launches happened to scatter little, made a boundary on a few launches
    read as 99.9 % certain.  Integrated, the launches and the prior weigh each spread by how well it explains
    them, and a boundary must hold across the spreads they allow (400 seeds, prior at half the truth, 512
    commits, d = 1.5 sigma: 1.5 % wrong hunts at the fitted spread, 0.5 % integrated)."""
    spreads, logs = grid if grid is not None else spread_logs(fit, left, prior, center, sign, floor)
    rows = []
    for spread, row in zip(spreads, logs, strict=True):
        if noise is not None:
            weight = -(noise.df + 1) * math.log(spread) - noise.df * noise.sigma**2 / (2 * spread * spread)
        else:
            weight = -math.log(spread)
        rows.append(row + weight + math.log(spread))  # d sigma = sigma d log sigma
    stack = np.array(rows)
    top = stack.max(axis=0)
    return top + np.log(np.exp(stack - top).sum(axis=0))
