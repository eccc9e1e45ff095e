"""Apply, revert and status on a work tree: the Python API behind the CLI verbs.

These functions return frozen reports; a refusal because patches cannot
apply is ``report.refused``, not an exception.  Exceptions (``PatchkitError``
subclasses) are for bad input and for preconditions that protect the user's
work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit.engine.evaluate import Evaluation, Rendered, evaluate, render
from patchkit.engine.fsutil import FileWrite, Transaction, sha256
from patchkit.engine.groups import group_results
from patchkit.engine.lock import repo_lock
from patchkit.engine.record import (
    FileRecord,
    Record,
    all_records,
    delete_record,
    load_record,
    now,
    save_record,
    state_dir,
)
from patchkit.errors import RefusedError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest
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
            "results": [r.to_json() for r in self.results],
            "groups": [g.to_json() for g in group_results(self.manifest, self.results)],
        }


def _clean_before(repo: Repo, head: str | None, path: str, data: bytes) -> bool:
    if head is None:
        return False
    entry = repo.ls_tree(head, [path]).get(path)
    return entry is not None and entry.oid == repo.hash_blob(data)


def _notes_for(repo: Repo, manifest: Manifest) -> list[str]:
    notes = []
    record = load_record(repo, manifest.name)
    if record is not None and record.manifest_digest != manifest.digest:
        notes.append(
            f"this tree was patched on {record.applied_at} with another version of manifest {manifest.name} "
            f"({record.manifest_digest[:19]}…); if patches now CONFLICT, run `patchkit revert -m {manifest.name}` first"
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
        return _apply_locked(manifest, repo, root, dry_run=dry_run, strict=strict)


def _apply_locked(manifest: Manifest, repo: Repo, root: Path, *, dry_run: bool, strict: bool) -> ApplyReport:
    txn = Transaction(root, state_dir(repo))
    notes = []
    recovered = txn.recover()
    if recovered:
        notes.append(f"rolled back a patchkit run that was interrupted while writing: {', '.join(recovered)}")
    notes.extend(_notes_for(repo, manifest))
    source = WorktreeSource(repo, root)
    commit = source.commit
    evaluation = evaluate(manifest, source)

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
    rendered, evaluation = render(evaluation)
    if evaluation.refused(strict):
        return report(evaluation, refused=True)
    paths = tuple(r.path for r in rendered)
    if dry_run:
        return report(evaluation, refused=False, would=paths, diffs=tuple(rendered))
    if rendered:
        txn.write([FileWrite(r.path, r.before, r.after, r.mode) for r in rendered])
        _update_record(repo, manifest, commit, rendered, evaluation)
    return report(evaluation, refused=False, written=paths, diffs=tuple(rendered))


def _update_record(
    repo: Repo, manifest: Manifest, commit: Commit | None, rendered: list[Rendered], evaluation: Evaluation
) -> None:
    old = load_record(repo, manifest.name)
    previous = {f.path: f for f in old.files} if old else {}
    root = repo.root or repo.git_dir
    store = Transaction(root, state_dir(repo)).objects
    # Earlier entries stay only while the file still holds what patchkit left
    # (a file reset by hand since is no longer patchkit's to revert).
    files: dict[str, FileRecord] = {
        path: f
        for path, f in previous.items()
        if (root / path).is_file() and sha256((root / path).read_bytes()) == f.after_sha256
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
    save_record(
        repo,
        Record(
            manifest_name=manifest.name,
            manifest_path=str(manifest.path),
            manifest_digest=manifest.digest,
            base_commit=head,
            applied_at=now(),
            files=tuple(files.values()),
            patches=tuple(
                {"id": r.patch, "status": r.status.value, "reason": r.reason.value if r.reason else None}
                for r in evaluation.results
            ),
        ),
    )


# -- revert ------------------------------------------------------------------------


@dataclass(frozen=True)
class RevertReport:
    manifest_name: str
    target: str
    restored: tuple[tuple[str, str], ...]  # (path, "HEAD" | "backup")
    forced: tuple[str, ...]  # files edited after patching, overwritten because of --force
    nothing_recorded: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "command": "revert",
            "manifest": {"name": self.manifest_name},
            "target": self.target,
            "nothing_recorded": self.nothing_recorded,
            "restored": [{"path": p, "from": src} for p, src in self.restored],
            "forced": list(self.forced),
        }


def edited_since(repo: Repo, record: Record) -> list[str]:
    """Files patchkit wrote that no longer hold what patchkit left."""
    root = repo.require_worktree("revert")
    out = []
    for f in record.files:
        full = root / f.path
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
    txn.recover()
    record = load_record(repo, name)
    if record is None:
        return RevertReport(name, str(root), (), (), True)
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
    txn.write(writes)
    delete_record(repo, name)
    return RevertReport(name, str(root), tuple(restored), tuple(edited), False)


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

    def state_of(self, result: PatchResult) -> str:
        if result.status is Status.APPLY:
            return "not applied"
        if result.status in (Status.WARN, Status.FAIL):
            return "cannot apply"
        return STATE_WORDS.get((result.status, result.reason), "in place")

    @property
    def complete(self) -> bool:
        """Every required patch is in place (no pending APPLY, no FAIL)."""
        return all(r.status is Status.SKIP for r in self.results if r.required)

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
            "results": [dict(r.to_json(), state=self.state_of(r)) for r in self.results],
            "groups": [g.to_json() for g in group_results(self.manifest, self.results)],
        }


def status_worktree(manifest: Manifest, repo: Repo) -> StatusReport:
    root = repo.require_worktree("status")
    source = WorktreeSource(repo, root)
    evaluation = evaluate(manifest, source)
    record = load_record(repo, manifest.name)
    edited = tuple(edited_since(repo, record)) if record else ()
    return StatusReport(manifest, str(root), source.commit, evaluation.results, record, edited)
