"""The patch verdicts as tables: one row per patch (``apply``, ``status``, ``guard``) or per group, and the
line that opens each such report (verb, manifest, work tree, commit)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from patchkit.results import GroupResult, PatchResult, Status
from patchkit.views.console import write_pieces
from patchkit.views.grid import Cell, Grid, Piece

if TYPE_CHECKING:
    from patchkit.git import Commit
    from patchkit.manifest import Manifest
    from patchkit.views.console import Console

STATUS_STYLE = {
    Status.APPLY: "bold green",
    Status.SKIP: "cyan",
    Status.WARN: "bold yellow",
    Status.FAIL: "bold red",
}


def header(console: Console, verb: str, manifest: Manifest, where: str, commit: Commit | None) -> None:
    line: list[Piece] = [
        (f"patchkit {verb}", "bold"),
        (f"  manifest {manifest.name} ({manifest.digest[:19]}…)  {where}", ""),
    ]
    if commit is not None:
        line.append((f"  at {commit.sha} {commit.subject!r}", ""))
    write_pieces(console, line)


def status_piece(status: Status) -> Piece:
    return (status.value, STATUS_STYLE[status])


def results_table(results: Sequence[PatchResult], *, extra: dict[str, Iterable[str]] | None = None) -> Grid:
    table = Grid()
    table.add_column("#", justify="right", style="dim", whole=True)
    table.add_column("patch")  # an id and "(optional)": wrapped between them, never inside the id
    table.add_column("status", whole=True)
    table.add_column("reason", whole=True)
    for name in extra or {}:
        table.add_column(name, whole=True)
    table.add_column("where")
    table.add_column("message", prose=True)
    columns = {name: list(values) for name, values in (extra or {}).items()}
    for index, r in enumerate(results, start=1):
        message: list[Piece] = [(r.message, "")]
        if r.hint:
            message.append(("\nhint: " + r.hint, "dim"))
        label = r.patch + ("" if r.required else " (optional)")
        row: list[Cell] = [str(index), label, status_piece(r.status), r.reason.value if r.reason else "-"]
        row.extend(columns[name][index - 1] for name in columns)
        row.extend([r.where(), message])
        table.add_row(*row)
    return table


def groups_table(groups: Sequence[GroupResult]) -> Grid:
    """One row per [[group]]: its verdict and which variants cover it here."""
    table = Grid()
    table.add_column("group")
    table.add_column("status", whole=True)
    table.add_column("reason", whole=True)
    table.add_column("covered by")
    table.add_column("message", prose=True)
    for g in groups:
        label = g.group + ("" if g.required else " (optional)")
        table.add_row(
            label,
            status_piece(g.status),
            g.reason.value if g.reason else "-",
            ", ".join(g.covered_by) or "-",
            g.message,
        )
    return table
