"""``Grid``: patchkit's own table, columns and rows of plain or styled text, for a terminal (rich) or a log
(plain).

On a terminal a grid becomes a rich ``Table``; off one, ``plain_lines`` prints exactly what rich prints
there (box-less columns two spaces apart, tabs expanded, rich's stripped control codes stripped, line ends
trimmed), so the two never disagree, and a test holds them to it.

A column says what it holds, and so how a narrow terminal may treat it: ``whole`` (an identifier, a number,
a code, a verdict: never wrapped), ``prose`` (long free text: a message, a subject, a reason), or neither
(text made of names, such as a path or a list of ids: wrapped only between them, after a space, ``/`` or
``:``).  ``layout`` picks, for a terminal width, the first of: every column at its natural width; the text
columns narrowed, never below their longest word, while no prose cell grows taller than ``TALL`` lines (and
no prose column narrower than ``TEXT_MIN``); the prose moved under each row, the other columns a table; the
narrowed table however tall; or none, when even that does not fit (the console then prints one record per
block).  No identifier, number or verdict is ever cut in two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from patchkit.views.text import (
    TAB_SIZE,
    break_segments,
    breaking_text_class,
    cell_width,
    clean,
    expand_tabs,
    wrap_offsets,
)

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

# A piece of text with a rich style ("" for none); a cell is one or more pieces.
Piece = tuple[str, str]
Cell = str | Piece | Sequence[Piece]
TEXT_MIN = 20  # the narrowest a prose column may get in a table: narrower, its cells stand many lines tall
TALL = 3  # the most lines a prose cell may take in a narrowed table before its prose goes under its row


@dataclass(frozen=True)
class Column:
    """A column of a ``Grid``: its heading, alignment, style, and whether its cells may be wrapped."""

    name: str
    justify: Literal["left", "right"] = "left"
    style: str = ""
    whole: bool = False  # a short code (status, reason, number): never wrapped, even in a narrow window
    prose: bool = False  # long free text (a message, a subject): under its row when the table is narrow


@dataclass(frozen=True)
class Layout:
    """How a grid fits a terminal: each shown column's width (``None``: every column at its natural width), and
    the prose columns printed under their row instead of in it."""

    widths: tuple[int, ...] | None
    under: tuple[int, ...] = ()


@dataclass
class Grid:
    """A box-less table of text cells, for a terminal (rich) or a log (plain)."""

    columns: list[Column] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)

    def add_column(
        self,
        name: str,
        *,
        justify: Literal["left", "right"] = "left",
        style: str = "",
        whole: bool = False,
        prose: bool = False,
    ) -> None:
        self.columns.append(Column(name, justify, style, whole, prose))

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def to_rich(
        self,
        widths: Sequence[int] | None = None,
        *,
        columns: Sequence[int] | None = None,
        rows: Sequence[int] | None = None,
        header: bool = True,
    ) -> Table:
        """The grid as a rich ``Table``: at its natural widths, or at ``widths`` (``layout``'s) for the
        ``columns`` it names, with only ``rows`` (default: all) and without the header when ``header`` is False."""
        from rich.table import Table

        shown = list(range(len(self.columns))) if columns is None else list(columns)
        natural = self._widths(self._body())
        table = Table(show_header=header, header_style="bold", expand=False, pad_edge=False, box=None)
        for place, index in enumerate(shown):
            column = self.columns[index]
            # In a narrow window the other columns wrap (long words folded): nothing is cut short with "…".
            table.add_column(
                column.name,
                justify=column.justify,
                style=column.style or None,
                overflow="fold",
                no_wrap=column.whole,
                width=None if widths is None else widths[place],
                min_width=natural[index] if column.whole and widths is None else None,
            )
        for number in range(len(self.rows)) if rows is None else rows:
            table.add_row(*(_rich_cell(self.rows[number][index]) for index in shown))
        return table

    def layout(self, width: int) -> Layout | None:
        """How the grid fits a terminal ``width`` cells wide (see the module's docstring); None: it does not."""
        body = self._body()
        natural = self._widths(body)
        least = self._least(body, natural)
        everything = tuple(range(len(self.columns)))
        if sum(natural) + 2 * (len(natural) - 1) <= width:
            return Layout(None)
        squeezed = _squeeze(everything, self.columns, natural, least, width)
        if squeezed is not None and _tallest_prose(body, self.columns, squeezed) <= TALL:
            return Layout(squeezed)
        prose = tuple(i for i in everything if self.columns[i].prose)
        kept = tuple(i for i in everything if i not in prose)
        under = _squeeze(kept, self.columns, natural, least, width) if prose and kept else None
        if under is not None:
            return Layout(under, prose)
        return None if squeezed is None else Layout(squeezed)

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
                    pad = " " * (width - cell_width(text))
                    parts.append(pad + text if column.justify == "right" else text + pad)
                out.append("  ".join(parts).rstrip())
        return out

    def least_width(self) -> int:
        """The narrowest the whole grid can be shown as a table without cutting a word in two."""
        body = self._body()
        return sum(self._least(body, self._widths(body))) + 2 * (len(self.columns) - 1)

    def _least(self, body: list[list[list[str]]], natural: list[int]) -> list[int]:
        """Each column's narrowest: a whole column at its widest; a text column at its longest word (its header's
        words, the pieces of its cells between spaces, ``/`` and ``:``); a prose column at least TEXT_MIN too."""
        out = []
        for index, (column, width) in enumerate(zip(self.columns, natural, strict=True)):
            if column.whole:
                out.append(width)
                continue
            words = [cell_width(word) for word in column.name.split()]
            words += [
                cell_width(piece.rstrip(" ")) for row in body for line in row[index] for piece in break_segments(line)
            ]
            least = max(words, default=0)
            out.append(max(least, min(width, TEXT_MIN)) if column.prose else least)
        return out

    def _body(self) -> list[list[list[str]]]:
        """Each cell as the lines it prints: control codes dropped, tabs expanded, ends trimmed."""
        return [
            [[line.rstrip() for line in expand_tabs(clean(plain(cell))).split("\n")] for cell in row]
            for row in self.rows
        ]

    def _widths(self, body: list[list[list[str]]]) -> list[int]:
        return [
            max(cell_width(line) for cells in [[column.name], *(row[i] for row in body)] for line in cells)
            for i, column in enumerate(self.columns)
        ]


def _rich_cell(cell: Cell) -> Text:
    """A cell as rich Text, never a str (a path or message with brackets is not markup),
    with tabs expanded and line ends trimmed before rich measures it, as ``plain_lines`` does
    (rich measures tabs unexpanded and would cut such a cell short with "…").  On a narrow
    terminal it wraps after a space, ``/`` or ``:`` (``wrap_offsets``), so a path breaks
    between its parts, not in the middle of a name."""
    from rich.text import Text

    text = Text.assemble(*((clean(t), style) for t, style in cell_pieces(cell)))
    text.expand_tabs(TAB_SIZE)
    lines = text.split("\n", allow_blank=True)
    for line in lines:
        line.rstrip()
    joined = Text("\n").join(lines)
    wrapped = breaking_text_class()(end="")
    wrapped.append_text(joined)
    return wrapped


def cell_pieces(cell: Cell) -> list[Piece]:
    """A cell as (text, style) pieces, for other layouts of a Grid's rows."""
    if isinstance(cell, str):
        return [(cell, "")]
    if len(cell) == 2 and isinstance(cell[0], str) and isinstance(cell[1], str):
        return [cast("Piece", cell)]
    return list(cast("Sequence[Piece]", cell))


def plain(cell: Cell) -> str:
    """A cell's text, its styles dropped."""
    return "".join(text for text, _ in cell_pieces(cell))


def _squeeze(
    shown: Sequence[int], columns: Sequence[Column], natural: Sequence[int], least: Sequence[int], width: int
) -> tuple[int, ...] | None:
    """Widths for the ``shown`` columns within ``width``: the prose narrowed first, the widest first, then the
    other text columns, none below its least; None when their least widths do not fit."""
    gaps = 2 * (len(shown) - 1)
    if sum(least[i] for i in shown) + gaps > width:
        return None
    widths = {i: natural[i] for i in shown}
    excess = sum(widths.values()) + gaps - width
    for prose in (True, False):
        while excess > 0:
            narrower = [i for i in shown if columns[i].prose == prose and widths[i] > least[i]]
            if not narrower:
                break
            widest = max(narrower, key=lambda i: (widths[i], i))
            widths[widest] -= 1
            excess -= 1
    return tuple(widths[i] for i in shown)


def _tallest_prose(body: list[list[list[str]]], columns: Sequence[Column], widths: Sequence[int]) -> int:
    """How many lines the tallest prose cell takes at ``widths`` (one per column)."""
    return max(
        (
            sum(len(wrap_offsets(line, width)) + 1 for line in row[index])
            for index, (column, width) in enumerate(zip(columns, widths, strict=True))
            if column.prose
            for row in body
        ),
        default=0,
    )
