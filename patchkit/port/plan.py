"""`port`: carry a manifest forward to a later upstream commit, as a rebase carries commits.

The walk starts at a commit where the manifest applies (``--from``, or the
newest first-parent ancestor of the target where no required patch FAILs)
and goes down the first-parent line to the target, one commit at a time,
stopping only at commits that touch a file the manifest (as ported so far)
targets.  At each such commit the working manifest is evaluated from the
commit's blobs (no checkout); a patch that applied at the previous stop and
does not apply here is carried over this one step:

* its file was renamed (git's rename detection): ``file`` follows;
* its function or method is gone: it is looked for in the files this commit
  changed, by code (``port/follow.py``), and ``file`` / ``function``
  follow;
* its class is gone: a new class with the most alike body is the class
  renamed, and every patch of that file that names the class follows
  (``class``, ``Class.method``, ``before``);
* upstream edited the function a ``replace-function`` rewrites (DRIFT), or
  the lines around an ``edit-function``'s, ``edit-imports``' or
  ``edit-statement``'s hunks (CONFLICT; the op's own region is what is
  merged: the function, the import block, the statement): the payload is merged
  three ways (base: upstream's version at the last commit where the patch
  applied; ours: the payload; theirs: upstream's version now) and ``expect``
  gets the new digest; an overlap refuses the patch, naming both sides;
* a patch that applied and now reads SKIP is one upstream took, at this
  commit.
* a variant of a ``[[group]]`` is carried as any patch is when it was the
  one in effect and no variant of its group fits here; while another one
  fits, it is the group's unused variant and stays as written.

Porting step by step is what makes a merge work where one jump from the
start to the target would conflict (upstream first taking part of the
change, then editing it), and what lets every change be named with the
commit that needed it.

Nothing is written here: the result is a plan (every changed file's old and
new bytes) that ``commands/port.py`` prints, or writes all at once.  Every
edit is made on a copy of the manifest and its payloads in a temporary
directory, loaded again after each change with the ordinary loader, so a
ported manifest is checked exactly as any manifest is; the plan is only
offered when the copy, evaluated at the target, has no required FAIL.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any

from patchkit.capture.textdiff import unified_diff
from patchkit.engine.check import check_range
from patchkit.engine.evaluate import Evaluation, decode, evaluate, render
from patchkit.errors import RevisionError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, Patch, load_manifest
from patchkit.manifest.edit import ManifestText
from patchkit.operations.edit_function import Region, ScopedHunks
from patchkit.operations.hunks import match_hunks, parse_diff, splice_hunks, split_lines
from patchkit.operations.replace_function import function_digest
from patchkit.port.follow import Def, Match, Merge, defs_in, find_def, follow, indent, merge, parse, similarity, taken
from patchkit.results import PatchResult, Reason, Status
from patchkit.sources import CommitSource

# How far back the start is looked for when --from is not given (first-parent commits before the target).
START_SEARCH = (64, 1024, 8192)
# The ops whose target port can follow when it moves, and the table key that names it.
FUNCTION_OPS = {"replace-function": "function", "edit-function": "function", "insert": "function"}
CLASS_OPS = {"add-methods": "class", "remove-definitions": "class"}


class How(str, Enum):
    """How a patch was carried to the target commit (one word per patch in the report)."""

    MOVED = "moved"  # its file, function or method moved: `file` / `function` follow
    RENAMED = "renamed"  # its class was renamed: `class` / `Class.method` follow
    MERGED = "merged"  # upstream's edit merged into the payload, `expect` refreshed
    UNCHANGED = "unchanged"  # applies at the target as it is
    UPSTREAMED = "upstreamed"  # upstream took the change
    CONFLICT = "conflict"  # ours and upstream's edit the same lines: refused
    FAILED = "failed"  # does not apply at the target, and port cannot carry it (the reason says why)


# When a patch changed in several ways, the word the report gives it (the rest are in `changes`).
_PRECEDENCE = (How.CONFLICT, How.FAILED, How.UPSTREAMED, How.MERGED, How.RENAMED, How.MOVED)


@dataclass(frozen=True)
class PortChange:
    """One change port made to one patch: what (``how``), at which upstream commit it was needed, the manifest
    key (or payload) it changed, from what to what, and a note (a suggestion, what the merge did)."""

    how: How
    commit: Commit | None
    key: str
    before: str
    after: str
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "how": self.how.value,
            "commit": self.commit.sha if self.commit else None,
            "subject": self.commit.subject if self.commit else None,
            "key": self.key,
            "from": self.before,
            "to": self.after,
            "note": self.note or None,
        }


@dataclass(frozen=True)
class PortConflict:
    """Where ours and upstream's edit the same lines: the commit, the file and line (upstream's side, in the
    file at that commit), and both sides' lines."""

    commit: Commit
    file: str
    line: int | None
    ours: tuple[str, ...]
    upstream: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "file": self.file,
            "line": self.line,
            "ours": list(self.ours),
            "upstream": list(self.upstream),
        }


