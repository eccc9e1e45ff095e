"""What ``bench``, ``runs``, ``compare`` and ``bisect`` print: one module, so that the four agree.

Every table is a ``patchkit.render.Grid``: on a terminal the text columns
(subjects, profiles, metric names, reasons) wrap and the short codes (run
numbers, commit ids, numbers, outcomes) stay whole; off a terminal nothing is
cut or wrapped.  Every subject, path and message is printed as text, never as
console markup (``[fix typo]: ...`` keeps its ``[fix typo]``).

Progress: on a terminal a live status line; off one (nohup, a pipe, CI), one
timestamped line per phase on stderr as it happens, the health wait at most
once every ``HEALTH_EVERY`` seconds, so that stdout stays clean for ``--json``.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from patchkit.bench.records.hygiene import NO_GPU_FACTS
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.records.rows import NO_SUMMARY, PendingRow, ResultRow
from patchkit.render import Cell, Grid, Piece, cell_pieces, emit
from patchkit.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

    from patchkit.bench.execution.bisecting import BisectPlan
    from patchkit.bench.records.compare import Comparison
    from patchkit.bench.stats.search import BisectReport, Step
    from patchkit.git import Commit

NOT_PROVEN = "not proven"  # a run's proof state (patchkit.proof.runproof.NOT_PROVEN)
OUTCOME_STYLE = {
    Outcome.OK: "bold green",
    Outcome.REFUSED: "bold red",
    Outcome.SERVER_FAILED: "bold red",
    Outcome.CLIENT_FAILED: "bold red",
    Outcome.METRIC_MISSING: "bold yellow",
    Outcome.INTERRUPTED: "bold yellow",
}
HEALTH_EVERY = 30.0  # seconds between two "waiting for health" lines off a terminal
TEXT_MIN = 6  # the narrowest a wrapping text column may get before a table is shown as blocks


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def outcome_piece(outcome: Outcome | str) -> Piece:
    value = Outcome(outcome)
    return (value.value, OUTCOME_STYLE[value])


def outcome_cell(outcome: Outcome | str, proof: str | None) -> Cell:
    """The outcome, and "not proven" after it where the probe could not vouch for the run (probe off or failed)."""
    if proof != NOT_PROVEN:
        return outcome_piece(outcome)
    return [outcome_piece(outcome), (", not proven", "yellow")]


def say(console: Console, text: str, style: str = "") -> None:
    """One line of text (never markup)."""
    if style:
        console.print(text, style=style, markup=False, highlight=False)
    else:
        console.print(text, markup=False, highlight=False)


def show_gpu_hygiene(console: Console, gpus: Mapping[str, Any]) -> None:
    """``hygiene.report``'s verdict, as bench, compare and bisect print it: "no GPU facts" once when no launch had
    nvidia-smi's answers, then one warning per dirty launch and per difference between the sides' GPUs."""
    if not gpus["facts"]:
        say(console, NO_GPU_FACTS, "dim")
    for line in [*gpus["problems"], *gpus["differences"]]:
        say(console, f"warning: {line}", "bold yellow")


def show_table(console: Console, table: Grid) -> None:
    """A table that never cuts a short code: as a table where its whole columns fit the terminal
    (text columns wrap), else one block of ``column: value`` lines per row; off a terminal, as is."""
    if not console.is_terminal or _least_width(table) <= console.width:
        emit(console, table)
        return
    from rich.text import Text

    for row in table.rows:
        for column, cell in zip(table.columns, row, strict=True):
            pieces = cell_pieces(cell)
            if "".join(t for t, _ in pieces).strip():
                console.print(Text.assemble((f"{column.name}: ", "bold"), *pieces), overflow="fold")
        console.print()


def _least_width(table: Grid) -> int:
    """The width under which rich would have to cut a whole column: whole columns at their widest,
    text columns at TEXT_MIN, two spaces between columns."""
    from rich.cells import cell_len

    total = 2 * (len(table.columns) - 1)
    for index, column in enumerate(table.columns):
        if not column.whole:
            total += TEXT_MIN
            continue
        texts = [column.name, *("".join(t for t, _ in cell_pieces(row[index])) for row in table.rows)]
        total += max(cell_len(line) for text in texts for line in text.split("\n"))
    return total


# -- bench ------------------------------------------------------------------------------


def run_line(record: RunRecord) -> str:
    """One line as each run ends; it carries the subject, which the table leaves out to keep its numbers wide."""
    commit = record.commit
    launch = f" launch {record.launch}" if record.launch > 1 else ""
    return f"run {record.run_id}: {commit.short} {record.label}{launch}: {record.outcome.value}  {commit.subject}"


def explain_lines(record: RunRecord) -> list[str]:
    """Why a run is not ok: its reason, details, and where each missing value should have been; for an ok run
    the probe could not vouch for (probe off, or it failed in a process), why it is not proven."""
    if record.outcome is Outcome.OK:
        if record.proof_state != NOT_PROVEN:
            return []
        proof = record.proof or {}
        out = [f"{record.commit.short} {record.label} not proven: {proof.get('reason')}"]
        return out + [f"  {line}" for line in list(proof.get("reasons") or [])[:30]]
    out = [f"{record.commit.short} {record.label} {record.outcome.value}: {record.reason}"]
    out.extend(f"  {line}" for line in record.details[:30])
    for item in record.missing[:10]:
        out.append(f"  missing {item['metric']} in run {item['run']}: see {item['log']}")
    return out


def results_table(rows: Sequence[ResultRow]) -> Grid:
    table = Grid()
    launches = any(row.get("launch", 1) > 1 for row in rows)
    table.add_column("run", justify="right", whole=True)
    if launches:
        table.add_column("launch", justify="right", whole=True)
    table.add_column("commit", whole=True)
    table.add_column("profile")
    table.add_column("metric")
    table.add_column("median", justify="right", whole=True)
    table.add_column("min", justify="right", whole=True)
    table.add_column("max", justify="right", whole=True)
    table.add_column("n", justify="right", whole=True)
    table.add_column("ratio", justify="right", whole=True)
    table.add_column("outcome", whole=True)
    for row in rows:
        n = f"{row['n']}" + (f" ({row['missing']} missing)" if row["missing"] else "")
        without = row.get("without")
        table.add_row(
            str(row["run"]),
            *([str(row.get("launch", 1))] if launches else []),
            row["commit"][:10],
            row["profile"] + (f" without {without['patch']}" if without else ""),
            row["metric"] or "-",
            fmt(row["median"]),
            fmt(row["min"]),
            fmt(row["max"]),
            n,
            fmt(row["ratio"], 3),
            outcome_cell(row["outcome"], row.get("proof")),
        )
    return table


# -- runs -------------------------------------------------------------------------------


def runs_table(records: Sequence[RunRecord]) -> Grid:
    """One row per run and metric (a run without samples: one row with its reason)."""
    table = Grid()
    table.add_column("run", justify="right", whole=True)
    table.add_column("started")
    table.add_column("commit", whole=True)
    table.add_column("subject")
    table.add_column("profile")
    table.add_column("outcome", whole=True)
    scheduled = any(r.executor for r in records)  # a Slurm job id column only where some run has one
    if scheduled:
        table.add_column("job", whole=True)
    table.add_column("metric")
    table.add_column("median", justify="right", whole=True)
    for r in records:
        started = r.started_at[:19].replace("T", " ")
        stats = r.stats()
        head: list[Cell] = [str(r.run_id), started, r.commit.short, r.commit.subject, r.label]
        head.append(outcome_cell(r.outcome, r.proof_state))
        if scheduled:
            head.append(str((r.executor or {}).get("job_id") or "-"))
        if not stats or not r.has_data():
            table.add_row(*head, r.reason or "no samples", "-")
            continue
        for index, (metric, s) in enumerate(stats.items()):
            cells = head if index == 0 else [""] * len(head)
            table.add_row(*cells, metric, fmt(s["median"]))
    return table


def pending_table(rows: Sequence[PendingRow]) -> Grid:
    """``runs --pending``: one row per submitted launch not collected yet, with its Slurm state now."""
    table = Grid()
    table.add_column("job", whole=True)
    table.add_column("state", whole=True)
    table.add_column("node")
    table.add_column("commit", whole=True)
    table.add_column("subject")
    table.add_column("profile")
    table.add_column("submitted", whole=True)
    for row in rows:
        table.add_row(
            row["job_id"],
            row["slurm_state"],
            row["node"] or "-",
            (row["commit"] or "")[:10],
            row["subject"] or "",
            row["profile"] or "",
            row["submitted_at"][:19].replace("T", " "),
        )
    return table


# -- Slurm (--executor slurm) ------------------------------------------------------------

SUBMITTER_INTERRUPTED = "interrupted: the submitted jobs keep running; run the same command again to collect them"


class _Note:
    """What the executor does (resuming a batch; on Slurm: submitted, collecting, a job's state changes): as
    progress goes."""

    def __init__(self, console: Console, verb: str, quiet: bool, where: str) -> None:
        self.console, self.verb, self.quiet, self.where = console, verb, quiet, where

    def __call__(self, line: str, *, always: bool = False) -> None:
        if self.console.is_terminal and not self.quiet:
            say(self.console, line, "dim")
        elif always and not self.quiet:
            say(self.console, line)
        else:  # off a terminal, or stdout is JSON: timestamped on stderr, like the phases of a local run
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            print(f"{stamp} {self.verb} {self.where}: {line}", file=sys.stderr, flush=True)


def launch_note(console: Console, verb: str, *, quiet: bool, executor: str) -> _Note:
    """The executor's notes (a batch resumed; on Slurm: submitted, collecting, a job's state changes), as
    progress goes; off a terminal each line names the verb and the executor (``bench local: ...``)."""
    return _Note(console, verb, quiet, executor)


def record_printer(console: Console, *, quiet: bool) -> Callable[[RunRecord], None]:
    """Each launch's line as its record is stored (with its Slurm job and node, where it ran as one);
    nothing when stdout is JSON."""

    def show(record: RunRecord) -> None:
        if not quiet:
            say(console, run_line(record) + slurm_where(record))

    return show


def slurm_where(record: RunRecord) -> str:
    """Where a Slurm launch ran: its job and node; a job that never reached a node says its state instead."""
    job = record.executor or {}
    if not job.get("job_id"):
        return ""
    if job.get("node"):
        return f" (Slurm job {job['job_id']} on {job['node']})"
    return f" (Slurm job {job['job_id']}, {job.get('state') or 'ended'} before it ran)"


# -- compare ----------------------------------------------------------------------------


def show_comparison(console: Console, result: Comparison) -> None:
    a, b = result.a, result.b
    for label, r in (("A", a), ("B", b)):
        say(console, f"{label} = run {r.run_id} {r.commit.short} {r.commit.subject} ({r.label}, {r.outcome.value})")
    for r in result.no_data:
        say(console, f"run {r.run_id} has no data ({r.outcome.value}: {r.reason or 'no samples'})", "bold yellow")
    if result.no_data:
        say(console, "no metrics to compare; what differs between the runs:", "bold")
    else:
        say(
            console,
            f"launches: A {len(result.launches_a)} (runs {_ids(result.launches_a)}), "
            f"B {len(result.launches_b)} (runs {_ids(result.launches_b)}); "
            f"verdict at {result.confidence:.0%} confidence, threshold ±{result.threshold:.1%}",
        )
        table = Grid()
        table.add_column("metric")
        table.add_column("A n", justify="right", whole=True)
        for name in ("A median", "A min-max"):
            table.add_column(name, justify="right", whole="median" in name)
        table.add_column("B n", justify="right", whole=True)
        for name in ("B median", "B min-max"):
            table.add_column(name, justify="right", whole="median" in name)
        table.add_column("B/A", justify="right", whole=True)
        table.add_column("interval", justify="right")
        table.add_column("verdict")
        for row in result.metrics:
            x, y = row.a or NO_SUMMARY, row.b or NO_SUMMARY
            v = row.verdict
            interval = "-" if v is None or v.low is None or v.high is None else f"{v.low:.3f} - {v.high:.3f}"
            call = row.call
            if v is not None and v.call.value == "unknown":
                call += f" ({v.next or v.why})"  # what would decide it: launches per side, or a noise prior
            worse = "worse" in call
            table.add_row(
                row.metric,
                str(len(row.launch_values[0])),
                fmt(x.get("median")),
                _range(x.get("min"), x.get("max")),
                str(len(row.launch_values[1])),
                fmt(y.get("median")),
                _range(y.get("min"), y.get("max")),
                fmt(row.shown_ratio, 3),
                interval,
                (call, "bold red" if worse else ""),
            )
        show_table(console, table)
        priors = [r.metric for r in result.metrics if r.verdict is not None and r.verdict.prior_used]
        if priors:
            say(console, f"noise prior (patchkit noise) used for: {', '.join(priors)}", "dim")
    between = result.between
    word = {"forward": "A..B", "backward": "B..A (B is older)", "diverged": "A..B (diverged)"}
    if between.direction == "same":
        say(console, "upstream commits: none (A and B are the same commit)", "bold")
    else:
        say(console, f"upstream commits {word[between.direction]}: {len(between.commits)}", "bold")
    for c in between.commits:
        say(console, f"  {c.short} {c.date[:10]} {c.subject}")
    say(console, f"patch state changes: {len(result.patches) or 'none'}", "bold")
    for item in result.patches:
        say(console, f"  {item.manifest}:{item.patch}  {item.a or 'absent'} -> {item.b or 'absent'}")
    for title, items in (
        ("env differences", result.env),
        ("vars differences", result.vars),
        ("version differences", result.versions),
        ("GPU differences", result.gpus),
        ("host differences", result.host),
        ("proof differences (the probe: effective env, libraries, distributions, STRAYs)", result.proof),
    ):
        say(console, f"{title}: {len(items) or 'none'}", "bold")
        for d in items:
            say(console, f"  {d.key}: {d.a!r} -> {d.b!r}")


def _range(low: float | None, high: float | None) -> str:
    """A min-max range that wraps between its numbers, never inside one."""
    return "-" if low is None and high is None else f"{fmt(low)} - {fmt(high)}"


def _ids(records: Sequence[RunRecord]) -> str:
    return ", ".join(str(r.run_id) for r in records)


# -- bisect -----------------------------------------------------------------------------


def bisect_header(plan: BisectPlan) -> str:
    """The line that opens a bisect: what is hunted, over how many commits, with how many launches, slots and
    budget, and the noise prior with where, when and on what it was measured (or why none is used)."""
    again = "patchkit noise" + (" --executor slurm" if plan.executor.remote else "")
    prior = plan.prior
    if prior is None:
        spread = plan.refused_prior or f"no noise prior for {plan.place} (run `{again}`)"
    else:
        facts = [f"{prior.df} df", plan.place]
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
    return line + (f" ({m.outcome.value}: {m.why})" if m.outcome is not Outcome.OK else "")


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
    table.add_column("why")
    table.add_column("subject")
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
    show_table(console, table)
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


# -- noise ------------------------------------------------------------------------------


def show_noise(console: Console, result: dict[str, Any]) -> None:
    say(console, f"patchkit noise  {result['commit'][:10]} {result['subject']}; {result['launches']} launches", "bold")
    for item in result["profiles"]:
        table = Grid()
        for name in ("profile", "metric", "launches", "median", "spread", "df", "A/A (odd vs even)", "stored"):
            table.add_column(name, justify="right" if name in ("launches", "median", "spread", "df") else "left")
        for row in item["metrics"]:
            aa = row["aa"]
            interval = "" if aa["low"] is None else f" {aa['ratio']:.3f} [{aa['low']:.3f}, {aa['high']:.3f}]"
            table.add_row(
                item["profile"],
                row["metric"],
                str(row["launches"]),
                "-" if row["median"] is None else f"{row['median']:.2f}",
                "-" if row["sigma"] is None else f"{row['sigma']:.2%}",
                "-" if row["df"] is None else str(row["df"]),
                f"{aa['verdict']}{interval}",
                "yes" if row["stored"] else f"no: {row['why']}",
            )
        emit(console, table)
        say(console, f"{place_label(item['host'])}: compare and bisect use these spreads as the prior", "dim")
        for row in item["metrics"]:
            if row.get("outliers"):
                at = ", ".join(str(i + 1) for i in row["outliers"])
                say(console, f"  {row['metric']}: launch {at} left out of the spread (outliers)", "yellow")
            plan = row.get("plan")
            if plan:
                say(
                    console,
                    f"  plan for {row['metric']}: a {plan['effect']:.1%} step over {plan['commits']} commits takes "
                    f"about {plan['launches']['median']:.0f} launches (90 % within {plan['launches']['p90']:.0f}); "
                    f"found in {plan['found']:.0%} of simulated hunts; {plan['per_commit']} launches settle a "
                    "probed commit with 90 % power",
                )


def place_label(place: str) -> str:
    """A prior's key for people: ``host gpu-1``, or ``Slurm partition gpu, constraint h100``."""
    if not place.startswith("slurm:"):
        return f"host {place}"
    partition, _, constraint = place.removeprefix("slurm:").partition(",constraint=")
    return f"Slurm partition {partition}" + (f", constraint {constraint}" if constraint else "")


