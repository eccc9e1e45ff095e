"""The noise-aware bisect (``patchkit.bench.stats.search``) against a plain one-launch bisect, under real launch noise.

Each trial: a line of N commits (GOOD first, BAD last) with a planted step of
d % down in throughput at a uniformly drawn commit.  A server launch's value is
the commit's mean times a per-launch factor from the cell's *launch model*,
times the median of ``--runs`` client runs each with its own factor
exp(N(0, sigma/4)).  The launch models are what real GPU servers do:

* ``clean``: log-normal, exp(N(0, sigma));
* ``outliers``: clean, and 3 % of launches run 20-40 % slow (a noisy
  neighbour, a throttled GPU, a cold page cache);
* ``heavy``: Student-t with 3 df, scaled to a standard deviation of sigma;
* ``bimodal``: clean, and 20 % of launches 3 % slower (the unlucky placement);
* ``drift``: clean, and each launch 0.1 % slower than the one before it;
* ``warmup``: clean, and the hunt's first launches slow (6 % x e^(-i/2));
* ``stale``: clean, but the noise prior was measured at sigma / 2 (a quiet day);
* ``two-step``: a second, smaller step of 4 sigma down before the planted one
  (cells where 4 sigma < d); either step is a right answer, and the other one
  should be reported (``2nd`` column);
* ``up-down``: a step of 4 sigma *up* before the planted drop;
* ``fail``: clean, and 5 % of launches fail (the server does not come up);
* ``ends-fail``: clean, and every launch of GOOD and BAD after their second fails.

* **patchkit**: ``bisect()``, the function ``patchkit bisect`` calls (GOOD's
  and BAD's first launches, then ``hunt()``), with ``measure_many`` as the
  executor's rounds, with a noise prior from a simulated A/A run of ``--aa``
  launches under the same launch model (``verdict.noise_of``, the code
  ``patchkit noise`` runs; its launches are not counted, as one A/A run serves
  every hunt on that host and profile), ``--max-launches`` per commit and the
  default budget, at K = 1 and K = 4 slots.
* **baseline**: GOOD and BAD once, then a binary search that marks a commit bad
  when its one launch is below the midpoint of GOOD's and BAD's, as ``git
  bisect run`` with a threshold script would (a failed launch: skipped, the
  next commit down tried, as ``git bisect skip``).

A hunt is *wrong* when it names a single commit that is not the planted one,
or a range that does not contain it; *unknown* when it answers a range (or
cannot tell GOOD from BAD).  An exception in any trial is counted and printed.

Run: ``python benchmarks/bench_hunt.py`` (every model and cell, 400 seeds,
``--jobs 2``: about an hour on two cores); ``--models clean,outliers --seeds
100`` for a quick look.  Exit 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from patchkit.bench.records.record import Outcome
from patchkit.bench.stats.search import Measurement, bisect
from patchkit.bench.stats.verdict import noise_of
from patchkit.git import Commit

MODELS = ("clean", "outliers", "heavy", "bimodal", "drift", "warmup", "stale", "two-step", "up-down", "fail",
          "ends-fail")  # fmt: skip
CELLS = "3:1,3:2,5:1,5:2,10:2,10:4,35:1,35:4"  # d%:sigma% pairs, d/sigma from 1.5 to 35


@dataclass(frozen=True)
class Cell:
    """One table row: a launch model over N commits with a step of d at launch spread sigma."""

    model: str
    size: int
    d: float
    sigma: float


class World:
    """One trial's history and launch model: ``means`` of positions, ``launch`` draws one value (None: failed)."""

    def __init__(self, cell: Cell, rng: random.Random, runs: int) -> None:
        self.cell, self.rng, self.runs = cell, rng, runs
        self.truth = rng.randrange(2 if cell.model in ("two-step", "up-down") else 1, cell.size)
        self.extra = rng.randrange(1, self.truth) if cell.model in ("two-step", "up-down") else None
        self.count = 0  # launches so far in this hunt (drift, warm-up)
        self.end_launches = {0: 0, cell.size - 1: 0}

    def mean(self, pos: int) -> float:
        c = self.cell
        level = 100.0
        if self.extra is not None and pos >= self.extra:
            level *= math.exp(-4 * c.sigma) if c.model == "two-step" else math.exp(4 * c.sigma)
        return level * (1 - c.d) if pos >= self.truth else level

    def factor(self, sigma: float, counted: bool = True) -> float:
        c, rng = self.cell, self.rng
        if c.model == "heavy":
            t3 = rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3)  # Student-t, 3 df
            noise = sigma * t3 / math.sqrt(3)
        else:
            noise = rng.gauss(0.0, sigma)
        within = statistics.median(rng.gauss(0.0, sigma / 4) for _ in range(self.runs))
        value = math.exp(noise + within)
        if c.model == "outliers" and rng.random() < 0.03:
            value *= 1 - rng.uniform(0.2, 0.4)
        if c.model == "bimodal" and rng.random() < 0.2:
            value *= 0.97
        if counted:
            if c.model == "drift":
                value *= 0.999**self.count
            if c.model == "warmup":
                value *= 1 - 0.06 * math.exp(-self.count / 2)
            self.count += 1
        return value

    def launch(self, pos: int) -> float | None:
        c = self.cell
        if c.model == "fail" and self.rng.random() < 0.05:
            self.count += 1
            return None
        if c.model == "ends-fail" and pos in self.end_launches:
            self.end_launches[pos] += 1
            if self.end_launches[pos] > 2:
                self.count += 1
                return None
        return self.mean(pos) * self.factor(c.sigma)

    def prior_launches(self, n: int) -> list[float]:
        sigma = self.cell.sigma / 2 if self.cell.model == "stale" else self.cell.sigma
        return [100.0 * self.factor(sigma, counted=False) for _ in range(n)]


