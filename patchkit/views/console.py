"""The console: output for people (rich) and for machines (JSON), kept side by side.

Colours follow the terminal: off when stdout is not a TTY, off with
``NO_COLOR`` or ``--no-color``.  Off a terminal (a pipe, a file, a CI log)
nothing is ever hard-wrapped: the console is as wide as the longest line, so
every message stays on one line for ``grep``; ``$COLUMNS`` is ignored there.
On a terminal, a table too wide for the window wraps its longer cells (long
words folded); nothing is cut short with "…" and short codes stay whole.

Two things keep the commands that run before every benchmark (``guard``,
``status``) from paying for rich off a terminal, where it would only print
plain text:

- ``Grid`` (``patchkit.views.grid``) is patchkit's own table, printed by
  ``plain_lines`` off a terminal exactly as rich would print it.
- ``make_console`` off a terminal returns a ``PlainConsole``: plain strings,
  styled pieces and grids are written directly; anything else (a rich
  renderable, markup) goes to a rich ``Console`` made on first use with the
  settings it would have had anyway.

``Console`` is the type every verb takes: commands name it from here (``if
TYPE_CHECKING``), so that no module outside the views imports rich.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, cast

from patchkit.views.grid import Grid, Piece, cell_pieces
from patchkit.views.text import breaking_text_class, clean, expand_tabs

if TYPE_CHECKING:
    from rich.console import Console as Console

_color_forced_off = False
UNWRAPPED_WIDTH = 1_000_000


def disable_color() -> None:
    global _color_forced_off
    _color_forced_off = True


def _console_settings(stream: IO[str]) -> dict[str, Any]:
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    # Off a terminal: wide enough that no line is ever cut (emit() strips the
    # padding a table leaves at line ends); soft_wrap keeps print() unwrapped.
    return {
        "file": stream,
        "highlight": False,
        "no_color": _color_forced_off or bool(os.environ.get("NO_COLOR")),
        "color_system": "auto" if is_tty and not _color_forced_off else None,
        "width": None if is_tty else UNWRAPPED_WIDTH,
        "soft_wrap": not is_tty,
        "emoji": False,
        # Nothing patchkit prints is markup: a commit subject "[router] fix" or a path with brackets
        # is shown as it is (rich would take "[router]" for a style and drop it, or fail on "[/x]").
        "markup": False,
    }


def make_console(stream: IO[str] | None = None) -> Console:
    """A rich ``Console`` on a terminal; off one, a ``PlainConsole`` that
    behaves the same for everything the commands print."""
    stream = stream or sys.stdout
    settings = _console_settings(stream)
    if settings["soft_wrap"]:  # not a terminal
        # PlainConsole offers Console's interface: its own fast path, the rest by delegation.
        return cast("Console", PlainConsole(stream, settings))
    from rich.console import Console

    return Console(**settings)


class PlainConsole:
    """The console off a terminal: plain text straight to the stream, rich on demand."""

    is_terminal = False

    def __init__(self, stream: IO[str], settings: dict[str, Any]) -> None:
        self.file = stream
        self._settings = settings
        self._rich: Console | None = None

    @property
    def rich(self) -> Console:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(**self._settings)
        return self._rich

    def print(self, *objects: Any, style: str | None = None, markup: bool | None = None, **kwargs: Any) -> None:
        if not kwargs and markup is not True and (not objects or (len(objects) == 1 and isinstance(objects[0], str))):
            # What rich prints here: no colour off a terminal, control codes dropped, tabs expanded.
            self.file.write(expand_tabs(clean(objects[0])) + "\n" if objects else "\n")
            return
        if kwargs or len(objects) != 1 or not isinstance(objects[0], Grid):
            self.rich.print(*objects, style=style, markup=markup, **kwargs)
            return
        self.file.write("".join(line + "\n" for line in objects[0].plain_lines()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)


def say(console: Console, text: str, style: str = "") -> None:
    """One line of text (never markup)."""
    if style:
        console.print(text, style=style, markup=False, highlight=False)
    else:
        console.print(text, markup=False, highlight=False)


def print_indented(console: Console, text: str, *, indent: int, style: str = "") -> None:
    """A message line under a heading: on a terminal, its wrapped lines keep the indent (and break
    after a space, ``/`` or ``:``); off one, one line."""
    if isinstance(console, PlainConsole) or not console.is_terminal:
        console.print(" " * indent + text, markup=False)
        return
    from rich.padding import Padding

    body = breaking_text_class()(clean(text), style=style)
    console.print(Padding(body, (0, 0, 0, indent)))


def write_pieces(console: Console, pieces: Sequence[Piece]) -> None:
    """One line of styled pieces (plain off a terminal)."""
    if isinstance(console, PlainConsole):
        console.print("".join(text for text, _ in pieces), markup=False)
        return
    from rich.text import Text

    console.print(Text.assemble(*pieces))


def emit(console: Console, renderable: object) -> None:
    """Print a table; off a terminal, without the padding rich leaves at line ends."""
    if isinstance(renderable, Grid):
        if isinstance(console, PlainConsole) or not console.is_terminal:
            console.file.write("".join(line + "\n" for line in renderable.plain_lines()))
            return
        renderable = renderable.to_rich()
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    console.file.write("\n".join(line.rstrip() for line in captured.get().splitlines()) + "\n")


def show_table(console: Console, table: Grid) -> None:
    """A table that never cuts a short code: as a table where its whole columns fit the terminal
    (text columns wrap), else one block of ``column: value`` lines per row; off a terminal, as is."""
    if not console.is_terminal or table.least_width() <= console.width:
        emit(console, table)
        return
    from rich.text import Text

    for row in table.rows:
        for column, cell in zip(table.columns, row, strict=True):
            pieces = cell_pieces(cell)
            if "".join(t for t, _ in pieces).strip():
                console.print(Text.assemble((f"{column.name}: ", "bold"), *pieces), overflow="fold")
        console.print()


def print_json(data: object, stream: IO[str] | None = None) -> None:
    out = stream or sys.stdout
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    out.flush()
