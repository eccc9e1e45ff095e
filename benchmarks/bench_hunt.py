"""The noise-aware bisect (``patchkit.bench.bisect``) against a plain one-launch bisect, on simulated histories.

Each trial: a line of N commits (GOOD first, BAD last) with one planted step
of d % down in throughput at a uniformly drawn commit.  A server launch's value
is the commit's mean times a per-launch factor exp(N(0, sigma)), times the
median of ``--runs`` client runs each with its own factor exp(N(0, sigma/4)).

* **patchkit**: ``bisect()``, the function ``patchkit bisect`` calls (GOOD's
  and BAD's first launches, then ``hunt()``), over a line of stand-in commits
  with ``measure_many`` as the executor's rounds, so that its rounds are the
  verb's; with a noise prior from a simulated A/A run of ``--aa`` launches
  (``verdict.noise_of``, the code ``patchkit noise`` runs; its launches are not
  counted as starts, as one A/A run serves every hunt on that host and
  profile), ``--max-launches`` per commit, at K = 1 and K = 4 slots.
* **baseline**: GOOD and BAD once, then a binary search that marks a commit bad
  when its one launch is below the midpoint of GOOD's and BAD's, as ``git
  bisect run`` with a threshold script would.

A hunt is *wrong* when it names a single commit that is not the planted one,
or a range that does not contain it; *unknown* when it answers a range (or
cannot tell GOOD from BAD).  Rounds are calls of ``measure`` (one per launch
at K = 1; up to K launches at once with K = 4).

Run: ``python benchmarks/bench_hunt.py`` (all 24 cells, 300 seeds each; a few
minutes on two cores with ``--jobs 2``); ``--seeds 50`` for a quick look.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from patchkit.bench.bisect import Measurement, bisect
from patchkit.bench.verdict import noise_of
from patchkit.git import Commit


@dataclass(frozen=True)
class Cell:
    size: int
    d: float
    sigma: float


def launches(rng: random.Random, means: Sequence[float], sigma: float, runs: int) -> list[float]:
    """One value per launch: mean x launch factor x median of the runs' own factors.

    Plain ``random`` rather than numpy: a round asks for one to four launches,
    where numpy's per-call overhead is most of the cost."""
    out = []
    for mean in means:
        within = statistics.median(rng.gauss(0.0, sigma / 4) for _ in range(runs))
        out.append(mean * math.exp(rng.gauss(0.0, sigma) + within))
    return out


def commits(size: int) -> list[Commit]:
    """A line of ``size`` stand-in commits (GOOD first), as ``bisect()`` takes them."""
    return [Commit(f"{i:040x}", (f"{i - 1:040x}",) if i else (), "sim", "2026-01-01", f"c{i}") for i in range(size)]


def trial(cell: Cell, seed: int, args: argparse.Namespace) -> dict[str, float]:
    rng = random.Random(f"{seed}-{cell.size}-{cell.d}-{cell.sigma}")
    truth = rng.randrange(1, cell.size)
    base = 100.0

    def mean_of(positions: Sequence[int]) -> list[float]:
        return [base * (1 - cell.d) if p >= truth else base for p in positions]

    out: dict[str, float] = {}
    # The plain bisect: one launch per commit, bad below the midpoint.
    g, b = launches(rng, mean_of([0, cell.size - 1]), cell.sigma, args.runs)
    cut = (g + b) / 2
    lo, hi, starts = 0, cell.size - 1, 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        (value,) = launches(rng, mean_of([mid]), cell.sigma, args.runs)
        starts += 1
        if value < cut:
            hi = mid
        else:
            lo = mid
    out["base_wrong"] = float(hi != truth)
    out["base_starts"] = starts

    prior = noise_of(launches(rng, [base] * args.aa, cell.sigma, args.runs))
    line = commits(cell.size)
    position = {c.sha: i for i, c in enumerate(line)}
    for k in (1, 4):

        def measure_many(batch: Sequence[Commit]) -> list[Measurement]:
            values = launches(rng, mean_of([position[c.sha] for c in batch]), cell.sigma, args.runs)
            return [Measurement(v) for v in values]

        report = bisect(
            line,
            lambda c: measure_many([c])[0],
            slots=k,
            max_launches=args.max_launches,
            alpha=args.alpha,
            noise=prior,
            measure_many=measure_many,
        )
        if report.kind == "found":
            assert report.first_bad is not None
            wrong, unknown = position[report.first_bad.sha] != truth, False
        elif report.kind == "range":
            assert report.range is not None
            lo, hi = (position[c.sha] for c in report.range)
            wrong, unknown = not (lo <= truth <= hi), True
        else:
            wrong, unknown = False, True
        out[f"k{k}_wrong"] = float(wrong)
        out[f"k{k}_unknown"] = float(unknown)
        out[f"k{k}_starts"] = len(report.steps)
        out[f"k{k}_rounds"] = report.rounds
    return out


