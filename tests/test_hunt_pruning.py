"""The hunt told which commits are relevant (``patchkit.bench.stats.hunt.mask``): values and arrays, no git.

Launches follow a rule with a small deterministic scatter, so that nothing here depends on a random draw except
the last test, which compares two runs of one seeded history bit for bit.
"""

from __future__ import annotations

import io
import math
import random
import re
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from patchkit.bench.execution.pruning import Suspects
from patchkit.bench.stats.hunt import HuntReport, hunt
from patchkit.bench.stats.hunt.mask import Mask
from patchkit.bench.stats.hunt.model import Model
from patchkit.bench.stats.hunt.posterior import Posterior
from patchkit.bench.stats.hunt.state import Launches
from patchkit.bench.stats.plan import plan_pruning
from patchkit.bench.stats.pruning import LineRelevance
from patchkit.bench.stats.relevance import Judgement, Reason, Relevance
from patchkit.bench.stats.search import Measurement, bisect
from patchkit.bench.stats.verdict import Noise, noise_of
from patchkit.commit import Commit
from patchkit.footprint.changes import Change, ChangeKind
from patchkit.views.bisect import show_pruning
from patchkit.views.console import make_console

QUIET = Noise(sigma=0.003, df=9)


def jitter(p: int, n: int) -> float:
    """About 0.3 % of scatter, different per commit and launch."""
    return 1 + 0.003 * math.sin(7.3 * p + 3.1 * n)


class Line:
    """A line of ``size`` commits with a 30 % drop from ``first_bad`` on; records every launch."""

    def __init__(self, size: int, first_bad: int) -> None:
        self.size, self.first_bad = size, first_bad
        self.asked: list[int] = []
        self.count: dict[int, int] = {}

    def __call__(self, positions: Sequence[int]) -> list[float | None]:
        out: list[float | None] = []
        for p in positions:
            self.asked.append(p)
            self.count[p] = self.count.get(p, 0) + 1
            out.append((70.0 if p >= self.first_bad else 100.0) * jitter(p, self.count[p]))
        return out


def flags(size: int, relevant: Sequence[int]) -> tuple[bool, ...]:
    return tuple(p in set(relevant) for p in range(size))


def run(line: Line, mask: Sequence[bool] | None, **kw: object) -> HuntReport:
    told = (lambda: mask) if mask is not None else None
    return hunt(line.size, line, noise=QUIET, expect="lower", relevance=told, **kw)  # type: ignore[arg-type]


RELEVANT = (5, 12, 13, 20, 27, 33, 41, 50, 58)  # of a line of 64


def test_the_mask_gives_inert_commits_no_mass_and_each_its_relevant_predecessors_side() -> None:
    """Commits 3..9 unmeasured, 5 the only relevant one among them: the gap's mass is all 5's, a quantile never
    names an inert commit, and an inert commit's P(bad) is its relevant predecessor's."""
    rank = tuple(np.cumsum([p in (2, 5, 11) for p in range(12)]).tolist())
    post = Posterior(marks=(0, 2, 10, 11), masses=(0.1, 0.6, 0.3), rank=rank)
    assert [post.single(p) for p in range(3, 11)] == pytest.approx([0, 0, 0.6, 0, 0, 0, 0, 0])
    assert post.cdf(7) == post.cdf(5) and post.cdf(4) == post.cdf(2) and post.cdf(10) == post.cdf(5)
    assert post.best_single() == (5, pytest.approx(0.6))  # the gap holds one relevant commit: it alone
    assert post.quantile(0.5) == 5 and post.credible(0.2) == (5, 11)
    assert not post.holds(4) and post.holds(5)


def test_the_models_posterior_lies_on_relevant_commits_only() -> None:
    """The same launches fitted with and without a mask: without it, the step lies anywhere in the gap 3..9;
    with it, on the gap's one relevant commit."""
    size = 12
    launched = [(p, math.log((70.0 if p >= 5 else 100.0) * jitter(p, i))) for p in (0, 2, 10, 11) for i in (1, 2)]
    pos = np.array([p for p, _ in launched])
    x = np.array([v for _, v in launched])
    t = np.arange(len(x), dtype=float)
    plain = Model.fit(pos, x, t, size, -1.0, QUIET, 0.0)
    mask = Mask.of(flags(size, (2, 5, 11)))
    assert mask is not None
    pruned = Model.fit(pos, x, t, size, -1.0, QUIET, 0.0, rank=mask.rank)
    assert plain.posterior.single(5) < 0.2  # eight commits share the gap without a mask
    assert pruned.posterior.best_single() == (5, pytest.approx(pruned.posterior.single(5)))
    assert pruned.posterior.single(5) > 0.999
    assert all(pruned.posterior.single(p) == 0 for p in range(1, size) if p not in (2, 5, 11))


