"""Text as a terminal shows it: its width in cells, tabs expanded, the control codes rich drops, and where a
long line may break.

Everything here is plain Python until a piece of text is wider than ASCII (its width is then rich's) or a
line must wrap on a terminal (``breaking_text_class``, made on first use): the commands that print before
every benchmark (``guard``, ``status``) never load rich off a terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.text import Text

TAB_SIZE = 8
# rich drops these from any text it prints (rich.control.STRIP_CONTROL_CODES).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
BREAK_AFTER = frozenset(" /:")


def clean(text: str) -> str:
    """``text`` without the control codes rich drops."""
    return text.translate(_STRIPPED)


def cell_width(text: str) -> int:
    """How many terminal cells ``text`` takes."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # wide (CJK) and zero-width characters, as rich counts them

    return cell_len(text)


def expand_tabs(text: str) -> str:
    """Tabs expanded to the next multiple of ``TAB_SIZE`` cells, as rich does."""
    if "\t" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        out = ""
        for index, part in enumerate(line.split("\t")):
            if index:
                out += " "
                remainder = cell_width(out) % TAB_SIZE
                if remainder:
                    out += " " * (TAB_SIZE - remainder)
            out += part
        lines.append(out)
    return "\n".join(lines)


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
        size = cell_width(segment.rstrip(" "))
        if used and used + size > width:
            cuts.append(at)
            used = 0
        while size > width:  # a name longer than the column: folded, as rich would
            at += width
            cuts.append(at)
            size -= width
            segment = segment[width:]
        used += cell_width(segment)
        at += len(segment)
    return [c for c in cuts if 0 < c < len(line)]


_BREAKING: list[type] = []


def breaking_text_class() -> type[Text]:
    """A rich ``Text`` that wraps with ``wrap_offsets`` (made once, when rich is first needed)."""
    if _BREAKING:
        return cast("type[Text]", _BREAKING[0])
    from rich.containers import Lines
    from rich.measure import Measurement
    from rich.text import Text

    class BreakingText(Text):
        def wrap(self, console: Console, width: int, **kwargs: Any) -> Lines:
            if kwargs.get("no_wrap") or all(cell_width(line) <= width for line in self.plain.split("\n")):
                return super().wrap(console, width, **kwargs)
            out = Lines()
            for line in self.split("\n", allow_blank=True):
                for piece in line.divide(wrap_offsets(line.plain, max(width, 1))):
                    piece.rstrip()
                    out.append(piece)
            return out

        def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
            lines = self.plain.split("\n")
            widest = max((cell_width(line) for line in lines), default=0)
            pieces = [cell_width(p.rstrip(" ")) for line in lines for p in break_segments(line)]
            return Measurement(max(pieces, default=widest), widest)

    _BREAKING.append(BreakingText)
    return BreakingText
