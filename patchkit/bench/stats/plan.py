"""How many launches a hunt will likely cost: ``plan_hunt(size, sigma, effect, ...) -> HuntPlan``, pure.

Why simulate rather than a formula: the hunt's cost is its binary search, the
extra launches where a probe is unclear, the confirmation of the boundary, the
references and the spread it learns as it goes; a formula for one of them
(``hunt.launches_to_decide``, the launches that settle one commit with a given
power) misses the others.  So the plan runs the hunt itself (``hunt.hunt``)
on simulated clean log-normal launches of that spread, with a step of that
size at a uniformly drawn commit, over a fixed set of seeds (the same answer
every time), and reports the median and the 90th percentile of the launches,
the rounds, and how often the simulated hunts named the right commit (the
power), answered a range, or were wrong.  Real launches are rarely cleaner than
that, so read it as a floor.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from patchkit.bench.stats.hunt import Value, default_budget, hunt, launches_to_decide
from patchkit.bench.stats.verdict import Noise

SEEDS = 60  # simulated hunts per plan: about a second at 64 commits


@dataclass(frozen=True)
class HuntPlan:
    """What a hunt of ``size`` commits for a step of ``effect`` at launch spread ``sigma`` likely costs."""

    size: int
    sigma: float
    effect: float  # the step, relative (0.05: 5 % worse)
    slots: int
    max_launches: int
    budget: int
    launches_median: float
    launches_p90: float
    rounds_median: float
    found: float  # share of simulated hunts that named the planted commit
    ranges: float  # share that answered a range (or no step)
    wrong: float  # share that named another commit or a range without it
    per_commit: int  # launches that settle one commit at this step and spread, with 90 % power (the formula)
    seeds: int

    def as_json(self) -> dict[str, object]:
        return {
            "commits": self.size,
            "sigma": self.sigma,
            "effect": self.effect,
            "slots": self.slots,
            "max_launches": self.max_launches,
            "budget": self.budget,
            "launches": {"median": self.launches_median, "p90": self.launches_p90},
            "rounds": self.rounds_median,
            "found": self.found,
            "ranges": self.ranges,
            "wrong": self.wrong,
            "per_commit": self.per_commit,
            "simulated_hunts": self.seeds,
        }

    def line(self) -> str:
        """One line for people."""
        return (
            f"a {self.effect:.1%} step over {self.size} commits at {self.sigma:.2%} launch spread: about "
            f"{self.launches_median:.0f} launches (90 % of hunts within {self.launches_p90:.0f}, budget "
            f"{self.budget}), {self.rounds_median:.0f} rounds; the commit is named in {self.found:.0%} of "
            f"simulated hunts, a range in {self.ranges:.0%}"
        )


def plan_hunt(
    size: int,
    sigma: float,
    effect: float,
    *,
    slots: int = 1,
    max_launches: int = 10,
    alpha: float = 0.001,
    budget: int | None = None,
    prior_launches: int = 10,
    seeds: int = SEEDS,
) -> HuntPlan:
    """Simulate ``seeds`` hunts (the prior: ``prior_launches`` at ``sigma``, as ``patchkit noise`` stores it)."""
    if size < 2:
        raise ValueError(f"a hunt needs GOOD and BAD: size {size} < 2")
    if not (0 < effect < 1):
        raise ValueError(f"effect must be between 0 and 1, got {effect}")
    cap = budget if budget is not None else default_budget(size, max_launches)
    starts: list[int] = []
    rounds: list[int] = []
    found = ranges = wrong = 0
    prior = Noise(sigma=max(sigma, 1e-6), df=max(prior_launches - 1, 1))
    for seed in range(seeds):
        rng = random.Random(f"plan-{seed}")
        truth = rng.randrange(1, size)

        def measure(positions: Sequence[int], rng: random.Random = rng, truth: int = truth) -> list[Value]:
            return [(1 - effect if p >= truth else 1.0) * 100.0 * math.exp(rng.gauss(0.0, sigma)) for p in positions]

        report = hunt(size, measure, slots=slots, max_launches=max_launches, alpha=alpha, noise=prior,
                      expect="lower", budget=cap)  # fmt: skip
        starts.append(report.starts)
        rounds.append(len(report.rounds))
        if report.kind == "found":
            found += report.first_bad == truth
            wrong += report.first_bad != truth
        else:
            ranges += 1
            if report.lo is not None and report.hi is not None and not report.lo <= truth <= report.hi:
                wrong += 1
    ordered = sorted(starts)
    return HuntPlan(
        size=size,
        sigma=sigma,
        effect=effect,
        slots=slots,
        max_launches=max_launches,
        budget=cap,
        launches_median=float(_quantile(ordered, 0.5)),
        launches_p90=float(_quantile(ordered, 0.9)),
        rounds_median=float(_quantile(sorted(rounds), 0.5)),
        found=found / seeds,
        ranges=ranges / seeds,
        wrong=wrong / seeds,
        per_commit=launches_to_decide(-math.log1p(-effect), sigma, alpha),
        seeds=seeds,
    )


def _quantile(ordered: list[int], q: float) -> float:
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]
