"""Unified diffs for the ``diff`` op's payloads, made in Python.

Capture writes its own diffs instead of asking ``git diff`` for them, so the
bytes depend only on the two texts: not on the user's git config
(``diff.algorithm``, ``diff.noprefix``, external diff drivers, textconv), not
on the git version.  Lines are split at ``\\n`` only, so a ``\\r\\n`` ending
stays part of its line and CRLF files round-trip; a last line without a
newline gets git's ``\\ No newline at end of file`` marker.
"""

from __future__ import annotations

import difflib

from patchkit.operations.hunks import split_lines

NO_NEWLINE = "\\ No newline at end of file\n"


def _range(start: int, count: int) -> str:
    # Unified diff convention: an empty side names the line before it.
    first = start + 1 if count else start
    return f"{first},{count}"


def _emit(out: list[str], mark: str, line: str) -> None:
    out.append(mark + line)
    if not line.endswith("\n"):
        out.append("\n" + NO_NEWLINE)


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A one-file unified diff of ``old`` -> ``new`` ('' when they are equal)."""
    a = split_lines(old)
    b = split_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out = [f"diff --git a/{path} b/{path}\n", f"--- a/{path}\n", f"+++ b/{path}\n"]
    hunks = 0
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n")
        hunks += 1
        for tag, ai1, ai2, bj1, bj2 in group:
            if tag == "equal":
                for line in a[ai1:ai2]:
                    _emit(out, " ", line)
                continue
            for line in a[ai1:ai2]:
                _emit(out, "-", line)
            for line in b[bj1:bj2]:
                _emit(out, "+", line)
    return "".join(out) if hunks else ""


def count_changes(diff: str) -> tuple[int, int, int]:
    """(hunks, added lines, removed lines) of a diff made by ``unified_diff``."""
    hunks = added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("@@ "):
            hunks += 1
        elif hunks and line.startswith("+"):
            added += 1
        elif hunks and line.startswith("-"):
            removed += 1
    return hunks, added, removed