def test_the_hunt_names_a_relevant_commit_after_measuring_its_direct_parent() -> None:
    """The step on relevant 33, its parent 32 inert: the probes fall on relevant commits, 32 is measured before
    33 stands (and counts for GOOD's side of the boundary: 27, 33's relevant predecessor, gets no second launch
    for it), and fewer launches are spent than without the mask."""
    mask = flags(64, RELEVANT)
    line = Line(64, 33)
    report = run(line, mask)
    assert report.kind == "found" and report.first_bad == 33, report.why
    assert line.count.get(32, 0) >= 1 and line.count.get(33, 0) >= 2
    assert line.count.get(27, 0) <= 1
    inert_asked = {p for p in line.asked if 0 < p < 63 and not mask[p]}
    assert inert_asked <= {32}, inert_asked  # no inert commit is probed, but the parent
    parent_round = next(i for i, r in enumerate(report.rounds) if 32 in r.asked)
    assert parent_round < len(report.rounds)
    assert report.pruning is not None and report.pruning.state == "on"
    assert report.pruning.parent == 32 and report.pruning.parent_p_bad is not None
    assert report.pruning.parent_p_bad <= 0.05
    skipped = {p for p in range(1, 64) if not mask[p] and p not in line.count}  # 32 and BAD were launched
    assert set(report.pruning.inert) == skipped and 32 not in skipped and 63 not in skipped
    plain = run(Line(64, 33), None)
    assert plain.first_bad == 33 and report.starts < plain.starts


def test_a_parent_that_reads_bad_abandons_pruning_and_the_hunt_still_finds_the_step() -> None:
    """The step is on 30, judged inert (a wrong judgement): the masked search closes on 33, whose parent 32 reads
    BAD; pruning is abandoned, says why, and the full line's search names 30."""
    mask = flags(64, RELEVANT)
    assert not mask[30]
    line = Line(64, 30)
    report = run(line, mask)
    assert report.kind == "found" and report.first_bad == 30, report.why
    assert report.pruning is not None and report.pruning.state == "abandoned"
    assert "read BAD" in report.pruning.why and "full line" in report.pruning.why
    assert line.count.get(32, 0) >= 2  # one launch of the parent never decides
    assert report.pruning.inert  # what pruning had claimed, for the report


def test_a_step_on_an_inert_bad_is_not_forced_onto_the_last_relevant_commit() -> None:
    """BAD itself carries the step but was judged inert: under the mask BAD shares the last relevant commit's
    level, so the model has nowhere else to put the step.  That commit's own launches read GOOD, so the check
    abandons pruning, and BAD is named."""
    line = Line(64, 63)
    report = run(line, flags(64, RELEVANT))
    assert report.kind == "found" and report.first_bad == 63, report.why
    assert report.pruning is not None and report.pruning.state == "abandoned"


def test_a_commit_that_turns_relevant_mid_hunt_is_searched() -> None:
    """Commits 21..26 change a function that runs only between 20 and 27 (neither GOOD nor BAD runs it): they are
    inert until a launch in 20..26 has run it.  The step is on 24: once a launch lands there (20, relevant, is a
    probe), the mask changes, 24 is searched and named, with pruning still on."""
    late = range(21, 27)
    line = Line(64, 24)
    base = set(RELEVANT)

    def relevance() -> tuple[bool, ...]:
        seen = any(20 <= p <= 26 for p in line.asked)
        return flags(64, base | set(late) if seen else base)

    first = relevance()
    report = hunt(64, line, noise=QUIET, expect="lower", relevance=relevance)
    assert not first[24]  # inert when the search began
    assert report.kind == "found" and report.first_bad == 24, report.why
    assert report.pruning is not None and report.pruning.state == "on"  # found by the mask's change, not abandoned
    assert line.count.get(24, 0) >= 2 and line.count.get(23, 0) >= 1


