"""The launch policy: which positions a round asks for, and why each.

Every choice goes through ``Policy.can_ask`` (whether a round may ask for a position at all: not given up,
under ``max_launches``), so a rule on which commits may be launched lives in one place.  Each choice returns
``(position, why)`` pairs; the why is what ``bisect`` prints beside the launch.

**Endpoints first.**  GOOD and BAD alternate until the verdict tells them apart; with more than two slots the
slots left over speculate on evenly spaced positions (``ahead``): no posterior exists before the ends have a
launch each.

**Rounds.**  Each round asks for up to ``slots`` launches (``picks``): the commit at the posterior's
``i / (slots + 1)`` quantile (one slot: binary search; K: Pinpoint-style speculation); where that commit is
measured, the measured commit whose side is least certain.

**Confirmation** (``confirmations``).  A commit ``k`` holding ``1 - alpha`` of the posterior is named only once
``k - 1`` and ``k`` have ``CONFIRM`` launches each, and leaving out any single one of their launches still names
``k`` with at least ``LOO_MASS`` of the posterior.  Only the launches of ``k - 1`` and ``k`` can carry the
boundary: any other launch sits well inside a side, where the mixture bounds its weight; so an outlier, or one
unlucky launch of a bimodal server, is always outvoted before an answer stands.  And ``k`` must keep
``LOO_MASS`` at the spread's one-sided 90 % upper bound for its degrees of freedom (``spread_check``): the
posterior is only as sure as its spread, and a prior from a quieter day can make it too small.

**References** (``with_references``).  While the drift estimate is ``DRIFT_SUSPECT`` from zero, GOOD and BAD
are launched again (a reference in each round with slots to spare, and every ``REF_EVERY // 2`` launches); on
any long hunt every ``REF_EVERY`` launches.

**More than one step** (``step_checks``).  Once ``k`` holds the mass, each side of it is tested for a step of its
own (``Model.side_step``): a clear one (``clear``) is reported, a suspected one (``STEP_SUSPECT`` to ``STEP_Z``,
or a clear z with one launch on a side) gets more launches first, at the commits either side of the split, up
to ``STEP_EXTRA`` per commit and ``STEP_BUDGET`` in all; GOOD or BAD on one launch is launched again when its
own split from the rest of its side reaches ``END_SUSPECT`` the hunted way.

**Budget** (``default_budget``): ten launches per binary-search step unless told otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection

from patchkit.bench.stats.hunt.model import Model, SideStep
from patchkit.bench.stats.hunt.posterior import Posterior
from patchkit.bench.stats.hunt.sigma import upper_factor
from patchkit.bench.stats.hunt.state import Launches
from patchkit.wording import plural

Pick = tuple[int, str]  # a position to launch, and why

CONFIRM = 2  # launches at each of k - 1 and k before k is named
LOO_MASS = 0.95  # without any one launch of k - 1 or k, k must keep this much of the posterior
SPREAD_BOUND = 0.90  # ... and as much at the spread's one-sided upper bound at this level
REF_EVERY = 16  # a long hunt launches a reference (GOOD or BAD) when it has had none for this many launches
DRIFT_SUSPECT = 2.5  # a drift estimate this many standard errors from zero has references re-launched
STEP_Z = 3.5  # a second step: two groups of commits on one side of the answer this many standard errors apart
STEP_SUSPECT = 2.5  # between this and STEP_Z, more launches before deciding
END_SUSPECT = 1.5  # ... or from this many, between GOOD (BAD) on one launch and the rest of its side
STEP_EXTRA = 6  # at most this many extra launches per commit to decide a suspected second step
STEP_BUDGET = 6  # ... and this many in all: most suspicions are chance, and one that is not shows in a few


def default_budget(size: int, max_launches: int) -> int:
    """The total launches a hunt may start unless told otherwise: ten per binary-search step over the line
    (``log2(size)`` of them, plus GOOD and BAD), and at least three commits' worth of ``max_launches``."""
    steps = math.ceil(math.log2(max(size - 1, 2))) + 2
    return max(10 * steps, 3 * max_launches)


def ahead(size: int, count: int, skipped: Collection[int] = ()) -> list[Pick]:
    """Up to ``count`` probes, each with why, for the round that first launches GOOD and BAD: no posterior exists
    before they have a launch each, so the slots left over speculate on evenly spaced positions."""
    spots = sorted({round(i * (size - 1) / (count + 1)) for i in range(1, count + 1)} - {0, size - 1})
    return [(p, "probe: evenly spaced, ahead of the endpoints") for p in spots if p not in skipped]


