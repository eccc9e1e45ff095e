"""A second mode of the launch noise, found in the hunt's repeated launches of one commit.

Why: some servers are bimodal.  A placement, a NUMA node or a clock state makes a share of launches (a fifth,
say) run a fixed few percent slower.  The contamination mixture reads such a launch as an outlier, worth at most
a flat density, so a commit whose two launches both landed in the slow mode reads as a level of its own; where
the slow mode lies where the other side's level is (a 6 % mode, a 6 % step), two unlucky launches of GOOD's side
look like BAD's, and the boundary is named with 99.9 % on two launches that a fifth of all launches would give
(``benchmarks/bench_hunt.py``, ``bimodal-wide``: 3-4 % of hunts wrong).

The evidence for a second mode must not depend on where the step is, or every wrong split would explain itself
by one: it comes from the launches of one commit, which share a level (the drift removed).  A mode is a share
``pi`` of launches at an offset ``delta`` from the level, at the launch spread; it is kept when it explains the
repeated launches better than the outlier term does by ``MODE_LR`` in log likelihood (each commit at its best
level, the launches farther than ``OUTLIER_Z`` spreads apart the candidate offsets).  One launch far from its
commit's others is an outlier; two at the same offset, in two commits, are a mode.  The spread the candidates are
judged at is the larger of the model's and the repeated launches' own robust one (the lower quartile of their
differences), so that a prior from a quieter day does not make ordinary scatter a mode.

Whether there is a mode is the repeated launches' to say; which way round it is and what share of launches it
takes are not.  The hunt launches a commit again because its launches disagreed with its neighbours', so the
small mode is over-represented in those launches (a GOOD commit named wrongly had four slow launches of six), and
each commit at its own best level keeps its larger cluster as the main mode, so their share comes out too small (a
tenth where a fifth are slow), which makes a commit with several slow launches look surely BAD.  ``second_mode``
returns the best reading each way round; ``Model.fit`` weighs each at every share of ``READ_SHARES`` by how well
it explains every launch of the hunt and the A/A run's (``aa_evidence``), the split and the spread integrated
out.  That likelihood does not care which commits were launched again: whether a commit was launched again
depended only on the launches before it.  Under a reading, the prior's spread leaves out the A/A launches in the
mode (``prior_without``), or a prior that took a 6 % mode into its spread hides the mode's launches in it.
Weighing both readings by the repeated launches' own evidence was tried and left out, as was counting launches of
commits launched once at the nearer side's level (docs/hunt.md, "The stress cells").
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from patchkit.bench.stats.hunt.likelihood import EPS, FLOOR, OUTLIER_WIDTH, OUTLIER_Z, Groups, densities
from patchkit.bench.stats.hunt.report import Mode
from patchkit.bench.stats.verdict import Noise

MODE_LR = math.log(1000)  # the prior log odds against a second mode: a gain of this much makes it as likely as not
MODE_LEAST = 1e-4  # a second mode less likely than this is left out (it would move no boundary's mass)
PAIR_SCALE = 0.4506  # the lower quartile of |difference| of two Gaussian launches, in spreads (0.3186 * sqrt 2)
ROBUST_PAIRS = 6  # differences enough for their lower quartile to say the spread
SHARES = np.array([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45])  # the shares of the second mode tried
READ_SHARES = (0.05, 0.1, 0.2, 0.3, 0.45)  # the shares each reading of a found mode is weighed at (``Model.fit``)


def second_mode(
    x: np.ndarray, groups: Groups, sigma: float, noise: Noise | None = None, own: float | None = None
) -> tuple[Mode, ...]:
    """The second mode that the repeated launches of the commits in ``groups`` show, weighed by its evidence:
    its best reading first, then the best reading the other way round (below the main mode where the first is
    above it) at the same weight; empty where no mode is likely enough (``x``: log values, ordered by commit;
    ``sigma``: the model's launch spread).  The noise prior's A/A run (``Noise.offsets``) counts as one more
    commit.  ``own``: the hunt's own estimate of the spread, where it has one (a prior whose A/A run kept its slow
    launches in its spread is wider than the launches).

    The weight is the evidence of the repeated launches alone; which reading is the right one is not theirs to
    say (the hunt launched these commits again because their launches disagreed, so the small mode is
    over-represented in them), and ``Model.fit`` weighs the two readings by every launch of the hunt."""
    sets = [x[a : a + n] for a, n in zip(groups.starts.tolist(), groups.counts.tolist(), strict=True) if n >= 2]
    if noise is not None and len(noise.offsets) >= 2:
        sets.append(np.array(noise.offsets))
    if not sets:
        return ()
    table = np.full((len(sets), max(len(g) for g in sets)), np.nan)
    for i, g in enumerate(sets):
        table[i, : len(g)] = g
    diffs = table[:, :, None] - table[:, None, :]  # commits x launch x launch: one launch less another
    known = ~np.isnan(diffs)
    # The candidates are the differences farther than ``OUTLIER_Z`` spreads, at the model's spread or, where the
    # launches' own robust spread is smaller, at that: a spread widened by the unmodelled mode itself (an A/A
    # run whose slow launches stayed in its spread) must not hide the mode.
    pairs = np.abs(diffs[known & (diffs > 0)])
    gate = min(sigma, float(np.quantile(pairs, 0.25)) / PAIR_SCALE) if len(pairs) >= ROBUST_PAIRS else sigma
    if own is not None and own > 0:
        gate = min(gate, own)
    far = diffs[known & (np.abs(diffs) > OUTLIER_Z * max(gate, FLOOR))]
    if not len(far):
        return ()
    # Each model at its best spread among the model's, the robust one and their geometric mean: launches of a
    # second mode that the spread took in make it too wide for the mode, and a spread fitted without the mode
    # must not decide against it.
    spreads = sorted({sigma, max(gate, FLOOR), max(math.sqrt(sigma * gate), FLOOR)})  # gate: robust, or own
    base = max(float(_fits(table, s, None)[0].max(axis=2).sum()) for s in spreads)  # each commit at its best level
    best: dict[bool, tuple[float, Mode]] = {}  # the best reading each way round: above the main mode, below it
    for start in _clusters(far, gate):
        for spread in spreads:
            delta = start
            for _ in range(2):  # the offset, then the mean offset of the launches it takes
                gain, share, offset = _best(table, spread, delta, base)
                if offset is None:
                    break
                delta = offset
            way = delta > 0
            if way not in best or gain > best[way][0]:
                best[way] = (gain, Mode(share, delta))
    gain = max(g for g, _ in best.values())
    weight = 1 / (1 + math.exp(min(MODE_LR - gain, 700.0)))
    if weight < MODE_LEAST:
        return ()
    return tuple(Mode(m.share, m.offset, weight) for _, m in sorted(best.values(), key=lambda b: -b[0]))


def aa_evidence(offsets: tuple[float, ...], sigma: float, mode: Mode) -> float:
    """The log likelihood of the noise prior's A/A launches under a reading of the mode, at their best level: the
    one set of launches nobody chose, so it has its say in which reading is the right one."""
    if len(offsets) < 2:
        return 0.0
    x = np.array(offsets)
    levels = np.concatenate([x, x - mode.offset])
    main, second = densities(x[None, :] - levels[:, None], sigma, mode)
    return float(np.log(main + second + EPS / OUTLIER_WIDTH).sum(axis=1).max())


def prior_without(noise: Noise | None, mode: Mode) -> Noise | None:
    """The noise prior with the A/A launches of the second mode left out of its spread (those nearer the mode's
    offset than the main level, and any farther from the main level than the mode is: an outlier, not scatter): a
    prior whose spread took in a 6 % mode is wider than the launches are under the model that has the mode, and at
    that spread the mode's launches look like ordinary scatter.  The prior as given where none is left out."""
    if noise is None or len(noise.offsets) < 3:
        return noise
    x = np.array(noise.offsets)
    main = np.abs(x) < np.minimum(np.abs(x - mode.offset), abs(mode.offset))
    kept = x[main]
    if main.all() or len(kept) < 2:
        return noise
    return dataclasses.replace(noise, sigma=float(np.std(kept, ddof=1)), df=len(kept) - 1)