def test_a_commit_once_relevant_stays_relevant() -> None:
    """An answer that takes a commit back (the coverage only grows, so it cannot be right) is not followed."""
    answers = iter([flags(64, (*RELEVANT, 30))])

    def relevance() -> tuple[bool, ...]:
        return next(answers, flags(64, RELEVANT))

    line = Line(64, 30)
    report = hunt(64, line, noise=QUIET, expect="lower", relevance=relevance)
    assert report.kind == "found" and report.first_bad == 30, report.why
    assert report.pruning is not None and report.pruning.state == "on" and 30 not in report.pruning.inert


def test_pruning_off_searches_every_commit_and_says_why() -> None:
    line = Line(64, 30)
    report = hunt(64, line, noise=QUIET, expect="lower", relevance=lambda: "a worker that is not Python")
    assert report.kind == "found" and report.first_bad == 30
    assert report.pruning is not None and report.pruning.state == "off"
    assert report.pruning.why == "a worker that is not Python" and report.pruning.inert == ()
    same = Line(64, 30)
    assert hunt(64, same, noise=QUIET, expect="lower").starts == report.starts and same.asked == line.asked


def test_pruning_that_turns_off_mid_hunt_searches_the_full_line_from_then_on() -> None:
    calls = []

    def relevance() -> tuple[bool, ...] | str:
        calls.append(1)
        return flags(64, RELEVANT) if len(calls) < 3 else "a launch had an unprobed Python process"

    report = hunt(64, Line(64, 30), noise=QUIET, expect="lower", relevance=relevance)
    assert report.kind == "found" and report.first_bad == 30, report.why
    assert report.pruning is not None and report.pruning.state == "off"
    assert "unprobed" in report.pruning.why and "pruning was on for 2 of" in report.pruning.why


def test_a_range_under_the_mask_reaches_down_to_the_inert_commits_before_it() -> None:
    """A budget too small to name the commit: the range's first commit is relevant, and the inert commits just
    before it are in the range too (no parent check vouched for them)."""
    report = run(Line(64, 33), flags(64, RELEVANT), budget=6)
    assert report.kind == "range", report.why
    assert report.lo is not None and report.hi is not None and report.lo <= 33 <= report.hi
    mask = Mask.of(flags(64, RELEVANT))
    assert mask is not None
    first_relevant = next(p for p in range(report.lo, 64) if mask.relevant[p])
    assert report.lo == mask.prev(first_relevant) + 1


def test_every_commit_relevant_is_the_hunt_without_a_judge_launch_for_launch() -> None:
    """The rule costs nothing when nothing is inert: the same seeded history, with a judge that calls every
    commit relevant and with none, gives the same launches in the same order and the same answer, at one slot
    and at four."""
    for slots in (1, 4):
        for seed in range(6):
            runs = []
            for judge in (None, lambda: (True,) * 64):
                rng = random.Random(seed)
                truth = rng.randrange(1, 64)
                prior = noise_of([100 * math.exp(rng.gauss(0, 0.02)) for _ in range(10)])

                def measure(ps: Sequence[int], rng: random.Random = rng, truth: int = truth) -> list[float | None]:
                    return [(0.95 if p >= truth else 1.0) * 100 * math.exp(rng.gauss(0, 0.02)) for p in ps]

                r = hunt(64, measure, noise=prior, expect="lower", slots=slots, relevance=judge)
                runs.append((r.kind, r.first_bad, r.lo, r.hi, r.probability, [(x.asked, x.values) for x in r.rounds]))
            assert runs[0] == runs[1], (slots, seed)


def commits(size: int) -> list[Commit]:
    return [Commit(f"{i:040x}", (f"{i - 1:040x}",) if i else (), "t <t@x>", "2026-01-01", f"c{i}") for i in range(size)]


def verdicts(line: Sequence[Commit], relevant: Sequence[int]) -> LineRelevance:
    out = []
    for i, c in enumerate(line):
        change = Change(f"pkg/m{i}.py", ChangeKind.BODY, f"f{i}", "body")
        out.append(Relevance(c.sha, (Judgement(change, Reason.RAN if i in relevant else Reason.NOT_RUN),)))
    return LineRelevance(tuple(out))


