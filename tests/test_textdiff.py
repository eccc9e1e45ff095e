"""capture's own unified diffs: what the `diff` op reads back, for any pair of texts."""

from __future__ import annotations

import random

import pytest

from patchkit.capture.textdiff import count_changes, unified_diff
from patchkit.operations.hunks import match_hunks, parse_diff, splice_hunks, split_lines

CASES = [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb", "a\nc"),  # no newline at end of file, both sides
    ("a\nb", "a\nb\n"),  # a newline added at the end
    ("a\r\nb\r\n", "a\r\nb\r\nc\r\n"),  # CRLF
    ("", "x\n"),
    ("x\n", ""),
    ("-- a\n++ b\n", "++ b\n-- a\n"),  # lines that look like headers
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_diff_applies_back_exactly(old, new):
    diff = unified_diff("f.txt", old, new)
    _a, _b, hunks = parse_diff(diff.encode())
    lines = split_lines(old)
    spots = match_hunks(lines, hunks, reverse=False)
    assert isinstance(spots, list)
    assert splice_hunks(lines, hunks, spots, reverse=False) == new


def test_random_texts_round_trip():
    rng = random.Random(13)
    alphabet = ["a\n", "b\n", "c\r\n", "\n", "d", "-- x\n", "+ y\n"]
    for _ in range(300):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        new = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        # a line without a newline can only be the last one
        old = old.replace("d", "") + ("d" if rng.random() < 0.3 else "")
        new = new.replace("d", "") + ("d" if rng.random() < 0.3 else "")
        diff = unified_diff("f.txt", old, new)
        if old == new:
            assert diff == ""
            continue
        _a, _b, hunks = parse_diff(diff.encode())
        lines = split_lines(old)
        spots = match_hunks(lines, hunks, reverse=False)
        assert isinstance(spots, list), (old, new, diff)
        assert splice_hunks(lines, hunks, spots, reverse=False) == new, (old, new, diff)


def test_count_changes_ignores_header_lookalikes():
    diff = unified_diff("f.txt", "-- a\n", "++ b\n")
    assert count_changes(diff) == (1, 1, 1)
