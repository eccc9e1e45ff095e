"""Merging a payload with upstream's edit of the region it changes, three ways, by the op's ``PortTraits.merge``.

The base is upstream's region at the last commit where the patch applied, ours is what the payload makes
of it, theirs is upstream's region now (``git merge-file``, ``follow.merge``):

* ``Merge.DEF``: the payload holds the anchor def's whole new version; the merged def replaces it in the
  payload (at its column), and the op's ``digest_key`` gets the digest of upstream's def now
  (``upstream_digest``), so the patch reads APPLY again instead of DRIFT;
* ``Merge.DEF_LINES``: the payload is a diff of the anchor def's lines; its hunks are applied to the base
  lines, merged, and written again as a diff of upstream's lines, the payload's comment lines kept;
* ``Merge.REGION``: the same for the op's own region (its ``target_span``: an import block, a statement).

An overlap (ours and upstream's change the same lines) refuses the patch, naming the line in upstream's
file and both sides.  Where upstream's version makes some of the lines the patch makes, the first such
commit is remembered: the assembled port asks whether the rest still earns its place.
"""

from __future__ import annotations

import ast
from typing import Any

from patchkit.capture.textdiff import unified_diff
from patchkit.git import Commit
from patchkit.manifest import Patch
from patchkit.operations.base import Merge
from patchkit.operations.hunks import match_hunks, parse_diff, splice_hunks, split_lines
from patchkit.port.follow import Def, find_def, indent, merge, parse, similarity, taken
from patchkit.port.follow import Merge as Merged
from patchkit.port.result import How, PortChange, PortConflict
from patchkit.port.state import PortState, Stop, anchor_key


def merge_payload(state: PortState, patch: Patch, table: dict[str, Any], commit: Commit) -> bool:
    """Merge upstream's edit at ``commit`` into the patch's payload, as its op's traits say; True (it changed)."""
    kind = patch.op.port_traits.merge
    if kind is Merge.DEF:
        return _merge_def(state, patch, table, commit)
    if kind is Merge.DEF_LINES:
        return _merge_def_lines(state, patch, table, commit)
    if kind is Merge.REGION:
        return _merge_region(state, patch, table, commit)
    raise Stop(f"{patch.op_name} has no region to merge")


def _sides(state: PortState, patch: Patch, qualname: str, commit: Commit) -> tuple[Def, Def, str]:
    """Upstream's def where the patch last applied (the merge base), upstream's def at ``commit``
    (theirs), and the file's text there."""
    base = state.old_def(patch, state.tracks[patch.id].target or qualname)
    here = state.text(commit, patch.file) or ""
    theirs = find_def(patch.file, here, qualname)
    if theirs is None:
        raise Stop(f"{qualname} is not in {patch.file} at {commit.short}")
    return base, theirs, here


def _merged(patch: Patch, what: str, commit: Commit, first: int, result: Merged) -> str:
    """The merged text, or the overlap as a ``Stop`` naming the line in upstream's file (``first``: the
    file line of the merged region's first line) and both sides."""
    if result.text is None:
        raise Stop(
            f"ours and upstream's change the same lines of {what}",
            PortConflict(commit, patch.file, first + result.upstream_line, result.ours, result.upstream),
        )
    return result.text


def _merge_def(state: PortState, patch: Patch, table: dict[str, Any], commit: Commit) -> bool:
    traits = patch.op.port_traits
    qualname = table[anchor_key(patch)]
    base, theirs, here = _sides(state, patch, qualname, commit)
    payload_path = state.work.payload_path(table)
    payload_text = state.work.current[payload_path].decode("utf-8")
    name = table.get(traits.payload_key, qualname) if traits.payload_key is not None else qualname
    ours = find_def(str(payload_path), payload_text, name) or find_def(
        str(payload_path), payload_text, name.rsplit(".", 1)[-1]
    )
    if ours is None:
        raise Stop(f"the payload defines no {name}")
    merged = _merged(patch, qualname, commit, theirs.first, merge(base.text, ours.text, theirs.text))
    _note_taken(state, patch, commit, base.text, ours.text, theirs.text)
    state.work.current[payload_path] = _splice(payload_text, ours, merged).encode("utf-8")
    parsed = parse(patch.file, here)
    found = patch.op.upstream_digest(parsed) if parsed is not None else None
    if found is None or traits.digest_key is None:
        raise Stop(f"cannot take the digest of {qualname} at {commit.short}")
    old_expect = table[traits.digest_key]
    state.work.set(patch.id, traits.digest_key, found)
    shown = old_expect if isinstance(old_expect, str) else ", ".join(old_expect)
    note = f"upstream's edit of {qualname} merged into {table['source']}"
    kept = similarity(base.text, ours.text)
    if traits.merge_advice and kept >= 0.5 and _def_line(base.text) == _def_line(ours.text):
        note += f"; the payload keeps {kept:.0%} of upstream's lines: {traits.merge_advice}"
    state.record(patch.id, PortChange(How.MERGED, commit, traits.digest_key, shown, found, note))
    return True


