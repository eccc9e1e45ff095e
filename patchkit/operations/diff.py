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
from collections.abc import Mapping
from dataclasses import dataclass

from patchkit.errors import InternalError
from patchkit.operations.base import Anchor, LoadContext, Outcome, PortTraits, TextOperation, TextState
from patchkit.operations.hunks import Hunk, Mismatch, hunk_verdict, parse_diff, splice_hunks, split_lines
from patchkit.results import Reason


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
    port_traits = PortTraits(Anchor.TEXT, diff_payload=True)
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
