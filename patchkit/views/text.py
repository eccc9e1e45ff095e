"""Text as a terminal shows it: its width in cells, tabs expanded, the control codes rich drops, and where a
long line may break.

Everything here is plain Python until a piece of text is wider than ASCII (its width is then rich's) or a
line must wrap on a terminal (``breaking_text_class``, made on first use): the commands that print before
every benchmark (``guard``, ``status``) never load rich off a terminal.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.text import Text

TAB_SIZE = 8
# rich drops these from any text it prints (rich.control.STRIP_CONTROL_CODES).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
BREAK_AFTER = frozenset(" /:")
_WORDS = re.compile(r" +|[^ ]+ *")


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
    """``line`` cut after every space and ``/``, and after every ``:`` that no digit follows (``file.py:26`` and
    ``sha256:ab12`` stay whole): the pieces a wrapped line may break between."""
    out, start = [], 0
    for index, char in enumerate(line):
        if char in BREAK_AFTER and not (char == ":" and line[index + 1 : index + 2].isdigit()):
            out.append(line[start : index + 1])
            start = index + 1
    if start < len(line):
        out.append(line[start:])
    return out


def wrap_offsets(line: str, width: int) -> list[int]:
    """Where to cut ``line`` so no piece is wider than ``width`` (``hang_offsets`` without the indent)."""
    return hang_offsets(line, width, width)


def hang_offsets(line: str, first: int, rest: int) -> list[int]:
    """Where to cut ``line`` so that its first piece fits in ``first`` cells and each later one in ``rest`` (the
    width left after a hanging indent): between words; a word (a path, say) wider than a whole line between its
    parts (after ``/`` or ``:``, see ``break_segments``); inside a part only where it alone is wider than a line."""
    cuts: list[int] = []
    used = 0
    at = 0
    width = first
    for word in _WORDS.findall(line):
        size = cell_width(word.rstrip(" "))
        if used + size <= width or (used and size <= rest):
            if used + size > width:  # the next line: the word fits there whole
                cuts.append(at)
                used = 0
                width = rest
            used += cell_width(word)
            at += len(word)
            continue
        for part in break_segments(word):  # wider than a line: between its parts
            size = cell_width(part.rstrip(" "))
            if used and used + size > width:
                cuts.append(at)
                used = 0
                width = rest
            while size > width:  # a part longer than the line: folded, as rich would
                at += width
                cuts.append(at)
                size -= width
                part = part[width:]
                width = rest
            used += cell_width(part)
            at += len(part)
    return [c for c in cuts if 0 < c < len(line)]


def leading(line: str) -> int:
    """How many spaces ``line`` starts with."""
    return len(line) - len(line.lstrip(" "))


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
