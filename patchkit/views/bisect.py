"""What ``bisect`` prints: the line that opens a hunt (what, over how many commits, with which noise prior),
the suspects once GOOD and BAD have run, each launch as its round ends, and the report: the launch table, what
the model saw, FIRST BAD, a RANGE or NO RESULT with the evidence for it, and what pruning skipped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from patchkit.bench.records.record import Outcome
from patchkit.views.bench import fmt
from patchkit.views.console import emit, say
from patchkit.views.grid import Grid
from patchkit.wording import labelled, place_label, plural

if TYPE_CHECKING:
    from collections.abc import Sequence

    from patchkit.bench.execution.bisecting import BisectPlan
    from patchkit.bench.execution.pruning import Suspects
    from patchkit.bench.stats.relevance import Relevance
    from patchkit.bench.stats.search import BisectReport, Step
    from patchkit.git import Commit
    from patchkit.views.console import Console

# Why a change makes its commit relevant, in the suspects' words (``relevance.Reason`` values): each heads the
# changes of one path it covers (a function's name, or the detail of a module-level change), or stands alone.
RELEVANT_WORDS = {
    "ran": "ran",
    "file-granularity": "in a module that ran:",
    "imported": "module level, imported:",
    "read": "read",
    "build": "a build input",
    "unknown": "changed:",
}
# Why an inert commit could not change what ran, for the report's count of the skipped ones.
INERT_WORDS = {
    "not-imported": "a module no launch imported nor read",
    "not-read": "a file no launch read",
    "not-run": "a function no launch ran",
    "same-code": "comments or layout only",
}


def bisect_header(plan: BisectPlan) -> str:
    """The line that opens a bisect: what is hunted, over how many commits, with how many launches, slots and
    budget, and the noise prior with where, when and on what it was measured (or why none is used)."""
    again = "patchkit noise" + (" --executor slurm" if plan.executor.remote else "")
    prior = plan.prior
    if prior is None:
        spread = plan.refused_prior or f"no noise prior for {place_label(plan.place)} (run `{again}`)"
    else:
        facts = [f"{prior.df} df", place_label(plan.place)]
        if prior.gpu:
            facts.append(prior.gpu)
        if prior.measured_at:
            facts.append(f"measured {prior.measured_at[:16].replace('T', ' ')} UTC")
        spread = f"noise prior {prior.sigma:.2%} ({', '.join(facts)})"
    good = plan.line[0]
    return (
        f"patchkit bisect  {plan.metric.name} ({plan.profile}), {plan.rule}; "
        f"{len(plan.line) - 1} first-parent commits after {good.short}, {len(plan.unpatchable)} cannot apply "
        f"(skipped); up to {plural(plan.max_launches, 'launch', 'launches')} per commit, "
        f"{plural(plan.launch_budget, 'launch', 'launches')} in all, {plural(plan.slots, 'slot')}; {spread}"
    )


def step_printer(console: Console, metric: str, *, quiet: bool) -> Callable[[Step], None]:
    """Each launch of a bisect as its round ends, with the details of a run that is not ok (each STRAY that
    refused it, say); nothing when stdout is JSON."""

    def show(step: Step) -> None:
        if not quiet:
            say(console, step_line(step, metric))
            for line in step.measurement.details[:30]:
                say(console, f"    {line}")

    return show


def step_line(step: Step, metric: str) -> str:
    m = step.measurement
    p = "" if step.p_bad is None else f"  P(bad) {step.p_bad:.3f}"
    why = f"  [{step.why}]" if step.why else ""
    line = (
        f"  run {m.run} {step.commit.short} launch {step.launch}  {metric}={fmt(m.value)}  {step.verdict}{p}"
        f"{why}  {step.commit.subject}"
    )
    return line + (f" ({labelled(m.outcome.value, m.why)})" if m.outcome is not Outcome.OK else "")


def show_bisect(console: Console, report: BisectReport, metric: str) -> None:
    if report.skipped:
        say(console, "skipped (never benchmarked, or the run failed):", "bold")
        for item in report.skipped:
            say(console, f"  {item.commit.short} {item.commit.subject}: {item.why}")
    table = Grid()
    table.add_column("step", justify="right", whole=True)
    table.add_column("run", justify="right", whole=True)
    table.add_column("commit", whole=True)
    table.add_column("launch", justify="right", whole=True)
    table.add_column(metric, justify="right", whole=True)
    table.add_column("P(bad)", justify="right", whole=True)
    table.add_column("verdict", whole=True)
    table.add_column("why", prose=True)
    table.add_column("subject", prose=True)
    for index, s in enumerate(report.steps, start=1):
        table.add_row(
            str(index),
            str(s.measurement.run),
            s.commit.short,
            str(s.launch),
            fmt(s.measurement.value),
            "-" if s.p_bad is None else f"{s.p_bad:.3f}",
            s.verdict + (" (outlier)" if s.outlier else ""),
            s.why,
            s.commit.subject,
        )
    emit(console, table)
    _search_notes(console, report)
    launches = len(report.steps)
    one_slot = f"; one slot would take {plural(launches, 'round')} for the same launches" if report.slots > 1 else ""
    slots = plural(report.slots, "slot")
    say(console, f"{plural(launches, 'launch', 'launches')} in {plural(report.rounds, 'round')} ({slots}){one_slot}")
    if report.kind == "range" and report.range is not None:
        first, last = report.range
        mass = "" if report.probability is None else f" ({report.probability:.4f} of the posterior)"
        say(
            console,
            f"RANGE: the first bad commit is one of {first.short}..{last.short}{mass}, not narrowed: {report.why}",
            "bold yellow",
        )
        if report.likely is not None and report.likely_probability is not None:
            say(
                console,
                f"  most likely: {report.likely.short} at {report.likely_probability:.4f} {report.likely.subject}",
            )
        for commit, side in report.unsure:
            say(
                console,
                f"  unclear: {commit.short} P(bad) {side.p_bad:.4f} "
                f"after {plural(len(side.launches), 'launch', 'launches')} {commit.subject}",
            )
        if report.advice:
            say(console, f"  to narrow it: {report.advice}")
        _other_steps(console, report)
        return
    if report.error or report.first_bad is None:
        say(console, f"NO RESULT: {report.error}", "bold red")
        return
    say(console, f"FIRST BAD: {report.first_bad.short} {report.first_bad.subject}", "bold")
    if report.probability is not None:
        say(console, f"  posterior {report.probability:.4f}; {report.why}")
    counts = {c.sha: len(s.launches) for c, s in report.sides}
    if report.adjacent is not None and report.last_good is not None:
        v = report.adjacent
        interval = "" if v.low is None else f" [{v.low:.3f}, {v.high:.3f}] at {v.confidence:.0%}"
        say(
            console,
            f"  {report.last_good.short} ({plural(counts.get(report.last_good.sha, 0), 'launch', 'launches')}) -> "
            f"{report.first_bad.short} ({plural(counts.get(report.first_bad.sha, 0), 'launch', 'launches')}): "
            f"ratio {fmt(v.ratio, 3)}{interval}",
        )
    if report.evidence is not None:
        v = report.evidence
        interval = "" if v.low is None else f" [{v.low:.3f}, {v.high:.3f}] at {v.confidence:.1%}"
        say(
            console,
            f"  every launch from it on ({v.n_b}) against those before it ({v.n_a}): "
            f"ratio {fmt(v.ratio, 3)}{interval}, {v.call.value}",
        )
    if report.maybe:
        names = ", ".join(f"{m.commit.short} {m.commit.subject}" for m in report.maybe)
        say(console, f"  or one of the skipped commits just before it: {names}")
    _other_steps(console, report)


def _search_notes(console: Console, report: BisectReport) -> None:
    """What the search's model saw, under the launch table: the spread it used and where it came from, the
    launches it treats as outliers, the drift, and the launches that failed."""
    if report.spread is not None:
        say(console, f"launch spread {report.spread.sigma:.2%}: {report.spread.source}", "dim")
    if report.outliers:
        listed = ", ".join(f"{s.commit.short} launch {s.launch} ({fmt(s.measurement.value)})" for s in report.outliers)
        say(console, f"outliers (far from both levels; they move no boundary): {listed}", "yellow")
    if report.drift is not None and report.drift.flagged:
        say(console, f"drift: {report.drift.why}", "bold yellow")
    failed = [s for s in report.steps if not s.measurement.usable]
    if failed:
        by_commit = Counter(s.commit.short for s in failed)
        listed = ", ".join(f"{c} x{n}" if n > 1 else c for c, n in by_commit.items())
        say(console, f"failed launches (retried up to 3 times per commit): {listed}", "yellow")


def _other_steps(console: Console, report: BisectReport) -> None:
    for other in report.other_steps:
        kind = "a second regression" if other.same_way else "a step the other way"
        change = other.ratio - 1
        where = f"{other.lo.short}..{other.hi.short}" if other.lo != other.hi else other.lo.short
        say(
            console,
            f"ALSO: {kind} ({change:+.1%}, z = {abs(other.z):.1f}) lies in {where}: run `{other.hint}`",
            "bold yellow",
        )


def suspect_changes(relevance: Relevance) -> str:
    """A suspect's relevant changes, one line per path: ``path: ran A.f, g; module level, imported: class A body``
    (a read or a build input names no part: the whole file counts)."""
    by_path: dict[str, dict[str, list[str]]] = {}
    for judgement in relevance.why:
        change = judgement.change
        parts = by_path.setdefault(change.path, {}).setdefault(judgement.reason.value, [])
        part = change.qualname if change.kind.value == "body" else change.detail
        if part and part not in parts:
            parts.append(part)
    lines = []
    for path, reasons in by_path.items():
        said = []
        for reason, parts in reasons.items():
            words = RELEVANT_WORDS.get(reason, f"{reason}:")
            if words.endswith(":") or reason == "ran":
                said.append(f"{words} {', '.join(parts)}" if parts else words.rstrip(":"))
            else:
                said.append(words)
        lines.append(f"{path}: {'; '.join(said)}")
    return "\n".join(lines)


def show_suspects(console: Console, suspects: Suspects, line: Sequence[Commit]) -> None:
    """The suspects before the search: the commits after GOOD that changed code GOOD's and BAD's launches ran,
    each with the changes that make it relevant; or why they are not known."""
    if suspects.off is not None:
        say(console, f"suspects: not known: {suspects.off}", "yellow")
        return
    files = " (module files only: this Python records no functions)" if suspects.granularity == "file" else ""
    say(
        console,
        f"suspects: {len(suspects.commits)} of {plural(suspects.line, 'commit')} after GOOD changed what GOOD's and "
        f"BAD's launches ran{files}",
        "bold",
    )
    if suspects.blind is not None:
        say(console, f"  a lower bound: {suspects.blind}", "yellow")
    if not suspects.commits:
        return
    commits = {c.sha: c for c in line}
    table = Grid()
    table.add_column("commit", whole=True)
    table.add_column("what it changes that ran")
    table.add_column("subject", prose=True)
    for relevance in suspects.commits:
        commit = commits.get(relevance.commit)
        table.add_row(
            commit.short if commit else relevance.commit[:10],
            suspect_changes(relevance),
            commit.subject if commit else "",
        )
    emit(console, table)


def show_pruning(console: Console, report: BisectReport, asked: bool) -> None:
    """What pruning did, after the answer: how many commits the search skipped as inert and why, or why pruning
    was off.  The skipped commits are ``pruning.inert`` (judged inert and never launched: GOOD, BAD and a parent
    the check measured are not among them), the very list ``--json`` gives with each one's rule."""
    pruning = report.pruning
    if pruning is None:
        why = "the search did not use it" if asked else "--every-commit"
        say(console, f"pruning off ({why}): every commit of the line was a candidate", "dim")
        return
    if pruning.state == "off":
        say(console, f"pruning off: {pruning.why}", "yellow")
        return
    if pruning.state == "abandoned":
        say(console, f"pruning abandoned: {pruning.why}", "bold yellow")
        return
    if not pruning.inert:
        say(console, f"pruning: {pruning.why}", "dim")
        return
    reasons: Counter[str] = Counter()
    for relevance in pruning.inert:
        reasons.update({j.reason.value for j in relevance.judgements})
    why = ", ".join(f"{INERT_WORDS.get(reason, reason)} ({count})" for reason, count in reasons.most_common())
    say(
        console,
        f"pruning: skipped {plural(len(pruning.inert), 'commit')} as inert, whose changes touch only what no launch "
        f"ran: {why}; `--json` lists each with its rule, `--every-commit` searches every commit",
    )