@dataclass(frozen=True)
class PatchPort:
    """One patch's port: how, every change with its commit, its verdict at the target, and (refused) why."""

    patch: str
    op: str
    required: bool
    how: How
    changes: tuple[PortChange, ...]
    result: PatchResult  # at the target, as ported
    message: str  # one line for people: what happened
    failed_at: Commit | None = None  # where it stopped applying and could not be carried
    conflict: PortConflict | None = None
    upstreamed_at: Commit | None = None
    dropped: bool = False
    evidence: Evidence | None = None  # upstream took part of it: measure whether the rest still earns its place

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "op": self.op,
            "required": self.required,
            "how": self.how.value,
            "message": self.message,
            "changes": [c.to_json() for c in self.changes],
            "status": self.result.status.value,
            "reason": self.result.reason.value if self.result.reason else None,
            "file": self.result.file,
            "failed_at": self.failed_at.sha if self.failed_at else None,
            "conflict": self.conflict.to_json() if self.conflict else None,
            "upstreamed_at": self.upstreamed_at.sha if self.upstreamed_at else None,
            "dropped": self.dropped,
            "evidence": self.evidence.to_json() if self.evidence else None,
        }


@dataclass(frozen=True)
class Evidence:
    """Why a ported patch may no longer be needed (upstream made some of its lines, at ``commit``) and the
    ``bench --without`` that measures it at the target."""

    commit: Commit
    made: int  # of the lines the patch adds or rewrites, how many upstream's version added too
    of: int
    command: str

    @property
    def why(self) -> str:
        return (
            f"upstream made {self.made} of its {self.of} changed lines at {self.commit.short} {self.commit.subject!r}"
        )

    def to_json(self) -> dict[str, object]:
        return {"commit": self.commit.sha, "made": self.made, "of": self.of, "why": self.why, "command": self.command}


@dataclass(frozen=True)
class FileChange:
    """A file of the manifest (the TOML or a payload) as port would leave it: its old and new bytes."""

    path: Path
    display: str
    before: bytes
    after: bytes


@dataclass(frozen=True)
class PortPlan:
    """What ``port`` found: the walk (start, target, commits walked and stopped at), every patch's port, and the
    file changes; ``refused`` when a required patch cannot be carried (then nothing may be written)."""

    manifest: Manifest
    start: Commit
    target: Commit
    walked: int  # first-parent commits after the start up to the target
    stops: int  # of those, commits that touch a target file (evaluated)
    patches: tuple[PatchPort, ...]
    files: tuple[FileChange, ...]
    start_given: bool  # --from, or found as the newest commit where the manifest applies

    @property
    def refused(self) -> bool:
        return any(p.required and p.result.status is Status.FAIL for p in self.patches)

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "command": "port",
            "manifest": self.manifest.to_json(),
            "from": {**self.start.to_json(), "given": self.start_given},
            "to": self.target.to_json(),
            "walked": self.walked,
            "stops": self.stops,
            "refused": self.refused,
            "patches": [p.to_json() for p in self.patches],
            "files": [f.display for f in self.files],
        }


# -- the working copy -------------------------------------------------------------------------


