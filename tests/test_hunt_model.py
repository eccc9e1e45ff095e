"""The hunt's launch model (``patchkit.bench.stats.hunt.model``), called directly with a few launches as arrays.

Each commit's launches sit at its level plus and minus a fixed fraction of the spread, so the commit means are
the levels exactly and nothing here depends on a random draw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from patchkit.bench.stats.hunt.likelihood import EPS, OUTLIER_WIDTH
from patchkit.bench.stats.hunt.model import Model
from patchkit.bench.stats.hunt.modes import aa_evidence, prior_without
from patchkit.bench.stats.hunt.posterior import Posterior
from patchkit.bench.stats.hunt.report import Mode
from patchkit.bench.stats.verdict import Noise

SIGMA = 0.01
PRIOR = Noise(sigma=SIGMA, df=9)
WOBBLE = (0.5, 1.0, 1.5, 0.8, 1.2)  # a commit's launches lie this many spreads either side of its level


def launches(
    level: Callable[[int], float], positions: Sequence[int], per: int = 2, scatter: float = 1.0
) -> list[tuple[int, float]]:
    """``per`` (2 or 3) launches of each position, as (position, log value), ``scatter`` times ``WOBBLE``
    spreads either side of its level (and one on it)."""
    out = []
    for i, p in enumerate(positions):
        u = WOBBLE[i % len(WOBBLE)] * SIGMA * scatter
        out += [(p, math.log(level(p)) + o) for o in (u, -u, 0.0)[:per]]
    return out


def fit(
    launched: Sequence[tuple[int, float]], size: int, noise: Noise | None = PRIOR, fixed: float | None = None
) -> Model:
    """The model of a hunt for a drop (BAD lower than GOOD) over these launches.  Their order (the drift's axis)
    strides through the list, so that it does not follow the positions: a step must not read as a drift."""
    stride = next(s for s in range(7, 100) if math.gcd(s, len(launched)) == 1)
    orders = [(i * stride) % len(launched) for i in range(len(launched))]
    ordered = sorted(zip(orders, launched, strict=True), key=lambda it: it[1][0])  # by position, as the hunt has them
    pos = np.array([p for _, (p, _) in ordered])
    x = np.array([v for _, (_, v) in ordered])
    t = np.array([order for order, _ in ordered], dtype=float)
    return Model.fit(pos, x, t, size, -1.0, noise, 0.0, fixed)


def step_at(k: int, drop: float) -> Callable[[int], float]:
    return lambda p: 100.0 * (1 - drop if p >= k else 1.0)


def test_a_clear_step_is_found_at_its_position_with_mass_near_1() -> None:
    model = fit(launches(step_at(6, 0.10), range(10)), 10)
    best = model.posterior.best_single()
    assert best is not None and best[0] == 6 and best[1] > 0.999
    assert model.posterior.cdf(5) < 0.001 < 0.999 < model.posterior.cdf(6)
    assert model.posterior.credible(0.001) == (6, 6)
    assert not any(flag for p in range(10) for flag in model.outlier_flags(p))
    assert model.step == pytest.approx(math.log(0.9), abs=1e-9)


def test_between_measured_commits_the_mass_is_spread_evenly_over_the_gap() -> None:
    """Commits 4 and 5 are never measured: the step lies in 4..6 and nothing says where, so each holds a third
    (the uniform prior over commits), and the credible range is the gap."""
    model = fit(launches(step_at(5, 0.10), (0, 3, 6, 9)), 10)
    masses = [model.posterior.single(k) for k in range(1, 10)]
    assert masses[3:6] == pytest.approx([1 / 3] * 3, abs=1e-3)
    assert sum(masses[3:6]) > 0.999
    assert model.posterior.best_single() is None  # no gap one commit wide holds it
    assert model.posterior.credible(0.001) == (4, 6)


@pytest.mark.parametrize(("at", "way"), [(2, -1), (5, -1), (6, 1), (8, 1)])
def test_an_outlier_launch_moves_the_posterior_only_a_bounded_amount(at: int, way: int) -> None:
    """One more launch of a commit, 5 to 60 spreads from its level (at 5 and 6: toward the other side of the
    boundary, where one launch would matter most).  Under the mixture a launch can weigh at most what the
    Gaussian's peak weighs against the flat outlier density, so the boundary's log odds fall by at most
    log(1 + peak / outlier density), about 7.6 at a 1 % spread, however far it lies; from 20 spreads on its
    distance changes nothing at all.  (With the outlier share near 0, a Gaussian, they fall by up to 26.)

    Where the launch also hints at a second mode of the noise (one launch far from its commit's others), that
    mode is weighed at its evidence ``w``, a few percent; the posterior is the one-mode model's, weighed at
    ``1 - w``, plus the mode's, so it holds at least ``1 - w`` times what the bound leaves the one-mode model."""
    level = step_at(6, 0.10)
    launched = launches(level, range(10))
    clean = fit(launched, 10).posterior.single(6)
    bound = math.log1p((1 - EPS) * OUTLIER_WIDTH / (EPS * SIGMA * math.sqrt(2 * math.pi)))
    least = 1 / (1 + math.exp(bound - _logit(clean)))  # the one-mode model's posterior of 6 at the bound
    kept = {}
    for spreads in (5, 10, 15, 20, 40, 60):
        model = fit([*launched, (at, math.log(level(at)) + way * spreads * SIGMA)], 10)
        assert model.outlier_flags(at) == [False, False, spreads >= 10]
        kept[spreads] = model.posterior.single(6)
        assert model.posterior.best_single() == (6, kept[spreads])
        weight = model.mode.weight if model.mode is not None else 0.0
        assert weight < 0.05  # one launch is an outlier, a mode only a little
        assert kept[spreads] >= (1 - weight) * least
        if model.mode is None:
            assert _logit(clean) - _logit(kept[spreads]) <= bound
    assert kept[20] == pytest.approx(kept[60], abs=1e-6) and kept[40] == pytest.approx(kept[60], abs=1e-6)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_integrating_the_spread_widens_a_posterior_that_a_quiet_sample_made_sure() -> None:
    """A 3 % step, a prior of 1 % from 3 degrees of freedom, and two launches a commit that happened to scatter
    half that: at the fitted spread the boundary reads as 99.9 % certain; integrated over the spreads the prior and
    the launches allow, it does not, and the credible range holds its neighbours too.  (Not a law for every
    sample: where the fitted spread already leaves the boundary unsure, the spreads below it can sharpen it.)"""
    launched = launches(step_at(6, 1 - math.exp(-0.03)), (0, 3, 5, 6, 9), scatter=0.5)
    loose = Noise(sigma=SIGMA, df=3)
    integrated = fit(launched, 10, noise=loose).posterior
    fixed = fit(launched, 10, noise=loose, fixed=1.0).posterior
    assert fixed.single(6) > 0.999 > integrated.single(6)
    assert integrated.best_single() == (6, integrated.single(6))
    lo, hi = integrated.credible(0.001)
    f_lo, f_hi = fixed.credible(0.001)
    assert lo <= f_lo <= f_hi <= hi and hi - lo > f_hi - f_lo


def test_a_wider_fixed_spread_makes_the_boundary_less_sure() -> None:
    """The confirmation's check at the spread's upper bound takes the posterior at a multiple of the fitted
    spread: the wider, the less mass the boundary keeps."""
    launched = launches(step_at(6, 0.04), (0, 3, 5, 6, 9))
    kept = [fit(launched, 10, fixed=f).posterior.single(6) for f in (1.0, 1.5, 2.5)]
    assert kept[0] > kept[1] > kept[2]


def test_a_second_step_within_a_side_is_found_where_it_lies() -> None:
    """A 5 % drop at 3 before the 10 % drop at 6: the side before 6 holds a step between 2 and 3, the way the
    hunted one goes, and the side after it none."""
    level = lambda p: 100.0 * (0.95 if p >= 3 else 1.0) * (0.9 if p >= 6 else 1.0)  # noqa: E731
    model = fit(launches(level, range(10), per=3), 10)
    best = model.posterior.best_single()
    assert best is not None and best[0] == 6
    before = model.side_step(0, 5)
    assert before is not None and before.lo <= 2 and before.hi >= 3 and (before.a, before.b) == (2, 3)
    assert before.z <= -3.5 and before.diff == pytest.approx(math.log(0.95), abs=1e-6)
    after = model.side_step(6, 9)
    assert after is not None and abs(after.z) < 1
    assert not model.drift_on


def test_the_posterior_reads_a_mass_per_gap() -> None:
    post = Posterior(marks=(0, 4, 5, 9), masses=(0.2, 0.7, 0.1))
    assert [post.cdf(p) for p in (0, 2, 4, 5, 7, 9)] == pytest.approx([0.0, 0.1, 0.2, 0.9, 0.95, 1.0])
    assert post.best_single() == (5, 0.7)
    assert post.quantile(0.5) == 5 and post.quantile(0.1) == 2
    assert post.credible(0.5) == (5, 5) and post.credible(0.001) == (1, 9)
    assert post.mass_between(1, 4) == pytest.approx(0.2)


SLOW = math.log(0.94)  # the second mode of a bimodal server: a fifth of its launches 6 % slow


def bimodal_boundary(evidence: bool) -> list[tuple[int, float]]:
    """A 6 % drop at 6 on a server where a fifth of the launches run 6 % slow (``SLOW``): commit 5, on GOOD's side,
    had both its launches in the slow mode, where BAD's level is.  With ``evidence``, GOOD and BAD were launched
    again and each once landed in the slow mode (GOOD at BAD's level, BAD 12 % down): the repeated launches show
    the mode."""
    good, bad = 0.0, math.log(0.94)
    out = [(0, good), (0, good + 0.5 * SIGMA), (4, good - 0.5 * SIGMA), (4, good + 0.3 * SIGMA)]
    out += [(5, good + SLOW), (5, good + SLOW + SIGMA)]
    out += [(6, bad), (6, bad - 0.8 * SIGMA), (8, bad + 0.5 * SIGMA), (9, bad), (9, bad - 0.5 * SIGMA)]
    if evidence:
        out += [(0, good + SLOW - 0.3 * SIGMA), (9, bad + SLOW + 0.4 * SIGMA)]
    return sorted(out)


def test_two_launches_in_a_second_mode_no_longer_name_the_wrong_commit() -> None:
    """Without the mode, commit 5's two launches at BAD's level name 5 with 99.9 % (the old model's confident wrong
    answer, and still this model's where nothing shows the mode).  Once GOOD's and BAD's repeated launches show
    that launches also land 6 % low, the model weighs that mode in: 5 may be GOOD with two slow launches, it
    holds far less than 99.9 %, and the hunt launches again instead of answering."""
    blind = fit(bimodal_boundary(evidence=False), 10)
    assert blind.mode is None and blind.posterior.single(5) > 0.999
    seen = fit(bimodal_boundary(evidence=True), 10)
    assert seen.mode is not None and seen.mode.weight > 0.5
    assert seen.mode.offset == pytest.approx(SLOW, abs=SIGMA) and 0.05 <= seen.mode.share <= 0.45
    assert seen.posterior.single(5) < 0.99 and seen.posterior.cdf(4) < 0.001  # unclear between 5 and 6 only
    assert seen.posterior.single(6) > 0.01
    assert not any(seen.outlier_flags(0)) and not any(seen.outlier_flags(9))  # in the mode, not outliers
    assert seen.spread.mode == seen.mode and "second mode" in seen.spread.source


def test_the_noise_priors_a_a_run_shows_a_mode_the_hunt_has_not_seen() -> None:
    """The A/A run behind the prior kept each launch's offset from its median: three of ten at 6 % down are a
    mode (its spread left them out as outliers), so a hunt that has not seen one is careful from its first
    launches; the same prior without its offsets is not."""
    launched = bimodal_boundary(evidence=False)
    aa = (*(o * SIGMA for o in (0.3, -0.6, 0.9, -0.2, 0.5, -1.1, 0.0)), SLOW, SLOW + 0.7 * SIGMA, SLOW - SIGMA)
    with_offsets = fit(launched, 10, noise=Noise(sigma=SIGMA, df=6, offsets=aa))
    assert with_offsets.mode is not None and with_offsets.mode.weight > 0.5
    assert with_offsets.posterior.single(5) < 0.99
    assert fit(launched, 10, noise=Noise(sigma=SIGMA, df=6)).posterior.single(5) > 0.999


def test_clean_launches_and_one_outlier_are_no_second_mode() -> None:
    """Launches within a few spreads of their level show no mode; one launch far from its commit's others is an
    outlier (the mixture's flat part), weighed as a mode at most a little."""
    assert fit(launches(step_at(6, 0.10), range(10)), 10).mode is None
    level = step_at(6, 0.10)
    model = fit([*launches(level, range(10)), (2, math.log(level(2)) - 8 * SIGMA)], 10)
    assert model.outlier_flags(2) == [False, False, True]
    assert model.mode is None or model.mode.weight < 0.05
    assert model.posterior.best_single() is not None and model.posterior.best_single()[0] == 6  # type: ignore[index]


def test_a_mode_is_read_from_every_launch_not_from_the_ones_launched_again() -> None:
    """The launches of a hunt that named the wrong commit (``benchmarks/bench_hunt.py``, ``bimodal-wide``, d = 5 %,
    K = 4, seed 100: 64 commits, the first bad one 23, a fifth of launches 6 % slow).  The hunt launched 22 and 24
    again and again because their launches disagreed: 22, on GOOD's side, has four slow launches of six, 24 three
    of five.  Read from those launches alone, each commit at its own best level, the mode came out upside down (a
    few launches 6 % *faster* than the slow level) and 22 read BAD with 99.9 %.  Weighed by every launch and by
    the A/A run (one slow launch of ten), the mode is below the main level, and 22 is no longer named."""
    launched = (
        "0:99.8 63:94.0 21:101.2 42:95.5 25:95.5 30:95.8 35:95.5 39:93.8 22:98.7 23:96.6 24:88.7 24:89.6 23:92.4 "
        "22:94.5 21:99.1 24:96.3 22:92.8 21:102.0 23:93.5 24:89.9 22:93.7 21:101.0 23:95.6 0:100.1 22:99.5 21:101.6 "
        "23:94.4 63:95.4 22:94.1 23:96.2 21:100.3 24:94.3"
    )
    values = [(int(p), float(v)) for p, v in (item.split(":") for item in launched.split())]
    pos = np.array([p for p, _ in values])
    x = np.log(np.array([v for _, v in values]) / 100)
    order = np.argsort(pos, kind="stable")  # by position, as the hunt has them; each launch keeps its order
    aa = tuple(o / 100 for o in (-5.0, 0.6, 1.6, 0.4, -2.1, -0.6, 0.3, -0.3, -1.0, 0.3))
    model = Model.fit(pos[order], x[order], order.astype(float), 64, -1.0, Noise(0.0185, 9, offsets=aa), 0.0)
    assert model.mode is not None and model.mode.offset < 0  # below the main level: the slow launches are the mode
    assert model.posterior.single(22) < 0.999


def test_under_a_mode_each_split_is_fitted_from_its_ends_levels_and_from_the_mode_taken_back() -> None:
    """The launches of a hunt that named the wrong commit (``benchmarks/bench_hunt.py``, ``bimodal-wide``, d = 5 %,
    K = 4, seed 102: 64 commits, the first bad one 60, a fifth of launches 6 % slow).  BAD's one launch and both of
    62's landed in the slow mode, 11 % down.  EM started every split at GOOD's and BAD's medians, so under the true
    split BAD's level started 11 % down and stayed there, 60's and 61's launches at BAD's real level (5 % down)
    read as outliers, and the true split looked unlikely: 62 was named with 99.98 %.  Started also from BAD's
    median with the mode's offset taken back, the true split finds its level, and 60 is named."""
    launched = (
        "0:98.8 63:89.5 21:99.8 42:99.6 46:99.3 50:101.0 55:100.3 59:94.9 57:101.9 58:99.3 60:94.0 62:89.1 59:99.9 "
        "60:88.4 58:99.8 61:93.7 61:94.6 60:94.3 59:99.6 62:89.0 61:94.4 60:94.0 59:95.5 0:99.1"
    )
    values = [(int(p), float(v)) for p, v in (item.split(":") for item in launched.split())]
    pos = np.array([p for p, _ in values])
    x = np.log(np.array([v for _, v in values]) / 100)
    order = np.argsort(pos, kind="stable")
    aa = tuple(o / 100 for o in (1.5, -0.3, 0.1, 0.6, -6.4, -0.6, 0.2, 0.8, -0.1, -0.2))
    model = Model.fit(pos[order], x[order], order.astype(float), 64, -1.0, Noise(0.0066, 8, offsets=aa), 0.0)
    assert model.mode is not None and model.mode.offset < 0
    assert model.posterior.single(62) < 0.01
    assert model.posterior.single(60) > 0.99


def test_under_a_reading_of_the_mode_the_prior_leaves_its_a_a_launches_in_the_mode_out() -> None:
    """An A/A run with two launches 6 % slow and one 30 % fast: under a mode 6 % below, its spread is the other
    seven's (the fast one is farther from the main level than the mode is: an outlier, not the main level's
    scatter); under a mode above, the slow one within the mode's distance is the main level's scatter and stays
    in.  And the A/A run says which way round the mode is."""
    fast = (0.3, -0.6, 0.9, -0.2, 0.5, -1.1, 0.0)
    aa = (*(o * SIGMA for o in fast), SLOW + 0.4 * SIGMA, SLOW - 0.5 * SIGMA, 0.30)
    given = Noise(sigma=3 * SIGMA, df=8, offsets=aa)
    below = prior_without(given, Mode(0.2, SLOW))
    assert below is not None and below.df == 6
    assert below.sigma == pytest.approx(float(np.std(np.array(fast) * SIGMA, ddof=1)))
    above = prior_without(given, Mode(0.2, -SLOW))
    assert above is not None and above.df == 7
    assert above.sigma == pytest.approx(float(np.std(np.array(aa[:-2]), ddof=1)))
    assert prior_without(Noise(sigma=SIGMA, df=6, offsets=tuple(o * SIGMA for o in fast)), Mode(0.2, SLOW)).df == 6
    assert aa_evidence(aa, SIGMA, Mode(0.2, SLOW)) > aa_evidence(aa, SIGMA, Mode(0.2, -SLOW)) + 3
