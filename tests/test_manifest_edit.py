"""The manifest's text edits port makes (``patchkit/manifest/edit.py``): removing a ``[[patch]]`` table takes its
subtables and its own comments with it, and leaves every other byte of the file as it was."""

from __future__ import annotations

import tomllib

import pytest
from helpers import d

from patchkit.manifest.edit import ManifestText

HEAD = d(
    """
    # A manifest.

    schema = 1
    name = "m"
    """
)

# The first patch: a comment block above its header, a comment among its keys, a [patch.hints] subtable (as
# the bundled kimi-k25-eagle3 manifest's eagle3-hooks has) and an array of subtables.
FIRST = d(
    """
    # About a: these lines are a's.
    [[patch]]
    id = "a"
    # a's own note
    op = "ensure-import"
    file = "m.py"
    import = "import os"

    [patch.hints]
    FILE_NOT_FOUND = "a hint"

    [[patch.extra]]
    x = "1"
    """
)

SECOND = d(
    '''
    # About b, right above its header: b's.
    [[patch]]
    id = "b"
    op = "ensure-import"
    file = "m.py"
    import = "import sys"
    description = """
    [[patch]]
    # neither a header nor a comment: a line of b's description
    """
    '''
)

TAIL = d(
    """
    # -- Benchmarking --------------------------------------------------
    # a section comment, after a blank line: not the last patch's

    [bench]
    python = "python"
    """
)


def removed(text: str, index: int) -> str:
    edit = ManifestText(text)
    edit.remove(index)
    return edit.text


def test_a_patch_goes_with_its_subtables_and_its_comments() -> None:
    text = HEAD + "\n" + FIRST + "\n" + SECOND + "\n" + TAIL
    assert removed(text, 1) == HEAD + "\n" + SECOND + "\n" + TAIL


def test_the_last_patch_goes_and_the_section_after_it_stays() -> None:
    text = HEAD + "\n" + SECOND + "\n" + FIRST + "\n" + TAIL
    assert removed(text, 2) == HEAD + "\n" + SECOND + "\n" + TAIL


def test_a_line_of_a_multiline_string_is_not_a_header() -> None:
    text = HEAD + "\n" + SECOND + "\n" + FIRST
    got = removed(text, 1)
    assert got == HEAD + "\n" + FIRST
    assert [t["id"] for t in tomllib.loads(got)["patch"]] == ["a"]


def test_every_patch_can_go() -> None:
    """The text edit itself may remove the last table (port retires such a manifest instead; see test_port)."""
    edit = ManifestText(HEAD + "\n" + FIRST + "\n" + TAIL)
    edit.remove(1)
    assert edit.text == HEAD + "\n" + TAIL
    assert "patch" not in edit.data


def test_comments_run_on_to_the_next_header_are_its_own() -> None:
    text = d(
        """
        [[patch]]
        id = "a"
        # a's: right under its last key, then a blank line

        [[patch]]
        id = "b"
        # c's: these run on to c's header,
        # with no blank line between
        [[patch]]
        id = "c"
        """
    )
    assert removed(text, 1) == text.split("\n", 4)[4]
    assert removed(text, 2) == text.replace('[[patch]]\nid = "b"\n', "")


def test_set_does_not_reach_into_a_subtable() -> None:
    """A key the patch does not set is added among its own keys, not after its [patch.hints] subtable."""
    edit = ManifestText(HEAD + "\n" + FIRST)
    edit.set(1, "class", "C")
    assert 'import = "import os"\nclass = "C"\n' in edit.text
    assert edit.data["patch"][0]["class"] == "C" and edit.data["patch"][0]["hints"] == {"FILE_NOT_FOUND": "a hint"}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_line_endings_are_kept(newline: str) -> None:
    text = (HEAD + "\n" + FIRST + "\n" + SECOND).replace("\n", newline)
    assert removed(text, 1) == (HEAD + "\n" + SECOND).replace("\n", newline)