def test_bisect_reports_what_pruning_did_and_its_json_is_plain() -> None:
    line = commits(64)
    launched: dict[int, int] = {}

    def measure(c: Commit) -> Measurement:
        p = int(c.sha, 16)
        launched[p] = launched.get(p, 0) + 1
        return Measurement((70.0 if p >= 33 else 100.0) * jitter(p, launched[p]))

    judged = verdicts(line, RELEVANT)
    report = bisect(line, measure, noise=QUIET, relevance=lambda: judged)
    assert report.kind == "found" and report.first_bad == line[33]
    pruning = report.pruning
    assert pruning is not None and pruning.state == "on" and pruning.parent == line[32].sha
    skipped = [line[p].sha for p in range(1, 64) if p not in RELEVANT and p not in launched]
    assert [r.commit for r in pruning.inert] == skipped and line[32].sha not in skipped
    assert [r.commit for r in pruning.suspects] == [line[p].sha for p in RELEVANT]
    data = report.to_json()["pruning"]
    assert isinstance(data, dict)
    assert set(data) == {"state", "why", "inert_count", "inert", "suspects", "parent"}
    assert data["state"] == "on" and data["inert_count"] == 64 - 1 - len(RELEVANT) - 2  # the parent, BAD: launched
    assert data["parent"] == {"commit": line[32].sha, "p_bad": pruning.parent_p_bad}
    first = data["inert"][0]
    assert first == {"commit": line[1].sha, "subject": "c1",
                     "changes": [{"path": "pkg/m1.py", "kind": "body", "qualname": "f1", "detail": "body",
                                  "reason": "not-run"}]}  # fmt: skip
    assert data["suspects"][0]["changes"][0]["reason"] == "ran"
    assert bisect(line, measure, noise=QUIET).to_json()["pruning"] is None  # no judge: null


def test_bisect_with_every_commit_relevant_launches_as_without_a_judge() -> None:
    line = commits(64)
    orders: list[list[str]] = []
    for judge in (None, verdicts(line, range(64))):
        seen: list[str] = []
        count: dict[int, int] = {}

        def measure(c: Commit, seen: list[str] = seen, count: dict[int, int] = count) -> Measurement:
            p = int(c.sha, 16)
            count[p] = count.get(p, 0) + 1
            seen.append(c.sha)
            return Measurement((96.0 if p >= 41 else 100.0) * (1 + 0.01 * math.sin(5.1 * p + 2.3 * count[p])))

        told = (lambda judge=judge: judge) if judge is not None else None
        report = bisect(line, measure, noise=Noise(sigma=0.01, df=9), relevance=told)
        orders.append(seen)
        assert report.first_bad == line[41]
    assert orders[0] == orders[1]


def test_the_plan_gives_the_launches_with_and_without_pruning() -> None:
    plan = plan_pruning(64, 16, 0.02, 0.35, seeds=12)
    assert plan.relevant == 16 and plan.pruned.seeds == plan.every_commit.seeds == 12
    assert plan.pruned.launches_mean < plan.every_commit.launches_mean
    assert plan.pruned.wrong == 0 and plan.every_commit.wrong == 0
    data = plan.as_json()
    assert data["pruned"]["expected"] == plan.pruned.launches_mean  # type: ignore[index]
    assert "with pruning" in plan.line() and "--every-commit" in plan.line()
    every = plan_pruning(64, [True] * 64, 0.02, 0.35, seeds=6)
    assert every.pruned.launches_mean == every.every_commit.launches_mean  # nothing inert: nothing saved
    with pytest.raises(ValueError):
        plan_pruning(64, 0, 0.02, 0.35)


def pruning_text(report: object) -> str:
    out = io.StringIO()
    show_pruning(make_console(out), report, True)  # type: ignore[arg-type]
    return out.getvalue()


def line_measure(first_bad: int, launched: dict[int, int]) -> Callable[[Commit], Measurement]:
    def measure(c: Commit) -> Measurement:
        p = int(c.sha, 16)
        launched[p] = launched.get(p, 0) + 1
        return Measurement((70.0 if p >= first_bad else 100.0) * jitter(p, launched[p]))

    return measure


