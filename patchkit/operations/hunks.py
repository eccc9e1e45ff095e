"""Unified-diff hunks over a file's lines, with zero fuzz; and the lines a def spans.

Why a module of its own: the ops that carry a diff (``diff`` on a whole file, the scoped ops
``edit-function``, ``edit-imports`` and ``edit-statement`` on one region), ``capture`` (which
writes such diffs) and ``port`` (which merges them three ways) read, match and splice hunks
by one set of rules.  Nothing here knows an op: it reads text and returns values.

The rules follow ``dpkg-source`` format 3.0 (quilt): no fuzz, offsets allowed (see ``diff.py``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = b"\\ No newline at end of file"
_REFUSED_HEADERS = {
    b"GIT binary patch": "a binary diff",
    b"Binary files ": "a binary diff",
    b"new file mode": "a diff that creates a file",
    b"deleted file mode": "a diff that deletes a file",
    b"rename from": "a diff that renames a file",
    b"copy from": "a diff that copies a file",
}


@dataclass(frozen=True)
class Hunk:
    """One hunk of a unified diff payload: its number, header and the start lines it names, its old and new sides."""

    number: int  # 1-based, in the payload
    header: str
    old_start: int
    new_start: int
    old: tuple[str, ...]  # context and '-' lines, each with its line ending
    new: tuple[str, ...]  # context and '+' lines

    def start(self, reverse: bool) -> int:
        """0-based index of the hunk's first line in the file it applies to."""
        start, lines = (self.new_start, self.new) if reverse else (self.old_start, self.old)
        return start if not lines else start - 1


