"""Carrying one patch over one step of the walk, by what its op is anchored to (``PortTraits.anchor``).

A patch that applied at the last stop and does not here is carried by the reason it gives:

* its file is gone (``FILE_NOT_FOUND``): git's rename detection names the file it became, and every patch
  on that file follows (a diff payload's header lines too); else an anchor port follows (a function, a
  class) is looked for as a def that moved;
* its class is gone (``CLASS_NOT_FOUND``): a new class with the most alike body is the class renamed, and
  every patch of the file that names it follows (its class, its ``Class.method``, a key that names the
  class as a definition: ``renamed_with_class``); a function that is not found that way is followed as a
  def that moved;
* its function is gone (``FUNCTION_NOT_FOUND``): the def of the files this commit changed with the same
  code, or the clearly most alike one (``follow.py``), and ``file`` / the anchor's key follow;
* upstream edited the region its op merges (``PortTraits.merge_on``): the payload is merged three ways
  (``merge.py``).

Anything else refuses the patch (``Stop``), with the reason and message of its verdict.  Every change is
recorded with the commit that needed it.
"""

from __future__ import annotations

from typing import Any

from patchkit.git import Commit
from patchkit.manifest import Patch
from patchkit.operations.base import Anchor, Merge
from patchkit.port.follow import Def, Match, defs_in, find_def, follow
from patchkit.port.merge import merge_payload
from patchkit.port.result import How, PortChange
from patchkit.port.state import PortState, Stop, anchor_key
from patchkit.results import PatchResult, Reason
from patchkit.wording import agree


def carry(state: PortState, patch: Patch, result: PatchResult, commit: Commit, touched: set[str]) -> bool:
    """Carry ``patch`` (which FAILs with ``result`` at ``commit``) one change further; True when it changed
    something (the caller loads the manifest again), ``Stop`` when it cannot be carried."""
    table = state.table(patch)
    traits = patch.op.port_traits
    reason = result.reason
    if reason is Reason.FILE_NOT_FOUND:
        moved = state.repo.renamed_to(state.tracks[patch.id].base.sha, commit.sha, patch.file)
        if moved is not None:
            retarget_file(state, patch.file, moved, commit)
            return True
        if traits.follows:
            return follow_def(state, patch, table, commit, touched)
        raise Stop(f"{patch.file} was deleted at {commit.short} and git names no file it became")
    if reason is Reason.CLASS_NOT_FOUND and traits.follows:
        if follow_class(state, patch, table, commit, touched):
            return True
        if traits.anchor is Anchor.FUNCTION:
            return follow_def(state, patch, table, commit, touched)
        raise Stop(f"{result.message}; no new class at {commit.short} is alike enough to be it renamed")
    if reason is Reason.FUNCTION_NOT_FOUND and traits.anchor is Anchor.FUNCTION:
        return follow_def(state, patch, table, commit, touched)
    if traits.merge is not Merge.NONE and reason is traits.merge_on:
        return merge_payload(state, patch, table, commit)
    raise Stop(f"{reason.value if reason else 'FAIL'}: {result.message}")


def retarget_file(state: PortState, old: str, new: str, commit: Commit) -> None:
    """Every patch on ``old`` now targets ``new`` (and a diff payload's header paths follow)."""
    for patch in state.current.patches:
        if patch.file != old:
            continue
        state.work.set(patch.id, "file", new)
        retarget_diff_header(state, patch, state.table(patch), old, new)
        state.record(patch.id, PortChange(How.MOVED, commit, "file", old, new, "git: file renamed"))


def retarget_diff_header(state: PortState, patch: Patch, table: dict[str, Any], old: str, new: str) -> None:
    """A diff payload's ``diff --git`` / ``---`` / ``+++`` lines that name ``old`` name ``new`` instead."""
    if not patch.op.port_traits.diff_payload:
        return
    path = state.work.payload_path(table)
    data = state.work.current[path]
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b"diff --git "):
            lines[i] = line.replace(b" a/" + old.encode(), b" a/" + new.encode()).replace(
                b" b/" + old.encode(), b" b/" + new.encode()
            )
            continue
        for mark in (b"--- a/", b"+++ b/", b"--- ", b"+++ "):
            if line.startswith(mark) and line[len(mark) :].rstrip(b"\r").split(b"\t")[0] == old.encode():
                lines[i] = mark + new.encode() + line[len(mark) + len(old.encode()) :]
                break
    state.work.current[path] = b"\n".join(lines)


