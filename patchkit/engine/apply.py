"""Apply, revert and status on a work tree: the Python API behind the CLI verbs.

These functions return frozen reports; a refusal because patches cannot
apply is ``report.refused``, not an exception.  Exceptions (``PatchkitError``
subclasses) are for bad input and for preconditions that protect the user's
work.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from patchkit.engine.evaluate import Evaluation, Rendered, evaluate, render
from patchkit.engine.fsutil import FileWrite, Transaction, outside_reason, sha256
from patchkit.engine.groups import group_results
from patchkit.engine.lock import repo_lock
from patchkit.engine.record import (
    FileRecord,
    Record,
    all_records,
    load_record,
    now,
    record_bytes,
    record_rel,
    state_dir,
)
from patchkit.engine.recovery import Interrupted, interrupted, recover
from patchkit.errors import RefusedError, UnwritableError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest
from patchkit.operations.base import REPLACES_PREVIOUS
from patchkit.results import PatchResult, Reason, Status
from patchkit.sources import WorktreeSource


@dataclass(frozen=True)
class ApplyReport:
    manifest: Manifest
    target: str  # the work tree patched
    commit: Commit | None  # HEAD of that work tree
    results: tuple[PatchResult, ...]
    refused: bool
    dry_run: bool
    strict: bool
    written: tuple[str, ...]
    would_write: tuple[str, ...]
    diffs: tuple[Rendered, ...] = ()
    notes: tuple[str, ...] = ()
    moved_from: Commit | None = None  # apply --commit: where the tree was before
    moved_from_branch: str | None = None
    worktree: str | None = None  # apply --commit --worktree: the linked worktree
    unwritable: str | None = None  # refused because this path could not be written ("path: reason")

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "command": "apply",
            "manifest": self.manifest.to_json(),
            "target": self.target,
            "commit": self.commit.sha if self.commit else None,
            "subject": self.commit.subject if self.commit else None,
            "dry_run": self.dry_run,
            "strict": self.strict,
            "refused": self.refused,
            "written": list(self.written),
            "would_write": list(self.would_write),
            "notes": list(self.notes),
            "moved_from": None
            if self.moved_from is None
            else {"commit": self.moved_from.sha, "branch": self.moved_from_branch},
            "worktree": self.worktree,
            "unwritable": self.unwritable,
            "results": [r.to_json() for r in self.results],
            "groups": [g.to_json() for g in group_results(self.manifest, self.results)],
        }


def _clean_before(repo: Repo, head: str | None, path: str, data: bytes) -> bool:
    if head is None:
        return False
    entry = repo.ls_tree(head, [path]).get(path)
    return entry is not None and entry.oid == repo.hash_blob(data)


def previous_code(record: Record | None) -> dict[str, str]:
    """Digests of the definitions patchkit wrote (any payload version) -> when, from the record.

    With it, code patchkit wrote is recognised as patchkit's own: a new payload
    version replaces it (APPLY), it is never kept as "upstream's".
    """
    out: dict[str, str] = {}
    if record is None:
        return out
    for entry in record.patches:
        for code in entry.get("code", ()):
            out[code] = f"on {entry.get('written_at') or record.applied_at} (manifest {record.manifest_digest[:19]}…)"
    return out


def _notes_for(repo: Repo, manifest: Manifest) -> list[str]:
    notes = []
    record = load_record(repo, manifest.name)
    if record is not None and record.manifest_digest != manifest.digest:
        notes.append(
            f"this tree was patched on {record.applied_at} with another version of manifest {manifest.name} "
            f"({record.manifest_digest[:19]}…); code patchkit wrote then is patchkit's own: where the new version "
            "differs, it is replaced (APPLY)"
        )
    return notes


def apply_worktree(
    manifest: Manifest,
    repo: Repo,
    *,
    dry_run: bool = False,
    strict: bool = False,
    wait: float = 0.0,
) -> ApplyReport:
    """Evaluate in memory; write every changed file atomically, or nothing."""
    root = repo.require_worktree("apply")
    with repo_lock(state_dir(repo), wait=wait):
        return apply_locked(manifest, repo, root, dry_run=dry_run, strict=strict)


def apply_locked(
    manifest: Manifest,
    repo: Repo,
    root: Path,
    *,
    dry_run: bool,
    strict: bool,
    recover_first: bool = True,
    computed: tuple[Evaluation, list[Rendered]] | None = None,
) -> ApplyReport:
    """``recover_first=False``: the caller recovered already and holds a move journal of its own.

    ``computed``: the evaluation and rendered files of exactly these bytes,
    which ``apply --commit`` made from the commit's blobs before checking it
    out (see ``commit_apply.still_valid``): not evaluated a second time.
    """
    txn = Transaction(root, state_dir(repo))
    notes = recover(repo, root) if recover_first else []
    notes.extend(_notes_for(repo, manifest))
    source = WorktreeSource(repo, root)
    commit = source.commit
    if computed is not None:
        evaluation, rendered = computed
    else:
        evaluation = evaluate(manifest, source, previous=previous_code(load_record(repo, manifest.name)))
        rendered = []
        if not evaluation.refused(strict):
            rendered, evaluation = render(evaluation)
    return _write_applied(manifest, repo, root, txn, commit, evaluation, rendered, notes, dry_run, strict)


def _write_applied(
    manifest: Manifest,
    repo: Repo,
    root: Path,
    txn: Transaction,
    commit: Commit | None,
    evaluation: Evaluation,
    rendered: list[Rendered],
    notes: list[str],
    dry_run: bool,
    strict: bool,
) -> ApplyReport:
    def report(
        ev: Evaluation,
        *,
        refused: bool,
        written: tuple[str, ...] = (),
        would: tuple[str, ...] = (),
        diffs: tuple[Rendered, ...] = (),
    ) -> ApplyReport:
        return ApplyReport(
            manifest, str(root), commit, ev.results, refused, dry_run, strict, written, would, diffs, tuple(notes)
        )

    if evaluation.refused(strict):
        return report(evaluation, refused=True)
    paths = tuple(r.path for r in rendered)
    if dry_run:
        return report(evaluation, refused=False, would=paths, diffs=tuple(rendered))
    if rendered:
        # The files and the record land together, or neither does.
        record = _new_record(repo, manifest, commit, rendered, evaluation)
        try:
            txn.write(
                [FileWrite(r.path, r.before, r.after, r.mode) for r in rendered],
                {record_rel(manifest.name): record_bytes(record)},
            )
        except UnwritableError as exc:
            # The patches apply, the file system said no: a refusal with the table, not a crash.
            return replace(report(evaluation, refused=True), unwritable=f"{exc.path}: {exc.reason}")
    return report(evaluation, refused=False, written=paths, diffs=tuple(rendered))


def _new_record(
    repo: Repo, manifest: Manifest, commit: Commit | None, rendered: list[Rendered], evaluation: Evaluation
) -> Record:
    old = load_record(repo, manifest.name)
    previous = {f.path: f for f in old.files} if old else {}
    root = repo.root or repo.git_dir
    store = Transaction(root, state_dir(repo)).objects
    # Earlier entries stay only while the file still holds what patchkit left
    # (a file reset by hand since is no longer patchkit's to revert).
    files: dict[str, FileRecord] = {
        path: f
        for path, f in previous.items()
        if outside_reason(root, path) is None
        and (root / path).is_file()
        and sha256((root / path).read_bytes()) == f.after_sha256
    }
    head = commit.sha if commit else None
    for item in rendered:
        prior = previous.get(item.path)
        if prior is not None and prior.after_sha256 == sha256(item.before):
            # Patching on top of our own earlier write: the original "before" still counts.
            before_sha, clean = prior.before_sha256, prior.clean_before
        else:
            before_sha, clean = store.put(item.before), _clean_before(repo, head, item.path, item.before)
        files[item.path] = FileRecord(item.path, item.mode or 0o644, before_sha, sha256(item.after), clean)
    stamp = now()
    old_patches = {entry["id"]: entry for entry in old.patches} if old else {}
    patches = []
    for r in evaluation.results:
        entry: dict[str, Any] = {
            "id": r.patch,
            "status": r.status.value,
            "reason": r.reason.value if r.reason else None,
        }
        was = old_patches.get(r.patch, {})
        if r.status is Status.APPLY:
            # Digests of what this payload version writes: patchkit's own code from now on.
            entry["code"] = list(manifest.patch(r.patch).op.own_code())
            entry["written_at"] = stamp
        elif was.get("code"):
            # Still patchkit's code (in place, or left in the tree while the patch cannot apply).
            code = list(was["code"])
            if r.reason is Reason.ALREADY_APPLIED:
                code += [d for d in manifest.patch(r.patch).op.own_code() if d not in code]
            entry["code"], entry["written_at"] = code, was.get("written_at")
        patches.append(entry)
    return Record(
        manifest_name=manifest.name,
        manifest_path=str(manifest.path),
        manifest_digest=manifest.digest,
        base_commit=head,
        applied_at=stamp,
        files=tuple(files.values()),
        patches=tuple(patches),
    )


# -- revert ------------------------------------------------------------------------


@dataclass(frozen=True)
class RevertReport:
    manifest_name: str
    target: str
    restored: tuple[tuple[str, str], ...]  # (path, "HEAD" | "backup")
    forced: tuple[str, ...]  # files edited after patching, overwritten because of --force
    nothing_recorded: bool
    recovered: tuple[str, ...] = ()  # what an interrupted run had left, rolled back first

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "command": "revert",
            "manifest": {"name": self.manifest_name},
            "target": self.target,
            "nothing_recorded": self.nothing_recorded,
            "restored": [{"path": p, "from": src} for p, src in self.restored],
            "forced": list(self.forced),
            "recovered": list(self.recovered),
        }


def edited_since(repo: Repo, record: Record) -> list[str]:
    """Files patchkit wrote that no longer hold what patchkit left."""
    root = repo.require_worktree("revert")
    out = []
    for f in record.files:
        full = root / f.path
        if outside_reason(root, f.path) is not None:
            out.append(f.path)  # never read through a symlinked directory
            continue
        try:
            current = sha256(full.read_bytes())
        except FileNotFoundError:
            current = None
        if current != f.after_sha256:
            out.append(f.path)
    return out


def revert_worktree(name: str, repo: Repo, *, force: bool = False, wait: float = 0.0) -> RevertReport:
    root = repo.require_worktree("revert")
    with repo_lock(state_dir(repo), wait=wait):
        return _revert_locked(name, repo, root, force=force)


def _revert_locked(name: str, repo: Repo, root: Path, *, force: bool) -> RevertReport:
    txn = Transaction(root, state_dir(repo))
    notes = tuple(recover(repo, root))
    record = load_record(repo, name)
    if record is None:
        return RevertReport(name, str(root), (), (), True, notes)
    for f in record.files:
        outside = outside_reason(root, f.path)
        if outside is not None:
            raise RefusedError(
                f"{outside}; the record of {name} lists it, and patchkit will not write there; nothing was reverted",
                hint=f"check where that link points; `patchkit status -m {name}` shows the rest",
            )
    edited = edited_since(repo, record)
    if edited and not force:
        others = [
            r.manifest_name
            for r in all_records(repo)
            if r.manifest_name != name and {f.path for f in r.files} & set(edited)
        ]
        hint = "review them; pass --force to restore them anyway (their edits are lost)"
        if others:
            hint = f"manifest(s) {', '.join(others)} also patched them: revert those first, or pass --force"
        raise RefusedError(
            f"{len(edited)} file(s) patchkit wrote for {name} were edited after patching; nothing was reverted",
            items=tuple(edited),
            hint=hint,
        )
    head = repo.head()
    writes = []
    restored = []
    for f in record.files:
        full = root / f.path
        current = full.read_bytes() if full.exists() else b""
        content = None
        origin = "backup"
        if f.clean_before and head is not None:
            entry = repo.ls_tree(head, [f.path]).get(f.path)
            if entry is not None and entry.mode.startswith("100"):
                content, origin = repo.read_blob(entry.oid), "HEAD"
        if content is None:
            content = txn.objects.get(f.before_sha256)
        if content is None:
            raise RefusedError(
                f"the backup of {f.path} is missing from {txn.objects.root}; nothing was reverted",
                hint=f"restore it with `git checkout -- {f.path}` if HEAD's version is what you want",
            )
        if not full.exists():
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_bytes(b"")  # the transaction replaces it; it must exist to be compared
        writes.append(FileWrite(f.path, current, content, f.mode))
        restored.append((f.path, origin))
    txn.write(writes, {record_rel(name): None})
    return RevertReport(name, str(root), tuple(restored), tuple(edited), False, notes)


# -- status ------------------------------------------------------------------------

STATE_WORDS: dict[tuple[Status, Reason | None], str] = {
    (Status.SKIP, Reason.ALREADY_APPLIED): "applied",
    (Status.SKIP, Reason.UPSTREAM_PROVIDES): "provided by upstream",
    (Status.SKIP, Reason.OTHER_VARIANT): "not needed (another variant applies)",
}


@dataclass(frozen=True)
class StatusReport:
    manifest: Manifest
    target: str
    commit: Commit | None
    results: tuple[PatchResult, ...]
    record: Record | None
    edited: tuple[str, ...]  # recorded files changed since patchkit wrote them
    interrupted: Interrupted | None = None  # a killed run's leftovers (the next apply/revert rolls them back)

    @property
    def out_of_date(self) -> tuple[str, ...]:
        """Patches the record has in place that would be written again: an older payload version is there."""
        return tuple(r.patch for r in self.results if r.status is Status.APPLY and REPLACES_PREVIOUS in r.message)

    def state_of(self, result: PatchResult) -> str:
        if result.status is Status.APPLY:
            return "out of date" if result.patch in self.out_of_date else "not applied"
        if result.status in (Status.WARN, Status.FAIL):
            return "cannot apply"
        return STATE_WORDS.get((result.status, result.reason), "in place")

    @property
    def complete(self) -> bool:
        """Every required patch is in place (no pending APPLY, no FAIL), no patch holds an older payload
        version (optional ones included), and no run was left half done."""
        return (
            self.interrupted is None
            and not self.out_of_date
            and all(r.status is Status.SKIP for r in self.results if r.required)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "command": "status",
            "manifest": self.manifest.to_json(),
            "target": self.target,
            "commit": self.commit.sha if self.commit else None,
            "subject": self.commit.subject if self.commit else None,
            "complete": self.complete,
            "record": None
            if self.record is None
            else {
                "applied_at": self.record.applied_at,
                "base_commit": self.record.base_commit,
                "manifest_digest": self.record.manifest_digest,
                "files": [f.path for f in self.record.files],
            },
            "edited_after_apply": list(self.edited),
            "out_of_date": list(self.out_of_date),
            "interrupted": None if self.interrupted is None else self.interrupted.to_json(),
            "results": [dict(r.to_json(), state=self.state_of(r)) for r in self.results],
            "groups": [g.to_json() for g in group_results(self.manifest, self.results)],
        }


def status_worktree(manifest: Manifest, repo: Repo) -> StatusReport:
    root = repo.require_worktree("status")
    source = WorktreeSource(repo, root)
    record = load_record(repo, manifest.name)
    evaluation = evaluate(manifest, source, previous=previous_code(record))
    edited = tuple(edited_since(repo, record)) if record else ()
    left = interrupted(repo, root)
    return StatusReport(manifest, str(root), source.commit, evaluation.results, record, edited, left)