def run_cell(cell: Cell, args: argparse.Namespace) -> dict[str, float]:
    rows = [trial(cell, seed, args) for seed in range(args.seeds)]
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--sizes", default="64,512")
    parser.add_argument("--effects", default="3,5,10,35", help="step sizes d, in percent")
    parser.add_argument("--noises", default="1,2,4", help="launch noise sigma, in percent")
    parser.add_argument("--runs", type=int, default=3, help="measured client runs per launch")
    parser.add_argument("--aa", type=int, default=10, help="launches of the simulated A/A run (the noise prior)")
    parser.add_argument("--max-launches", type=int, default=10, help="per commit, as bisect's default")
    parser.add_argument("--alpha", type=float, default=0.001)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    cells = [
        Cell(size, d / 100, s / 100)
        for size in map(int, args.sizes.split(","))
        for d in map(float, args.effects.split(","))
        for s in map(float, args.noises.split(","))
    ]
    started = time.perf_counter()
    print(
        f"bench_hunt: {args.seeds} seeds per cell, {args.runs} client runs per launch (within-launch sigma/4), "
        f"noise prior from an A/A of {args.aa} launches, max {args.max_launches} launches per commit, "
        f"alpha {args.alpha}"
    )
    header = (
        f"{'N':>4} {'d%':>4} {'s%':>3} {'d/s':>5} | {'base wrong':>10} {'starts':>6} | "
        f"{'pk wrong':>8} {'unknown':>7} {'starts':>6} {'x base':>6} | {'K=4 wrong':>9} {'unknown':>7} "
        f"{'starts':>6} | {'rounds K=1':>10} {'K=4':>5} {'ratio':>5}  targets"
    )
    print(header)
    print("-" * len(header), flush=True)
    failures = []
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    results = pool.map(run_cell, cells, [args] * len(cells)) if pool else (run_cell(c, args) for c in cells)
    for cell, r in zip(cells, results, strict=True):
        ratio = r["k1_starts"] / r["base_starts"]
        rounds = r["k4_rounds"] / r["k1_rounds"]
        checks = []
        if max(r["k1_wrong"], r["k4_wrong"]) > 0.01:
            checks.append("WRONG>1%")
        if cell.d >= 4 * cell.sigma - 1e-12 and ratio > 1.5:
            checks.append("STARTS>1.5x")
        if rounds > 0.6:
            checks.append("ROUNDS>0.6x")
        failures += [f"{cell}: {c}" for c in checks]
        print(
            f"{cell.size:>4} {cell.d * 100:>4.0f} {cell.sigma * 100:>3.0f} {cell.d / cell.sigma:>5.1f} | "
            f"{r['base_wrong']:>10.1%} {r['base_starts']:>6.1f} | "
            f"{r['k1_wrong']:>8.1%} {r['k1_unknown']:>7.1%} {r['k1_starts']:>6.1f} {ratio:>6.2f} | "
            f"{r['k4_wrong']:>9.1%} {r['k4_unknown']:>7.1%} {r['k4_starts']:>6.1f} | "
            f"{r['k1_rounds']:>10.1f} {r['k4_rounds']:>5.1f} {rounds:>5.2f}  {' '.join(checks) or 'ok'}",
            flush=True,
        )
    if pool is not None:
        pool.shutdown()
    print(f"({time.perf_counter() - started:.0f} s)  starts target applies where d >= 4 sigma")
    for line in failures:
        print("MISSED", line)
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
