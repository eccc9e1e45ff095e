"""Apply on a work tree: the Python API behind ``patchkit apply``.

Evaluate in memory, then write every changed file and the record in one
transaction, or nothing.  The functions return frozen reports; a refusal
because patches cannot apply is ``report.refused``, not an exception.
Exceptions (``PatchkitError`` subclasses) are for bad input and for
preconditions that protect the user's work.  Revert and status live next
door, in ``engine/revert.py`` and ``engine/status.py``, mirroring ``commands/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from patchkit.engine import abandonable
from patchkit.engine.evaluate import Evaluation, Rendered, evaluate, render
from patchkit.engine.files import sha256
from patchkit.engine.groups import group_results
from patchkit.engine.lock import repo_lock
from patchkit.engine.record import (
    FileRecord,
    Record,
    load_record,
    now,
    previous_code,
    record_bytes,
    record_rel,
    state_dir,
    written_content,
)
from patchkit.engine.recovery import recover
from patchkit.engine.transaction import FileWrite, Transaction
from patchkit.errors import UnwritableError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest
from patchkit.results import PatchResult, Reason, Status
from patchkit.sources import Source, WorktreeSource
from patchkit.written import Written


@dataclass(frozen=True)
class ApplyReport:
    """What ``patchkit apply`` did to a work tree (or would do, ``dry_run``): each patch's verdict, the files written.

    ``refused``: nothing was written, because a patch FAILs (or, with ``strict``, WARNs) or a file could not be written.
    """

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
    unwritable_advice: str | None = None  # what fixes it, after the cause (space, quota, read-only, permissions)

    def to_json(self) -> dict[str, object]:
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
            "unwritable_advice": self.unwritable_advice,
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
    wait: float | None = None,
    written: Written | None = None,
) -> ApplyReport:
    """Evaluate in memory; write every changed file atomically, or nothing.  ``written``: told each
    path once it is written whole."""
    root = repo.require_worktree("apply")
    with repo_lock(state_dir(repo), wait=wait):
        return apply_locked(manifest, repo, root, dry_run=dry_run, strict=strict, written=written)


def apply_locked(
    manifest: Manifest,
    repo: Repo,
    root: Path,
    *,
    dry_run: bool,
    strict: bool,
    recover_first: bool = True,
    computed: tuple[Evaluation, list[Rendered]] | None = None,
    written: Written | None = None,
) -> ApplyReport:
    """``recover_first=False``: the caller recovered already and holds a move journal of its own.

    ``computed``: the evaluation and rendered files of exactly these bytes,
    which ``apply --commit`` made from the commit's blobs before checking it
    out (see ``commit_apply.still_valid``): not evaluated a second time.
    """
    txn = Transaction(root, state_dir(repo), written=written)
    notes = recover(repo, root, written=written) if recover_first else []
    notes.extend(_notes_for(repo, manifest))
    source = WorktreeSource(repo, root)
    commit = source.commit
    if computed is not None:
        evaluation, rendered = computed
    else:
        evaluation, rendered = evaluate_and_render(
            manifest, source, root, previous=previous_code(load_record(repo, manifest.name)), strict=strict
        )
    return _write_applied(manifest, repo, root, txn, commit, evaluation, rendered, notes, dry_run, strict)


def evaluate_and_render(
    manifest: Manifest, source: Source, root: Path, *, previous: Mapping[str, str], strict: bool
) -> tuple[Evaluation, list[Rendered]]:
    """The verdicts and the new bytes; nothing is written.

    Large targets (``engine/abandon.py``) are read and analysed in a child process that a Ctrl-C
    abandons at once: libcst's parse of a multi-megabyte file would otherwise hold off an interrupt
    for the whole parse.  Only the verdicts and the rendered bytes come back.
    """

    def work() -> tuple[Evaluation, list[Rendered]]:
        evaluation = evaluate(manifest, source, previous=previous)
        rendered: list[Rendered] = []
        if not evaluation.refused(strict):
            rendered, evaluation = render(evaluation)
        return evaluation, rendered

    sizes = abandonable.target_sizes(root, manifest.files())
    if not abandonable.large(sum(sizes.values())):
        return work()

    def light() -> tuple[tuple[PatchResult, ...], list[Rendered]]:
        evaluation, rendered = work()
        return evaluation.results, rendered

    results, rendered = abandonable.in_child(light, sizes)
    return Evaluation(manifest, source, results, {}), rendered


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
        try:
            # The record stores the pre-images under the git dir first: a full disk refuses there too.
            record = _new_record(repo, manifest, commit, rendered, evaluation)
            txn.write(
                [FileWrite(r.path, r.before, r.after, r.mode) for r in rendered],
                {record_rel(manifest.name): record_bytes(record)},
            )
        except UnwritableError as exc:
            # The patches apply, the file system said no: a refusal with the table, not a crash.
            return replace(
                report(evaluation, refused=True), unwritable=f"{exc.path}: {exc.reason}", unwritable_advice=exc.hint
            )
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
    files: dict[str, FileRecord] = {path: f for path, f in previous.items() if written_content(root, f) is not None}
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
        entry: dict[str, object] = {
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
