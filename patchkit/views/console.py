"""The console: output for people (rich) and for machines (JSON), kept side by side.

Colours follow the terminal: off when stdout is not a TTY, off with
``NO_COLOR`` or ``--no-color``.  Off a terminal (a pipe, a file, a CI log)
nothing is ever hard-wrapped: the console is as wide as the longest line, so
every message stays on one line for ``grep``; ``$COLUMNS`` is ignored there.
On a terminal nothing patchkit prints is cut in the middle of a name or a
number: a table too wide for the window narrows its text columns, moves its
prose under each row, or prints one record per block (``Grid.layout``); a
long line wraps at word boundaries (after a space, ``/`` or ``:``) with a
hanging indent, never back to column 0; nothing is cut short with "…".

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
from patchkit.views.text import TAB_SIZE, breaking_text_class, cell_width, clean, expand_tabs, hang_offsets, leading

if TYPE_CHECKING:
    from rich.console import Console as Console
    from rich.text import Text

_color_forced_off = False
UNWRAPPED_WIDTH = 1_000_000
HANG = 4  # a wrapped line goes on this much further in than the line it continues
UNDER = 4  # prose moved under its row (``Grid.layout``) starts this far in


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
    return _terminal_console_class()(**settings)


_TERMINAL: list[type] = []


def _terminal_console_class() -> type[Console]:
    """A rich ``Console`` whose lines of text (a str or a ``Text``, printed alone) that are wider than the
    terminal wrap at word boundaries with a hanging indent (``hang``) instead of back to column 0; made once,
    when rich is first needed."""
    if _TERMINAL:
        return cast("type[Console]", _TERMINAL[0])
    from rich.console import Console
    from rich.text import Text

    class TerminalConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            line = objects[0] if len(objects) == 1 else None
            if (
                isinstance(line, (str, Text))
                and set(kwargs) <= {"style", "markup", "highlight", "end"}
                and kwargs.get("markup") is not True
            ):
                text = Text(clean(line)) if isinstance(line, str) else line
                if any(cell_width(part) > self.width for part in text.plain.split("\n")):
                    style = kwargs.get("style")
                    end = kwargs.get("end", "\n")
                    super().print(hang(text, self.width), style=style, end=end, soft_wrap=True)
                    return
            super().print(*objects, **kwargs)

    _TERMINAL.append(TerminalConsole)
    return TerminalConsole


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


def hang(text: Text, width: int, *, lead: int = 0) -> Text:
    """``text`` in lines of at most ``width`` cells: each of its lines (the second and later ones ``lead`` spaces
    in) cut after a space, ``/`` or ``:``, every piece after the first of a line ``HANG`` further in than the line
    itself; inside a name only where the name alone is wider than a line."""
    from rich.text import Text

    text = text.copy()
    text.expand_tabs(TAB_SIZE)
    out: list[Text] = []
    for number, line in enumerate(text.split("\n", allow_blank=True)):
        if number and lead:
            line = Text(" " * lead) + line
        indent = min(leading(line.plain) + HANG, max(width // 2, 1))
        for index, piece in enumerate(line.divide(hang_offsets(line.plain, width, max(width - indent, 1)))):
            piece.rstrip()
            if index:
                piece = Text(" " * indent) + piece[leading(piece.plain) :]
            out.append(piece)
    return Text("\n").join(out)


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
    """Print a table; off a terminal, without the padding rich leaves at line ends; on one, a ``Grid`` as its
    ``layout`` for the terminal's width says: a table, a table with its prose under each row, or one block of
    ``column: value`` lines per row."""
    if isinstance(renderable, Grid):
        if isinstance(console, PlainConsole) or not console.is_terminal:
            console.file.write("".join(line + "\n" for line in renderable.plain_lines()))
            return
        layout = renderable.layout(console.width)
        if layout is None:
            _blocks(console, renderable)
            return
        if layout.under:
            _with_prose_under(console, renderable, layout.widths or (), layout.under)
            return
        renderable = renderable.to_rich(layout.widths)
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    console.file.write("\n".join(line.rstrip() for line in captured.get().splitlines()) + "\n")


def _blocks(console: Console, table: Grid) -> None:
    """One block per row: a ``column: value`` line per cell that is not empty, a blank line after each."""
    from rich.text import Text

    for row in table.rows:
        for column, cell in zip(table.columns, row, strict=True):
            pieces = cell_pieces(cell)
            if "".join(t for t, _ in pieces).strip():
                line = Text.assemble((f"{column.name}: ", "bold"), *pieces)
                console.print(hang(line, console.width, lead=HANG), soft_wrap=True)
        console.print()


def _with_prose_under(console: Console, table: Grid, widths: Sequence[int], under: Sequence[int]) -> None:
    """The table without its prose columns, each record's prose under it (a record: a row and the rows after
    it whose first cell is empty), one paragraph per cell, named where there are several prose columns."""
    from rich.text import Text

    kept = [i for i in range(len(table.columns)) if i not in under]
    console.print(table.to_rich(widths, columns=kept, rows=[]))
    waiting: list[Text] = []
    for number, row in enumerate(table.rows):
        if waiting and "".join(t for t, _ in cell_pieces(row[0])).strip():
            console.print(Text("\n").join(waiting), soft_wrap=True)
            waiting = []
        console.print(table.to_rich(widths, columns=kept, rows=[number], header=False))
        for index in under:
            pieces = cell_pieces(row[index])
            if not "".join(t for t, _ in pieces).strip():
                continue
            name = [(f"{table.columns[index].name}: ", "bold")] if len(under) > 1 else []
            line = Text.assemble((" " * UNDER, ""), *name, *pieces)
            waiting.append(hang(line, console.width, lead=UNDER))
    if waiting:
        console.print(Text("\n").join(waiting), soft_wrap=True)


def print_json(data: object, stream: IO[str] | None = None) -> None:
    out = stream or sys.stdout
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    out.flush()