def commits(size: int) -> list[Commit]:
    """A line of ``size`` stand-in commits (GOOD first), as ``bisect()`` takes them."""
    return [Commit(f"{i:040x}", (f"{i - 1:040x}",) if i else (), "sim", "2026-01-01", f"c{i}") for i in range(size)]


def plain_bisect(world: World) -> tuple[int, int]:
    """``git bisect run`` with a threshold script: (the commit it names, its launches)."""
    size = world.cell.size
    g, b = world.launch(0), world.launch(size - 1)
    starts = 2
    if g is None or b is None:
        return -1, starts
    cut = (g + b) / 2
    lo, hi = 0, size - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        value = world.launch(mid)
        starts += 1
        while value is None and mid > lo + 1:  # git bisect skip: the next one down
            mid -= 1
            value = world.launch(mid)
            starts += 1
        if value is None or value < cut:
            hi = mid
        else:
            lo = mid
    return hi, starts


def trial(cell: Cell, seed: int, args: argparse.Namespace) -> dict[str, float]:
    out: dict[str, float] = {}
    base_world = World(cell, random.Random(f"base-{seed}-{cell}"), args.runs)
    named, starts = plain_bisect(base_world)
    rights = {base_world.truth} | ({base_world.extra} if cell.model == "two-step" else set())
    out["base_wrong"] = float(named not in rights)
    out["base_starts"] = starts
    line = commits(cell.size)
    position = {c.sha: i for i, c in enumerate(line)}
    for k in (1, 4):
        world = World(cell, random.Random(f"{seed}-{cell}"), args.runs)  # the same history for both K
        prior = noise_of(world.prior_launches(args.aa))
        rights = {world.truth} | ({world.extra} if cell.model == "two-step" else set())

        def measure_many(batch: Sequence[Commit], world: World = world) -> list[Measurement]:
            values = [world.launch(position[c.sha]) for c in batch]
            failed = Measurement(None, Outcome.SERVER_FAILED, why="the server did not come up")
            return [Measurement(v) if v is not None else failed for v in values]

        try:
            report = bisect(line, lambda c: measure_many([c])[0], slots=k, max_launches=args.max_launches,
                            alpha=args.alpha, noise=prior, measure_many=measure_many)  # fmt: skip
        except Exception:
            traceback.print_exc()
            out[f"k{k}_error"] = 1.0
            for key in ("wrong", "unknown", "starts", "rounds", "second"):
                out.setdefault(f"k{k}_{key}", 0.0)
            continue
        second = 0.0
        if report.kind == "found" and not report.maybe:
            assert report.first_bad is not None
            found = position[report.first_bad.sha]
            wrong, unknown = found not in rights, False
            if cell.model == "two-step" and not wrong:
                other = (rights - {found}).pop()
                second = float(any(position[s.lo.sha] <= other <= position[s.hi.sha] for s in report.other_steps))
        elif report.range is not None:  # a range, or a commit "or one of the skipped just before it"
            lo, hi = (position[c.sha] for c in report.range)
            wrong, unknown = not any(lo <= r <= hi for r in rights), True
        else:
            wrong, unknown = False, True
        out[f"k{k}_wrong"] = float(wrong)
        out[f"k{k}_unknown"] = float(unknown)
        out[f"k{k}_starts"] = len(report.steps)
        out[f"k{k}_rounds"] = report.rounds
        out[f"k{k}_second"] = second
        out[f"k{k}_error"] = 0.0
    return out