@dataclass(frozen=True)
class Mismatch:
    """Why a diff's hunks do not fit: the first hunk that does not match, the file line it was expected at, and the
    expected and found lines (``found`` None: the file ended), for the CONFLICT message.
    """

    hunk: Hunk
    line: int  # 1-based line in the file where the hunk was expected
    expected: str | None
    found: str | None  # None: end of file


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split at '\\n' only (a '\\r' stays part of its line)."""
    parts = [line + "\n" for line in text.split("\n")]
    parts[-1] = parts[-1][:-1]
    if not parts[-1]:
        parts.pop()
    return parts


def parse_diff(data: bytes) -> tuple[str | None, str | None, list[Hunk]]:
    """(old path, new path, hunks) of a one-file unified diff.  Raises ValueError."""
    for marker, what in _REFUSED_HEADERS.items():
        if any(line.startswith(marker) for line in data.split(b"\n")):
            raise ValueError(f"is {what}; the diff op edits an existing text file in place")
    if b"\0" in data:
        raise ValueError("holds NUL bytes (binary); the diff op edits text files")
    raw = [line + b"\n" for line in data.split(b"\n")]
    raw[-1] = raw[-1][:-1]
    if not raw[-1]:
        raw.pop()
    old_path = new_path = None
    hunks: list[Hunk] = []
    i = 0
    while i < len(raw):
        line = raw[i]
        if line.startswith(b"--- ") and i + 1 < len(raw) and raw[i + 1].startswith(b"+++ "):
            if old_path is not None:
                raise ValueError("holds more than one file; write one diff payload per file")
            old_path = _header_path(line[4:])
            new_path = _header_path(raw[i + 1][4:])
            i += 2
            continue
        match = _HUNK.match(line)
        if not match:
            i += 1
            continue
        if old_path is None:
            raise ValueError("has a hunk before its '--- ' / '+++ ' header lines")
        old_len = int(match.group(2) or b"1")
        new_len = int(match.group(4) or b"1")
        old: list[bytes] = []
        new: list[bytes] = []
        i += 1
        while i < len(raw) and (len(old) < old_len or len(new) < new_len):
            body = raw[i]
            kind, content = body[:1], body[1:]
            if body.startswith(_NO_NEWLINE):
                i += 1
                continue
            if kind in (b" ", b"\n") or body in (b"\r\n",):
                content = content if kind == b" " else body  # an empty context line may lose its space
                old.append(content)
                new.append(content)
            elif kind == b"-":
                old.append(content)
            elif kind == b"+":
                new.append(content)
            else:
                raise ValueError(f"hunk {len(hunks) + 1} is cut short at line {i + 1} of the payload")
            i += 1
            if i < len(raw) and raw[i].startswith(_NO_NEWLINE):
                target = (old, new) if kind in (b" ", b"\n") else (old,) if kind == b"-" else (new,)
                for side in target:
                    side[-1] = side[-1][:-1] if side[-1].endswith(b"\n") else side[-1]
                i += 1
        if len(old) != old_len or len(new) != new_len:
            raise ValueError(f"hunk {len(hunks) + 1} ({match.group(0).decode()}) has fewer lines than its header says")
        try:
            hunks.append(
                Hunk(
                    number=len(hunks) + 1,
                    header=match.group(0).decode("ascii"),
                    old_start=int(match.group(1)),
                    new_start=int(match.group(3)),
                    old=tuple(x.decode("utf-8") for x in old),
                    new=tuple(x.decode("utf-8") for x in new),
                )
            )
        except UnicodeDecodeError as exc:
            raise ValueError(f"hunk {len(hunks) + 1} is not UTF-8 text ({exc.reason})") from None
    if not hunks:
        raise ValueError("holds no hunks ('@@ -a,b +c,d @@' lines)")
    return old_path, new_path, hunks


def _header_path(raw: bytes) -> str | None:
    text = raw.rstrip(b"\r\n").split(b"\t", 1)[0].decode("utf-8", "surrogateescape")
    if text == "/dev/null":
        return None
    if text.startswith('"'):
        text = text.strip('"')
    return text[2:] if text[:2] in ("a/", "b/") else text


def match_hunks(lines: Sequence[str], hunks: Sequence[Hunk], *, reverse: bool) -> list[int] | Mismatch:
    """Where each hunk applies (0-based start), or the first hunk that does not match."""
    placed: list[int] = []
    floor = 0
    shift = 0
    for hunk in hunks:
        want = hunk.new if reverse else hunk.old
        expected = max(hunk.start(reverse) + shift, floor)
        if tuple(lines[expected : expected + len(want)]) == want:
            spot = expected
        else:
            spots = [p for p in range(floor, len(lines) - len(want) + 1) if tuple(lines[p : p + len(want)]) == want]
            if not spots:
                return _mismatch(lines, hunk, want, expected)
            spot = min(spots, key=lambda p: (abs(p - expected), p))
        placed.append(spot)
        shift = spot - hunk.start(reverse)
        floor = spot + len(want)
    return placed


def _mismatch(lines: Sequence[str], hunk: Hunk, want: Sequence[str], at: int) -> Mismatch:
    for k, expected in enumerate(want):
        found = lines[at + k] if at + k < len(lines) else None
        if found != expected:
            return Mismatch(hunk, at + k + 1, expected, found)
    return Mismatch(hunk, at + 1, None, None)  # unreachable: the hunk would have matched here


def splice_hunks(lines: Sequence[str], hunks: Sequence[Hunk], spots: Sequence[int], *, reverse: bool) -> str:
    out: list[str] = []
    cursor = 0
    for hunk, spot in zip(hunks, spots, strict=True):
        remove, add = (hunk.new, hunk.old) if reverse else (hunk.old, hunk.new)
        out.extend(lines[cursor:spot])
        out.extend(add)
        cursor = spot + len(remove)
    out.extend(lines[cursor:])
    return "".join(out)


def hunk_verdict(lines: Sequence[str], hunks: Sequence[Hunk]) -> tuple[str, list[int] | Mismatch, list[int] | Mismatch]:
    """("apply" | "applied" | "conflict", forward match, reverse match) of ``hunks`` on ``lines``.

    Both sides can be in the text (a pure deletion's context, or an addition at
    the end; or a block upstream has twice): the side found nearer the hunks'
    own lines wins, then the longer side (the stronger evidence); a tie counts
    as applied (a diff is never applied twice).  Nearer first: once a deletion
    is applied at an offset, a second copy of its lines further away must not
    read as "apply it again".
    """
    forward = match_hunks(lines, hunks, reverse=False)
    backward = match_hunks(lines, hunks, reverse=True)
    if isinstance(forward, list) and isinstance(backward, list):
        size_f = sum(len(h.old) for h in hunks)
        size_b = sum(len(h.new) for h in hunks)
        cost_f = sum(abs(s - h.start(False)) for s, h in zip(forward, hunks, strict=True))
        cost_b = sum(abs(s - h.start(True)) for s, h in zip(backward, hunks, strict=True))
        forward_wins = (cost_f, -size_f) < (cost_b, -size_b)
        return ("apply" if forward_wins else "applied"), forward, backward
    if isinstance(forward, list):
        return "apply", forward, backward
    if isinstance(backward, list):
        return "applied", forward, backward
    return "conflict", forward, backward


def function_lines(node: ast.stmt, lines: Sequence[str]) -> tuple[int, int]:
    """(first, last) 1-based lines of a def in ``lines`` (the file's, with or without endings).

    From its first decorator to its last line, widened over the comment lines
    that belong to it: those right above it at its own indentation, and those
    right after its last statement indented deeper than the ``def`` (Python's
    ast leaves both out, but a reader, and a real edit, treats them as part
    of the function).
    """
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    last = node.end_lineno or node.lineno
    column = node.col_offset
    while first > 1 and _comment_at(lines[first - 2], column, deeper=False):
        first -= 1
    while last < len(lines) and _comment_at(lines[last], column, deeper=True):
        last += 1
    return first, last


def _comment_at(line: str, column: int, *, deeper: bool) -> bool:
    stripped = line.lstrip(" \t")
    if not stripped.startswith("#"):
        return False
    indent = len(line) - len(stripped)
    return indent > column if deeper else indent == column