class Workspace:
    """The manifest and its payloads, copied into a temporary directory (the same layout relative to
    each other), where port edits them and loads them again with the ordinary loader."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.path = manifest.path
        raw = self.path.read_bytes()
        self.original: dict[Path, bytes] = {self.path: raw}
        self.toml = ManifestText(raw.decode("utf-8"))
        for table in self.toml.data["patch"]:
            if "source" in table:
                payload = (self.path.parent / table["source"]).resolve()
                if payload not in self.original:
                    self.original[payload] = payload.read_bytes()
        self.current: dict[Path, bytes] = dict(self.original)
        self.root = Path(os.path.commonpath([str(p.parent) for p in self.original]))
        self.tmp = Path(tempfile.mkdtemp(prefix="patchkit-port-"))

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _mirror(self, path: Path) -> Path:
        return self.tmp / path.relative_to(self.root)

    def load(self) -> Manifest:
        self.current[self.path] = self.toml.text.encode("utf-8")
        for path, data in self.current.items():
            target = self._mirror(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return load_manifest(self._mirror(self.path))

    def table(self, patch_id: str) -> tuple[int, dict[str, object]]:
        for index, table in enumerate(self.toml.data["patch"], start=1):
            if table["id"] == patch_id:
                return index, table
        raise KeyError(patch_id)

    def set(self, patch_id: str, key: str, value: object) -> None:
        index, _table = self.table(patch_id)
        self.toml.set(index, key, value)

    def payload_path(self, table: Mapping[str, object]) -> Path:
        return (self.path.parent / str(table["source"])).resolve()

    def changes(self) -> list[FileChange]:
        self.current[self.path] = self.toml.text.encode("utf-8")
        out = []
        for path, before in self.original.items():
            after = self.current[path]
            if after != before:
                out.append(FileChange(path, _display(path), before, after))
        return out


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


# -- the walk ---------------------------------------------------------------------------------------


class _Stop(Exception):
    """A patch that cannot be carried over this step: why, and (an overlap) the two sides."""

    def __init__(self, message: str, conflict: PortConflict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.conflict = conflict


@dataclass
class _Track:
    """One patch along the walk: where it last applied (commit, file, target) and what port did to it."""

    base: Commit
    file: str
    target: str | None
    changes: list[PortChange] = field(default_factory=list)
    last: Status = Status.APPLY  # its verdict at the last stop
    failed: tuple[Commit, str, PortConflict | None] | None = None
    upstreamed: Commit | None = None
    partly: tuple[Commit, int, int] | None = None  # where upstream first made some of its lines: (commit, made, of)
    in_effect: bool = True  # its code applied or was in place at the last stop (not a group's unused variant)


class Porter:
    """The walk from ``start`` to ``target`` over one working copy of the manifest (see the module doc)."""

    def __init__(self, manifest: Manifest, repo: Repo, start: Start, target: Commit) -> None:
        self.repo = repo
        self.manifest = manifest
        self.found = start
        self.start = start.commit
        self.target = target
        self.work = Workspace(manifest)
        self.current = self.work.load()
        self.tracks: dict[str, _Track] = {}

    def _text(self, commit: Commit, path: str) -> str | None:
        text, problem = decode(CommitSource(self.repo, commit).read(path))
        return None if problem is not None else text

    def _evaluate(self, commit: Commit) -> Evaluation:
        return evaluate(self.current, CommitSource(self.repo, commit), hints=False)

    def run(self, walk: Sequence[tuple[Commit, tuple[str, ...]]]) -> tuple[Evaluation, int]:
        """Walk ``walk`` (first-parent commits after the start, with the paths each touches); the evaluation
        at the last stop (the target) and how many commits were stopped at."""
        first = self._evaluate(self.start)
        for patch, result in zip(self.current.patches, first.results, strict=True):
            self.tracks[patch.id] = _Track(
                self.start, patch.file, _target_of(self._table(patch)), last=result.status, in_effect=result.in_effect
            )
        stops = 0
        last = first
        for commit, paths in walk:
            touched = set(paths)
            if not touched & set(self.current.files()) and commit.sha != self.target.sha:
                continue
            stops += 1
            last = self._step(commit, touched)
        return last, stops

    def _table(self, patch: Patch) -> dict[str, Any]:
        return self.work.table(patch.id)[1]

    def _to_carry(self, patch: Patch, result: PatchResult) -> bool:
        """A patch that applied (or was in place) at the last stop and does not here, for a reason of its own.

        A variant of a ``[[group]]`` is carried when it was the one in effect and no variant fits here (the
        group leaves it its own FAIL); while another variant fits, it is that group's unused one
        (OTHER_VARIANT, ``ok``) and stays as it is, for the commits it serves."""
        track = self.tracks[patch.id]
        return (
            not result.ok
            and track.failed is None
            and track.last in (Status.APPLY, Status.SKIP)
            and track.in_effect
            and result.reason is not Reason.DEPENDENCY
        )

    def _step(self, commit: Commit, touched: set[str]) -> Evaluation:
        """Evaluate at ``commit``; carry every patch that stopped applying here, one change at a time (the
        manifest is loaded again after each: a patch may have moved along with another), until none is left."""
        here = self._evaluate(commit)
        for _round in range(16):
            carried = False
            for patch, result in zip(self.current.patches, here.results, strict=True):
                if not self._to_carry(patch, result):
                    continue
                try:
                    carried = self._carry(patch, result, commit, touched)
                except _Stop as stop:
                    self.tracks[patch.id].failed = (commit, stop.message, stop.conflict)
                if carried:
                    break
            if not carried:
                break
            self.current = self.work.load()
            here = self._evaluate(commit)
        for patch, result in zip(self.current.patches, here.results, strict=True):
            track = self.tracks[patch.id]
            if result.status is Status.APPLY:
                track.base, track.file, track.target = commit, patch.file, _target_of(self._table(patch))
            elif result.status is Status.SKIP and result.reason is not Reason.OTHER_VARIANT:
                if track.last is Status.APPLY and track.upstreamed is None:
                    track.upstreamed = commit
            elif self._to_carry(patch, result):
                why = f"{result.reason.value if result.reason else result.status.value}: {result.message}"
                track.failed = (commit, why, None)
            track.last = result.status
            track.in_effect = result.in_effect
        return here

    # -- carrying one patch over one step ----------------------------------------------------

    def _carry(self, patch: Patch, result: PatchResult, commit: Commit, touched: set[str]) -> bool:
        table = self._table(patch)
        op = table["op"]
        reason = result.reason
        if reason is Reason.FILE_NOT_FOUND:
            moved = self.repo.renamed_to(self.tracks[patch.id].base.sha, commit.sha, patch.file)
            if moved is not None:
                self._retarget_file(patch.file, moved, commit)
                return True
            if op in FUNCTION_OPS or op in CLASS_OPS:
                return self._follow_def(patch, table, commit, touched)
            raise _Stop(f"{patch.file} was deleted at {commit.short} and git names no file it became")
        if reason is Reason.CLASS_NOT_FOUND and (op in CLASS_OPS or op in FUNCTION_OPS):
            if self._follow_class(patch, table, commit, touched):
                return True
            if op in FUNCTION_OPS:
                return self._follow_def(patch, table, commit, touched)
            raise _Stop(f"{result.message}; no new class at {commit.short} is alike enough to be it renamed")
        if reason is Reason.FUNCTION_NOT_FOUND and op in FUNCTION_OPS:
            return self._follow_def(patch, table, commit, touched)
        if reason is Reason.DRIFT and op == "replace-function":
            return self._merge_replacement(patch, table, commit)
        if reason is Reason.CONFLICT and op == "edit-function":
            return self._merge_edit(patch, table, commit)
        if reason is Reason.CONFLICT and op in ("edit-imports", "edit-statement"):
            return self._merge_region(patch, table, commit)
        raise _Stop(f"{reason.value if reason else 'FAIL'}: {result.message}")

    def _record(self, patch_id: str, change: PortChange) -> None:
        self.tracks[patch_id].changes.append(change)

    def _retarget_file(self, old: str, new: str, commit: Commit) -> None:
        """Every patch on ``old`` now targets ``new`` (and an edit-function diff's header paths follow)."""
        for patch in self.current.patches:
            if patch.file != old:
                continue
            self.work.set(patch.id, "file", new)
            self._retarget_diff_header(self._table(patch), old, new)
            self._record(patch.id, PortChange(How.MOVED, commit, "file", old, new, "git: file renamed"))

    def _retarget_diff_header(self, table: Mapping[str, object], old: str, new: str) -> None:
        if table["op"] not in ("edit-function", "edit-statement", "edit-imports", "diff"):
            return
        path = self.work.payload_path(table)
        data = self.work.current[path]
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
        self.work.current[path] = b"\n".join(lines)

    def _old_def(self, patch: Patch, qualname: str, *, is_class: bool = False) -> Def:
        track = self.tracks[patch.id]
        text = self._text(track.base, track.file)
        found = find_def(track.file, text, qualname) if text is not None else None
        if found is None or found.is_class != is_class:
            raise _Stop(
                f"{qualname} is not in {track.file} at {track.base.short} either (where the patch last applied)"
            )
        return found

    def _candidates(self, commit: Commit, files: set[str]) -> list[Def]:
        out: list[Def] = []
        for path in sorted(files):
            if not path.endswith((".py", ".pyi")):
                continue
            text = self._text(commit, path)
            if text is not None:
                out.extend(defs_in(path, text))
        return out

    def _follow_def(self, patch: Patch, table: dict[str, Any], commit: Commit, touched: set[str]) -> bool:
        key = FUNCTION_OPS.get(table["op"], "")
        if not key:
            raise _Stop(f"{patch.file}: the class of {patch.id} is gone at {commit.short}")
        qualname = table[key]
        old = self._old_def(patch, self.tracks[patch.id].target or qualname)
        pool = self._candidates(commit, touched | {patch.file})
        match = follow(old, pool)
        if match.found is None:
            raise _Stop(_not_found(old, commit, match))
        new = match.found
        if (new.file, new.qualname) == (patch.file, qualname):
            raise _Stop(f"{qualname} is still in {patch.file} at {commit.short}, but the patch does not apply there")
        note = "the same code" if match.score == 1.0 else f"{match.score:.0%} alike"
        if new.file != patch.file:
            self.work.set(patch.id, "file", new.file)
            self._retarget_diff_header(table, patch.file, new.file)
            self._record(
                patch.id, PortChange(How.MOVED, commit, "file", patch.file, new.file, note + self._left(patch))
            )
        if new.qualname != qualname:
            self._set_function(patch.id, table, qualname, new.qualname)
            self._record(patch.id, PortChange(How.MOVED, commit, key, qualname, new.qualname, note))
        return True

    def _left(self, moved: Patch) -> str:
        """A note naming the patches that stay on the file ``moved`` leaves (an import its payload needs may
        have to go with it: port does not guess which)."""
        staying = [p.id for p in self.current.patches if p.file == moved.file and p.id != moved.id]
        return f"; {', '.join(staying)} still target {moved.file}" if staying else ""

    def _set_function(self, patch_id: str, table: dict[str, Any], old: str, new: str) -> None:
        if table["op"] == "replace-function" and "payload_function" not in table:
            # The payload keeps its own name for it: the old qualname, or (as the loader falls back) its last part.
            path = self.work.payload_path(table)
            text = self.work.current[path].decode("utf-8")
            self.work.set(
                patch_id, "payload_function", old if find_def(str(path), text, old) else old.rsplit(".", 1)[-1]
            )
        self.work.set(patch_id, "function", new)

    def _follow_class(self, patch: Patch, table: dict[str, Any], commit: Commit, touched: set[str]) -> bool:
        if table["op"] in CLASS_OPS:
            old_name = table.get("class")
        else:
            old_name = table["function"].rsplit(".", 1)[0] if "." in table["function"] else None
        if not old_name:
            return False
        old = self._old_def(patch, old_name, is_class=True)
        before_text = self._text(self.tracks[patch.id].base, patch.file) or ""
        there_before = {d.qualname for d in defs_in(patch.file, before_text) if d.is_class}
        pool = [
            d
            for d in self._candidates(commit, touched | {patch.file})
            if d.is_class and not (d.file == patch.file and d.qualname in there_before)
        ]
        match = follow(old, pool)
        if match.found is None:
            return False
        new = match.found
        note = f"class body {match.score:.0%} alike"
        self._rename_class(patch.file, old_name, new, commit, note)
        return True

    def _rename_class(self, file: str, old: str, new: Def, commit: Commit, note: str) -> None:
        """Every patch of ``file`` that names class ``old`` now names ``new`` (moving with it to its file)."""
        for patch in self.current.patches:
            if patch.file != file:
                continue
            table = self._table(patch)
            changed = False
            if table["op"] in CLASS_OPS and table.get("class") == old:
                if table["op"] == "add-methods" and "payload_class" not in table:
                    self.work.set(patch.id, "payload_class", old)
                self.work.set(patch.id, "class", new.qualname)
                self._record(patch.id, PortChange(How.RENAMED, commit, "class", old, new.qualname, note))
                changed = True
            if table["op"] in FUNCTION_OPS and table["function"].startswith(old + "."):
                value = new.qualname + table["function"][len(old) :]
                self._set_function(patch.id, table, table["function"], value)
                self._record(patch.id, PortChange(How.RENAMED, commit, "function", table["function"], value, note))
                changed = True
            if table["op"] == "add-definitions" and table.get("before") == old:
                self.work.set(patch.id, "before", new.qualname)
                self._record(patch.id, PortChange(How.RENAMED, commit, "before", old, new.qualname, note))
                changed = True
            if changed and new.file != file:
                self.work.set(patch.id, "file", new.file)
                self._record(patch.id, PortChange(How.MOVED, commit, "file", file, new.file, "with its class"))

    # -- merges ---------------------------------------------------------------------------------

    def _sides(self, patch: Patch, qualname: str, commit: Commit) -> tuple[Def, Def, str]:
        """Upstream's def where the patch last applied (the merge base), upstream's def at ``commit``
        (theirs), and the file's text there."""
        base = self._old_def(patch, self.tracks[patch.id].target or qualname)
        here = self._text(commit, patch.file) or ""
        theirs = find_def(patch.file, here, qualname)
        if theirs is None:
            raise _Stop(f"{qualname} is not in {patch.file} at {commit.short}")
        return base, theirs, here

    @staticmethod
    def _merged(patch: Patch, what: str, commit: Commit, first: int, result: Merge) -> str:
        """The merged text, or the overlap as a ``_Stop`` naming the line in upstream's file (``first``: the
        file line of the merged region's first line) and both sides."""
        if result.text is None:
            raise _Stop(
                f"ours and upstream's change the same lines of {what}",
                PortConflict(commit, patch.file, first + result.upstream_line, result.ours, result.upstream),
            )
        return result.text

    def _merge_replacement(self, patch: Patch, table: dict[str, Any], commit: Commit) -> bool:
        qualname = table["function"]
        base, theirs, here = self._sides(patch, qualname, commit)
        payload_path = self.work.payload_path(table)
        payload_text = self.work.current[payload_path].decode("utf-8")
        name = table.get("payload_function", qualname)
        ours = find_def(str(payload_path), payload_text, name) or find_def(
            str(payload_path), payload_text, name.rsplit(".", 1)[-1]
        )
        if ours is None:
            raise _Stop(f"the payload defines no {name}")
        merged = self._merged(patch, qualname, commit, theirs.first, merge(base.text, ours.text, theirs.text))
        self._note_taken(patch, commit, base.text, ours.text, theirs.text)
        self.work.current[payload_path] = _splice(payload_text, ours, merged).encode("utf-8")
        state = parse(patch.file, here)
        found = function_digest(state, qualname) if state is not None else None
        if not isinstance(found, tuple):
            raise _Stop(f"cannot take the digest of {qualname} at {commit.short}")
        old_expect = table["expect"]
        self.work.set(patch.id, "expect", found[0])
        shown = old_expect if isinstance(old_expect, str) else ", ".join(old_expect)
        note = f"upstream's edit of {qualname} merged into {table['source']}"
        kept = similarity(base.text, ours.text)
        if kept >= 0.5 and _def_line(base.text) == _def_line(ours.text):
            note += (
                f"; the payload keeps {kept:.0%} of upstream's lines: as an edit-function (a diff of the lines"
                " it changes) it would keep applying through upstream edits elsewhere in the function"
            )
        self._record(patch.id, PortChange(How.MERGED, commit, "expect", shown, found[0], note))
        return True

    def _merge_edit(self, patch: Patch, table: dict[str, Any], commit: Commit) -> bool:
        qualname = table["function"]
        base, theirs, _here = self._sides(patch, qualname, commit)
        if base.col != theirs.col:
            raise _Stop(f"{qualname} changed its indentation at {commit.short}: the diff's lines cannot follow")
        return self._merge_hunks(patch, table, commit, qualname, base.raw, theirs.raw, theirs.first)

    def _merge_region(self, patch: Patch, table: dict[str, object], commit: Commit) -> bool:
        """edit-imports / edit-statement: the op's own region (the import block, the statement) at the last
        commit where the patch applied and at ``commit``, merged as an edit-function's function is."""
        op = patch.op
        if not isinstance(op, ScopedHunks):
            raise _Stop(f"{patch.op_name} has no region to merge")
        track = self.tracks[patch.id]

        def region(at: Commit, path: str) -> tuple[int, str]:
            text = self._text(at, path) or ""
            state = parse(path, text)
            found = op.region(state) if state is not None else None
            if not isinstance(found, Region):
                raise _Stop(f"{path} at {at.short} has no region for {patch.id} ({op.region_key})")
            return found.first, "".join(split_lines(text)[found.first - 1 : found.last])

        _first, base_raw = region(track.base, track.file)
        first, theirs_raw = region(commit, patch.file)
        return self._merge_hunks(patch, table, commit, op.region_key, base_raw, theirs_raw, first)

    def _merge_hunks(
        self,
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
        track = self.tracks[patch.id]
        payload_path = self.work.payload_path(table)
        raw = self.work.current[payload_path]
        _old, _new, hunks = parse_diff(raw)
        base_lines = split_lines(base_raw)
        spots = match_hunks(base_lines, hunks, reverse=False)
        if not isinstance(spots, list):
            raise _Stop(f"the diff of {patch.id} does not apply at {track.base.short} either")
        ours = splice_hunks(base_lines, hunks, spots, reverse=False)
        merged = self._merged(patch, what, commit, theirs_first, merge(base_raw, ours, theirs_raw))
        self._note_taken(patch, commit, base_raw, ours, theirs_raw)
        diff = unified_diff(patch.file, theirs_raw, merged)
        preamble = b"".join(line for line in raw.splitlines(keepends=True) if not line.startswith(b"diff --git"))
        head = preamble.split(b"--- ", 1)[0] if b"--- " in preamble else b""
        body = "".join(line for line in diff.splitlines(keepends=True) if not line.startswith("diff --git"))
        self.work.current[payload_path] = head + body.encode("utf-8")
        note = f"upstream's edit of {what} merged; the diff's hunks rewritten against it"
        self._record(patch.id, PortChange(How.MERGED, commit, "source", table["source"], table["source"], note))
        return True

    def _note_taken(self, patch: Patch, commit: Commit, base: str, ours: str, theirs: str) -> None:
        """Remember the first commit whose edit made some of the lines the patch makes (upstream took part of it)."""
        track = self.tracks[patch.id]
        made, of = taken(base, ours, theirs)
        if made and track.partly is None:
            track.partly = (commit, made, of)

    # -- the result ---------------------------------------------------------------------------------

    def result(self, final: Evaluation, drop: bool) -> list[PatchPort]:
        out: list[PatchPort] = []
        for patch, result in zip(self.current.patches, final.results, strict=True):
            track = self.tracks[patch.id]
            changes = tuple(track.changes)
            conflict = None
            failed_at = None
            if track.failed is not None and not result.ok:
                failed_at, message, conflict = track.failed
                how = How.CONFLICT if conflict is not None else How.FAILED
                message = f"cannot be carried over {failed_at.short} {failed_at.subject!r}: {message}"
            elif not result.ok:
                how = How.FAILED
                message = f"{result.reason.value if result.reason else ''}: {result.message}"
            elif result.status is Status.SKIP and result.reason is not Reason.OTHER_VARIANT:
                how = How.UPSTREAMED
                at = track.upstreamed
                if at is not None:
                    message = f"upstream has it since {at.short} {at.subject!r}"
                else:
                    since, before, there = upstreamed_since(self.found, patch.id)
                    if before == "applied":
                        at = since
                        message = f"upstream has it since {since.short} {since.subject!r}"
                    elif before == "failed" and there is not None:
                        why = there.reason.value if there.reason else there.status.value
                        message = (
                            f"upstream has it since {since.short} {since.subject!r}; "
                            f"before that it was not in effect ({why})"
                        )
                    else:
                        message = f"upstream has it since {since.short} or earlier (the oldest commit looked at)"
                track.upstreamed = at
            elif result.reason is Reason.OTHER_VARIANT:
                how = How.UNCHANGED
                message = "not needed here: it serves a variant that does not fit while another does (OTHER_VARIANT)"
            else:
                kinds = {c.how for c in changes}
                how = next((h for h in _PRECEDENCE if h in kinds), How.UNCHANGED)
                message = (
                    "; ".join(
                        f"{c.key}: {c.before} -> {c.after} at {c.commit.short if c.commit else '-'}" for c in changes
                    )
                    or "applies at the target as it is"
                )
                if patch.group is not None and not changes:
                    message = f"variant of group {patch.group}: applies at the target as it is"
            out.append(
                PatchPort(
                    patch=patch.id,
                    op=patch.op_name,
                    required=patch.required,
                    how=how,
                    changes=changes,
                    result=result,
                    message=message,
                    failed_at=failed_at,
                    conflict=conflict,
                    upstreamed_at=track.upstreamed if how is How.UPSTREAMED else None,
                    dropped=False,
                    evidence=self._evidence(patch, how, track),
                )
            )
        if drop:
            out = self._drop(out)
        return out

    def _evidence(self, patch: Patch, how: How, track: _Track) -> Evidence | None:
        """A patch still carried (merged, moved, renamed) after upstream made some of its lines: the bench that
        says whether the rest still earns its place."""
        if track.partly is None or how not in (How.MERGED, How.MOVED, How.RENAMED, How.UNCHANGED):
            return None
        commit, made, of = track.partly
        command = f"patchkit bench -m {self.manifest.display} --without {patch.id} --commit {self.target.short}"
        return Evidence(commit, made, of, command)

    def _drop(self, ports: list[PatchPort]) -> list[PatchPort]:
        """Remove the upstreamed patches no other patch requires and no group lists."""
        needed = {dep for p in self.current.patches for dep in p.requires}
        in_groups = {m for g in self.current.groups for m in g.members}
        out = []
        for port in ports:
            if port.how is How.UPSTREAMED and port.patch not in needed and port.patch not in in_groups:
                index, _ = self.work.table(port.patch)
                self.work.toml.remove(index)
                port = replace(port, dropped=True)
            elif port.how is How.UPSTREAMED:
                port = replace(port, message=port.message + " (kept: another patch or a group names it)")
            out.append(port)
        return out


def _target_of(table: Mapping[str, object]) -> str | None:
    op = str(table["op"])  # the schema has checked these are strings
    key = FUNCTION_OPS.get(op) or CLASS_OPS.get(op)
    target = table.get(key) if key else None
    return None if target is None else str(target)


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
        raise _Stop(f"the merged payload is not valid Python ({exc.msg} at line {exc.lineno})") from None
    return out


def _not_found(old: Def, commit: Commit, match: Match) -> str:
    what = f"{'class' if old.is_class else 'def'} {old.qualname}"
    if not match.runners_up:
        return f"{what} is gone at {commit.short} and no file this commit changed defines one like it"
    close = ", ".join(f"{d.file}:{d.first} {d.qualname} ({score:.0%})" for d, score in match.runners_up)
    return f"{what} is gone at {commit.short}; not one candidate is clearly it: {close}"


# -- finding the start ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """Where the walk starts, and the verdicts at the first-parent commits looked at to find it (newest first):
    they say since when upstream has a patch that is already in place at the start."""

    commit: Commit
    history: tuple[tuple[Commit, dict[str, PatchResult]], ...]
    given: bool


def find_start(manifest: Manifest, repo: Repo, target: Commit, given: str | None) -> Start:
    """The commit the walk starts from: ``--from``, which must be an ancestor of the target where the manifest
    applies; else the newest first-parent ancestor of the target (the target included) where it does."""
    if given is not None:
        start = repo.commit(given)
        if repo.distance(start.sha, target.sha) is None:
            raise RevisionError(
                f"--from {given} ({start.short}) is not an ancestor of {target.short}",
                hint="port walks forward: pass an older commit with --from",
            )
        report = check_range(manifest, repo, commits=[start.sha], hints=False)
        if report.failed:
            bad = [r for r in report.commits[0].results if r.status is Status.FAIL]
            raise RevisionError(
                f"the manifest does not apply at --from {given} ({start.short}): "
                + ", ".join(f"{r.patch} {r.reason.value if r.reason else ''}" for r in bad),
                hint="pass a commit where `patchkit check --commit REV` has no FAIL",
            )
        return Start(start, ((start, {r.patch: r for r in report.commits[0].results}),), True)
    seen = 0
    history: list[tuple[Commit, dict[str, PatchResult]]] = []
    found: Commit | None = None
    for count in START_SEARCH:
        shas = repo.git("rev-list", "--first-parent", f"--max-count={count}", target.sha).split()[seen:]
        if not shas:
            break
        report = check_range(manifest, repo, commits=shas, hints=False)
        rows = {row.commit.sha: row for row in report.commits}
        for sha in shas:  # newest first
            row = rows[sha]
            history.append((row.commit, {r.patch: r for r in row.results}))
            if found is None and not row.failed:
                found = row.commit
        seen += len(shas)
        if found is not None:
            return Start(found, tuple(history), False)
    raise RevisionError(
        f"no first-parent ancestor of {target.short} within {seen} commits has the manifest applying",
        hint="pass --from REV, a commit where `patchkit check --commit REV` has no FAIL",
    )


def upstreamed_since(start: Start, patch_id: str) -> tuple[Commit, str, PatchResult | None]:
    """For a patch already in upstream at the start: the oldest commit of the unbroken run of first-parent
    commits (up to the start) where it is, and what came before it: "applied" (the patch applied at the
    commit before: upstream took it at the one returned), "failed" (it did not apply there either: that
    result) or "unknown" (it is in upstream at every commit looked at)."""
    newer = start.commit
    past = False
    for commit, results in start.history:
        past = past or commit.sha == start.commit.sha
        if not past:
            continue
        result = results.get(patch_id)
        if result is None:
            break
        if result.status is Status.APPLY:
            return newer, "applied", result
        if result.status is not Status.SKIP or result.reason is Reason.OTHER_VARIANT:
            return newer, "failed", result
        newer = commit
    return newer, "unknown", None


@contextmanager
def _porter(manifest: Manifest, repo: Repo, start: Start, target: Commit) -> Iterator[Porter]:
    porter = Porter(manifest, repo, start, target)
    try:
        yield porter
    finally:
        porter.work.close()


def port(
    manifest: Manifest, repo: Repo, to: str, *, start: str | None = None, drop_upstreamed: bool = False
) -> PortPlan:
    """The plan that carries ``manifest`` from its start (see ``find_start``) to ``to``; writes nothing."""
    target = repo.commit(to)
    found = find_start(manifest, repo, target, start)
    begin = found.commit
    walk = repo.first_parent_changes(begin.sha, target.sha) if begin.sha != target.sha else []
    with _porter(manifest, repo, found, target) as porter:
        final, stops = porter.run(walk)
        # What apply would write at the target, verified as apply verifies it: a ported patch that reads
        # APPLY but does not render (FAIL INTERNAL) refuses the port, as it would refuse the apply.
        final = render(final)[1]
        patches = porter.result(final, drop_upstreamed)
        files = tuple(porter.work.changes())
        if drop_upstreamed and any(p.dropped for p in patches):
            porter.work.load()  # a dropped table leaves a manifest that must still load
    repo.close()
    return PortPlan(manifest, begin, target, len(walk), stops, tuple(patches), files, found.given)


__all__ = ["FileChange", "How", "PatchPort", "PortChange", "PortConflict", "PortPlan", "Start", "find_start", "port"]