def clear(found: SideStep) -> bool:
    """Whether a step within one side is reported: ``STEP_Z`` or more, and at least ``CONFIRM`` launches (weighted)
    on each side of its split (one launch's word is never reported)."""
    return abs(found.z) >= STEP_Z and found.least >= CONFIRM - 0.5


class Policy:
    """Which positions each round of one hunt asks for, over its launches (``state``), ``slots`` at a time."""

    def __init__(self, state: Launches, slots: int, alpha: float, label: Callable[[int], str]) -> None:
        self.state = state
        self.slots = slots
        self.alpha = alpha
        self.label = label  # how a position is named in the reasons
        self.step_used = 0  # launches asked for to decide a suspected second step
        self.steps_checked = False  # the second-step checks asked for nothing once: they are done

    def can_ask(self, pos: int, pending: int = 0) -> bool:
        """Whether a round may ask for ``pos`` (``pending``: launches of it already in the round)."""
        return self.state.can_launch(pos, pending)

    def endpoints(self, left: int) -> list[Pick]:
        """A round while GOOD and BAD are not told apart: the end with fewer launches first, both with two slots
        or more (never more than ``left`` in all), and with more than two, evenly spaced probes ahead of them."""
        state, bad = self.state, self.state.size - 1
        chosen: list[Pick] = []
        for _ in range(min(self.slots, 2, left)):
            pending = {p: sum(1 for q, _ in chosen if q == p) for p in (0, bad)}
            choice = min(
                (p for p in (0, bad) if self.can_ask(p, pending[p])),
                key=lambda p: (len(state.values(p)) + state.failed.get(p, 0) + pending[p], p),
                default=None,
            )
            if choice is None:
                break
            chosen.append((choice, "GOOD" if choice == 0 else "BAD"))
        if self.slots > 2 and state.size > 2 and left > len(chosen):  # speculate: the middle, before the ends settle
            chosen += ahead(state.size, min(self.slots - len(chosen), left - len(chosen)), state.skipped)
        return chosen

    def left_of(self, k: int) -> list[int]:
        """The positions whose launches stand for GOOD's side at the boundary before ``k``: ``k - 1``; while the hunt
        is pruned, every position from ``k``'s relevant predecessor to ``k - 1``, which the mask gives one level."""
        mask = self.state.mask
        return [k - 1] if mask is None else list(range(mask.prev(k), k))

    def right_of(self, k: int) -> list[int]:
        """The same for BAD's side: ``k``; while pruned, ``k`` and the inert commits after it (to BAD)."""
        mask = self.state.mask
        return [k] if mask is None else list(range(k, mask.block_end(k) + 1))

    def confirmations(self, k: int, model: Model, parent: str = "good") -> list[Pick]:
        """The launches that must come before ``k`` is named: up to ``CONFIRM`` launches each at ``k - 1`` and
        ``k``, then one more at a commit whose launch, left out, lets ``k`` fall below ``LOO_MASS``, then the
        spread's check (``spread_check``).

        While the hunt is pruned, ``k - 1`` (``k``'s direct parent, inert or not) and ``k`` are launched first, and
        again while the check asks for them (``parent``: ``mask.check``'s word); each side of the boundary is then
        a block of the mask, one level: from ``k``'s relevant predecessor to ``k - 1``, and from ``k`` to the next
        relevant commit's parent.  ``CONFIRM`` launches of each block with at least one at ``k - 1`` and at ``k``
        do: the parent check takes the place of the relevant predecessor's second launch, and costs none."""
        counts = self.state.counts
        chosen = self.parent_picks(k, parent)
        if chosen:
            return chosen
        left, right = self.left_of(k), self.right_of(k)
        have = {k - 1: sum(counts.get(p, 0) for p in left), k: sum(counts.get(p, 0) for p in right)}
        for p in (k - 1, k):
            if have[p] < CONFIRM and self.can_ask(p):
                chosen.append((p, f"confirm: {self.label(p)} has {plural(counts.get(p, 0), 'launch', 'launches')}"))
        if chosen or any(have[p] < CONFIRM for p in (k - 1, k)):
            return chosen[: self.slots]
        # The launch whose absence hurts most shows where the evidence is thinnest: one more launch there, at
        # the same commit (its neighbour's launches say nothing of how that commit itself measured); while pruned,
        # a launch of GOOD's side goes to the parent, of BAD's to k.  (GOOD's or BAD's only launch is not left out:
        # without it there is no level for that end at all; the other launches of its block are.)
        worst: tuple[float, int, int] | None = None
        for p in (*left, *right):
            if p in (0, self.state.size - 1) and counts.get(p, 0) < 2:
                continue
            for i in range(counts.get(p, 0)):
                kept = self.state.model(exclude=(p, i)).posterior.single(k)
                if kept < LOO_MASS and (worst is None or kept < worst[0]):
                    worst = (kept, p, i)
        if worst is None:
            return self.spread_check(k, model)
        kept, p, i = worst
        home = p if p in (k - 1, k) else k - 1 if p < k else k
        where = [q for q in (home, (2 * k - 1) - home) if self.can_ask(q)]
        if not where:
            return []
        return [(where[0], f"confirm: without launch {i + 1} of {self.label(p)}, {self.label(k)} keeps {kept:.3f}")]

    def parent_picks(self, k: int, parent: str) -> list[Pick]:
        """The launches the check of ``k`` under the mask asks for (``parent``: ``mask.check``'s word): ``k - 1``
        first while unmeasured or unclear, with ``k`` beside it (slots allowing) while it has fewer than
        ``CONFIRM``; ``k`` again while it does not read BAD without the mask."""
        counts = self.state.counts
        chosen: list[Pick] = []
        if parent in ("unmeasured", "more") and self.can_ask(k - 1):
            had = plural(counts.get(k - 1, 0), "launch", "launches")
            chosen.append((k - 1, f"parent: is {self.label(k - 1)}, {self.label(k)}'s direct parent, good? ({had})"))
        if parent in ("unmeasured", "more", "again") and (not counts.get(k) or parent == "again"):
            had = plural(counts.get(k, 0), "launch", "launches")
            if self.can_ask(k):
                chosen.append((k, f"parent: is {self.label(k)} bad without pruning too? ({had})"))
        return chosen[: self.slots]

    def spread_check(self, k: int, model: Model) -> list[Pick]:
        """One more launch at ``k - 1`` or ``k`` while ``k`` would fall below ``LOO_MASS`` at the spread's
        one-sided 90 % upper bound given its degrees of freedom.

        The posterior is only as sure as its spread: a prior measured on a quieter day, and a hunt whose own
        launches happened to scatter little, both make a spread too small, and then a boundary resting on a
        few launches reads as certain.  The spread is an estimate from ``df`` degrees of freedom; the answer
        must hold at any spread the data does not rule out (a chi-square bound), which costs nothing where
        the step is several spreads and a launch or two where it is not."""
        df = max(model.spread.df, 1.0)
        upper = upper_factor(df, SPREAD_BOUND)
        kept = self.state.model(fixed=upper).posterior.single(k)
        if kept >= LOO_MASS:
            return []
        where = sorted((q for q in (k - 1, k) if self.can_ask(q)), key=lambda q: (self.state.counts[q], -q))
        if not where:
            return []
        return [(where[0], f"confirm: at the spread's upper bound {model.spread.sigma * upper:.2%} "
                           f"({df:.0f} df), {self.label(k)} keeps {kept:.3f}")]  # fmt: skip

    def second_steps(self, k: int, model: Model) -> list[Pick]:
        """The launches a suspected second step asks for before ``k`` is named (``step_checks``), within
        ``STEP_BUDGET``; once they ask for nothing, never again in this hunt."""
        if self.steps_checked:
            return []
        chosen = self.step_checks(k, model)
        self.step_used += len(chosen)
        self.steps_checked = not chosen
        return chosen

    def step_checks(self, k: int, model: Model) -> list[Pick]:
        """More launches where a second step is suspected but not clear (``STEP_SUSPECT <= |z|`` within a side, and
        ``z`` below ``STEP_Z`` or one launch on a side of the split): one at the commit either side of the split
        with fewer launches, at most ``STEP_EXTRA`` extra; or at GOOD (BAD) on one launch when its own split from
        the rest of its side reaches ``END_SUSPECT`` the hunted way."""
        counts = self.state.counts
        chosen: list[Pick] = []
        slots = min(self.slots, STEP_BUDGET - self.step_used)
        for lo, hi in ((0, k - 1), (k, self.state.size - 1)):
            if slots <= 0:
                break
            found = model.side_step(lo, hi)
            if found is not None and clear(found):
                continue
            end = lo if lo == 0 else hi
            if counts.get(end, 0) == 1 and self.can_ask(end) and len(chosen) < slots:
                # GOOD or BAD on one launch: its split from the rest of its side is the one a single launch
                # decides, and the end is the commit a second step leaves alone on its level.
                at = [f for f in model.side_splits(lo, hi) if end in f[:2]]
                if at and at[0][2] * self.state.sign >= END_SUSPECT:  # the hunted way: a second regression
                    name = "GOOD" if end == 0 else "BAD"
                    chosen.append((end, f"second step? {name} on one launch against the rest of its side at "
                                        f"z = {at[0][2]:.1f}"))  # fmt: skip
                    continue
            if found is None or abs(found.z) < STEP_SUSPECT:
                continue
            for p in sorted((found.a, found.b), key=lambda q: counts[q]):
                base = CONFIRM if p in (k - 1, k) else 1
                if self.can_ask(p) and counts[p] < base + STEP_EXTRA and len(chosen) < slots:
                    what = f"{self.label(found.a)} vs {self.label(found.b)} at z = {found.z:.1f}"
                    chosen.append((p, f"second step? {what}"))
                    break
        return chosen

    def for_evidence(self, k: int, unconfirmed: str) -> list[Pick]:
        """More launches at ``k - 1`` and ``k`` while the plain interval behind ``k`` does not exclude 1."""
        return [(p, f"evidence: {unconfirmed}") for p in (k - 1, k) if self.can_ask(p)][: self.slots]

    def picks(self, model: Model) -> list[Pick]:
        """Up to ``slots`` positions for the next round, each with why."""
        post = model.posterior
        pending: dict[int, int] = {}
        chosen: list[Pick] = []

        def room(p: int) -> bool:
            return self.can_ask(p, pending.get(p, 0))

        doubt = {p: min(c, 1 - c) for p, c in zip(post.marks, post.cum, strict=True)}  # cdf(marks[j]) = cum[j]
        unclear = sorted((p for p in post.marks if 0 < p < self.state.size - 1 and doubt[p] > self.alpha * 1e-3),
                         key=lambda p: -doubt[p])  # fmt: skip
        for i in range(1, self.slots + 1):
            q = i / (self.slots + 1)
            c = post.quantile(q)
            if c is not None and c not in self.state.counts and room(c):
                chosen.append((c, f"probe: the posterior's {q:.0%} point"))
                pending[c] = pending.get(c, 0) + 1
                continue
            again = next((p for p in unclear if room(self.stand_in(p, post))), None)
            if again is None:
                continue
            unclear.remove(again)
            unclear.append(again)  # the next slot goes to the next most unclear commit first
            after = plural(self.state.counts[again], "launch", "launches")
            at = self.stand_in(again, post)
            where = "" if at == again else f", launched at {self.label(at)} on its side (the next candidate's parent)"
            chosen.append((at, f"unclear: P(bad) {post.cdf(again):.3f} after {after}{where}"))
            pending[at] = pending.get(at, 0) + 1
        if not chosen:
            # Every measured commit is settled or at its cap, yet no commit holds the mass: probe the unmeasured
            # commit of the credible range nearest to the posterior's median.
            lo, hi = post.credible(self.alpha)
            median = post.quantile(0.5) or lo
            spare = [p for p in range(lo, hi + 1) if p not in self.state.counts and room(p) and post.holds(p)]
            if spare:
                c = min(spare, key=lambda p: (abs(p - median), p))
                chosen.append((c, "probe: unmeasured, in the credible range"))
        return chosen

    def stand_in(self, p: int, post: Posterior) -> int:
        """Where another launch for measured ``p``'s side goes: ``p`` itself, or while the hunt is pruned and ``p``
        is likely GOOD, the last commit of its block (``Mask.block_end``), which the mask gives ``p``'s level:
        it is the next candidate's direct parent, so the launch that settles ``p``'s side is also that
        candidate's parent check, which it would otherwise need on top."""
        mask = self.state.mask
        if mask is None or post.cdf(p) >= 0.5:
            return p
        end = mask.block_end(p)
        return end if end < self.state.size - 1 and self.can_ask(end) else p

    def with_references(self, picks: list[Pick], model: Model) -> list[Pick]:
        """The round's picks, with GOOD or BAD launched again where the drift needs it: in each round with slots
        to spare while the drift estimate is not clearly zero, and on any hunt when a side has had no reference
        launch for ``REF_EVERY`` launches (or, with a suspected drift, for half of that)."""
        state = self.state
        suspect = abs(model.drift_z) >= DRIFT_SUSPECT
        every = REF_EVERY // 2 if suspect else REF_EVERY
        out = list(picks)
        asked = {p for p, _ in out}
        for ref, name in sorted(((0, "GOOD"), (state.size - 1, "BAD")), key=lambda r: state.last_order(r[0])):
            if ref in asked or not self.can_ask(ref):
                continue
            stale = state.used - state.last_order(ref) > every
            spare = self.slots > 1 and suspect and len(out) < self.slots
            if stale or spare:
                why = (
                    f"reference: {name}, for the drift (z = {model.drift_z:.1f})"
                    if suspect
                    else (f"reference: {name}, not launched in {state.used - state.last_order(ref) - 1} launches")
                )
                if len(out) >= self.slots:
                    out[-1] = (ref, why)
                else:
                    out.append((ref, why))
                asked.add(ref)
                break
        return out
