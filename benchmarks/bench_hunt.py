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
* ``bimodal-wide``: clean, and 20 % of launches 6 % slower: a GOOD launch in the slow mode sits where a BAD
  launch in the fast one does at d = 6 %;
* ``drift``: clean, and each launch 0.1 % slower than the one before it;
* ``warmup``: clean, and the hunt's first launches slow (6 % x e^(-i/2));
* ``stale``: clean, but the noise prior was measured at sigma / 2 (a quiet day);
* ``stale-3``: clean, but the noise prior was measured at sigma / 3;
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

**Pruning** (``--relevant 10,25,50,100``): the share of relevant commits as a
dimension, the hunt told which commits are relevant (``bisect(...,
relevance=judge)``, the judge simulated from a planted mask: that share of the
commits after GOOD, drawn at random, the step always on one of them), against
the plain bisect on the full line and the same hunt with ``--every-commit``
(no judge), over the ``--variants``:

* ``exact``: the judge says the planted mask from the first round on;
* ``late``: a quarter of the line, from a relevant commit that wires it in,
  runs code that neither GOOD nor BAD runs: the relevant commits inside it are
  judged inert until a launch inside the stretch has run it (a function that
  starts running at a later commit, and stops before BAD);
* ``wrong``: the commit that carries the step is judged inert in every round
  (pruning is wrong): the parent check must catch it.

``--relevant 10,25,50,100 --cells 35:1,35:4,5:1,10:2 --seeds 400``: about 40
minutes on two cores.
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
from patchkit.bench.stats.pruning import LineRelevance
from patchkit.bench.stats.relevance import Judgement, Reason, Relevance
from patchkit.bench.stats.search import BisectReport, Measurement, bisect
from patchkit.bench.stats.verdict import noise_of
from patchkit.footprint.changes import Change, ChangeKind
from patchkit.git import Commit

MODELS = ("clean", "outliers", "heavy", "bimodal", "bimodal-wide", "drift", "warmup", "stale", "stale-3", "two-step",
          "up-down", "fail", "ends-fail")  # fmt: skip
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

    def __init__(self, cell: Cell, rng: random.Random, runs: int, truth: int | None = None) -> None:
        self.cell, self.rng, self.runs = cell, rng, runs
        if truth is None:
            truth = rng.randrange(2 if cell.model in ("two-step", "up-down") else 1, cell.size)
        self.truth = truth
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
        if c.model in ("bimodal", "bimodal-wide") and rng.random() < 0.2:
            value *= 0.97 if c.model == "bimodal" else 0.94
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
        sigma = self.cell.sigma / {"stale": 2, "stale-3": 3}.get(self.cell.model, 1)
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


VARIANTS = ("exact", "late", "wrong")
PRUNE_CELLS = "35:1,35:4,5:1,10:2"  # d >= 8 sigma (the seed's 35 % drop at 1-4 %), and d = 5 sigma


@dataclass(frozen=True)
class PruneCell:
    """One row of the pruning table: a cell, the share of relevant commits after GOOD, and the judge's variant."""

    cell: Cell
    share: float
    variant: str


