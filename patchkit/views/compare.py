"""What ``compare`` prints: the two sides, the per-metric verdicts, and the provenance that differs between
them (commits between, patch states, env, vars, versions, GPUs, host, the probe's facts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkit.bench.records.rows import NO_SUMMARY
from patchkit.views.bench import fmt
from patchkit.views.console import emit, say
from patchkit.views.grid import Grid
from patchkit.wording import labelled

if TYPE_CHECKING:
    from patchkit.bench.records.compare import Comparison
    from patchkit.bench.records.record import RunRecord
    from patchkit.views.console import Console


def show_comparison(console: Console, result: Comparison) -> None:
    a, b = result.a, result.b
    for label, r in (("A", a), ("B", b)):
        say(console, f"{label} = run {r.run_id} {r.commit.short} {r.commit.subject} ({r.label}, {r.outcome.value})")
    for r in result.no_data:
        why = labelled(r.outcome.value, r.reason or "no samples")
        say(console, f"run {r.run_id} has no data ({why})", "bold yellow")
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
        table.add_column("metric", whole=True)
        table.add_column("A n", justify="right", whole=True)
        for name in ("A median", "A min-max"):
            table.add_column(name, justify="right", whole="median" in name)
        table.add_column("B n", justify="right", whole=True)
        for name in ("B median", "B min-max"):
            table.add_column(name, justify="right", whole="median" in name)
        table.add_column("B/A", justify="right", whole=True)
        table.add_column("interval", justify="right")
        table.add_column("verdict", whole=True)
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
        emit(console, table)
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
