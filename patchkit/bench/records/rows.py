"""The rows ``bench`` and ``runs --pending`` print, as data: the table and ``--json`` read the same values.

``table_rows`` computes each run's ratio to the first commit here, beside the records, so that the view
(``patchkit.views.bench``) formats numbers it is given and never computes one that ``--json`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from patchkit.bench.records.record import RunIdent, RunRecord
from patchkit.bench.stats.delta import Summary

NO_SUMMARY: Summary = {"median": None, "min": None, "max": None, "n": 0, "missing": 0}  # a side without the metric


class ResultRow(RunIdent):
    """One row of ``bench``'s table and ``--json`` rows: a run's metric, its stats and its ratio to the first commit."""

    launch: int
    metric: str | None
    median: float | None
    min: float | None
    max: float | None
    n: int
    missing: int
    ratio: float | None
    proof: str | None


class PendingRow(TypedDict):
    """One row of ``runs --pending``: a submitted launch not collected yet, with its Slurm state now."""

    job_id: str
    slurm_state: str
    node: str | None
    commit: str | None
    subject: str | None
    profile: str | None
    submitted_at: str
    batch: str
    folder: str


def table_rows(records: Sequence[RunRecord]) -> list[ResultRow]:
    """One row per commit, profile and metric; ratio = median / the first commit's median (the first that has one)."""
    first: dict[tuple[str, str], float] = {}
    rows: list[ResultRow] = []
    for record in records:
        stats = record.stats()
        if not any(s["n"] or s["missing"] for s in stats.values()):  # nothing measured: one row
            rows.append(_row(record, None, NO_SUMMARY, None))
            continue
        for metric, s in stats.items():
            key = (record.profile, metric)
            if s["median"] is not None:
                first.setdefault(key, s["median"])
            base = first.get(key)
            ratio = s["median"] / base if base and s["median"] is not None else None
            rows.append(_row(record, metric, s, ratio))
    return rows


def _row(record: RunRecord, metric: str | None, s: Summary, ratio: float | None) -> ResultRow:
    return {
        **record.ident(),
        "launch": record.launch,
        "metric": metric,
        "median": s.get("median"),
        "min": s.get("min"),
        "max": s.get("max"),
        "n": s.get("n", 0),
        "missing": s.get("missing", 0),
        "ratio": ratio,
        "proof": record.proof_state,
    }
