"""The three-way verdict on per-launch values (patchkit.bench.stats.verdict), and one side's level,
on simulated launches."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from patchkit.bench.stats.verdict import (
    Call,
    Noise,
    judge,
    launches_needed,
    level,
    noise_of,
    offsets,
    outliers,
    pooled_noise,
    resolution_floor,
)


def launches(rng: random.Random, n: int, mean: float, sigma: float) -> list[float]:
    return [mean * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


def test_a_clear_drop_is_different_lower_with_an_interval_around_the_true_ratio() -> None:
    rng = random.Random(1)
    v = judge(launches(rng, 6, 100, 0.01), launches(rng, 6, 80, 0.01), threshold=0.05)
    assert v.call is Call.DIFFERENT and v.direction == "lower"
    assert v.low is not None and v.high is not None and v.ratio is not None
    assert v.low < 0.8 < v.high and v.high < 1 / 1.05
    assert v.launches_needed is None and not v.prior_used
    assert v.n_a == v.n_b == 6


def test_the_welch_interval_is_scipys() -> None:
    rng = random.Random(2)
    a, b = launches(rng, 5, 100, 0.03), launches(rng, 7, 96, 0.05)
    v = judge(a, b, threshold=0.0, confidence=0.95)
    ci = stats.ttest_ind([math.log(x) for x in b], [math.log(x) for x in a], equal_var=False).confidence_interval(0.95)
    assert v.low == pytest.approx(math.exp(ci.low)) and v.high == pytest.approx(math.exp(ci.high))


def test_one_launch_per_side_without_a_prior_is_unknown_and_says_why() -> None:
    v = judge([100.0], [70.0])
    assert v.call is Call.UNKNOWN
    assert v.ratio == pytest.approx(0.7) and v.low is None and v.launches_needed is None
    assert "noise prior" in v.why
    # What would decide it, said in the verdict (JSON `next`, compare's table).
    assert v.next == "run `patchkit noise` for a noise prior, or launch each side at least twice"
    assert v.as_json()["next"] == v.next


def test_one_launch_per_side_with_a_prior_gives_an_interval_and_the_launches_needed() -> None:
    noise = Noise(sigma=0.03, df=9)
    big = judge([100.0], [60.0], noise=noise)
    assert big.call is Call.DIFFERENT and big.prior_used
    near = judge([100.0], [94.0], noise=noise, threshold=0.05)
    assert near.call is Call.UNKNOWN
    assert near.launches_needed is not None and near.launches_needed > 1
    assert near.next == f"about {near.launches_needed} launches per side"
    assert big.next is None  # decided: nothing more to do
    edge = judge([100.0], [95.2380952], noise=noise, threshold=0.05)  # the estimate on the band's edge
    assert edge.call is Call.UNKNOWN and edge.launches_needed is None
    assert edge.next == "more than 1000 launches per side: the change is about the size of ±5.0%"
    # More noise, more launches.
    noisier = judge([100.0], [94.0], noise=Noise(sigma=0.06, df=9), threshold=0.05)
    assert noisier.launches_needed is None or noisier.launches_needed > near.launches_needed


def test_the_prior_fades_as_launches_accumulate_with_no_switch_at_a_count() -> None:
    """The prior is pooled at every launch count, with its df shared by the two sides: a wrong prior (50 %) widens
    an interval of 2 x 2 launches a lot and one of 2 x 30 little, and the width changes smoothly in between."""
    rng = random.Random(3)
    wrong = Noise(sigma=0.5, df=9)
    widths = []
    for n in (2, 4, 7, 8, 9, 15, 30):
        v = judge(launches(rng, n, 100, 0.02), launches(rng, n, 100, 0.02), noise=wrong)
        assert v.prior_used and v.low is not None and v.high is not None
        widths.append(math.log(v.high / v.low))
    assert widths == sorted(widths, reverse=True)  # more launches, narrower: the prior's weight fades
    assert widths[3] / widths[2] > 0.8  # 7 -> 8 launches: no jump where PRIOR_UNTIL used to switch the prior off
    assert widths[-1] < widths[0] / 4


def test_a_a_comparisons_are_never_different() -> None:
    rng = random.Random(4)
    calls = []
    for _ in range(300):
        n = rng.choice([2, 3, 5])
        prior = noise_of(launches(rng, 10, 100, 0.03))
        calls.append(judge(launches(rng, n, 100, 0.03), launches(rng, n, 100, 0.03), noise=prior).call)
    assert Call.DIFFERENT not in calls
    assert Call.SAME in calls  # and it can say so


def test_the_interval_covers_the_true_ratio_at_its_confidence() -> None:
    rng = random.Random(5)
    inside = 0
    trials = 400
    for _ in range(trials):
        v = judge(launches(rng, 4, 100, 0.04), launches(rng, 4, 90, 0.04), threshold=0.0, confidence=0.9)
        assert v.low is not None and v.high is not None
        inside += v.low <= 0.9 <= v.high
    assert 0.85 * trials <= inside <= 0.95 * trials


def test_threshold_zero_never_says_same() -> None:
    v = judge([100.0, 100.1, 99.9], [100.0, 100.1, 99.9], threshold=0.0)
    assert v.call is Call.UNKNOWN


def test_values_that_have_no_ratio_are_unknown() -> None:
    assert judge([100.0, 0.0], [90.0, 91.0]).call is Call.UNKNOWN
    assert "positive" in judge([100.0, -1.0], [90.0, 91.0]).why
    assert judge([], [90.0]).call is Call.UNKNOWN


def test_noise_of_an_aa_run_and_pooled_noise() -> None:
    rng = random.Random(6)
    values = launches(rng, 200, 100, 0.02)
    one = noise_of(values)
    assert one is not None and one.df == 199 and one.sigma == pytest.approx(0.02, rel=0.15)
    assert noise_of([100.0]) is None
    pooled = pooled_noise([launches(rng, 50, 100, 0.02), launches(rng, 50, 50, 0.02), [70.0]])
    assert pooled is not None and pooled.df == 98 and pooled.sigma == pytest.approx(0.02, rel=0.2)
    with pytest.raises(ValueError):
        Noise(sigma=-1.0, df=3)


def test_launches_needed_clears_the_band_with_power() -> None:
    n = launches_needed(math.log(0.9), 0.03, threshold=0.05, confidence=0.99)
    assert n is not None
    # At that n the interval clears the band with 80 % power (the estimate's own error to spare); one fewer does not.
    z = stats.norm.ppf(0.8)
    half = (stats.t.ppf(0.995, 2 * (n - 1)) + z) * 0.03 * math.sqrt(2 / n)
    assert abs(math.log(0.9)) - half > math.log1p(0.05)
    half_less = (stats.t.ppf(0.995, 2 * (n - 2)) + z) * 0.03 * math.sqrt(2 / (n - 1))
    assert abs(math.log(0.9)) - half_less <= math.log1p(0.05)
    # More power costs more launches; at 50 % power it is the old "interval clears at the estimate" count.
    assert launches_needed(math.log(0.9), 0.03, threshold=0.05, confidence=0.99, power=0.95) > n
    assert launches_needed(math.log(0.9), 0.03, threshold=0.05, confidence=0.99, power=0.5) < n
    assert launches_needed(math.log1p(0.05), 0.03, threshold=0.05, confidence=0.99) is None


def test_identical_launches_get_the_resolution_as_spread_never_a_zero_width_interval() -> None:
    """A quantized metric (one decimal) whose launches repeat to the last digit: the interval is the rounding's
    width, so the same values on both sides are not 'different' at threshold 0, and a real change still is."""
    same = judge([61.1, 61.1, 61.1], [61.1, 61.1], threshold=0.0)
    assert same.call is Call.UNKNOWN and same.low is not None and same.high is not None and same.low < 1 < same.high
    assert same.sigma == pytest.approx(resolution_floor([61.1])) and same.sigma > 0
    moved = judge([61.1, 61.1, 61.1], [60.1, 60.1], threshold=0.0)
    assert moved.call is Call.DIFFERENT and moved.direction == "lower"
    assert resolution_floor([100.0, 90.0]) == pytest.approx(1 / math.sqrt(12) / 90)
    assert resolution_floor([]) == 0.0


def test_each_side_brings_its_own_prior_when_they_ran_in_two_places() -> None:
    """compare used A's prior for both sides: a noisy host's B judged with a quiet host's spread read as different."""
    rng = random.Random(11)
    quiet, noisy = Noise(sigma=0.005, df=9), Noise(sigma=0.06, df=9)
    a, b = launches(rng, 2, 100, 0.005), launches(rng, 2, 96, 0.06)
    shared = judge(a, b, threshold=0.0, noise=quiet)
    own = judge(a, b, threshold=0.0, noise=quiet, noise_b=noisy)
    assert own.high is not None and shared.high is not None
    assert math.log(own.high / own.low) > 1.5 * math.log(shared.high / shared.low)
    assert "each side's noise prior" in own.why


