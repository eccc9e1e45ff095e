"""``Grid``: patchkit's own table, columns and rows of plain or styled text, for a terminal (rich) or a log
(plain).

On a terminal a grid becomes a rich ``Table``; off one, ``plain_lines`` prints exactly what rich prints
there (box-less columns two spaces apart, tabs expanded, rich's stripped control codes stripped, line ends
trimmed), so the two never disagree, and a test holds them to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from patchkit.views.text import TAB_SIZE, breaking_text_class, cell_width, clean, expand_tabs

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

# A piece of text with a rich style ("" for none); a cell is one or more pieces.
Piece = tuple[str, str]
Cell = str | Piece | Sequence[Piece]
TEXT_MIN = 6  # the narrowest a wrapping text column may get before a table is shown as blocks


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
                    pad = " " * (width - cell_width(text))
                    parts.append(pad + text if column.justify == "right" else text + pad)
                out.append("  ".join(parts).rstrip())
        return out

    def least_width(self) -> int:
        """The width under which rich would have to cut a whole column: whole columns at their widest,
        text columns at TEXT_MIN, two spaces between columns."""
        total = 2 * (len(self.columns) - 1)
        for index, column in enumerate(self.columns):
            if not column.whole:
                total += TEXT_MIN
                continue
            texts = [column.name, *(plain(row[index]) for row in self.rows)]
            total += max(cell_width(line) for text in texts for line in text.split("\n"))
        return total

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