class Judged:
    """One trial's planted relevance, and the judge ``bisect`` is given, which reads it against what ran so far."""

    def __init__(self, line: Sequence[Commit], share: float, variant: str, rng: random.Random) -> None:
        size = len(line)
        self.relevant = set(rng.sample(range(1, size), max(1, round(share * (size - 1)))))
        self.stretch = range(0)
        self.hidden: set[int] = set()
        if variant == "late":
            length = max(2, size // 4)
            start = rng.randrange(1, size - length)
            self.stretch = range(start, start + length)
            self.relevant.add(start)  # the commit that wires the code in: module level, relevant from the start
            self.hidden = {p for p in self.relevant if start < p < start + length}
        self.truth = rng.choice(sorted(self.relevant))
        self.wrong = {self.truth} if variant == "wrong" else set()
        self.launched: set[int] = set()
        self.verdicts = [self.verdict(c, i) for i, c in enumerate(line)]

    @staticmethod
    def verdict(commit: Commit, i: int) -> tuple[Relevance, Relevance]:
        change = Change(f"pkg/m{i}.py", ChangeKind.BODY, f"f{i}", "body")
        return Relevance(commit.sha, (Judgement(change, Reason.NOT_RUN),)), Relevance(
            commit.sha, (Judgement(change, Reason.RAN),)
        )

    def judge(self) -> LineRelevance:
        seen = any(p in self.stretch for p in self.launched)
        out = []
        for p, (inert, relevant) in enumerate(self.verdicts):
            shown = p in self.relevant and p not in self.wrong and (seen or p not in self.hidden)
            out.append(relevant if shown else inert)
        return LineRelevance(tuple(out))


def pruned_trial(pc: PruneCell, seed: int, args: argparse.Namespace) -> dict[str, float]:
    """The plain bisect, the hunt told the mask (K = 1 and K = 4) and the same hunt without it (K = 1), on one
    history with the step on a relevant commit."""
    cell = pc.cell
    line = commits(cell.size)
    position = {c.sha: i for i, c in enumerate(line)}
    planted = Judged(line, pc.share, pc.variant, random.Random(f"mask-{seed}-{pc}"))
    out: dict[str, float] = {}
    named, starts = plain_bisect(World(cell, random.Random(f"base-{seed}-{cell}"), args.runs, planted.truth))
    out["base_wrong"], out["base_starts"] = float(named != planted.truth), starts
    orders: dict[str, list[int]] = {}
    for key, slots, told in (("p1", 1, True), ("p4", 4, True), ("e1", 1, False)):
        world = World(cell, random.Random(f"{seed}-{cell}"), args.runs, planted.truth)
        prior = noise_of(world.prior_launches(args.aa))
        planted.launched = set()
        orders[key] = []

        def measure_many(batch: Sequence[Commit], world: World = world, key: str = key) -> list[Measurement]:
            at = [position[c.sha] for c in batch]
            planted.launched.update(at)
            orders[key] += at
            return [Measurement(v) if v is not None else Measurement(None, Outcome.SERVER_FAILED, why="down")
                    for v in (world.launch(p) for p in at)]  # fmt: skip

        try:
            report = bisect(line, lambda c: measure_many([c])[0], slots=slots, max_launches=args.max_launches,
                            alpha=args.alpha, noise=prior, measure_many=measure_many,
                            relevance=planted.judge if told else None)  # fmt: skip
        except Exception:
            traceback.print_exc()
            out.update({f"{key}_error": 1.0, f"{key}_wrong": 0.0, f"{key}_unknown": 0.0, f"{key}_starts": 0.0,
                        f"{key}_abandoned": 0.0})  # fmt: skip
            continue
        wrong, unknown = judged_answer(report, position, planted.truth)
        out[f"{key}_wrong"], out[f"{key}_unknown"] = float(wrong), float(unknown)
        out[f"{key}_starts"], out[f"{key}_error"] = len(report.steps), 0.0
        out[f"{key}_abandoned"] = float(report.pruning is not None and report.pruning.state == "abandoned")
    out["same"] = float(orders["p1"] == orders["e1"])
    return out


def judged_answer(report: BisectReport, position: dict[str, int], truth: int) -> tuple[bool, bool]:
    """(wrong, unknown): a commit that is not the truth, or a range without it, is wrong; a range is unknown."""
    if report.kind == "found" and not report.maybe:
        assert report.first_bad is not None
        return position[report.first_bad.sha] != truth, False
    if report.range is not None:
        lo, hi = (position[c.sha] for c in report.range)
        return not lo <= truth <= hi, True
    return False, True


def run_pruned(pc: PruneCell, args: argparse.Namespace) -> dict[str, float]:
    rows = [pruned_trial(pc, seed, args) for seed in range(args.seeds)]
    means = {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
    means["errors"] = sum(r["p1_error"] + r["p4_error"] + r["e1_error"] for r in rows)
    return means


def pruned_targets(pc: PruneCell, r: dict[str, float]) -> list[str]:
    """The issue's targets that this row misses: the ratio to the plain bisect by share and effect (``exact``),
    never more launches than ``--every-commit`` (``exact``, ``late``), every commit relevant the same launches,
    and at most 1 % wrong everywhere, pruned or not."""
    missed = []
    if max(r["p1_wrong"], r["p4_wrong"], r["e1_wrong"]) > 0.01:
        missed.append("WRONG>1%")
    if r["errors"]:
        missed.append("EXCEPTION")
    ratio, ds = r["p1_starts"] / r["base_starts"], pc.cell.d / pc.cell.sigma
    share = round(pc.share * 100)
    if pc.variant == "exact":
        for want, limit, big in ((25, 1.0, True), (10, 0.85, True), (50, 1.2, True), (25, 1.2, False)):
            if share == want and (ds >= 8 - 1e-9 if big else abs(ds - 5) < 1e-9) and ratio > limit:
                missed.append(f"STARTS>{limit}x")
    if pc.variant != "wrong" and r["p1_starts"] > r["e1_starts"]:
        missed.append("STARTS>EVERY")
    if share == 100 and r["same"] < 1:
        missed.append("NOT-SAME")
    return missed


def main_pruned(args: argparse.Namespace) -> int:
    pairs = [tuple(float(v) / 100 for v in pair.split(":")) for pair in (args.cells or PRUNE_CELLS).split(",")]
    model = "clean" if args.models == ",".join(MODELS) else args.models.split(",")[0]  # one launch model: --models
    rows = [
        PruneCell(Cell(model, size, d, s), share / 100, variant)
        for size in map(int, args.sizes.split(","))
        for d, s in pairs
        for share in map(float, args.relevant.split(","))
        for variant in args.variants.split(",")
        if share < 100 or variant == "exact"
    ]  # fmt: skip
    started = time.perf_counter()
    print(
        f"bench_hunt --relevant: {args.seeds} seeds per row, launch model {rows[0].cell.model}, {args.runs} client "
        f"runs per launch, max {args.max_launches} launches per commit, alpha {args.alpha}"
    )
    header = (
        f"{'N':>4} {'d%':>3} {'s%':>3} {'d/s':>5} {'rel%':>4} {'variant':>7} | {'base wrong':>10} {'starts':>6} | "
        f"{'pruned wrong':>12} {'unknown':>7} {'starts':>6} {'x base':>6} {'x every':>7} {'abandon':>7} | "
        f"{'every wrong':>11} {'starts':>6} | {'K=4 wrong':>9} {'starts':>6}  targets"
    )
    print(header)
    print("-" * len(header), flush=True)
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    mapped: Callable[..., object] = pool.map if pool else map  # type: ignore[assignment]
    failures = []
    worst = 0.0
    for pc, r in zip(rows, mapped(run_pruned, rows, [args] * len(rows)), strict=True):  # type: ignore[call-overload]
        c = pc.cell
        checks = pruned_targets(pc, r)
        failures += [f"{pc}: {m}" for m in checks]
        worst = max(worst, r["p1_wrong"], r["p4_wrong"], r["e1_wrong"])
        print(
            f"{c.size:>4} {c.d * 100:>3.0f} {c.sigma * 100:>3.0f} {c.d / c.sigma:>5.1f} {pc.share * 100:>4.0f} "
            f"{pc.variant:>7} | {r['base_wrong']:>10.1%} {r['base_starts']:>6.1f} | {r['p1_wrong']:>12.1%} "
            f"{r['p1_unknown']:>7.1%} {r['p1_starts']:>6.2f} {r['p1_starts'] / r['base_starts']:>6.2f} "
            f"{r['p1_starts'] / r['e1_starts']:>7.2f} {r['p1_abandoned']:>7.1%} | {r['e1_wrong']:>11.1%} "
            f"{r['e1_starts']:>6.2f} | {r['p4_wrong']:>9.1%} {r['p4_starts']:>6.2f}  {' '.join(checks) or 'ok'}",
            flush=True,
        )
    if pool is not None:
        pool.shutdown()
    print(f"({time.perf_counter() - started:.0f} s)  worst wrong: {worst:.1%}")
    for line in failures:
        print("MISSED", line)
    return 0 if not failures else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--sizes", default="64,512")
    parser.add_argument("--cells", default="", help=f"d%%:sigma%% pairs (default {CELLS}; pruning: {PRUNE_CELLS})")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runs", type=int, default=3, help="measured client runs per launch")
    parser.add_argument("--aa", type=int, default=10, help="launches of the simulated A/A run (the noise prior)")
    parser.add_argument("--max-launches", type=int, default=10, help="per commit, as bisect's default")
    parser.add_argument("--alpha", type=float, default=0.001)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--relevant", default="", help="shares of relevant commits, %%: the pruning table instead")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="the judge's variants (pruning table)")
    args = parser.parse_args()
    if args.relevant:
        return main_pruned(args)
    pairs = [tuple(float(v) / 100 for v in pair.split(":")) for pair in (args.cells or CELLS).split(",")]
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
