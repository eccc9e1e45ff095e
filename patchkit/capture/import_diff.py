"""``patchkit import-diff``: capture a patch file without touching the user's tree.

The patch is applied with ``git apply --index`` in a temporary linked
worktree checked out (detached) at the base; that worktree is then captured
like a hand-edited tree, and removed.  When ``git apply`` refuses, each file
section of the patch is matched against the base with the ``diff`` op's own
zero-fuzz matcher, so the error names the file, the hunk, its line and the
expected versus found line.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from patchkit.capture.core import CaptureReport, capture
from patchkit.errors import RefusedError, UsageError
from patchkit.git import GitFailed, Repo
from patchkit.operations.hunks import Mismatch, match_hunks, parse_diff, split_lines
from patchkit.written import Written

_FILE_START = re.compile(rb"^(diff --git |--- )", re.M)


def import_diff(
    repo: Repo,
    patch: Path,
    *,
    name: str,
    base: str | None,
    out: Path,
    force: bool,
    written: Written | None = None,
) -> CaptureReport:
    """``written``: told the manifest's and the payloads' paths once they are published whole."""
    if not patch.is_file():
        raise UsageError(f"patch file {patch} does not exist", hint="give the path of a .patch or `git diff` output")
    data = patch.read_bytes()
    _require_a_patch(patch, data)
    commit = repo.commit(base or "HEAD")
    scratch = Path(tempfile.mkdtemp(prefix="patchkit-import-diff-"))
    tree = scratch / "tree"
    try:
        repo.add_worktree(tree, commit.sha)
        with Repo.discover(tree) as work:
            try:
                work.apply_patch(patch.resolve())
            except GitFailed as exc:
                raise RefusedError(
                    f"{patch} does not apply at {commit.short}: {_why(repo, commit.sha, data, exc)}; "
                    "nothing was written",
                    hint="pass --base REV with the commit the patch was made against",
                ) from None
            return capture(work, name=name, base=commit.sha, out=out, force=force, verb="import-diff", written=written)
    finally:
        repo.remove_worktree(tree)
        shutil.rmtree(scratch, ignore_errors=True)


_HUNK_LINE = re.compile(rb"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)
_BINARY = re.compile(rb"^(GIT binary patch|Binary files .* differ)\r?$", re.M)
# git's extended header lines: a section made of these alone (a rename, a mode change) has no hunks
# and is still a patch, refused later by capture with the file named.
_EXTENDED = re.compile(rb"^(rename from|rename to|copy from|new file mode|deleted file mode|old mode|new mode) ", re.M)


def _require_a_patch(patch: Path, data: bytes) -> None:
    """Refuse, as bad input, a file that is not a text patch with at least one hunk.

    ``git apply`` says only "No valid patches in input" (or applies nothing at all, exit 0, for a
    file of headers), so the file is named here with what it is not, before any worktree exists.
    """
    what: str | None = None
    if not data.strip():
        what = "is empty, not a patch"
    elif _BINARY.search(data):
        what = "is a binary patch; import-diff carries edits of text files only"
    elif not _FILE_START.search(data):
        what = "is not a patch: no 'diff --git' or '--- ' / '+++ ' header line"
    elif not _HUNK_LINE.search(data) and not _EXTENDED.search(data):
        what = "is a patch with no hunks ('@@ -a,b +c,d @@' lines), so there is nothing to import"
    if what is not None:
        raise UsageError(f"{patch} {what}", hint="give the output of `git diff` or `diff -u` against the base")


def _sections(data: bytes) -> list[bytes]:
    starts = [m.start() for m in _FILE_START.finditer(data)]
    out = []
    for index, start in enumerate(starts):
        if data[start:].startswith(b"--- ") and index > 0 and data[starts[index - 1] :].startswith(b"diff --git "):
            continue  # the '---' line of a section already started by 'diff --git'
        out.append(start)
    return [data[s:e] for s, e in zip(out, [*out[1:], len(data)], strict=False)]


def _why(repo: Repo, sha: str, data: bytes, exc: GitFailed) -> str:
    """The first hunk that does not match the base, in the diff op's words; else git's own message."""
    for section in _sections(data):
        try:
            old_path, _new_path, hunks = parse_diff(section)
        except ValueError:
            continue
        if old_path is None:
            continue
        entry = repo.ls_tree(sha, [old_path]).get(old_path)
        if entry is None:
            return f"{old_path} does not exist there"
        text = repo.read_blob(entry.oid).decode("utf-8", "replace")
        found = match_hunks(split_lines(text), hunks, reverse=False)
        if isinstance(found, Mismatch):
            shown = "end of file" if found.found is None else repr(found.found.rstrip("\n"))
            expected = repr((found.expected or "").rstrip("\n"))
            return (
                f"{old_path}: hunk {found.hunk.number} ({found.hunk.header}) does not match at line {found.line}: "
                f"expected {expected}, found {shown}"
            )
    lines = [line.removeprefix("error: ") for line in exc.stderr.splitlines() if line.strip()]
    return "; ".join(lines[:2]) or "git apply failed"
