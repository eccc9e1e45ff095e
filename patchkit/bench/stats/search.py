"""The search of ``patchkit bisect``: ``bisect(line, measure, is_bad) -> BisectReport``, a pure function.

``line`` is the first-parent history from GOOD (first) to BAD (last);
``measure(commit)`` starts one server launch of a commit and returns its
value (the verb passes a function that runs a job and stores the run; tests
pass a plain function); ``is_bad(value, good_value)``, when given, is the
criterion the first launches of GOOD and BAD must meet (GOOD not bad, BAD bad).

The search itself is ``patchkit.bench.stats.hunt.hunt``, the one implementation:
launches are the replicates, more are added where the data is unclear (up to
``max_launches`` per commit), up to ``slots`` launches per round, and the
answer is a first bad commit only with ``1 - alpha`` of the posterior behind
it; otherwise a range of commits with why.

1. GOOD and BAD are launched once each, in one round when ``slots >= 2``
   (one job array on Slurm; with more slots, evenly spaced probes fill it, as
   ``hunt`` would), else GOOD first; a launch that is not usable (not ``ok``,
   or no value) or a criterion they fail is an ``error``, no answer.
2. ``hunt`` over the whole line.  A commit listed in ``skipped`` (its patches
   cannot apply, known before anything runs) is never measured; a launch that
   is not usable makes its commit skipped too.  Skipped commits stay
   candidates: a first bad commit right after skipped ones is answered as
   "this one, or one of the skipped just before it" (``maybe``), the only
   way data can leave it.
3. With ``relevance`` (a ``pruning.Judge``), the hunt searches only the commits
   that changed code that ran, asking again after every round, and names a
   first bad commit only once its direct parent reads GOOD with the parent
   made relevant (``hunt.mask``'s check); ``BisectReport.pruning`` says what
   pruning did.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from patchkit.bench.stats.hunt import Drift, GiveUp, HuntReport, OtherStep, Pruned, Round, Side, Spread, Value, hunt
from patchkit.bench.stats.outcome import Outcome
from patchkit.bench.stats.pruning import Judge, LineRelevance, PruningReport
from patchkit.bench.stats.relevance import Relevance
from patchkit.bench.stats.verdict import Noise, Verdict, judge, level
from patchkit.commit import Commit
from patchkit.wording import labelled, plural

StepVerdict = Literal["good", "bad", "unclear", "skip"]
SURE = 0.99  # a step is called good / bad when its commit's posterior is this sure


@dataclass(frozen=True)
class Measurement:
    """What one launch of a commit gave: the metric's value (the median of its runs), and the run that holds it."""

    value: float | None
    outcome: Outcome = Outcome.OK
    run: int | None = None
    why: str | None = None  # the run's reason, when it is not ok
    details: tuple[str, ...] = ()  # what a step line cannot hold: e.g. each STRAY that refused the run

    @property
    def usable(self) -> bool:
        return self.outcome is Outcome.OK and self.value is not None


@dataclass(frozen=True)
class Step:
    """One launch: its commit, what it measured, and what the data said of the commit after its round."""

    commit: Commit
    measurement: Measurement
    verdict: StepVerdict
    launch: int = 1  # this commit's launch number
    p_bad: float | None = None  # posterior that the commit is bad, after this launch's round
    why: str = ""  # why the search asked for this launch
    order: int = 0  # the launch's place in the whole search (0 first): the drift's axis
    at: str | None = None  # when it ended (UTC, ISO 8601)
    outlier: bool = False  # the launch model treats this launch as an outlier (it moves no boundary)

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "run": self.measurement.run,
            "outcome": self.measurement.outcome.value,
            "median": self.measurement.value,
            "verdict": self.verdict,
            "launch": self.launch,
            "p_bad": self.p_bad,
            "why": self.why,
            "order": self.order,
            "at": self.at,
            "outlier": self.outlier,
            "reason": None if self.measurement.usable else self.measurement.why,
        }


@dataclass(frozen=True)
class OtherCommits:
    """A further step the launches show besides the answer: the first bad commit of it lies in ``lo..hi``; the
    later level over the earlier is ``ratio``; ``same_way``: a second regression (else a step the other way)."""

    lo: Commit
    hi: Commit
    ratio: float
    z: float
    same_way: bool
    before: Commit  # the commit before lo: GOOD of the bisect that would find it
    hint: str  # the command that hunts it

    def to_json(self) -> dict[str, object]:
        return {"first": self.lo.sha, "last": self.hi.sha, "ratio": self.ratio, "z": self.z,
                "same_way": self.same_way, "hint": self.hint}  # fmt: skip


