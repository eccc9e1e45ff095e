"""diff: apply a unified diff to one text file, with zero fuzz.

This is the op that carries what no structured op can express (a CMake or
YAML edit, a deleted line, a tangle): nothing a user had is ever dropped.
The rules follow ``dpkg-source`` format 3.0 (quilt): **no fuzz, offsets
allowed**.  Every context and removed line of a hunk must match the file
exactly (whitespace and line ending included), but a hunk may sit any number
of lines away from the line its header names, because upstream added or
removed lines elsewhere.  Among several exact matches the one nearest the
expected line wins; hunks never overlap and keep their order.

Verdicts:

* APPLY when every hunk matches forwards;
* SKIP ``ALREADY_APPLIED`` when every hunk matches in reverse (its ``+``
  lines are there).  Both can match (a pure deletion leaves its context in
  place; an addition at the end of a file keeps its context contiguous; a
  block the file holds twice): then the side with the smaller total offset
  wins, then the side with more lines, and a tie counts as applied (a diff is
  never applied twice);
* FAIL ``CONFLICT`` otherwise, naming the first hunk that does not match, the
  line it expected, and the expected versus found line;
* FAIL ``UNSUPPORTED_FILE`` when the file holds NUL bytes (binary).

Unlike the other ops this one never parses Python (it is a ``TextOperation``):
the engine hands it a ``TextState`` and renders it with ``transform_text``.
A diff's file may therefore be any UTF-8 text file, and a diff patch may not
share its file with structured patches (the loader refuses that), since the
structured ops edit a syntax tree a text edit would not update.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from patchkit.errors import InternalError
from patchkit.operations.base import LoadContext, Outcome, TextOperation, TextState
from patchkit.results import Reason

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


def read_diff_payload(table: Mapping[str, object], ctx: LoadContext, edits: str) -> tuple[str, str, tuple[Hunk, ...]]:
    """(source as written, sha256 of the payload, hunks) of a one-file diff payload of ``table["file"]``.

    ``edits`` ends the refusal of a diff that creates or deletes a file ("the diff op edits ...")."""
    written = str(table["source"])  # the schema has checked it is a string
    data = ctx.raw_payload(table)
    try:
        old_path, new_path, hunks = parse_diff(data)
    except ValueError as exc:
        ctx.error("source", f"payload {written!r} {exc}")
    file = table["file"]
    for side in (old_path, new_path):
        if side is not None and side != file:
            ctx.error(
                "source",
                f"payload {written!r} is a diff of {side!r}, not of {file!r}",
                hint="set `file` to the path in the diff's '---' / '+++' lines",
            )
    if old_path is None or new_path is None:
        ctx.error("source", f"payload {written!r} creates or deletes a file; {edits}")
    return written, hashlib.sha256(data).hexdigest(), tuple(hunks)


def _shown(line: str | None) -> str:
    if line is None:
        return "end of file"
    return repr(line.rstrip("\n"))


@dataclass(frozen=True)
class Diff(TextOperation[str]):
    """diff: applies a one-file unified diff payload to any text file, with zero fuzz and offsets allowed.

    Reads ``source`` only; it carries what no structured op can express, and never parses Python.
    """

    op_name = "diff"
    source: str  # as written in the manifest
    sha256: str
    hunks: tuple[Hunk, ...]

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> Diff:
        written, sha, hunks = read_diff_payload(table, ctx, "the diff op edits an existing file")
        return cls(source=written, sha256=sha, hunks=hunks)

    def identity(self) -> dict[str, object]:
        return {"diff": self.sha256}

    def _verdict(self, text: str) -> tuple[str, list[str], list[int] | Mismatch, list[int] | Mismatch]:
        lines = split_lines(text)
        verdict, forward, backward = hunk_verdict(lines, self.hunks)
        return verdict, lines, forward, backward

    def analyze(self, state: TextState) -> Outcome[str]:
        text = state.text
        if "\0" in text:
            return Outcome.fail(
                Reason.UNSUPPORTED_FILE, None, f"{state.path} holds NUL bytes (binary); the diff op edits text files"
            )
        verdict, lines, forward, backward = self._verdict(text)
        count = len(self.hunks)
        noun = "hunk" if count == 1 else "hunks"
        if verdict == "apply":
            assert isinstance(forward, list)
            first = forward[0] + 1
            moved = [s - h.start(False) for s, h in zip(forward, self.hunks, strict=True) if s != h.start(False)]
            offset = f", offset {moved[0]:+d} line(s)" if moved else ""
            return Outcome.apply(
                first,
                f"applies {count} {noun} from {self.source} (first at line {first}{offset})",
                plan=splice_hunks(lines, self.hunks, forward, reverse=False),
            )
        if verdict == "applied":
            assert isinstance(backward, list)
            first = backward[0] + 1
            return Outcome.skip(
                Reason.ALREADY_APPLIED,
                first,
                f"the {count} {noun} of {self.source} {'is' if count == 1 else 'are'} already in place",
            )
        assert isinstance(forward, Mismatch)
        miss = forward
        return Outcome.fail(
            Reason.CONFLICT,
            miss.line,
            f"hunk {miss.hunk.number} of {count} ({miss.hunk.header}) of {self.source} does not match at line "
            f"{miss.line}: expected {_shown(miss.expected)}, found {_shown(miss.found)} "
            "(zero fuzz: context and removed lines must match exactly); neither does its reverse, "
            "so the change is not in place either",
        )

    def target_span(self, state: TextState) -> tuple[int, int] | None:
        first = self.hunks[0]
        last = self.hunks[-1]
        return (max(first.old_start, 1), last.old_start + max(len(last.old), 1) - 1)

    def simulate(self, state: TextState, outcome: Outcome[str], patch_id: str) -> None:
        state.text = outcome.planned

    def transform_text(self, text: str, outcome: Outcome[str]) -> str:
        verdict, lines, forward, _backward = self._verdict(text)
        if verdict != "apply" or not isinstance(forward, list):
            raise InternalError(f"{self.source} no longer applies to the text the analysis saw")
        return splice_hunks(lines, self.hunks, forward, reverse=False)
