"""What ``noise`` prints: per profile, each metric's launch-to-launch spread, its A/A check and whether it was
stored as the prior that ``compare`` and ``bisect`` use, with the plan a hunt of that spread would take."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from patchkit.views.console import emit, say
from patchkit.views.grid import Grid
from patchkit.wording import agree, place_label, plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def show_noise(console: Console, result: dict[str, Any]) -> None:
    say(console, f"patchkit noise  {result['commit'][:10]} {result['subject']}; {result['launches']} launches", "bold")
    for item in result["profiles"]:
        table = Grid()
        for name in ("profile", "metric", "launches", "median", "spread", "df", "A/A (odd vs even)", "stored"):
            numbers = name in ("launches", "median", "spread", "df")
            table.add_column(
                name,
                justify="right" if numbers else "left",
                whole=numbers or name == "metric",
                prose=name == "stored",
            )
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
                per = plan["per_commit"]
                say(
                    console,
                    f"  plan for {row['metric']}: a {plan['effect']:.1%} step over {plan['commits']} commits takes "
                    f"about {plan['launches']['median']:.0f} launches (90 % within {plan['launches']['p90']:.0f}); "
                    f"found in {plan['found']:.0%} of simulated hunts; {plural(per, 'launch', 'launches')} "
                    f"{agree(per, 'settles', 'settle')} a probed commit with 90 % power",
                )
