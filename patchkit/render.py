"""Output for people (rich) and for machines (JSON), kept side by side.

Colours follow the terminal: off when stdout is not a TTY, off with
``NO_COLOR`` or ``--no-color``.  Off a terminal (a pipe, a file, a CI log)
nothing is ever hard-wrapped: the console is as wide as the longest line, so
every message stays on one line for ``grep``; ``$COLUMNS`` is ignored there.
On a terminal, a table too wide for the window wraps its longer cells (long
words folded); nothing is cut short with "…" and short codes stay whole.

Two things keep the commands that run before every benchmark (``guard``,
``status``) from paying for rich off a terminal, where it would only print
plain text:

- ``Grid`` is patchkit's own table: columns and rows of plain or styled text.
  On a terminal it becomes a rich ``Table``; off one, ``plain_lines`` prints
  exactly what rich prints there (box-less columns two spaces apart, tabs
  expanded, rich's stripped control codes stripped, line ends trimmed), so the
  two never disagree, and a test holds them to it.
- ``make_console`` off a terminal returns a ``PlainConsole``: plain strings,
  styled pieces and grids are written directly; anything else (a rich
  renderable, markup) goes to a rich ``Console`` made on first use with the
  settings it would have had anyway.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from patchkit.results import GroupResult, PatchResult, Status

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.table import Table
    from rich.text import Text

    from patchkit.git import Commit
    from patchkit.manifest import Manifest

STATUS_STYLE = {
    Status.APPLY: "bold green",
    Status.SKIP: "cyan",
    Status.WARN: "bold yellow",
    Status.FAIL: "bold red",
}

_color_forced_off = False
UNWRAPPED_WIDTH = 1_000_000
TAB_SIZE = 8
# rich drops these from any text it prints (rich.control.STRIP_CONTROL_CODES).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))

# A piece of text with a rich style ("" for none); a cell is one or more pieces.
Piece = tuple[str, str]
Cell = str | Piece | Sequence[Piece]


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
            self.file.write(_expand_tabs(_clean(objects[0])) + "\n" if objects else "\n")
            return
        if kwargs or len(objects) != 1 or not isinstance(objects[0], Grid):
            self.rich.print(*objects, style=style, markup=markup, **kwargs)
            return
        self.file.write("".join(line + "\n" for line in objects[0].plain_lines()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)


def print_indented(console: Console, text: str, *, indent: int, style: str = "") -> None:
    """A message line under a heading: on a terminal, its wrapped lines keep the indent (and break
    after a space, ``/`` or ``:``); off one, one line."""
    if isinstance(console, PlainConsole) or not console.is_terminal:
        console.print(" " * indent + text, markup=False)
        return
    from rich.padding import Padding

    body = _breaking_text_class()(_clean(text), style=style)
    console.print(Padding(body, (0, 0, 0, indent)))


def write_pieces(console: Console, pieces: Sequence[Piece]) -> None:
    """One line of styled pieces (plain off a terminal)."""
    if isinstance(console, PlainConsole):
        console.print("".join(text for text, _ in pieces), markup=False)
        return
    from rich.text import Text

    console.print(Text.assemble(*pieces))


def header(console: Console, verb: str, manifest: Manifest, where: str, commit: Commit | None) -> None:
    line: list[Piece] = [
        (f"patchkit {verb}", "bold"),
        (f"  manifest {manifest.name} ({manifest.digest[:19]}…)  {where}", ""),
    ]
    if commit is not None:
        line.append((f"  at {commit.sha} {commit.subject!r}", ""))
    write_pieces(console, line)


@dataclass(frozen=True)
class Column:
    """A column of a ``Grid``: its heading, alignment, style, and whether its cells may be wrapped."""

    name: str
    justify: Literal["left", "right"] = "left"
    style: str = ""
    whole: bool = False  # a short code (status, reason, number): never wrapped, even in a narrow window


@dataclass
class Grid:
    """A box-less table of text cells, for a terminal (rich) or a log (plain)."""

    columns: list[Column] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)

    def add_column(
        self, name: str, *, justify: Literal["left", "right"] = "left", style: str = "", whole: bool = False
    ) -> None:
        self.columns.append(Column(name, justify, style, whole))

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def to_rich(self) -> Table:
        from rich.table import Table

        table = Table(show_header=True, header_style="bold", expand=False, pad_edge=False, box=None)
        for column, width in zip(self.columns, self._widths(self._body()), strict=True):
            # In a narrow window the other columns wrap (long words folded): nothing is cut short with "…".
            table.add_column(
                column.name,
                justify=column.justify,
                style=column.style or None,
                overflow="fold",
                no_wrap=column.whole,
                min_width=width if column.whole else None,
            )
        for row in self.rows:
            table.add_row(*(_rich_cell(cell) for cell in row))
        return table

    def plain_lines(self) -> list[str]:
        """The lines rich prints for ``to_rich()`` off a terminal, ends trimmed."""
        header = [[column.name] for column in self.columns]
        body = self._body()
        widths = self._widths(body)
        out: list[str] = []
        for row in [header, *body]:
            for n in range(max(len(cell) for cell in row)):
                parts = []
                for column, width, cell in zip(self.columns, widths, row, strict=True):
                    text = cell[n] if n < len(cell) else ""
                    pad = " " * (width - _width(text))
                    parts.append(pad + text if column.justify == "right" else text + pad)
                out.append("  ".join(parts).rstrip())
        return out

    def _body(self) -> list[list[list[str]]]:
        """Each cell as the lines it prints: control codes dropped, tabs expanded, ends trimmed."""
        return [
            [[line.rstrip() for line in _expand_tabs(_clean(_plain(cell))).split("\n")] for cell in row]
            for row in self.rows
        ]

    def _widths(self, body: list[list[list[str]]]) -> list[int]:
        return [
            max(_width(line) for cells in [[column.name], *(row[i] for row in body)] for line in cells)
            for i, column in enumerate(self.columns)
        ]


def _rich_cell(cell: Cell) -> Text:
    """A cell as rich Text, never a str (a path or message with brackets is not markup),
    with tabs expanded and line ends trimmed before rich measures it, as ``plain_lines`` does
    (rich measures tabs unexpanded and would cut such a cell short with "…").  On a narrow
    terminal it wraps after a space, ``/`` or ``:`` (``wrap_at_breaks``), so a path breaks
    between its parts, not in the middle of a name."""
    from rich.text import Text

    text = Text.assemble(*((_clean(t), style) for t, style in _pieces(cell)))
    text.expand_tabs(TAB_SIZE)
    lines = text.split("\n", allow_blank=True)
    for line in lines:
        line.rstrip()
    joined = Text("\n").join(lines)
    wrapped = _breaking_text_class()(end="")
    wrapped.append_text(joined)
    return wrapped


BREAK_AFTER = frozenset(" /:")


def break_segments(line: str) -> list[str]:
    """``line`` cut after every space, ``/`` and ``:``: the pieces a wrapped line may break between."""
    out, start = [], 0
    for index, char in enumerate(line):
        if char in BREAK_AFTER:
            out.append(line[start : index + 1])
            start = index + 1
    if start < len(line):
        out.append(line[start:])
    return out


def wrap_offsets(line: str, width: int) -> list[int]:
    """Where to cut ``line`` so no piece is wider than ``width``: after a space, ``/`` or ``:`` when
    one fits, inside a name only when the name alone is wider than ``width``."""
    cuts: list[int] = []
    used = 0
    at = 0
    for segment in break_segments(line):
        size = _width(segment.rstrip(" "))
        if used and used + size > width:
            cuts.append(at)
            used = 0
        while size > width:  # a name longer than the column: folded, as rich would
            at += width
            cuts.append(at)
            size -= width
            segment = segment[width:]
        used += _width(segment)
        at += len(segment)
    return [c for c in cuts if 0 < c < len(line)]


_BREAKING: list[type] = []


def _breaking_text_class() -> type[Text]:
    """A rich ``Text`` that wraps with ``wrap_offsets`` (made once, when rich is first needed)."""
    if _BREAKING:
        return cast("type[Text]", _BREAKING[0])
    from rich.containers import Lines
    from rich.measure import Measurement
    from rich.text import Text

    class BreakingText(Text):
        def wrap(self, console: Console, width: int, **kwargs: Any) -> Lines:
            if kwargs.get("no_wrap") or all(_width(line) <= width for line in self.plain.split("\n")):
                return super().wrap(console, width, **kwargs)
            out = Lines()
            for line in self.split("\n", allow_blank=True):
                for piece in line.divide(wrap_offsets(line.plain, max(width, 1))):
                    piece.rstrip()
                    out.append(piece)
            return out

        def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
            lines = self.plain.split("\n")
            widest = max((_width(line) for line in lines), default=0)
            pieces = [_width(p.rstrip(" ")) for line in lines for p in break_segments(line)]
            return Measurement(max(pieces, default=widest), widest)

    _BREAKING.append(BreakingText)
    return BreakingText


def _pieces(cell: Cell) -> list[Piece]:
    if isinstance(cell, str):
        return [(cell, "")]
    if len(cell) == 2 and isinstance(cell[0], str) and isinstance(cell[1], str):
        return [cast("Piece", cell)]
    return list(cast("Sequence[Piece]", cell))


cell_pieces = _pieces  # public: a cell as (text, style) pieces, for other layouts of a Grid's rows


def _plain(cell: Cell) -> str:
    return "".join(text for text, _ in _pieces(cell))


def _clean(text: str) -> str:
    return text.translate(_STRIPPED)


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # wide (CJK) and zero-width characters, as rich counts them

    return cell_len(text)


def _expand_tabs(text: str) -> str:
    if "\t" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        out = ""
        for index, part in enumerate(line.split("\t")):
            if index:
                out += " "
                remainder = _width(out) % TAB_SIZE
                if remainder:
                    out += " " * (TAB_SIZE - remainder)
            out += part
        lines.append(out)
    return "\n".join(lines)


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


def print_json(data: object, stream: IO[str] | None = None) -> None:
    out = stream or sys.stdout
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    out.flush()


def status_piece(status: Status) -> Piece:
    return (status.value, STATUS_STYLE[status])


def results_table(results: Sequence[PatchResult], *, extra: dict[str, Iterable[str]] | None = None) -> Grid:
    table = Grid()
    table.add_column("#", justify="right", style="dim", whole=True)
    table.add_column("patch")
    table.add_column("status", whole=True)
    table.add_column("reason", whole=True)
    for name in extra or {}:
        table.add_column(name, whole=True)
    table.add_column("where")
    table.add_column("message")
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
    table.add_column("message")
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
