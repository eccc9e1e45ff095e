"""The noise-aware search (patchkit.bench.hunt), driven by simulated launches."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from patchkit.bench.hunt import HuntReport, hunt
from patchkit.bench.verdict import Call, Noise, noise_of


class History:
    """A line of commits with one step of ``d`` down at ``first_bad``; each launch has its own factor."""

    def __init__(self, size: int, first_bad: int, d: float, sigma: float, seed: int, fail: Sequence[int] = ()) -> None:
        self.size, self.first_bad, self.d, self.sigma = size, first_bad, d, sigma
        self.rng = random.Random(seed)
        self.fail = set(fail)
        self.calls: list[list[int]] = []

    def mean(self, pos: int) -> float:
        return 100.0 * (1 - self.d) if pos >= self.first_bad else 100.0

    def __call__(self, positions: Sequence[int]) -> list[float | None]:
        self.calls.append(list(positions))
        return [None if p in self.fail else self.mean(p) * math.exp(self.rng.gauss(0.0, self.sigma)) for p in positions]

    def prior(self) -> Noise:
        noise = noise_of([100.0 * math.exp(self.rng.gauss(0.0, self.sigma)) for _ in range(10)])
        assert noise is not None
        return noise


def run(history: History, **kw: object) -> HuntReport:
    return hunt(history.size, history, **kw)  # type: ignore[arg-type]


def test_a_clear_step_is_found_with_one_launch_per_probe() -> None:
    for seed in range(5):
        h = History(32, first_bad=1 + seed * 7, d=0.3, sigma=0.01, seed=seed)
        report = run(h, noise=h.prior())
        assert report.kind == "found" and report.first_bad == h.first_bad
        assert report.starts <= 2 + 6  # GOOD, BAD and a binary search's probes
        assert report.evidence is not None and report.evidence.call is Call.DIFFERENT
        assert report.adjacent is not None and report.adjacent.direction == "lower"
        assert report.probability >= 0.999


def test_noisy_steps_add_launches_where_unclear_and_are_never_confidently_wrong() -> None:
    found = 0
    added = False
    for seed in range(25):
        rng = random.Random(100 + seed)
        h = History(48, first_bad=rng.randrange(1, 48), d=0.06, sigma=0.02, seed=seed)
        report = run(h, noise=h.prior(), max_launches=12)
        if report.kind == "found":
            found += 1
            assert report.first_bad == h.first_bad, (seed, report.why)
        else:
            assert report.kind == "range"
            assert report.lo is not None and report.hi is not None and report.lo <= h.first_bad <= report.hi
        added |= any(w.startswith(("unclear", "reference")) for r in report.rounds for w in r.why)
        assert all(len(s.launches) <= 12 for s in report.measured)
    assert found >= 20
    assert added  # some probe needed more than one launch


def test_too_few_launches_give_an_honest_range_not_a_commit() -> None:
    for seed in range(10):
        h = History(40, first_bad=17, d=0.05, sigma=0.04, seed=seed)
        report = run(h, max_launches=2, noise=h.prior())
        assert report.kind in {"range", "no-step"}
        if report.kind == "range":
            assert report.lo is not None and report.hi is not None
            assert report.lo <= 17 <= report.hi and report.hi > report.lo
            assert report.why
        assert report.first_bad is None


def test_a_range_names_the_commits_left_unclear_and_the_most_likely_first_bad() -> None:
    """A range whose commits are each settled to 1 % but not enough for an answer named no commit at all."""
    ranges = 0
    for seed in range(30):
        h = History(16, first_bad=10, d=0.1, sigma=0.03, seed=seed)
        report = run(h, max_launches=2, expect="lower")
        if report.kind != "range":
            continue
        ranges += 1
        assert report.lo is not None and report.hi is not None and report.likely is not None
        assert report.lo <= report.likely <= report.hi
        assert report.likely_mass is not None and 0 < report.likely_mass < 0.999
        assert f"most likely first bad: {report.likely} at {report.likely_mass:.4f} of the posterior" in report.why
        p_bad = {s.position: s.p_bad for s in report.measured}
        assert report.unclear  # the shortfall is on measured commits: at least one is named
        for p in report.unclear:
            assert 0.0005 < p_bad[p] < 0.9995
            assert f"{p} (P(bad) {p_bad[p]:.4f}, 2 launches)" in report.why
        assert "unclear at --max-launches 2: " in report.why
    assert ranges >= 3


def test_more_slots_take_fewer_rounds_and_no_round_is_wider_than_the_slots() -> None:
    one = four = 0
    for seed in range(8):
        for slots in (1, 4):
            h = History(256, first_bad=37 + 23 * seed, d=0.1, sigma=0.01, seed=seed)
            report = run(h, slots=slots, noise=h.prior())
            assert report.kind == "found" and report.first_bad == h.first_bad
            assert all(len(r.asked) <= slots for r in report.rounds)
            if slots == 1:
                one += len(report.rounds)
            else:
                four += len(report.rounds)
    assert four <= 0.6 * one


def test_a_commit_that_cannot_be_measured_stays_in_the_answer() -> None:
    h = History(16, first_bad=8, d=0.3, sigma=0.01, seed=1, fail=[7])
    report = run(h, noise=h.prior())
    assert report.kind == "range" and (report.lo, report.hi) == (7, 8)
    assert 7 in report.skipped and "7" in report.why


def test_no_step_between_good_and_bad() -> None:
    h = History(16, first_bad=99, d=0.0, sigma=0.01, seed=2)
    report = run(h, min_effect=0.05, noise=h.prior())
    assert report.kind == "no-step" and "same" in report.why
    for seed in range(10):  # without a threshold, never a commit: no step, or a range when noise fooled the endpoints
        h = History(16, first_bad=99, d=0.0, sigma=0.01, seed=seed)
        report = run(h, max_launches=3)
        assert report.kind in {"no-step", "range"} and report.first_bad is None


def test_a_step_the_wrong_way_is_not_hunted() -> None:
    h = History(16, first_bad=5, d=-0.3, sigma=0.01, seed=4)
    report = run(h, expect="lower", noise=h.prior())
    assert report.kind == "no-step" and "higher" in report.why


def test_without_a_prior_the_spread_comes_from_the_launches() -> None:
    h = History(32, first_bad=20, d=0.2, sigma=0.01, seed=5)
    report = run(h)
    assert report.kind == "found" and report.first_bad == 20
    assert report.endpoints is not None and report.endpoints.n_a >= 2


def test_bad_arguments() -> None:
    h = History(8, first_bad=3, d=0.2, sigma=0.01, seed=6)
    for kw in ({"slots": 0}, {"max_launches": 0}, {"alpha": 0.7}):
        with pytest.raises(ValueError):
            run(h, **kw)
    with pytest.raises(ValueError):
        hunt(1, h)
