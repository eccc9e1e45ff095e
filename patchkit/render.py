"""Output for people (rich) and for machines (JSON), kept side by side.

Colours follow the terminal: off when stdout is not a TTY, off with
``NO_COLOR`` or ``--no-color``.  Off a terminal (a pipe, a file, a CI log)
nothing is ever hard-wrapped: the console is as wide as the longest line, so
every message stays on one line for ``grep``; ``$COLUMNS`` is ignored there.
On a terminal, tables may wrap their message column to fit the window.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchkit.results import GroupResult, PatchResult, Status

STATUS_STYLE = {
    Status.APPLY: "bold green",
    Status.SKIP: "cyan",
    Status.WARN: "bold yellow",
    Status.FAIL: "bold red",
}

_color_forced_off = False
UNWRAPPED_WIDTH = 1_000_000


def disable_color() -> None:
    global _color_forced_off
    _color_forced_off = True


def make_console(stream: IO[str] | None = None) -> Console:
    stream = stream or sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    # Off a terminal: wide enough that no line is ever cut (emit() strips the
    # padding a table leaves at line ends); soft_wrap keeps print() unwrapped.
    width = None if is_tty else UNWRAPPED_WIDTH
    return Console(
        file=stream,
        highlight=False,
        no_color=_color_forced_off or bool(os.environ.get("NO_COLOR")),
        color_system="auto" if is_tty and not _color_forced_off else None,
        width=width,
        soft_wrap=not is_tty,
        emoji=False,
    )


def emit(console: Console, renderable: Any) -> None:
    """Print a table; off a terminal, without the padding rich leaves at line ends."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    console.file.write("\n".join(line.rstrip() for line in captured.get().splitlines()) + "\n")


def print_json(data: Any, stream: IO[str] | None = None) -> None:
    out = stream or sys.stdout
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    out.flush()


def status_text(status: Status) -> Text:
    return Text(status.value, style=STATUS_STYLE[status])


def results_table(results: Sequence[PatchResult], *, extra: dict[str, Iterable[str]] | None = None) -> Table:
    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False, box=None)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("patch", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("reason", no_wrap=True)
    for name in extra or {}:
        table.add_column(name, no_wrap=True)
    table.add_column("where", no_wrap=True)
    table.add_column("message", overflow="fold")
    columns = {name: list(values) for name, values in (extra or {}).items()}
    for index, r in enumerate(results, start=1):
        message = Text(r.message)
        if r.hint:
            message.append("\nhint: " + r.hint, style="dim")
        label = r.patch + ("" if r.required else " (optional)")
        row: list[Any] = [str(index), label, status_text(r.status), r.reason.value if r.reason else "-"]
        row.extend(columns[name][index - 1] for name in columns)
        row.extend([r.where(), message])
        table.add_row(*row)
    return table


def groups_table(groups: Sequence[GroupResult]) -> Table:
    """One row per [[group]]: its verdict and which variants cover it here."""
    table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False, box=None)
    for name in ("group", "status", "reason", "covered by"):
        table.add_column(name, no_wrap=True)
    table.add_column("message", overflow="fold")
    for g in groups:
        label = g.group + ("" if g.required else " (optional)")
        table.add_row(
            label, status_text(g.status), g.reason.value if g.reason else "-", ", ".join(g.covered_by) or "-", g.message
        )
    return table


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"