@dataclass(frozen=True)
class Skip:
    """A commit the search has no value for, and why: its patches cannot apply, or its launch gave no usable
    value.  It stays a candidate for the first bad commit."""

    commit: Commit
    why: str

    def to_json(self) -> dict[str, object]:
        return {"commit": self.commit.sha, "subject": self.commit.subject, "why": self.why}


@dataclass(frozen=True)
class BisectReport:
    """What ``bisect`` answers: a first bad commit (``found``), a range of commits with why (``range``), no step
    between GOOD and BAD (``no-step``) or no answer (``error``), with every launch and the evidence behind it."""

    good: Commit
    bad: Commit
    steps: tuple[Step, ...]
    skipped: tuple[Skip, ...]  # never measured (cannot apply), or measured without a usable value
    first_bad: Commit | None
    last_good: Commit | None
    maybe: tuple[Skip, ...]  # skipped commits right before first_bad
    error: str | None  # why there is no answer
    good_value: float | None
    kind: str = "error"  # found | range | no-step | error
    range: tuple[Commit, Commit] | None = None  # the first bad commit is one of these two and those between
    why: str = ""  # the search's account of its answer
    probability: float | None = None  # posterior mass of the answer
    evidence: Verdict | None = None  # the launches after first_bad against those before it
    adjacent: Verdict | None = None  # first_bad's launches against those of the commit before it
    sides: tuple[tuple[Commit, Side], ...] = ()  # every measured commit: its launches and P(bad)
    rounds: int = 0
    slots: int = 1
    max_launches: int = 1
    unsure: tuple[tuple[Commit, Side], ...] = field(default=())  # range: measured commits left unsettled to alpha
    likely: Commit | None = None  # range: the most likely first bad commit
    likely_probability: float | None = None  # its posterior mass (short of 1 - alpha)
    other_steps: tuple[OtherCommits, ...] = ()  # further steps the launches show, with the bisect that finds each
    spread: Spread | None = None  # the launch spread the search used, and where it came from
    drift: Drift | None = None  # the launches' trend over the search
    budget: int = 0  # the launches the search could use
    advice: str = ""  # range: what would likely narrow it
    pruning: PruningReport | None = None  # what the coverage-aware pruning did (None: no judge was given)

    @property
    def outliers(self) -> tuple[Step, ...]:
        """The launches the launch model treats as outliers."""
        return tuple(s for s in self.steps if s.outlier)

    def to_json(self) -> dict[str, object]:
        first = self.first_bad
        return {
            "good": self.good.sha,
            "bad": self.bad.sha,
            "skipped": [{"commit": s.commit.sha, "why": s.why} for s in self.skipped],
            "steps": [s.to_json() for s in self.steps],
            "first_bad": None if first is None else {"commit": first.sha, "subject": first.subject, "date": first.date},
            "last_good": None if self.last_good is None else {"commit": self.last_good.sha},
            "maybe": [s.to_json() for s in self.maybe],
            "error": self.error,
            "search": {
                "answer": self.kind,
                "range": None if self.range is None else {"first": self.range[0].sha, "last": self.range[1].sha},
                "why": self.why,
                "probability": self.probability,
                "slots": self.slots,
                "max_launches": self.max_launches,
                "rounds": self.rounds,
                "launches": len(self.steps),
                "evidence": None if self.evidence is None else self.evidence.as_json(),
                "adjacent": None if self.adjacent is None else self.adjacent.as_json(),
                "commits": [{"commit": c.sha, "launches": list(s.launches), "p_bad": s.p_bad} for c, s in self.sides],
                "likely": None
                if self.likely is None
                else {"commit": self.likely.sha, "probability": self.likely_probability},
                "unclear": [{"commit": c.sha, "p_bad": s.p_bad, "launches": len(s.launches)} for c, s in self.unsure],
                "budget": self.budget,
                "advice": self.advice or None,
                "spread": None if self.spread is None else self.spread.as_json(),
                "drift": None if self.drift is None else self.drift.as_json(),
                "outliers": [
                    {"commit": s.commit.sha, "launch": s.launch, "order": s.order, "median": s.measurement.value}
                    for s in self.outliers
                ],
                "other_steps": [o.to_json() for o in self.other_steps],
            },
            "pruning": None if self.pruning is None else self.pruning.to_json(),
        }


