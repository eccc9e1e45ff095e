"""``hunt()``: the search itself, as the steps of the algorithm.

1. **The ends.**  GOOD and BAD are launched until the verdict tells them apart the expected way (and
   ``ends_check``, a criterion such as ``--min``, passes), or the hunt ends as ``no-step``.
2. **Rounds over the posterior.**  Each round the model is fitted to every launch.  While no single commit holds
   ``1 - alpha`` of the posterior, the policy picks the round's launches.  Once one does, it must be confirmed
   (the policy's confirmations and second-step checks), and its plain interval must exclude 1, before it is
   named (``found``).
3. **A range** when nothing left could narrow it: the rounds or the budget are spent, or no launch is left
   that could move the posterior.

**Pruned** (``relevance``, ``mask.py``): the caller is asked which positions are relevant after GOOD's and BAD's
first launches and after every round, and the model is refitted under that mask.  A commit named under a mask
stands only once its direct parent reads GOOD, and it BAD, on the mask with the parent and the commit after it
made relevant (the parent check, ``mask.check``); a check that fails abandons pruning for the rest of the hunt.
A range answered under a mask reaches down to its first commit's relevant predecessor: the inert commits just
before it are in it, since no parent check vouched for them.

The launches are recorded in ``state.Launches``, chosen by ``policy.Policy``, and judged by ``answer``; this
module only runs the rounds and assembles the report.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from patchkit.bench.stats.hunt.answer import Ends, evidence, explain_range, judge_ends, others, undecided
from patchkit.bench.stats.hunt.mask import LEADS, Pruned, Pruner, Relevant, check, parent_reads
from patchkit.bench.stats.hunt.model import Model
from patchkit.bench.stats.hunt.policy import CONFIRM, LOO_MASS, Pick, Policy, default_budget
from patchkit.bench.stats.hunt.report import HuntReport, Measure, Round, Side, Value
from patchkit.bench.stats.hunt.state import Launches
from patchkit.bench.stats.verdict import Call, Noise, Verdict
from patchkit.wording import plural

EndsCheck = Callable[[Sequence[float], Sequence[float]], tuple[str, str]]


def hunt(
    size: int,
    measure: Measure,
    *,
    slots: int = 1,
    max_launches: int = 10,
    alpha: float = 0.001,
    noise: Noise | None = None,
    min_effect: float = 0.0,
    endpoint_confidence: float = 0.95,
    expect: str | None = None,
    max_rounds: int | None = None,
    on_round: Callable[[Round, Sequence[Side]], None] | None = None,
    skipped: Collection[int] = (),
    initial: Mapping[int, Sequence[Value]] | None = None,
    label: Callable[[int], str] = str,
    budget: int | None = None,
    ends_check: EndsCheck | None = None,
    relevance: Relevant | None = None,
) -> HuntReport:
    """Search positions ``0..size-1`` (GOOD at 0, BAD at ``size - 1``) for the first bad one.

    ``expect`` (``"higher"`` / ``"lower"``): the direction BAD must differ from
    GOOD in; the other direction ends the hunt as ``no-step``.  ``on_round`` is
    called after each round (progress output).  ``skipped``: positions known
    not to be measurable (their patches cannot apply): never measured, still
    candidates.  ``initial``: launches already measured per position (they
    count in the posterior and in the budget, not in ``starts``; in the order
    given, before any round).  ``label`` names a position in the ``why`` of a
    range (the bisect passes the commit's short id).  ``budget``: the total
    launches (initial ones included) the hunt may use; default
    ``default_budget(size, max_launches)``.  ``ends_check(good, bad)``: a
    criterion GOOD's and BAD's launches must meet once they are told apart,
    ``("ok", "")``, ``("more", why)`` (launch both again) or ``("refuse", why)``
    (a ``no-step`` with that why).  ``relevance()``: which positions could be the first bad one, asked
    after GOOD's and BAD's first launches and after every round (``mask.Relevant``); None searches every one.
    """
    if size < 2:
        raise ValueError(f"a hunt needs GOOD and BAD: size {size} < 2")
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if max_launches < 1:
        raise ValueError(f"max_launches must be >= 1, got {max_launches}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, got {alpha}")
    cap = default_budget(size, max_launches) if budget is None else budget
    if cap < 2:
        raise ValueError(f"budget must be >= 2 (GOOD and BAD), got {cap}")
    state = Launches(size, noise, max_launches)
    state.skipped.update(p for p in skipped if 0 < p < size - 1)
    for pos, values in (initial or {}).items():
        for value in values:
            state.add(pos, value)
    search = _Hunt(
        state,
        Policy(state, slots, alpha, label),
        measure,
        cap,
        on_round=on_round,
        min_effect=min_effect,
        confidence=endpoint_confidence,
        expect=expect,
        max_rounds=max_rounds,
        ends_check=ends_check,
        pruner=Pruner(size, relevance) if relevance is not None else None,
    )
    ends = search.tell_ends_apart()
    if isinstance(ends, HuntReport):
        return ends
    return search.narrow(ends)


class _Hunt:
    """One hunt under way: its launches, its policy, the rounds so far and the budget."""

    def __init__(
        self,
        state: Launches,
        policy: Policy,
        measure: Measure,
        cap: int,
        *,
        on_round: Callable[[Round, Sequence[Side]], None] | None,
        min_effect: float,
        confidence: float,
        expect: str | None,
        max_rounds: int | None,
        ends_check: EndsCheck | None,
        pruner: Pruner | None = None,
    ) -> None:
        self.state = state
        self.policy = policy
        self.measure = measure
        self.cap = cap  # the budget: launches in all, initial ones included
        self.on_round = on_round
        self.min_effect = min_effect
        self.confidence = confidence  # of the ends' verdict
        self.expect = expect
        self.max_rounds = max_rounds
        self.ends_check = ends_check
        self.rounds: list[Round] = []
        self.bad = state.size - 1
        self.pruner = pruner

    def left(self) -> int:
        """Launches left in the budget."""
        return self.cap - self.state.used

    def launch(self, picks: list[Pick]) -> None:
        """One round: ``measure`` the picks, in order, and record what each gave."""
        asked = [p for p, _ in picks]
        values = tuple(self.measure(asked))
        if len(values) != len(asked):
            raise ValueError(f"measure returned {len(values)} values for {len(asked)} launches")
        for pos, value in zip(asked, values, strict=True):
            self.state.add(pos, value)
        tried = self.state.counts.keys() | self.state.failed.keys()
        if self.pruner is not None and 0 in tried and self.bad in tried:  # what ran grew: ask again
            self.pruner.refresh()
            self.state.mask = self.pruner.mask
        done = Round(asked=tuple(asked), values=values, why=tuple(w for _, w in picks))
        self.rounds.append(done)
        if self.on_round is not None:
            self.on_round(done, self.state.sides())

    def tell_ends_apart(self) -> Verdict | HuntReport:
        """Step 1: GOOD and BAD until the verdict tells them apart the ``expect``-ed way and ``ends_check``
        passes (the step's direction is then set: ``state.sign``), or a ``no-step`` report."""
        ends: Verdict | None = None
        while True:
            for end, which in ((0, "GOOD"), (self.bad, "BAD")):
                if not self.state.values(end) and not self.policy.can_ask(end):
                    tries = plural(self.state.failed.get(end, 0), "launch", "launches")
                    return self.report("no-step", f"{which} could not be measured ({tries} failed)", endpoints=ends)
            if self.state.values(0) and self.state.values(self.bad):
                judged = judge_ends(self.state, self.min_effect, self.confidence)
                ends = judged.verdict
                stop = self.ends_answer(judged)
                if stop is not None:
                    return stop
                if self.state.sign:
                    return ends
            if self.max_rounds is not None and len(self.rounds) >= self.max_rounds:
                return self.report("no-step", f"GOOD and BAD not told apart within {self.max_rounds} rounds",
                                   endpoints=ends)  # fmt: skip
            if self.left() <= 0:
                return self.report("no-step", f"the budget of {self.cap} launches was spent before GOOD and BAD "
                                   "were told apart", endpoints=ends)  # fmt: skip
            self.launch(self.policy.endpoints(self.left()))

    def ends_answer(self, judged: Ends) -> HuntReport | None:
        """What the ends' verdict means for the hunt: a ``no-step`` report where it ends the hunt; else nothing,
        with the step's direction set (``state.sign``) where the ends are told apart and ``ends_check`` passes,
        or left unset where they need more launches."""
        ends, expect = judged.verdict, self.expect
        can_more = self.policy.can_ask(0) or self.policy.can_ask(self.bad)
        if ends.call is Call.DIFFERENT:
            if expect is not None and ends.direction != expect and (judged.settled or not can_more):
                return self.report("no-step", f"BAD is {ends.direction} than GOOD, not {expect}: not the regression "
                                   "being hunted", endpoints=ends)  # fmt: skip
            if expect is None or ends.direction == expect:
                self.state.sign = 1.0 if ends.direction == "higher" else -1.0
                check = self.ends_check
                verdict, reason = check(judged.good, judged.bad) if check is not None else ("ok", "")
                if verdict == "ok":
                    return None
                self.state.sign = 0.0
                if verdict == "refuse" or not can_more:
                    return self.report("no-step", reason, endpoints=ends)
        if ends.call is Call.SAME and (judged.settled or not can_more):
            return self.report("no-step", f"GOOD and BAD are the same within ±{self.min_effect:.1%}",
                               endpoints=ends)  # fmt: skip
        if not can_more:
            good, bad = len(self.state.values(0)), len(self.state.values(self.bad))
            return self.report("no-step", undecided(ends, good, bad), endpoints=ends)
        return None

    def narrow(self, ends: Verdict) -> HuntReport:
        """Steps 2 and 3: rounds over the posterior until a commit is named, or a range when none can be."""
        alpha = self.policy.alpha
        while True:
            model = self.state.model()
            best = model.posterior.best_single()
            named = best if best is not None and best[1] >= 1 - alpha else None
            picks: list[Pick] = []
            unconfirmed = ""
            parent = self.parent_check(best[0]) if best is not None and best[1] >= LEADS else "good"
            if parent == "bad":
                continue  # pruning is abandoned: the model is refitted over the full line
            if named is None and best is not None and self.state.counts.get(best[0] - 1):
                picks = self.policy.parent_picks(best[0], parent)  # the leading commit's check, once begun
            if named is not None:
                k, mass = named
                picks = self.policy.confirmations(k, model, parent) or self.policy.second_steps(k, model)
                if not picks and parent != "good":
                    unconfirmed = (f"its direct parent {self.policy.label(k - 1)} could not be measured enough for "
                                   "pruning's check")  # fmt: skip
                elif not picks:
                    before_after, adjacent = evidence(self.state, k, alpha)
                    if before_after.call is Call.DIFFERENT:
                        return self.found(k, mass, model, ends, before_after, adjacent)
                    unconfirmed = (f"the plain interval of the launches from {self.policy.label(k)} on against "
                                   f"those before it does not exclude 1 ({before_after.why})")  # fmt: skip
                    picks = self.policy.for_evidence(k, unconfirmed)
            bounds = model.posterior.credible(alpha)
            if self.max_rounds is not None and len(self.rounds) >= self.max_rounds:
                return self.range(model, bounds, ends, f"{self.max_rounds} rounds spent")
            if self.left() <= 0:
                return self.range(model, bounds, ends, f"the budget of {self.cap} launches is spent")
            picks = picks or self.policy.picks(model)
            if not picks:
                return self.range(model, bounds, ends, self.stuck(named, unconfirmed))
            self.launch(self.policy.with_references(picks, model)[: max(self.left(), 0)])

    def parent_check(self, k: int) -> str:
        """While pruned: the check of ``k`` (``mask.check``): its direct parent reads GOOD, and ``k`` itself BAD, on
        the posterior under the mask with ``k - 1`` and ``k + 1`` made relevant; a check that fails abandons
        pruning here.  Not pruned: ``good`` (the plain confirmation measures ``k - 1`` and ``k`` anyway)."""
        state, pruner, can = self.state, self.pruner, self.policy.can_ask
        if state.mask is None or pruner is None:
            return "good"
        launches = state.counts.get(k - 1, 0)
        if not launches:
            return parent_reads(1.0, 0, can(k - 1), CONFIRM)
        post = state.model(mask=state.mask.with_relevant((k - 1, k + 1))).posterior
        p_parent, p_k = post.cdf(k - 1), post.cdf(k)
        pruner.parent = (k - 1, p_parent)
        word = check((p_parent, launches, can(k - 1)), (p_k, state.counts.get(k, 0), can(k)), CONFIRM)
        label = self.policy.label
        if word == "bad":
            pruner.abandon(f"the direct parent {label(k - 1)} of {label(k)} read BAD (P(bad) {p_parent:.3f} without "
                           f"pruning, {plural(launches, 'launch', 'launches')}): a commit judged inert changed what "
                           "ran; the search went on over the full line")  # fmt: skip
        elif word == "bad-k":
            pruner.abandon(
                f"{label(k)}, named under pruning, read GOOD without it (P(bad) {p_k:.3f}): a commit "
                "judged inert after it changed what ran; the search went on over the full line"
            )
        if pruner.abandoned is not None:
            state.mask = None
            return "bad"
        return word

    def stuck(self, named: tuple[int, float] | None, unconfirmed: str) -> str:
        """Why no launch is left: nothing could narrow the posterior, or the commit that holds it could not be
        confirmed."""
        if named is None:
            return "no launch left could narrow it"
        k, mass = named
        label = self.policy.label
        short = unconfirmed or f"no launch left at {label(k - 1)} or {label(k)} to leave any one out"
        return f"{label(k)} holds {mass:.4f} but could not be confirmed: {short}"

    def found(
        self, k: int, mass: float, model: Model, ends: Verdict, before_after: Verdict, adjacent: Verdict
    ) -> HuntReport:
        label = self.policy.label
        why = (f"P(first bad) = {mass:.4f} >= {1 - self.policy.alpha}; confirmed: without any one launch of "
               f"{label(k - 1)} or {label(k)} it keeps >= {LOO_MASS}")  # fmt: skip
        return self.report("found", why, first_bad=k, lo=k, hi=k, probability=mass, endpoints=ends,
                           evidence=before_after, adjacent=adjacent, others=others(self.state, k, model))  # fmt: skip

    def range(self, model: Model, bounds: tuple[int, int], ends: Verdict, reason: str) -> HuntReport:
        if self.state.mask is not None:  # the inert commits just before the range: no parent check vouched for them
            bounds = (self.state.mask.prev(bounds[0]) + 1, bounds[1])
        r = explain_range(self.policy, model, bounds, reason)
        return self.report("range", r.why, lo=r.lo, hi=r.hi, probability=r.probability, endpoints=ends,
                           likely=r.likely, likely_mass=r.likely_mass, unclear=r.unclear, advice=r.advice)  # fmt: skip

    def report(self, kind: str, why: str, **kw: object) -> HuntReport:
        """The report, with what every answer carries: the measured commits under the current model, the
        skipped ones, the rounds, the spread and drift the model used, the failures and the budget."""
        fields: dict[str, object] = {
            "first_bad": None,
            "lo": None,
            "hi": None,
            "probability": 0.0,
            "endpoints": None,
            "evidence": None,
            "adjacent": None,
        }
        fields.update(kw)
        state = self.state
        model = state.model() if state.ready() else None
        return HuntReport(
            kind=kind, why=why, measured=tuple(state.sides(model)), skipped=tuple(sorted(state.skipped)),
            rounds=tuple(self.rounds), spread=model.spread if model else None,
            drift=model.drift() if model else None, failures=tuple(state.failures), budget=self.cap,
            pruning=self.pruned(kind), **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    def pruned(self, kind: str) -> Pruned | None:
        """What pruning did (``Pruner.outcome``): skipped are the inert commits never launched; a ``no-step``
        searched nothing between GOOD and BAD, so it skipped nothing."""
        if self.pruner is None:
            return None
        launched = self.state.counts.keys() | self.state.failed.keys()
        return self.pruner.outcome(self.policy.label, launched, searched=kind != "no-step")