def follow_def(state: PortState, patch: Patch, table: dict[str, Any], commit: Commit, touched: set[str]) -> bool:
    """A function anchor gone from where it was: the def it became, in the files this commit changed."""
    if patch.op.port_traits.anchor is not Anchor.FUNCTION:
        raise Stop(f"{patch.file}: the class of {patch.id} is gone at {commit.short}")
    key = anchor_key(patch)
    qualname = table[key]
    old = state.old_def(patch, state.tracks[patch.id].target or qualname)
    pool = state.candidates(commit, touched | {patch.file})
    match = follow(old, pool)
    if match.found is None:
        raise Stop(_not_found(old, commit, match))
    new = match.found
    if (new.file, new.qualname) == (patch.file, qualname):
        raise Stop(f"{qualname} is still in {patch.file} at {commit.short}, but the patch does not apply there")
    note = "the same code" if match.score == 1.0 else f"{match.score:.0%} alike"
    if new.file != patch.file:
        state.work.set(patch.id, "file", new.file)
        retarget_diff_header(state, patch, table, patch.file, new.file)
        state.record(patch.id, PortChange(How.MOVED, commit, "file", patch.file, new.file, note + _left(state, patch)))
    if new.qualname != qualname:
        _rename_function(state, patch, table, qualname, new.qualname)
        state.record(patch.id, PortChange(How.MOVED, commit, key, qualname, new.qualname, note))
    return True


def _left(state: PortState, moved: Patch) -> str:
    """A note naming the patches that stay on the file ``moved`` leaves (an import its payload needs may
    have to go with it: port does not guess which)."""
    staying = [p.id for p in state.current.patches if p.file == moved.file and p.id != moved.id]
    verb = agree(len(staying), "targets", "target")
    return f"; {', '.join(staying)} still {verb} {moved.file}" if staying else ""


def _rename_function(state: PortState, patch: Patch, table: dict[str, Any], old: str, new: str) -> None:
    """The function anchor ``old`` is ``new`` now; a payload that names the function itself keeps its name for
    it (the old qualname, or, as the loader falls back, its last part) under the op's ``payload_key``."""
    payload_key = patch.op.port_traits.payload_key
    if payload_key is not None and payload_key not in table:
        path = state.work.payload_path(table)
        text = state.work.current[path].decode("utf-8")
        state.work.set(patch.id, payload_key, old if find_def(str(path), text, old) else old.rsplit(".", 1)[-1])
    state.work.set(patch.id, anchor_key(patch), new)


def follow_class(state: PortState, patch: Patch, table: dict[str, Any], commit: Commit, touched: set[str]) -> bool:
    """The class a patch names (its class anchor, or its method's class) gone: the new class with the most
    alike body is it renamed, and every patch of the file that names it follows; False when none is."""
    key = anchor_key(patch)
    if patch.op.port_traits.anchor is Anchor.CLASS:
        old_name = table.get(key)
    else:
        old_name = table[key].rsplit(".", 1)[0] if "." in table[key] else None
    if not old_name:
        return False
    old = state.old_def(patch, old_name, is_class=True)
    before_text = state.text(state.tracks[patch.id].base, patch.file) or ""
    there_before = {d.qualname for d in defs_in(patch.file, before_text) if d.is_class}
    pool = [
        d
        for d in state.candidates(commit, touched | {patch.file})
        if d.is_class and not (d.file == patch.file and d.qualname in there_before)
    ]
    match = follow(old, pool)
    if match.found is None:
        return False
    new = match.found
    note = f"class body {match.score:.0%} alike"
    _rename_class(state, patch.file, old_name, new, commit, note)
    return True


def _rename_class(state: PortState, file: str, old: str, new: Def, commit: Commit, note: str) -> None:
    """Every patch of ``file`` that names class ``old`` now names ``new`` (moving with it to its file)."""
    for patch in state.current.patches:
        if patch.file != file:
            continue
        table = state.table(patch)
        traits = patch.op.port_traits
        changed = False
        if traits.anchor is Anchor.CLASS and table.get(anchor_key(patch)) == old:
            key = anchor_key(patch)
            if traits.payload_key is not None and traits.payload_key not in table:
                state.work.set(patch.id, traits.payload_key, old)
            state.work.set(patch.id, key, new.qualname)
            state.record(patch.id, PortChange(How.RENAMED, commit, key, old, new.qualname, note))
            changed = True
        if traits.anchor is Anchor.FUNCTION and table[anchor_key(patch)].startswith(old + "."):
            key = anchor_key(patch)
            value = new.qualname + table[key][len(old) :]
            _rename_function(state, patch, table, table[key], value)
            state.record(patch.id, PortChange(How.RENAMED, commit, key, table[key], value, note))
            changed = True
        for key in traits.renamed_with_class:
            if table.get(key) == old:
                state.work.set(patch.id, key, new.qualname)
                state.record(patch.id, PortChange(How.RENAMED, commit, key, old, new.qualname, note))
                changed = True
        if changed and new.file != file:
            state.work.set(patch.id, "file", new.file)
            state.record(patch.id, PortChange(How.MOVED, commit, "file", file, new.file, "with its class"))


def _not_found(old: Def, commit: Commit, match: Match) -> str:
    what = f"{'class' if old.is_class else 'def'} {old.qualname}"
    if not match.runners_up:
        return f"{what} is gone at {commit.short} and no file this commit changed defines one like it"
    close = ", ".join(f"{d.file}:{d.first} {d.qualname} ({score:.0%})" for d, score in match.runners_up)
    return f"{what} is gone at {commit.short}; not one candidate is clearly it: {close}"