IsBad = Callable[[float, float | None], bool]


@dataclass(frozen=True)
class Criterion:
    """``--min X`` / ``--max X`` / ``--ratio R``: what GOOD and BAD must be, judged on their launches.

    Called as ``is_bad(value, good)`` it is the plain rule on one value.  The
    bisect judges it on every launch of GOOD and BAD (``settle``): ``min``
    and ``max`` on each end's level with its 95 % interval, ``ratio`` on BAD
    over GOOD with its interval, so one lucky launch cannot pass or fail it;
    an interval that straddles the line asks for more launches of both."""

    kind: Literal["min", "max", "ratio"]
    threshold: float
    better: str = "higher"

    def __call__(self, value: float, good: float | None) -> bool:
        if self.kind == "min":
            return value < self.threshold
        if self.kind == "max":
            return value > self.threshold
        if not good:
            return False
        ratio = value / good
        return ratio < self.threshold if self.better == "higher" else ratio > self.threshold

    def settle(self, good: Sequence[float], bad: Sequence[float], noise: Noise | None) -> tuple[str, str]:
        """``("ok", "")``, ``("more", why)`` or ``("refuse", which end fails and how)``."""
        if self.kind == "ratio":
            v = judge(good, bad, threshold=0.0, confidence=0.95, noise=noise)
            if v.low is None or v.high is None or v.ratio is None:
                return "more", "the ratio's interval is not known yet"
            worse_edge, better_edge = (v.high, v.low) if self.better == "higher" else (v.low, v.high)
            shown = f"BAD/GOOD {v.ratio:.3f} [{v.low:.3f}, {v.high:.3f}] over the launches"
            if self(worse_edge * 1.0, 1.0):
                return "ok", ""
            if not self(better_edge * 1.0, 1.0):
                return "refuse", f"not bad by the criterion (good): {shown}, --ratio {self.threshold:g}"
            return "more", f"{shown} straddles --ratio {self.threshold:g}"
        for end, values, want_bad in (("good", good, False), ("bad", bad, True)):
            lv = level(values, confidence=0.95, noise=noise)
            if lv.low is None or lv.high is None or lv.center is None:
                return "more", f"the {end} end's level is not known yet"
            # For --min: bad below X; the whole interval on one side decides.
            inside = [self(lv.low, None), self(lv.high, None)]
            shown = f"{lv.center:.4g} [{lv.low:.4g}, {lv.high:.4g}] over {plural(lv.n, 'launch', 'launches')}"
            if all(inside) != want_bad and all(x == inside[0] for x in inside):
                verdict = "bad" if inside[0] else "good"
                return "refuse", f"{end} end is {verdict} by the criterion: {shown}, --{self.kind} {self.threshold:g}"
            if inside[0] != inside[1]:
                return "more", f"the {end} end's {shown} straddles --{self.kind} {self.threshold:g}"
        return "ok", ""


def criterion(kind: Literal["min", "max", "ratio"], threshold: float, better: str = "higher") -> Criterion:
    """``min``: bad below X; ``max``: bad above X; ``ratio``: bad when value / GOOD's is below R
    (``better = "higher"``) or above R (``better = "lower"``)."""
    return Criterion(kind, threshold, better)


class _Stopped(Exception):
    """A launch came back interrupted: the search ends there, as the verb's Ctrl-C does."""


RETRIED = frozenset({Outcome.SERVER_FAILED, Outcome.CLIENT_FAILED})  # worth a retry: the server may come up next time