def _merge_def_lines(state: PortState, patch: Patch, table: dict[str, Any], commit: Commit) -> bool:
    qualname = table[anchor_key(patch)]
    base, theirs, _here = _sides(state, patch, qualname, commit)
    if base.col != theirs.col:
        raise Stop(f"{qualname} changed its indentation at {commit.short}: the diff's lines cannot follow")
    return _merge_hunks(state, patch, table, commit, qualname, base.raw, theirs.raw, theirs.first)


def _merge_region(state: PortState, patch: Patch, table: dict[str, Any], commit: Commit) -> bool:
    """The op's own region (an import block, a statement) at the last commit where the patch applied and at
    ``commit``, merged as a function's lines are."""
    op = patch.op
    track = state.tracks[patch.id]

    def region(at: Commit, path: str) -> tuple[int, str]:
        text = state.text(at, path) or ""
        parsed = parse(path, text)
        span = op.target_span(parsed) if parsed is not None else None
        if span is None:
            raise Stop(f"{path} at {at.short} has no region for {patch.id} ({op.merge_name})")
        first, last = span
        return first, "".join(split_lines(text)[first - 1 : last])

    _first, base_raw = region(track.base, track.file)
    first, theirs_raw = region(commit, patch.file)
    return _merge_hunks(state, patch, table, commit, op.merge_name, base_raw, theirs_raw, first)


def _merge_hunks(
    state: PortState,
    patch: Patch,
    table: dict[str, Any],
    commit: Commit,
    what: str,
    base_raw: str,
    theirs_raw: str,
    theirs_first: int,
) -> bool:
    """A diff payload's hunks applied to the region's base lines (ours), merged with upstream's lines
    (theirs), and written again as a diff of upstream's lines: the payload's comment lines kept."""
    track = state.tracks[patch.id]
    payload_path = state.work.payload_path(table)
    raw = state.work.current[payload_path]
    _old, _new, hunks = parse_diff(raw)
    base_lines = split_lines(base_raw)
    spots = match_hunks(base_lines, hunks, reverse=False)
    if not isinstance(spots, list):
        raise Stop(f"the diff of {patch.id} does not apply at {track.base.short} either")
    ours = splice_hunks(base_lines, hunks, spots, reverse=False)
    merged = _merged(patch, what, commit, theirs_first, merge(base_raw, ours, theirs_raw))
    _note_taken(state, patch, commit, base_raw, ours, theirs_raw)
    diff = unified_diff(patch.file, theirs_raw, merged)
    preamble = b"".join(line for line in raw.splitlines(keepends=True) if not line.startswith(b"diff --git"))
    head = preamble.split(b"--- ", 1)[0] if b"--- " in preamble else b""
    body = "".join(line for line in diff.splitlines(keepends=True) if not line.startswith("diff --git"))
    state.work.current[payload_path] = head + body.encode("utf-8")
    note = f"upstream's edit of {what} merged; the diff's hunks rewritten against it"
    state.record(patch.id, PortChange(How.MERGED, commit, "source", table["source"], table["source"], note))
    return True


def _note_taken(state: PortState, patch: Patch, commit: Commit, base: str, ours: str, theirs: str) -> None:
    """Remember the first commit whose edit made some of the lines the patch makes (upstream took part of it)."""
    track = state.tracks[patch.id]
    made, of = taken(base, ours, theirs)
    if made and track.partly is None:
        track.partly = (commit, made, of)


def _def_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.lstrip().startswith(("def ", "async def "))), "")


def _splice(payload: str, old: Def, merged: str) -> str:
    """The payload with the def ``old`` (its lines) replaced by ``merged`` at the def's column."""
    newline = "\r\n" if "\r\n" in payload else "\n"
    lines = payload.splitlines(keepends=True)
    new = indent(merged, old.col, newline)
    out = "".join(lines[: old.first - 1] + new + lines[old.last :])
    try:
        ast.parse(out)
    except SyntaxError as exc:
        raise Stop(f"the merged payload is not valid Python ({exc.msg} at line {exc.lineno})") from None
    return out