def test_an_a_a_spread_leaves_out_an_outlier_launch() -> None:
    values = [100.2, 99.8, 100.5, 99.6, 100.1, 70.0, 100.3, 99.9, 100.0, 100.4]
    flags = outliers(values)
    assert flags == [False] * 5 + [True] + [False] * 4
    got = noise_of(values)
    assert got is not None and got.df == 8 and got.sigma < 0.005
    # The prior keeps every launch's log offset from their median, the one its spread left out too: a second mode
    # of the launch noise shows there (``hunt.modes``).
    mid = (math.log(100.0) + math.log(100.1)) / 2  # the median of ten: the mean of the middle two
    assert got.offsets == pytest.approx([math.log(v) - mid for v in values], abs=1e-12)
    assert offsets([50.0, -1.0]) == ()  # not all positive: nothing to read


def test_a_commits_level_is_the_student_interval_of_its_launches_geometric_mean() -> None:
    rng = random.Random(8)
    values = launches(rng, 5, 94, 0.03)
    got = level(values, confidence=0.95)
    logs = [math.log(x) for x in values]
    mean = sum(logs) / len(logs)
    low, high = stats.t.interval(0.95, len(logs) - 1, loc=mean, scale=stats.sem(logs))
    assert got.center == pytest.approx(math.exp(mean)) and got.n == 5 and got.df == 4 and not got.prior_used
    assert got.low == pytest.approx(math.exp(low)) and got.high == pytest.approx(math.exp(high))
    assert got.as_json()["launches"] == 5 and got.as_json()["confidence"] == 0.95


