"""Pruning: which positions of the line can be the first bad one, as the coverage says round by round, and the
check that the answer makes of that assumption.

**The mask.**  A commit is *relevant* when a change it makes could change what the launches ran, *inert*
otherwise (``patchkit.bench.stats.relevance``: the rule is the caller's, the hunt sees one bool per position).
While the hunt is pruned, only relevant positions hold prior mass (``likelihood.gap_log_prior``): an inert
commit takes its relevant predecessor's side, so the posterior's quantiles, and with them the probes, fall on
relevant commits, and the inert commits between two measured ones cost nothing.

**A mask that changes.**  The coverage is the union over every launch so far, so the caller is asked again
after every round (``Pruner.refresh``) and the model is refitted under the new mask from all launches (the fit
starts from the launches every round anyway; nothing is carried over but the launches).  A position once
judged relevant stays relevant for the rest of the hunt whatever a later answer says (the coverage only grows,
so a later answer cannot honestly take it back), and a newly relevant commit gets its prior mass at once: the
next round's quantiles may probe it.  An answer that pruning is off (the probe is blind: a process without it,
a worker that is not Python) searches every commit from that round on, and a later answer that it is on again
prunes again.  Every commit relevant is no mask at all: the hunt is then the same as without a judge, launch for
launch.

**The parent check** (``check``, ``parent_reads``).  The mask is an assumption, and the answer tests it where
it matters: before a first bad commit ``k`` named under the mask stands, ``k``'s direct parent ``k - 1`` is
measured, inert or not, and both are read on the *check's posterior*: the model refitted under the mask with
``k - 1`` and ``k + 1`` made relevant too (``Mask.with_relevant``), not on a posterior without any mask.
P(first bad <= k - 1) at most ``PARENT_GOOD`` passes; at least ``PARENT_BAD`` on ``CONFIRM`` launches of the
parent means a commit judged inert carried the step (every wrong judgement before ``k`` lands there: with the
step on an inert commit ``j``, the masked search converges on the first relevant commit after ``j``, whose
parent is ``j`` or after it); in between, the parent is launched again.  ``k`` must read BAD on it too: a ``k``
that reads GOOD was named only because the mask left the step nowhere else (it is on an inert commit after
``k``, an inert BAD say).  Either failure *abandons* pruning: the mask is dropped for the rest of the hunt, which
goes on over the full line from the launches it has.

Why that posterior and not the one without the mask: the check must test the judgements that could make ``k``
wrong, and each of them shows at ``k - 1`` or just after ``k``.  Making ``k - 1`` relevant gives the step a place
at the parent, so the parent's launches can read BAD (under the mask alone an inert ``k - 1`` shares its
relevant predecessor's side and never could); making ``k + 1`` relevant does the same right after ``k``, so
``k``'s own launches can read GOOD.  Dropping the whole mask would also hand prior mass to every other inert
commit: the unmeasured ones between ``k``'s relevant predecessor and ``k - 1`` would weigh on "first bad <=
k - 1" by their number, a weight only more launches of the parent take away, though a step on any of them
would show in the parent's own level anyway; those far from ``k`` bear on other answers, not on this one.  The
reports call this posterior's reading "without pruning": without it around ``k``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

Relevant = Callable[[], Sequence[bool] | str]
"""Asked after GOOD's and BAD's first launches and after every round: one bool per position (GOOD's is ignored),
True where the commit is relevant; or a sentence saying why pruning is off at this moment."""

PARENT_GOOD = 0.05  # the parent check passes when, on the check's posterior, P(first bad <= k - 1) is at most this
PARENT_BAD = 0.5  # ... and reads BAD from this on (on CONFIRM launches of the parent: one launch never decides)
LEADS = 0.5  # the commit that holds this much of the masked posterior is checked once its parent has a launch


@dataclass(frozen=True)
class Mask:
    """The relevant positions of a line of ``size`` while the hunt is pruned; ``rank[p]``: how many of ``1..p``."""

    relevant: tuple[bool, ...]
    rank: np.ndarray = field(compare=False, repr=False)

    @classmethod
    def of(cls, relevant: Sequence[bool]) -> Mask | None:
        """The mask, or None where every position after GOOD is relevant (nothing to prune: the plain hunt).

        Where no commit after GOOD is relevant, BAD is: the mask must leave the step somewhere (and the check
        of BAD's parent then tests that judgement as any other)."""
        flags = (False, *(bool(r) for r in relevant[1:]))
        if not any(flags):
            flags = (*flags[:-1], True)
        if all(flags[1:]):
            return None
        return cls(flags, np.cumsum(np.array(flags, dtype=np.int64)))

    def with_relevant(self, positions: Sequence[int]) -> Mask | None:
        """This mask with ``positions`` relevant too (the check's mask: ``check``)."""
        flags = list(self.relevant)
        for p in positions:
            if 0 < p < len(flags):
                flags[p] = True
        return Mask.of(flags)

    def prev(self, pos: int) -> int:
        """The last relevant position before ``pos``, or GOOD (0)."""
        return next((p for p in range(pos - 1, 0, -1) if self.relevant[p]), 0)

    def block_end(self, pos: int) -> int:
        """The last position that shares ``pos``'s level under the mask: the one before the next relevant
        position (that commit's direct parent), or BAD."""
        return next((p - 1 for p in range(pos + 1, len(self.relevant)) if self.relevant[p]), len(self.relevant) - 1)

    def inert(self) -> tuple[int, ...]:
        return tuple(p for p in range(1, len(self.relevant)) if not self.relevant[p])


@dataclass(frozen=True)
class Pruned:
    """What pruning did in one hunt: ``state`` ``on`` (the search ended under a mask), ``off`` (never on, or off
    at the end, or the hunt ended before it searched between GOOD and BAD: ``why``) or ``abandoned`` (the parent
    check read BAD); ``inert``: the *skipped* positions, those judged inert (at the end; ``abandoned``: when it was
    given up) that the hunt never launched.  GOOD and BAD are launched whatever they change, and a parent that
    the check measured was launched too, so none of them is ever in it; ``Pruner.outcome`` is the one place that
    says what was skipped, and every report (the text's count, ``--json``'s ``inert``) reads it from here.
    ``parent``: the direct parent the last check measured, with its P(bad) on the check's posterior
    (``check``)."""

    state: str
    why: str
    inert: tuple[int, ...] = ()
    parent: int | None = None
    parent_p_bad: float | None = None


class Pruner:
    """The mask of one hunt over time: asked after every round, kept monotone, dropped for good once abandoned."""

    def __init__(self, size: int, ask: Relevant) -> None:
        self.size = size
        self.ask = ask
        self.seen: list[bool] | None = None  # every position ever judged relevant (GOOD's entry unused)
        self.mask: Mask | None = None
        self.off: str | None = "GOOD and BAD have not both been launched yet"
        self.on_rounds = 0  # rounds that ended pruned
        self.rounds = 0  # rounds that ended with an answer from the caller
        self.abandoned: str | None = None
        self.abandoned_inert: tuple[int, ...] = ()
        self.parent: tuple[int, float] | None = None  # the last parent checked, its P(bad) on the check's posterior

    def refresh(self) -> None:
        """Ask again (the coverage grew with the round that just ended)."""
        if self.abandoned is not None:
            return
        answer = self.ask()
        self.rounds += 1
        if isinstance(answer, str):
            self.off, self.mask = answer, None
            return
        if len(answer) != self.size:
            raise ValueError(f"the relevance answer has {len(answer)} positions for a line of {self.size}")
        seen = [bool(a) for a in answer]
        if self.seen is not None:  # once relevant, relevant for the rest of the hunt
            seen = [was or now for was, now in zip(self.seen, seen, strict=True)]
        self.seen = seen
        self.off = None
        mask = Mask.of(seen)
        if mask != self.mask:  # a new object only when it changed: the model's cache is keyed on it
            self.mask = mask
        self.on_rounds += 1

    def abandon(self, why: str) -> None:
        self.abandoned_inert = self.mask.inert() if self.mask is not None else ()
        self.abandoned, self.mask = why, None

    def outcome(self, label: Callable[[int], str], launched: Collection[int], *, searched: bool = True) -> Pruned:
        """What pruning did, for the report: ``launched``, every position the hunt launched (a failed launch
        too); ``searched``: whether the hunt got past GOOD and BAD (False for a ``no-step``: nothing between them
        was searched, so nothing was skipped, whatever the mask said)."""
        parent, p_bad = self.parent if self.parent is not None else (None, None)

        def skipped(inert: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(p for p in inert if p not in launched)

        if self.abandoned is not None:
            return Pruned("abandoned", self.abandoned, skipped(self.abandoned_inert), parent, p_bad)
        if self.off is not None:
            why = self.off
            if self.on_rounds:
                why += f" (pruning was on for {self.on_rounds} of {self.rounds} rounds; then every commit was searched)"
            return Pruned("off", why, (), parent, p_bad)
        if not searched:
            return Pruned("off", "the hunt ended before it searched between GOOD and BAD: nothing was skipped", (),
                          parent, p_bad)  # fmt: skip
        judged = self.mask.inert() if self.mask is not None else ()
        inert = skipped(judged)
        after = self.size - 1
        if inert:
            why = (f"{len(inert)} of {after} commits after GOOD were skipped: judged inert (they changed no code "
                   "that ran), each took its relevant predecessor's side and was never launched")  # fmt: skip
        elif judged:
            why = f"none of the {after} commits after GOOD was skipped"
        else:
            why = f"none of the {after} commits after GOOD was skipped: each changed code that ran"
        again = [p for p in judged if p in launched]
        if again:
            names = ", ".join(label(p) + (" (BAD)" if p == after else "") for p in again)
            why += f"; launched although judged inert: {names}"
        if parent is not None and p_bad is not None:
            why += f"; the first bad commit's parent {label(parent)} read GOOD (P(bad) {p_bad:.4f} without pruning)"
        return Pruned("on", why, inert, parent, p_bad)


def check(parent: tuple[float, int, bool], first_bad: tuple[float, int, bool], confirm: int) -> str:
    """The check a commit ``k`` named under the mask must pass, on the check's posterior (the mask with ``k - 1``
    and ``k + 1`` made relevant: the module docstring says why): its parent's word (``parent_reads``: ``parent``
    is its P(bad), launches and whether it can be launched again), then ``k``'s own (``first_bad``, the same of
    ``k``): ``k`` must read BAD there too.  It does wherever the mask is right (its launches are its own); a ``k``
    that reads GOOD on ``CONFIRM`` launches (P(bad) at most ``PARENT_BAD``) was named only because the mask left
    the model no other place for the step: ``bad-k`` (pruning was wrong); one between that and
    ``1 - PARENT_GOOD`` is launched again (``again``)."""
    word = parent_reads(*parent, confirm)
    if word != "good":
        return word
    p_bad, launches, can_more = first_bad
    if p_bad <= PARENT_BAD and (launches >= confirm or not can_more):
        return "bad-k"
    if p_bad < 1 - PARENT_GOOD:
        return "again" if can_more else "unclear"
    return "good"


def parent_reads(p_bad: float, launches: int, can_more: bool, confirm: int) -> str:
    """The parent check's word on ``k - 1``, from its P(bad) on the check's posterior: ``good``, ``bad`` (pruning was
    wrong), or ``more`` (launch it again); ``unmeasured`` before its first launch.  A parent that cannot be
    launched again is judged on what it has: ``bad`` from ``PARENT_BAD``, else ``unclear``."""
    if launches == 0:
        return "unmeasured"
    if p_bad <= PARENT_GOOD:
        return "good"
    if p_bad >= PARENT_BAD and (launches >= confirm or not can_more):
        return "bad"
    return "more" if can_more else "unclear"
