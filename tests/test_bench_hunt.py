"""The noise-aware search (patchkit.bench.stats.hunt), driven by simulated launches."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pytest

from patchkit.bench.stats.hunt import GiveUp, HuntReport, default_budget, hunt, launches_to_decide
from patchkit.bench.stats.verdict import Call, Noise, noise_of


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


def test_a_clear_step_is_found_with_one_launch_per_probe_and_a_confirmed_boundary() -> None:
    for seed in range(5):
        h = History(32, first_bad=1 + seed * 7, d=0.3, sigma=0.01, seed=seed)
        report = run(h, noise=h.prior())
        assert report.kind == "found" and report.first_bad == h.first_bad
        assert report.starts <= 2 + 6 + 2  # GOOD, BAD, a binary search's probes, a second launch each side
        launched = {s.position: len(s.launches) for s in report.measured}
        assert launched[h.first_bad] >= 2 and launched[h.first_bad - 1] >= 2  # no answer on one launch a side
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
    assert ranges >= 1


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


class Scripted:
    """Launches from a rule: ``value(position, launch number, order)`` (None: the launch failed)."""

    def __init__(self, size: int, value) -> None:  # type: ignore[no-untyped-def]
        self.size, self.value = size, value
        self.count: dict[int, int] = {}
        self.order = 0
        self.asked: list[int] = []

    def __call__(self, positions: Sequence[int]) -> list[float | None]:
        out = []
        for p in positions:
            self.count[p] = self.count.get(p, 0) + 1
            out.append(self.value(p, self.count[p], self.order))
            self.order += 1
            self.asked.append(p)
        return out


def jitter(p: int, n: int) -> float:
    """A small deterministic scatter (about 0.3 %), different per commit and launch."""
    return 1 + 0.003 * math.sin(7.3 * p + 3.1 * n)


QUIET = Noise(sigma=0.003, df=9)


def test_an_outlier_at_the_boundary_is_outvoted_and_shown_as_one() -> None:
    """The last good commit's first launch runs 10 % slow, exactly BAD's level: one launch a side made that
    boundary 'certain' before, and the search named 7.  Now 7 is launched until its launches agree, the slow one
    is flagged as an outlier, and 8 is named."""

    def value(p: int, n: int, order: int) -> float:
        if p == 7 and n == 1:
            return 90.0
        return (90.0 if p >= 8 else 100.0) * jitter(p, n)

    for size in (16, 32):
        h = Scripted(size, value)
        report = hunt(size, h, noise=QUIET, expect="lower")
        assert report.kind == "found" and report.first_bad == 8, report.why
        seven = next(s for s in report.measured if s.position == 7)
        if h.count.get(7, 0) and seven.launches[0] == 90.0:
            assert seven.outliers[0] and not any(seven.outliers[1:])
            assert len(seven.launches) >= 3 and report.outliers >= 1


def test_good_failing_on_its_second_launch_does_not_lose_the_hunt() -> None:
    """A later launch of GOOD does not come up (OOM, a port taken): before, the hunt raised 'the posterior needs
    GOOD and BAD measured'.  Now the failure is retried, recorded, and the answer stands on what was measured."""

    def value(p: int, n: int, order: int) -> float | None:
        if p == 0 and n >= 2:
            return None
        return (96.0 if p >= 300 else 100.0) * (1 + 0.01 * math.sin(11.7 * p + 5.3 * n))

    h = Scripted(512, value)
    report = hunt(512, h, noise=Noise(sigma=0.01, df=9), expect="lower")
    assert report.kind == "found" and report.first_bad == 300, report.why
    good_failures = [f for f in report.failures if f.position == 0]
    assert h.count[0] >= 2 and len(good_failures) == h.count[0] - 1 <= 3  # retried, then left alone
    assert 0 not in report.skipped and any(s.position == 0 and s.launches for s in report.measured)