def bisect(
    line: Sequence[Commit],
    measure: Callable[[Commit], Measurement],
    is_bad: IsBad | None = None,
    *,
    skipped: Mapping[str, str] | None = None,
    on_step: Callable[[Step], None] | None = None,
    better: str = "higher",
    slots: int = 1,
    max_launches: int = 10,
    noise: Noise | None = None,
    threshold: float = 0.0,
    alpha: float = 0.001,
    measure_many: Callable[[Sequence[Commit]], Sequence[Measurement]] | None = None,
    budget: int | None = None,
    relevance: Judge | None = None,
) -> BisectReport:
    """Search ``line`` (GOOD first, BAD last) for the first bad commit; ``on_step`` sees each launch as it ends.

    ``measure_many`` (an executor with ``slots``): the launches of one round
    at once; without it, ``measure`` runs them one after the other.  A launch
    whose server did not come up (``server-failed``, ``client-failed``) is
    retried; one that was refused or lacks the metric gives its commit up; an
    interrupted one ends the search.  ``budget``: total launches (default
    ``hunt.default_budget``).  ``relevance``: which commits of the line could matter, asked after GOOD's and BAD's
    first launches and after every round (``pruning``); None searches every commit."""
    if len(line) < 2:
        raise ValueError("bisect needs a line of at least GOOD and BAD")
    good, bad = line[0], line[-1]
    known = skipped or {}
    skips: dict[str, Skip] = {c.sha: Skip(c, known[c.sha]) for c in line[1:-1] if c.sha in known}
    failed: dict[str, Skip] = {}
    steps: list[Step] = []
    pending: list[Step] = []
    launches: dict[str, int] = {}
    order = [0]
    refused: list[str] = []

    def launch(positions: Sequence[int], whys: Sequence[str]) -> list[Value]:
        commits = [line[p] for p in positions]
        got = list(measure_many(commits)) if measure_many is not None else [measure(c) for c in commits]
        out: list[Value] = []
        stopped = False
        for commit, m, why in zip(commits, got, whys, strict=True):
            launches[commit.sha] = launches.get(commit.sha, 0) + 1
            at = datetime.now(UTC).isoformat(timespec="seconds")
            if not m.usable:
                failed[commit.sha] = Skip(commit, labelled(m.outcome.value, m.why))
            step = Step(commit, m, "skip" if not m.usable else "unclear", launches[commit.sha], None, why,
                        order=order[0], at=at)  # fmt: skip
            order[0] += 1
            pending.append(step)
            if m.outcome is Outcome.INTERRUPTED:
                stopped = True
            if m.usable:
                out.append(m.value)
            elif m.outcome in RETRIED:
                out.append(None)
            else:
                out.append(GiveUp(m.why or m.outcome.value))
        if stopped:
            raise _Stopped
        return out

    # GOOD's and BAD's launches are labelled by what the search decided of the two ends, the rule its answer
    # uses too: "good" and "bad" once they are told apart in the hunted direction and any criterion holds
    # (``ends_check`` said ok), the criterion's own word for an end it refused (and the other end alike: no
    # step between them), "unclear" if the search ended undecided.  The steps wait in ``held`` until that is
    # known (``ends_check`` runs right after the round that tells the ends apart; the search's end settles
    # them as they stand), so that no launch is printed "bad" before an answer "--bad ... is not bad by the
    # criterion".  Only the first rounds, GOOD's and BAD's, wait: from then on each step is printed as its
    # round ends.
    held: list[Step] = []
    ends: dict[str, StepVerdict] = {}  # sha of GOOD and BAD -> their label, once decided

    def settle(sides: Sequence[Side], whys: Sequence[str] = ()) -> None:
        """The steps of the round that just ended, valued from the posterior after it; held until the ends
        are decided (``release``)."""
        by_sha = {line[s.position].sha: s for s in sides}
        for index, step in enumerate(pending):
            if len(whys) == len(pending) and whys[index]:
                step = replace(step, why=whys[index])
            side = by_sha.get(step.commit.sha)
            p = side.p_bad if side is not None else None
            verdict: StepVerdict = step.verdict
            if verdict != "skip" and step.commit not in (good, bad) and p is not None and p == p:  # not NaN
                verdict = "bad" if p >= SURE else "good" if p <= 1 - SURE else "unclear"
            outlier = False
            if side is not None and step.order in side.orders:
                outlier = side.outliers[side.orders.index(step.order)] if side.outliers else False
            held.append(replace(step, verdict=verdict, p_bad=p if p == p else None, outlier=outlier))
        pending.clear()

    def release(*, final: bool = False) -> None:
        """Print and keep the held steps once the ends are decided (or the search is over), each end's launch
        labelled by that decision."""
        if not held or not (ends or final):
            return
        for step in held:
            if step.verdict != "skip" and step.commit in (good, bad):
                step = replace(step, verdict=ends.get(step.commit.sha, "unclear"))
            steps.append(step)
            if on_step is not None:
                on_step(step)
        held.clear()

    def on_round(done: Round, sides: Sequence[Side]) -> None:
        settle(sides, done.why)
        release()

    def measure_positions(positions: Sequence[int]) -> list[Value]:
        return launch(positions, [""] * len(positions))

    def ends_check(g: Sequence[float], b: Sequence[float]) -> tuple[str, str]:
        verdict, why = judge_ends(g, b)
        if verdict == "ok":
            ends.update({good.sha: "good", bad.sha: "bad"})
        elif verdict == "refuse":  # the end the criterion refused takes its word; the other keeps its name
            word: StepVerdict = "bad" if why.startswith("good end") else "good"
            ends.update({good.sha: word, bad.sha: word})
        release()
        return verdict, why

    def judge_ends(g: Sequence[float], b: Sequence[float]) -> tuple[str, str]:
        if is_bad is None:
            return "ok", ""
        if isinstance(is_bad, Criterion):
            verdict, why = is_bad.settle(g, b, noise)
        else:  # a plain rule on one value: judged on the geometric means of the launches
            mg, mb = _geomean(g), _geomean(b)
            verdict, why = "ok", ""
            if is_bad(mg, mg):
                verdict, why = "refuse", "good end is bad by the criterion"
            elif not is_bad(mb, mg):
                verdict, why = "refuse", "not bad by the criterion (good)"
        if verdict == "refuse":
            end = f"--good {good.short} is not good" if why.startswith("good end") else f"--bad {bad.short} is"
            refused.append(f"{end} {why.removeprefix('good end is ').removeprefix('bad end is ')}")
        return verdict, why

    judged: list[LineRelevance] = []  # the first answer (its suspects) and the last (the inert commits' rules)
    shas = [c.sha for c in line]

    def relevant() -> tuple[bool, ...] | str:
        assert relevance is not None
        answer = relevance()
        judged[1:] = [answer]  # keeps judged[0], the first
        return answer.positions(shas)

    def pruned(report: HuntReport | None) -> PruningReport | None:
        return None if relevance is None else _pruning(line, report.pruning if report else None, judged)

    index = {c.sha: i for i, c in enumerate(line)}
    try:
        report = hunt(
            len(line),
            measure_positions,
            slots=slots,
            max_launches=max_launches,
            alpha=alpha,
            noise=noise,
            min_effect=threshold,
            expect="lower" if better == "higher" else "higher",
            on_round=on_round,
            skipped=[index[sha] for sha in skips],
            label=lambda p: line[p].short,
            budget=budget,
            ends_check=ends_check,
            relevance=relevant if relevance is not None else None,
        )
    except _Stopped:
        settle([])
        release(final=True)
        stop = "interrupted: a launch was interrupted, the search stops there"
        every = _in_order(line, {**failed, **skips})
        return BisectReport(good, bad, tuple(steps), every, None, None, (), stop, _first(steps, good),
                            pruning=pruned(None))  # fmt: skip
    settle(report.measured)
    release(final=True)
    for pos in report.skipped:
        sha = line[pos].sha
        if sha not in skips and sha in failed:
            tries = report_failures(report, pos)
            skips[sha] = Skip(line[pos], f"{failed[sha].why} ({plural(tries, 'launch', 'launches')} failed)")
    good_value = _first(steps, good)
    error = None
    if report.kind == "no-step":
        if refused:
            error = refused[-1]
        elif not any(s.position == 0 for s in report.measured):
            error = f"--good {good.short} could not be measured: {_why(failed, good, report)}"
        elif not any(s.position == len(line) - 1 for s in report.measured):
            error = (
                f"--bad {bad.short} could not be measured: {failed[bad.sha].why if bad.sha in failed else report.why}"
            )
    if error is not None:
        return BisectReport(good, bad, tuple(steps), _in_order(line, skips), None, None, (), error, good_value,
                            rounds=len(report.rounds), slots=slots, max_launches=max_launches,
                            pruning=pruned(report))  # fmt: skip
    done = _report(line, report, steps, skips, good_value, slots=slots, max_launches=max_launches, alpha=alpha)
    return replace(done, pruning=pruned(report))


