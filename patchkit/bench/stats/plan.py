"""How many launches a hunt will likely cost: ``plan_hunt(size, sigma, effect, ...) -> HuntPlan``, and with and
without pruning, ``plan_pruning(size, relevant, sigma, effect, ...) -> PruningPlan``; pure.

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

With pruning (``plan_pruning``) the step is drawn among the relevant commits
only (a line's mask, or that many drawn at random per simulated hunt), and the
same hunts are run twice: told which commits are relevant, and with
``--every-commit``; the two plans give the expected launches of each.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
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
    launches_mean: float = math.nan  # the expected launches (their mean over the simulated hunts)

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
    return _simulate(size, sigma, effect, slots=slots, max_launches=max_launches, alpha=alpha, budget=budget,
                     prior_launches=prior_launches, seeds=seeds)  # fmt: skip


@dataclass(frozen=True)
class PruningPlan:
    """What a hunt of ``size`` commits, ``relevant`` of them after GOOD relevant, likely costs with pruning
    (``pruned``) and with ``--every-commit`` (``every_commit``): the same simulated hunts, told the mask or not."""

    size: int
    relevant: int
    pruned: HuntPlan
    every_commit: HuntPlan

    def as_json(self) -> dict[str, object]:
        return {
            "commits": self.size,
            "relevant": self.relevant,
            "pruned": {**self.pruned.as_json(), "expected": self.pruned.launches_mean},
            "every_commit": {**self.every_commit.as_json(), "expected": self.every_commit.launches_mean},
        }

    def line(self) -> str:
        """One line for people."""
        p, e = self.pruned, self.every_commit
        return (
            f"a {p.effect:.1%} step at {p.sigma:.2%} launch spread, {self.relevant} of {self.size - 1} commits "
            f"relevant: about {p.launches_mean:.1f} launches with pruning (90 % of hunts within "
            f"{p.launches_p90:.0f}), {e.launches_mean:.1f} with --every-commit (within {e.launches_p90:.0f})"
        )


def plan_pruning(
    size: int,
    relevant: int | Sequence[bool],
    sigma: float,
    effect: float,
    *,
    slots: int = 1,
    max_launches: int = 10,
    alpha: float = 0.001,
    budget: int | None = None,
    prior_launches: int = 10,
    seeds: int = SEEDS,
) -> PruningPlan:
    """The expected launches with and without pruning (``bisect --dry-run``): ``relevant`` is the line's mask (one
    bool per commit, GOOD first, as the judge has it now) or how many commits after GOOD are relevant (drawn at
    random for each simulated hunt).  The step is always on a relevant commit; the judge is right (a wrong one
    costs the launches the parent check spends: ``benchmarks/bench_hunt.py --relevant``)."""
    if isinstance(relevant, int):
        if not 0 < relevant < size:
            raise ValueError(f"relevant must be between 1 and {size - 1} commits, got {relevant}")
        count = relevant

        def mask_of(rng: random.Random) -> tuple[bool, ...]:
            chosen = set(rng.sample(range(1, size), count))
            return tuple(p in chosen for p in range(size))
    else:
        fixed = (False, *(bool(r) for r in relevant[1:]))
        if len(fixed) != size:
            raise ValueError(f"the mask has {len(fixed)} commits for a line of {size}")
        fixed = fixed if any(fixed) else (*fixed[:-1], True)  # none relevant: the hunt takes BAD as the one
        count = sum(fixed)

        def mask_of(rng: random.Random) -> tuple[bool, ...]:
            return fixed

    common = {"slots": slots, "max_launches": max_launches, "alpha": alpha, "budget": budget,
              "prior_launches": prior_launches, "seeds": seeds}  # fmt: skip
    pruned = _simulate(size, sigma, effect, masks=mask_of, prune=True, **common)  # type: ignore[arg-type]
    every = _simulate(size, sigma, effect, masks=mask_of, prune=False, **common)  # type: ignore[arg-type]
    return PruningPlan(size, count, pruned, every)


def _simulate(
    size: int,
    sigma: float,
    effect: float,
    *,
    slots: int,
    max_launches: int,
    alpha: float,
    budget: int | None,
    prior_launches: int,
    seeds: int,
    masks: Callable[[random.Random], tuple[bool, ...]] | None = None,
    prune: bool = False,
) -> HuntPlan:
    """``seeds`` simulated hunts; with ``masks``, the step on a relevant commit of each one's mask, and the hunt
    told it when ``prune``."""
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
        mask = masks(rng) if masks is not None else None
        truth = rng.randrange(1, size) if mask is None else rng.choice([p for p in range(1, size) if mask[p]])

        def measure(positions: Sequence[int], rng: random.Random = rng, truth: int = truth) -> list[Value]:
            return [(1 - effect if p >= truth else 1.0) * 100.0 * math.exp(rng.gauss(0.0, sigma)) for p in positions]

        told = (lambda mask=mask: mask) if prune and mask is not None else None
        report = hunt(size, measure, slots=slots, max_launches=max_launches, alpha=alpha, noise=prior,
                      expect="lower", budget=cap, relevance=told)  # fmt: skip
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
        launches_mean=sum(starts) / len(starts),
    )


def _quantile(ordered: list[int], q: float) -> float:
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]