def test_a_level_pools_the_noise_prior_as_judge_does_and_one_launch_alone_has_none() -> None:
    alone = level([61.0])
    assert alone.low is None and alone.high is None and alone.center == pytest.approx(61.0)
    assert "noise prior" in alone.why and alone.as_json()["low"] is None
    prior = Noise(sigma=0.02, df=9)
    one = level([61.0], noise=prior)
    half = stats.t.ppf(0.995, 9) * 0.02
    assert one.prior_used and one.df == 9 and one.why.startswith("1 launch;")
    assert level([61.0] * 20, noise=prior).prior_used  # at any launch count: no switch
    assert one.low == pytest.approx(61.0 * math.exp(-half)) and one.high == pytest.approx(61.0 * math.exp(half))
    # Two launches with the prior: its df plus theirs, its spread pooled with theirs, as judge pools a side.
    two = level([60.0, 62.0], noise=prior)
    ss = (math.log(60.0) - math.log(60.0 * 62.0) / 2) ** 2 * 2
    sigma = math.sqrt((9 * 0.02**2 + ss) / 10)
    assert two.df == 10 and two.sigma == pytest.approx(sigma)
    assert math.log(two.high / two.low) / 2 == pytest.approx(stats.t.ppf(0.995, 10) * sigma / math.sqrt(2))
    same = level([61.1, 61.1])  # repeats to the last digit: the rounding's width, not zero
    assert same.low is not None and same.high is not None and same.low < 61.1 < same.high
    assert math.log(same.high / same.low) < 0.1
    assert level([61.0, 0.0]).low is None and level([]).center is None


def test_an_a_a_spread_keeps_ordinary_launches() -> None:
    """Ten Gaussian launches with no outlier among them: the robust spread that flags outliers must not take out
    ordinary ones, or the prior comes out too small.  The median absolute deviation did in 3.4 % of such runs
    (five launches that happen to cluster); Qn in under 1.5 %."""
    rng = random.Random(11)
    trimmed = 0
    for _ in range(2000):
        values = [100.0 * math.exp(rng.gauss(0.0, 0.01)) for _ in range(10)]
        got = noise_of(values)
        assert got is not None
        trimmed += got.df < 9
    assert trimmed < 30, trimmed
