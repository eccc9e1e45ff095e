"""The launch spread the model uses: fitted to the hunt's own launches, pooled with the noise prior, the prior
checked against them.

``sigma`` is the mixture's spread fitted to the hunt's own launches, pooled with the noise prior by degrees of
freedom (a conjugate update, no switch at a launch count).  The prior is checked: once the hunt has spread of its
own, a variance-ratio test against the prior (one-sided, at ``STALE_P``) that says the prior is too small makes
the hunt use the larger of the two and say so (a prior measured on a quieter day); and once the hunt has
``OWN_FROM`` degrees of freedom of its own and its spread is the larger, that one is used.  With few degrees of
freedom the spread is widened by the ratio of Student's to the normal quantile (``widen``), so a spread guessed
from three launches cannot make anything certain.  A quantized metric (values that repeat to the last digit)
gets a floor on the spread from its resolution (the caller's ``floor``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from patchkit.bench.stats.hunt.likelihood import FLOOR, responsibilities
from patchkit.bench.stats.hunt.report import Spread
from patchkit.bench.stats.verdict import Noise

OWN_FROM = 4  # degrees of freedom of its own from which the hunt's spread replaces a smaller pooled one
STALE_P = 0.01  # the variance-ratio test's level for calling the prior stale


def start_sigma(noise: Noise | None, x: np.ndarray, index: np.ndarray, floor: float) -> float:
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


def fit_spread(
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
        weights = np.maximum(weights, responsibilities(resid, robust))  # a restored third level keeps its 1
    ss = float(np.sum(weights * resid * resid))
    df = float(np.sum(weights)) - params
    own = math.sqrt(ss / df) if df >= 1 else None
    lowest = max(floor, FLOOR)
    if noise is None:
        if own is None:
            sigma = max(float(np.std(resid)) * 2, lowest, 1e-3)
            return sigma, Spread(sigma, max(df, 0.0), "no prior and no spread of its own yet: a wide guess")
        sigma = max(own * widen(df), lowest)
        return sigma, Spread(sigma, df, f"the hunt's own launches ({df:.0f} df; no noise prior)", hunt=own)
    prior_ss = noise.df * noise.sigma**2
    pooled_df = noise.df + max(df, 0.0)
    pooled = math.sqrt((prior_ss + ss) / pooled_df) if pooled_df > 0 else noise.sigma
    if own is not None and df >= 2:
        ratio = own**2 / max(noise.sigma**2, lowest**2)
        p = float(special.fdtrc(df, noise.df, ratio))  # the F distribution's survival function
        if p < STALE_P:
            sigma = max(own * widen(df), noise.sigma, lowest)
            source = (f"the hunt's own launches, {own:.2%} ({df:.0f} df): the noise prior {noise.sigma:.2%} is too "
                      f"small for them (variance ratio {ratio:.1f}, p = {p:.1g})")  # fmt: skip
            return sigma, Spread(sigma, df, source, prior=noise.sigma, hunt=own, stale=True)
    if own is not None and df >= OWN_FROM and own > pooled:
        # The hunt's launches scatter more than the prior says: the larger spread is the honest one (a prior
        # from a quieter day must not make the hunt's own launches look decisive).
        sigma = max(own * widen(df), lowest)
        source = (f"the hunt's own launches, {own:.2%} ({df:.0f} df), wider than the noise prior "
                  f"{noise.sigma:.2%} ({noise.df} df) pooled with them")  # fmt: skip
        return sigma, Spread(sigma, df, source, prior=noise.sigma, hunt=own)
    sigma = max(pooled * widen(pooled_df), lowest)
    source = f"the noise prior {noise.sigma:.2%} ({noise.df} df) pooled with the hunt's launches"
    return sigma, Spread(sigma, pooled_df, source, prior=noise.sigma, hunt=own)


def upper_factor(df: float, level: float) -> float:
    """The spread's one-sided ``level`` upper bound over the spread, for an estimate of ``df`` degrees of freedom:
    the chi-square's bound (x1.38 at 12 df and 90 %, x1.21 at 30)."""
    return math.sqrt(df / float(special.chdtri(df, level)))  # chdtri(df, q): the chi-square's 1 - q quantile


def rejects(noise: Noise, ss: float, df: float) -> bool:
    """Whether a sum of squares of ``df`` degrees of freedom scatters more than the prior allows: the variance-ratio
    test at ``STALE_P`` (fewer than two degrees of freedom reject nothing)."""
    if df < 2 or ss <= 0:
        return False
    ratio = (ss / df) / max(noise.sigma**2, FLOOR**2)
    return float(special.fdtrc(df, noise.df, ratio)) < STALE_P


def as_normal(t: float, df: float) -> float:
    """Student's t at ``df`` as the normal z of the same tail: a spread from few degrees of freedom makes a large t
    common, and ``STEP_Z`` is a normal z (at 20 df, t = 3.6 is z = 3.1)."""
    if df >= 1000:
        return t
    tail = float(special.stdtr(df, -abs(t)))
    return math.copysign(-float(special.ndtri(tail)), t) if tail > 0 else t


def widen(df: float) -> float:
    """Student's 97.5 % quantile over the normal's at ``df``: a spread from few launches is widened by it."""
    if df >= 200:
        return 1.0
    return float(special.stdtrit(max(df, 1.0), 0.975)) / 1.959963984540054