def test_a_drift_is_seen_by_the_late_references_and_corrected() -> None:
    """Each launch 1 % slower than the one before, a 10 % step: the trend is fitted, flagged, GOOD and BAD are
    launched again late in the search, and the right commit is named."""

    def value(p: int, n: int, order: int) -> float:
        return (90.0 if p >= 20 else 100.0) * 0.99**order * jitter(p, n)

    h = Scripted(64, value)
    report = hunt(64, h, noise=QUIET, expect="lower")
    assert report.kind == "found" and report.first_bad == 20, report.why
    assert report.drift is not None and report.drift.flagged and report.drift.total < -0.02
    assert "slower" in report.drift.why
    late = [
        p
        for r in report.rounds[len(report.rounds) // 2 :]
        for p, w in zip(r.asked, r.why, strict=True)
        if "reference" in w
    ]
    assert {0, 63} <= set(late)  # GOOD and BAD launched late: the re-check the trend is seen by


def test_a_prior_from_a_quieter_day_gives_way_to_the_hunts_own_spread() -> None:
    """The prior says 0.2 %, the launches scatter 2 %: the hunt says so and uses the larger spread."""
    for seed in range(6):
        h = History(64, first_bad=37, d=0.15, sigma=0.02, seed=seed)
        report = run(h, noise=Noise(sigma=0.002, df=9), expect="lower")
        assert report.spread is not None and report.spread.sigma > 0.01
        assert report.spread.stale or "wider than the noise prior" in report.spread.source
        assert report.first_bad in (37, None)  # never confidently wrong
        if report.kind == "range":
            assert report.lo is not None and report.hi is not None and report.lo <= 37 <= report.hi


def test_two_steps_name_one_and_report_the_other() -> None:
    """A 5 % regression at 10 and a 30 % drop at 40: the answer names one step, and says the other is there, with
    the range it lies in and its size."""

    def value(p: int, n: int, order: int) -> float:
        level = 100.0 * (0.95 if p >= 10 else 1.0) * (0.7 if p >= 40 else 1.0)
        return level * jitter(p, n)

    h = Scripted(64, value)
    report = hunt(64, h, noise=QUIET, expect="lower")
    assert report.kind == "found" and report.first_bad in (10, 40), report.why
    other = 10 if report.first_bad == 40 else 40
    assert len(report.others) == 1
    step = report.others[0]
    assert step.lo <= other <= step.hi and step.same_way
    assert step.side == ("before" if other == 10 else "after")
    if other == 10:
        assert step.ratio == pytest.approx(0.95, abs=0.01)


def test_the_budget_ends_the_hunt_with_the_range_and_what_would_narrow_it() -> None:
    h = History(64, first_bad=30, d=0.03, sigma=0.03, seed=3)
    report = run(h, noise=h.prior(), budget=20, expect="lower")
    assert report.starts <= 20 and report.budget == 20
    assert report.kind in ("range", "no-step")
    if report.kind == "range":
        assert "the budget of 20 launches is spent" in report.why
        assert report.advice.startswith("about ") and "would likely decide" in report.advice


def test_the_default_budget_follows_the_line() -> None:
    assert default_budget(64, 10) == 80 and default_budget(512, 10) == 110
    assert default_budget(3, 20) == 60  # at least three commits' worth of --max-launches


def test_launches_to_decide_grows_as_the_step_shrinks_and_with_power() -> None:
    assert launches_to_decide(0.05, 0.01, 0.001) < launches_to_decide(0.02, 0.01, 0.001)
    assert launches_to_decide(0.03, 0.01, 0.001, power=0.99) > launches_to_decide(0.03, 0.01, 0.001, power=0.5)


def test_a_refused_launch_gives_its_commit_up_at_once() -> None:
    def value(p: int, n: int, order: int) -> float | GiveUp:
        if p == 7:
            return GiveUp("refused: a STRAY module")
        return (70.0 if p >= 8 else 100.0) * jitter(p, n)

    h = Scripted(16, value)
    report = hunt(16, h, noise=QUIET, expect="lower")
    assert h.count[7] == 1 and 7 in report.skipped
    assert report.kind == "range" and (report.lo, report.hi) == (7, 8)


def test_the_bisect_output_names_the_outlier_the_spread_and_the_second_step() -> None:
    """What a person reads under the launch table: the spread and where it came from, the outlier launches, and
    an ALSO line with the bisect that finds the other step; the same facts in --json."""
    import io

    from helpers import rich_off_terminal

    from patchkit.bench.stats.search import Measurement, bisect
    from patchkit.git import Commit
    from patchkit.views.bisect import show_bisect

    line = [Commit(f"{i:040x}", (f"{i - 1:040x}",) if i else (), "t <t@x>", "2026-01-01", f"c{i}") for i in range(64)]
    launched: dict[int, int] = {}

    def measure(c: Commit) -> Measurement:
        p = int(c.sha, 16)
        launched[p] = launched.get(p, 0) + 1
        if p == 39 and launched[p] == 1:
            return Measurement(70.0 * 0.95 * 0.8)  # one launch 20 % slow: far from both levels
        level = 100.0 * (0.95 if p >= 10 else 1.0) * (0.7 if p >= 40 else 1.0)
        return Measurement(level * jitter(p, launched[p]))

    report = bisect(line, measure, noise=QUIET)
    assert report.kind == "found" and report.first_bad in (line[10], line[40])
    out = io.StringIO()
    show_bisect(rich_off_terminal(out), report, "output_tok_s")
    text = out.getvalue()
    assert "launch spread " in text and report.spread is not None and report.spread.source in text
    assert "ALSO: a second regression" in text and "run `patchkit bisect --good " in text
    data = report.to_json()["search"]
    assert data["other_steps"] and data["other_steps"][0]["hint"] == report.other_steps[0].hint
    assert data["spread"]["source"] == report.spread.source and data["budget"] == 80
    if launched.get(39, 0) >= 1 and report.outliers:
        assert "outliers (far from both levels; they move no boundary): " in text
        assert line[39].sha in {o["commit"] for o in data["outliers"]}


def test_the_hunts_own_spread_is_not_shrunk_by_a_small_prior() -> None:
    """Residuals that scatter 2 %, weighed first at a prior's 0.5 %: most lie beyond four of the prior's spreads,
    where the mixture calls a launch an outlier.  The hunt's own estimate must still come out near 2 % (weighed at
    the residuals' robust scale), or a stale prior would hide itself from the very check meant to catch it."""
    from patchkit.bench.stats.hunt.likelihood import responsibilities
    from patchkit.bench.stats.hunt.sigma import fit_spread

    rng = random.Random(7)
    resid = np.array([rng.gauss(0.0, 0.02) for _ in range(40)])
    weights = responsibilities(resid, 0.005)  # what EM hands over at the prior's spread
    assert float(weights.sum()) < 35  # the premise: at the prior's spread several launches look like outliers
    _, spread = fit_spread(resid, weights, Noise(sigma=0.005, df=9), 0.0, 2, 0.005)
    assert spread.hunt is not None and 0.015 < spread.hunt < 0.026
    assert spread.stale and spread.sigma > 0.015


def test_a_spread_from_few_degrees_of_freedom_costs_launches_never_a_wrong_answer() -> None:
    """A prior of 2 degrees of freedom says little about the spread: the posterior integrates the spread over what
    the prior and the launches allow, so a small step gets more launches than with the same spread known from 50
    degrees of freedom, and the answer is never wrong."""
    loose = tight = 0
    for seed in range(6):
        for df in (2, 50):
            h = History(32, first_bad=11 + seed, d=0.05, sigma=0.012, seed=seed)
            report = run(h, noise=Noise(sigma=0.012, df=df), expect="lower")
            assert report.first_bad in (h.first_bad, None)
            if report.kind == "range":
                assert report.lo is not None and report.hi is not None and report.lo <= h.first_bad <= report.hi
            if df == 2:
                loose += report.starts
            else:
                tight += report.starts
    assert loose > tight, (loose, tight)


def test_a_prior_too_small_makes_no_second_step_of_ordinary_scatter() -> None:
    """One 5 % step, launches scattering 1 %, and a noise prior at a fifth of that (an A/A run on a quiet day, or
    one whose trimming took out ordinary launches).  The prior is called stale, and a second step is then judged
    at the side's own scatter where that rejects the prior: commits a spread apart are no 'second regression'.
    Before, 6 of these 12 hunts reported one; now at most one may, where the few launches of one side happen to
    scatter as tightly as the prior says (seed 9: five launches at 0.44 %)."""
    reported = []
    for seed in range(12):
        h = History(512, first_bad=100 + 31 * seed, d=0.05, sigma=0.01, seed=seed)
        report = run(h, noise=Noise(sigma=0.002, df=7), expect="lower")
        assert report.kind == "found" and report.first_bad == h.first_bad, report.why
        assert report.spread is not None and report.spread.stale
        reported += [seed] if report.others else []
    assert len(reported) <= 1, reported


def test_good_on_one_launch_is_launched_again_when_its_side_hints_at_a_second_step() -> None:
    """Commits 1..39 run 2.5 % below GOOD (a second, smaller regression right after GOOD), then a 30 % drop at 40.
    GOOD's one launch against the rest of its side is a z of about 2: the one split a single launch decides.
    GOOD is launched again before the answer, and the second step is reported."""

    def value(p: int, n: int, order: int) -> float:
        level = 100.0 * (1.0 if p == 0 else 0.975) * (0.7 if p >= 40 else 1.0)
        return level * jitter(p, n)

    h = Scripted(64, value)
    report = hunt(64, h, noise=Noise(sigma=0.01, df=9), expect="lower")
    assert report.kind == "found" and report.first_bad == 40, report.why
    whys = [w for r in report.rounds for w in r.why]
    checks = [w for w in whys if w.startswith("second step?")]
    assert checks and checks[0].startswith("second step? GOOD on one launch against the rest of its side"), whys
    assert h.count[0] >= 2
    assert len(report.others) == 1 and report.others[0].lo <= 1 <= report.others[0].hi
