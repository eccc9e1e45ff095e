"""What ``bench`` (and ``noise``, which launches the same way) prints of its launches: a line as each
launch ends, the executor's notes as they come, the results table and why a run is not ok; and the pieces
the other bench views share (numbers, outcomes, GPU hygiene).

Every table is a ``Grid``: on a terminal the text columns (subjects, profiles, metric names, reasons) wrap
and the short codes (run numbers, commit ids, numbers, outcomes) stay whole; off a terminal nothing is
cut or wrapped.  Every subject, path and message is printed as text, never as console markup (``[fix
typo]: ...`` keeps its ``[fix typo]``).  The values come computed (``patchkit.bench.records.rows``): a
view formats them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from patchkit.bench.records.hygiene import NO_GPU_FACTS
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.views.console import say
from patchkit.views.grid import Cell, Grid, Piece
from patchkit.wording import labelled

if TYPE_CHECKING:
    from patchkit.bench.records.rows import ResultRow
    from patchkit.views.console import Console

NOT_PROVEN = "not proven"  # a run's proof state (patchkit.proof.runproof.NOT_PROVEN)
OUTCOME_STYLE = {
    Outcome.OK: "bold green",
    Outcome.REFUSED: "bold red",
    Outcome.SERVER_FAILED: "bold red",
    Outcome.CLIENT_FAILED: "bold red",
    Outcome.METRIC_MISSING: "bold yellow",
    Outcome.INTERRUPTED: "bold yellow",
}
SUBMITTER_INTERRUPTED = "interrupted: the submitted jobs keep running; run the same command again to collect them"


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


def show_gpu_hygiene(console: Console, gpus: Mapping[str, Any]) -> None:
    """``hygiene.report``'s verdict, as bench, compare and bisect print it: "no GPU facts" once when no launch had
    nvidia-smi's answers, then one warning per dirty launch and per difference between the sides' GPUs."""
    if not gpus["facts"]:
        say(console, NO_GPU_FACTS, "dim")
    for line in [*gpus["problems"], *gpus["differences"]]:
        say(console, f"warning: {line}", "bold yellow")


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
    out = [f"{record.commit.short} {record.label} {labelled(record.outcome.value, record.reason)}"]
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
    table.add_column("metric", whole=True)
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


# -- as launches go (bench, noise, bisect) -------------------------------------------------


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