def _pruning(line: Sequence[Commit], pruned: Pruned | None, judged: Sequence[LineRelevance]) -> PruningReport:
    """The report's ``pruning``: the hunt's outcome over commits, each inert one with its rule from the last answer
    the search was given, and the suspects as the first answer listed them."""
    if pruned is None:
        why = "the search ended before GOOD and BAD were both launched" if not judged else "the search was interrupted"
        listed = judged[0].listed() if judged else ()
        return PruningReport("off", why, suspects=listed, subjects=_subjects(line, listed))
    rules = {r.commit: r for r in judged[-1].relevances} if judged else {}
    inert = tuple(rules.get(line[p].sha) or Relevance(line[p].sha, ()) for p in pruned.inert)
    parent = None if pruned.parent is None else line[pruned.parent].sha
    suspects = judged[0].listed() if judged else ()
    return PruningReport(pruned.state, pruned.why, inert, suspects, parent, pruned.parent_p_bad,
                         _subjects(line, (*inert, *suspects)))  # fmt: skip


def _subjects(line: Sequence[Commit], listed: Sequence[Relevance]) -> dict[str, str]:
    wanted = {r.commit for r in listed}
    return {c.sha: c.subject for c in line if c.sha in wanted}


def _why(failed: Mapping[str, Skip], end: Commit, report: HuntReport) -> str:
    return failed[end.sha].why if end.sha in failed else report.why