def run_cell(cell: Cell, args: argparse.Namespace) -> dict[str, float]:
    rows = [trial(cell, seed, args) for seed in range(args.seeds)]
    means = {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
    found = [r for r in rows if not r["k1_unknown"] and not r["k1_wrong"]]
    means["k1_second_of_found"] = sum(r["k1_second"] for r in found) / len(found) if found else math.nan
    means["k1_errors"] = sum(r["k1_error"] + r["k4_error"] for r in rows)
    return means


def targets(cell: Cell, r: dict[str, float]) -> list[str]:
    """The issue's targets that this cell misses."""
    missed = []
    if max(r["k1_wrong"], r["k4_wrong"]) > 0.01:
        missed.append("WRONG>1%")
    if r["k1_errors"]:
        missed.append("EXCEPTION")
    ratio = r["k1_starts"] / r["base_starts"]
    if cell.model == "clean" and cell.d >= 4 * cell.sigma - 1e-12 and ratio > 1.5:
        missed.append("STARTS>1.5x")
    if cell.model == "outliers" and cell.d >= 0.35 and ratio > 2.0:
        missed.append("STARTS>2x")
    if (
        cell.model == "two-step"
        and r["k1_second_of_found"] == r["k1_second_of_found"]
        and r["k1_second_of_found"] < 0.9
    ):
        missed.append("2ND<90%")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--sizes", default="64,512")
    parser.add_argument("--cells", default=CELLS, help="d%%:sigma%% pairs")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runs", type=int, default=3, help="measured client runs per launch")
    parser.add_argument("--aa", type=int, default=10, help="launches of the simulated A/A run (the noise prior)")
    parser.add_argument("--max-launches", type=int, default=10, help="per commit, as bisect's default")
    parser.add_argument("--alpha", type=float, default=0.001)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    pairs = [tuple(float(v) / 100 for v in pair.split(":")) for pair in args.cells.split(",")]
    cells = [
        Cell(model, size, d, s)
        for model in args.models.split(",")
        for size in map(int, args.sizes.split(","))
        for d, s in pairs
        if model not in ("two-step", "up-down") or 4 * s < d
    ]
    started = time.perf_counter()
    print(
        f"bench_hunt: {args.seeds} seeds per cell, {args.runs} client runs per launch (within-launch sigma/4), "
        f"noise prior from an A/A of {args.aa} launches, max {args.max_launches} launches per commit, "
        f"alpha {args.alpha}, default budget"
    )
    header = (
        f"{'model':>9} {'N':>4} {'d%':>3} {'s%':>3} {'d/s':>5} | {'base wrong':>10} {'starts':>6} | "
        f"{'K=1 wrong':>9} {'unknown':>7} {'starts':>6} {'x base':>6} {'2nd':>4} | {'K=4 wrong':>9} {'unknown':>7} "
        f"{'starts':>6} {'rounds':>6}  targets"
    )
    print(header)
    print("-" * len(header), flush=True)
    failures = []
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    mapped: Callable[..., object] = pool.map if pool else map  # type: ignore[assignment]
    results = mapped(run_cell, cells, [args] * len(cells))
    worst = {"k1": 0.0, "k4": 0.0}
    for cell, r in zip(cells, results, strict=True):  # type: ignore[call-overload]
        ratio = r["k1_starts"] / r["base_starts"]
        checks = targets(cell, r)
        worst = {k: max(worst[k], r[f"{k}_wrong"]) for k in worst}
        failures += [f"{cell}: {c}" for c in checks]
        second = "" if cell.model != "two-step" else f"{r['k1_second_of_found']:.0%}"
        print(
            f"{cell.model:>9} {cell.size:>4} {cell.d * 100:>3.0f} {cell.sigma * 100:>3.0f} "
            f"{cell.d / cell.sigma:>5.1f} | "
            f"{r['base_wrong']:>10.1%} {r['base_starts']:>6.1f} | "
            f"{r['k1_wrong']:>9.1%} {r['k1_unknown']:>7.1%} {r['k1_starts']:>6.1f} {ratio:>6.2f} {second:>4} | "
            f"{r['k4_wrong']:>9.1%} {r['k4_unknown']:>7.1%} {r['k4_starts']:>6.1f} {r['k4_rounds']:>6.1f}  "
            f"{' '.join(checks) or 'ok'}",
            flush=True,
        )
    if pool is not None:
        pool.shutdown()
    print(f"({time.perf_counter() - started:.0f} s)  worst wrong: K=1 {worst['k1']:.1%}, K=4 {worst['k4']:.1%}")
    for line in failures:
        print("MISSED", line)
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
