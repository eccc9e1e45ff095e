"""What ``runs`` prints: the stored runs, one row per run and metric, and ``runs --pending``'s submitted
launches (the terminal plot of ``runs --plot`` is ``patchkit.views.plot``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkit.views.bench import fmt, outcome_cell
from patchkit.views.grid import Cell, Grid

if TYPE_CHECKING:
    from patchkit.bench.records.record import RunRecord
    from patchkit.bench.records.rows import PendingRow


def runs_table(records: Sequence[RunRecord]) -> Grid:
    """One row per run and metric (a run without samples: one row with its reason)."""
    table = Grid()
    table.add_column("run", justify="right", whole=True)
    table.add_column("started")
    table.add_column("commit", whole=True)
    table.add_column("subject", prose=True)
    table.add_column("profile")
    table.add_column("outcome", whole=True)
    scheduled = any(r.executor for r in records)  # a Slurm job id column only where some run has one
    if scheduled:
        table.add_column("job", whole=True)
    table.add_column("metric", whole=True)
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
    table.add_column("subject", prose=True)
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