# -- progress ---------------------------------------------------------------------------

Show = Callable[["Commit", str, str, str], None]


class ProgressLines:
    """Off a terminal: one timestamped line per phase on ``stream``; health at most every HEALTH_EVERY s."""

    def __init__(self, verb: str, stream: IO[str]) -> None:
        self.verb = verb
        self.stream = stream
        self.last_health: float | None = None

    def __call__(self, commit: Commit, profile: str, phase: str, detail: str) -> None:
        if phase == "waiting for health":
            now = time.monotonic()
            if self.last_health is not None and now - self.last_health < HEALTH_EVERY:
                return
            self.last_health = now
        else:
            self.last_health = None
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"{stamp} {self.verb} {commit.short} {profile}: {phase}"
        self.stream.write((f"{line} {detail}" if detail else line) + "\n")
        self.stream.flush()


@contextmanager
def progress(console: Console, verb: str, *, live: bool) -> Iterator[Show]:
    """The progress callback of a session: a live status line on a terminal (``live``), else lines on stderr."""
    if not (live and console.is_terminal):
        yield ProgressLines(verb, sys.stderr)
        return
    from rich.text import Text

    with console.status("starting") as status:

        def show(commit: Commit, profile: str, phase: str, detail: str) -> None:
            status.update(Text(f"{commit.short} {profile}: {phase} {detail}".rstrip()))

        yield show