def report_failures(report: HuntReport, pos: int) -> int:
    return sum(1 for f in report.failures if f.position == pos)


def _first(steps: Sequence[Step], commit: Commit) -> float | None:
    return next((s.measurement.value for s in steps if s.commit == commit and s.measurement.usable), None)


def _geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def _with(step: Step, verdict: StepVerdict) -> Step:
    return Step(step.commit, step.measurement, verdict, step.launch, step.p_bad, step.why)


def _in_order(line: Sequence[Commit], skips: Mapping[str, Skip]) -> tuple[Skip, ...]:
    return tuple(skips[c.sha] for c in line if c.sha in skips)


def _report(
    line: Sequence[Commit],
    report: HuntReport,
    steps: Sequence[Step],
    skips: Mapping[str, Skip],
    good_value: float | None,
    *,
    slots: int,
    max_launches: int,
    alpha: float,
) -> BisectReport:
    sides = tuple((line[s.position], s) for s in report.measured)
    of = {s.position: s for s in report.measured}
    common: dict[str, Any] = {
        "why": report.why,
        "probability": report.probability,
        "evidence": report.evidence,
        "adjacent": report.adjacent,
        "sides": sides,
        "rounds": len(report.rounds),
        "slots": slots,
        "max_launches": max_launches,
        "unsure": tuple((line[p], of[p]) for p in report.unclear),
        "likely": None if report.likely is None else line[report.likely],
        "likely_probability": report.likely_mass,
        "other_steps": tuple(_other(line, o) for o in report.others),
        "spread": report.spread,
        "drift": report.drift,
        "budget": report.budget,
        "advice": report.advice,
    }
    skipped = _in_order(line, skips)
    if report.kind == "found":
        assert report.first_bad is not None
        k = report.first_bad
        return BisectReport(
            line[0], line[-1], tuple(steps), skipped, line[k], line[k - 1], (), None, good_value,
            kind="found", range=(line[k], line[k]), **common,
        )  # fmt: skip
    if report.kind == "range":
        assert report.lo is not None and report.hi is not None
        lo, hi = report.lo, report.hi
        window = [line[p] for p in range(lo, hi)]
        p_hi = next((s.p_bad for s in report.measured if s.position == hi), 0.0)
        if window and all(c.sha in skips for c in window) and p_hi >= 1 - alpha:
            # Everything the data leaves open is the commits it could not measure: the first bad commit is hi or
            # one of the skipped ones just before it.
            return BisectReport(
                line[0], line[-1], tuple(steps), skipped, line[hi], line[lo - 1],
                tuple(skips[c.sha] for c in window), None, good_value, kind="found", range=(line[lo], line[hi]),
                **common,
            )  # fmt: skip
        return BisectReport(
            line[0], line[-1], tuple(steps), skipped, None, None, (), None, good_value,
            kind="range", range=(line[lo], line[hi]), **common,
        )  # fmt: skip
    return BisectReport(
        line[0], line[-1], tuple(steps), skipped, None, None, (), report.why, good_value, kind="no-step", **common
    )  # fmt: skip


def _other(line: Sequence[Commit], other: OtherStep) -> OtherCommits:
    lo, hi = line[other.lo], line[other.hi]
    before = line[other.lo - 1]
    hint = f"patchkit bisect --good {before.short} --bad {hi.short}"
    return OtherCommits(lo, hi, other.ratio, other.z, other.same_way, before, hint)