def _clusters(far: np.ndarray, scale: float) -> list[float]:
    """The candidate offsets: the far differences, those within a spread of each other merged (their mean)."""
    out: list[list[float]] = []
    for d in sorted(far.tolist()):
        if out and d - out[-1][-1] <= scale:
            out[-1].append(d)
        else:
            out.append([d])
    return [float(np.mean(c)) for c in out]


def _best(table: np.ndarray, sigma: float, delta: float, base: float) -> tuple[float, float, float | None]:
    """At offset ``delta``: the best share's log likelihood gain over no mode, that share, and the mean offset of
    the launches the mode takes there from their commits' levels (None when it takes none)."""
    logs, resid = _fits(table, sigma, delta)  # shares x commits x candidate levels
    pick = logs.argmax(axis=2)  # each commit's best level, per share
    totals = logs.max(axis=2).sum(axis=1)
    s = int(totals.argmax())
    rows = np.arange(table.shape[0])
    chosen = resid[rows, pick[s, rows], :]  # commits x launches: residuals at the best level
    main, second = densities(chosen, sigma, Mode(float(SHARES[s]), delta))
    taken = (second > main) & (second > EPS / OUTLIER_WIDTH) & ~np.isnan(chosen)
    offset = float(chosen[taken].mean()) if taken.any() else None
    return float(totals[s]) - base, float(SHARES[s]), offset


def _fits(table: np.ndarray, scale: float, delta: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The log likelihood of each commit's launches at each candidate level (each launch's value, and with a mode
    each value less the offset), per share of the mode (one row without a mode); and the residuals."""
    levels = table if delta is None else np.concatenate([table, table - delta], axis=1)
    resid = table[:, None, :] - levels[:, :, None]  # commits x candidate levels x launches
    shares = [None] if delta is None else [Mode(float(s), delta) for s in SHARES]
    rows = []
    for mode in shares:
        main, second = densities(resid, scale, mode)
        density = np.log(main + second + EPS / OUTLIER_WIDTH)
        rows.append(np.where(np.isnan(resid), 0.0, density).sum(axis=2))
    logs = np.array(rows)
    logs = np.where(np.isnan(levels)[None, :, :], -np.inf, logs)  # a padded level is no level
    return logs, resid