def test_the_skipped_commits_are_the_inert_ones_never_launched_in_the_text_and_the_json_alike() -> None:
    """BAD (63) and the named commit's parent (32) are judged inert and launched: neither was skipped, so neither
    is in ``inert``, ``inert_count`` or the text's count, which are one number."""
    line = commits(64)
    launched: dict[int, int] = {}
    judged = verdicts(line, RELEVANT)
    report = bisect(line, line_measure(33, launched), noise=QUIET, relevance=lambda: judged)
    assert report.kind == "found" and report.first_bad == line[33]
    assert 32 in launched and 63 in launched
    never = [line[p].sha for p in range(1, 64) if p not in RELEVANT and p not in launched]
    pruning = report.pruning
    assert pruning is not None and [r.commit for r in pruning.inert] == never
    data = report.to_json()["pruning"]
    assert isinstance(data, dict) and data["inert_count"] == len(never) == len(data["inert"])
    said = re.search(r"pruning: skipped (\d+) commits as inert", pruning_text(report))
    assert said is not None and int(said.group(1)) == len(never)
    assert "launched although judged inert: " + line[32].short in pruning.why


def test_a_hunt_that_never_searched_between_good_and_bad_skipped_nothing() -> None:
    """GOOD and BAD the same (no step): the search never ran, so no commit was skipped, whatever the judge said;
    the text and the JSON say so alike."""
    line = commits(16)
    judged = verdicts(line, (5, 9))
    report = bisect(line, lambda c: Measurement(100.0 * jitter(int(c.sha, 16), 1)), noise=QUIET, threshold=0.05,
                    relevance=lambda: judged)  # fmt: skip
    assert report.kind == "no-step" and report.first_bad is None
    pruning = report.pruning
    assert pruning is not None and pruning.inert == () and pruning.state == "off", pruning
    data = report.to_json()["pruning"]
    assert isinstance(data, dict) and data["inert_count"] == 0 and data["inert"] == []
    text = pruning_text(report)
    assert "skipped" not in text.replace("nothing was skipped", "") and "nothing was skipped" in text, text
    assert [r.commit for r in pruning.suspects] == [line[5].sha, line[9].sha]  # the suspects stand


def test_every_json_entry_of_a_commit_has_one_shape_with_its_subject() -> None:
    """``pruning.inert``, ``pruning.suspects`` and ``suspects.commits`` list commits by one function: the same keys,
    the subject included."""
    line = commits(64)
    judged = verdicts(line, RELEVANT)
    report = bisect(line, line_measure(33, {}), noise=QUIET, relevance=lambda: judged)
    data = report.to_json()["pruning"]
    assert isinstance(data, dict)
    for entry in [*data["inert"], *data["suspects"]]:
        assert set(entry) == {"commit", "subject", "changes"}
        assert entry["subject"] == f"c{int(entry['commit'], 16)}"
    listed = Suspects(judged.listed()[:1], 63, "function").to_json({c.sha: c.subject for c in line})
    (entry,) = listed["commits"]  # type: ignore[misc]
    assert set(entry) == {"commit", "subject", "changes"} and entry == data["suspects"][0]


def test_the_parent_check_reads_the_mask_with_the_parent_and_the_commit_after_it_made_relevant() -> None:
    """The check's posterior is the mask with ``k - 1`` and ``k + 1`` made relevant (``mask.py`` says why), not the
    posterior without a mask: the latter would weigh the unmeasured inert commits between 33's relevant
    predecessor 27 and its parent 32 on "first bad <= 32" by their number, though a step on any of them shows in
    32's own level."""
    mask = flags(64, RELEVANT)
    report = run(Line(64, 33), mask)
    assert report.kind == "found" and report.first_bad == 33 and report.pruning is not None
    state = Launches(64, QUIET, 10)
    for done in report.rounds:
        for pos, value in zip(done.asked, done.values, strict=True):
            state.add(pos, value)
    state.sign = -1.0
    fitted = Mask.of(mask)
    assert fitted is not None and not any(state.counts.get(p) for p in range(28, 32))
    checked = state.model(mask=fitted.with_relevant((32, 34))).posterior.cdf(32)
    assert report.pruning.parent == 32 and report.pruning.parent_p_bad == pytest.approx(checked)
    unmasked = state.model(mask=None).posterior.cdf(32)
    assert unmasked == pytest.approx(5 * checked, rel=0.2)  # 28..32: five places for the step instead of one
