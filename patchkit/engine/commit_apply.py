"""`apply --commit REV`: move a tree to an upstream commit and patch it, safely.

The regression hunt this replaces did ``git stash``, ``git checkout OLD`` and
re-ran a patch script that printed a WARN nobody could interpret.  Here:

* The verdicts at REV are computed from REV's blobs *before* anything moves;
  if a required patch FAILs there, nothing happens at all.
* Without ``--worktree`` the tree may hold only patchkit's own recorded edits
  (files still exactly as patchkit left them).  Those are reverted, the tree
  is checked out at REV (detached) and the manifest applied.  Every other
  uncommitted change refuses the move, listed.  Nothing is ever stashed.
  If a step fails midway, the tree is put back: original commit or branch,
  patched files and records.  Before the first change, the move is journaled
  (``recovery.start_move``): a run killed midway is reported by the next
  patchkit command, and rolled back if nothing was written at REV yet.
* Already at REV: nothing moves; the manifest is applied in place (an
  already patched tree is SKIP ALREADY_APPLIED, no write, no ``moved_from``).
* With ``--worktree DIR`` a linked worktree at REV is created (or reused, by
  the same rules) and patched; the main tree is not touched.  DIR may not be
  the main checkout or any other non-linked checkout.
"""

from __future__ import annotations

import shutil
import stat
from dataclasses import replace
from pathlib import Path

from patchkit import paths
from patchkit.engine import abandonable
from patchkit.engine.apply import ApplyReport, apply_locked
from patchkit.engine.evaluate import Evaluation, FileEval, Rendered, evaluate, render
from patchkit.engine.lock import repo_lock
from patchkit.engine.record import (
    FileRecord,
    Record,
    all_records,
    load_record,
    record_bytes,
    record_rel,
    state_dir,
    written_content,
)
from patchkit.engine.recovery import end_move, recover, start_move
from patchkit.engine.transaction import FileWrite, Transaction, crash_point
from patchkit.errors import RefusedError, RepoError, UsageError
from patchkit.git import Commit, GitFailed, Repo
from patchkit.manifest import Manifest, manifest_arg
from patchkit.results import PatchResult
from patchkit.sources import CommitSource, FileRead, FileState
from patchkit.wording import plural
from patchkit.written import Written

Computed = tuple[Evaluation, list[Rendered]]


def _report_at(
    manifest: Manifest, repo: Repo, target: Commit, *, where: str, strict: bool, dry_run: bool
) -> tuple[ApplyReport | None, Computed | None]:
    """The report at ``target`` computed from its blobs, None if it would apply (and not dry-run);
    and the evaluation and rendered files it was computed from."""
    evaluation, rendered, refused = _evaluate_at(manifest, repo, target, strict=strict)
    if refused or dry_run:
        repo.close()
        paths = () if refused else tuple(r.path for r in rendered)
        head = repo.head() if repo.root is not None else None
        note = f"verdicts read from the blobs of {target.short}; nothing was moved or written" + (
            f" (the tree is still at {head[:10]})" if head and head != target.sha else ""
        )
        return ApplyReport(
            manifest, where, target, evaluation.results, refused, dry_run, strict, (), paths, tuple(rendered), (note,)
        ), None
    repo.close()
    return None, (evaluation, rendered)


def _evaluate_at(
    manifest: Manifest, repo: Repo, target: Commit, *, strict: bool
) -> tuple[Evaluation, list[Rendered], bool]:
    """The verdicts and rendered files at ``target``, and whether they refuse.

    Large targets (sizes from the commit's tree, ``engine/abandon.py``) are read, parsed and
    rendered in a child process that a Ctrl-C abandons at once, as a plain ``apply`` does: only the
    verdicts, the rendered bytes and each file as read come back.  The reads are what
    ``still_valid`` compares the checkout with; the parsed state stays in the child.
    """

    def work() -> tuple[Evaluation, list[Rendered], bool]:
        evaluation = evaluate(manifest, CommitSource(repo, target))
        refused = evaluation.refused(strict)
        rendered: list[Rendered] = []
        if not refused:
            rendered, evaluation = render(evaluation)
            refused = evaluation.refused(strict)
        return evaluation, rendered, refused

    sizes = repo.blob_sizes(target.sha, manifest.files())
    if not abandonable.large(sum(sizes.values())):
        return work()

    def light() -> tuple[tuple[PatchResult, ...], dict[str, FileRead], list[Rendered], bool]:
        try:
            evaluation, rendered, refused = work()
        finally:
            repo.close()  # the child's own blob reader, reaped before the child leaves
        return evaluation.results, {p: fe.read for p, fe in evaluation.files.items()}, rendered, refused

    repo.close()  # the child starts its own blob reader; the parent's pipes stay the parent's
    results, reads, rendered, refused = abandonable.in_child(light, sizes)
    # Only the reads come back with each file (what still_valid needs); nothing renders from these.
    files = {path: FileEval(path, read, (), (), ()) for path, read in reads.items()}
    return Evaluation(manifest, CommitSource(repo, target), results, files), rendered, refused


def still_valid(computed: Computed | None, manifest: Manifest, repo: Repo, root: Path) -> Computed | None:
    """``computed`` (from the commit's blobs) if the checkout holds exactly those files, else None.

    Then the checkout is not evaluated again: same bytes and modes, no record
    of this manifest (whose earlier payload versions would count as
    patchkit's own code), so the same verdicts and the same rendered files.
    Anything else (a clean/smudge filter, a file mode the umask changed, a
    symlink) is evaluated afresh, as a plain apply would.
    """
    if computed is None or load_record(repo, manifest.name) is not None:
        return None
    evaluation, _rendered = computed
    for path, fe in evaluation.files.items():
        full = root / path
        if fe.read.state is FileState.MISSING:
            if full.exists() or full.is_symlink():
                return None
            continue
        if fe.read.state is not FileState.OK:
            return None
        try:
            info = full.lstat()
            if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) != fe.read.mode:
                return None
            if full.read_bytes() != fe.read.data:
                return None
        except OSError:
            return None
    return computed


def apply_at_commit(
    manifest: Manifest,
    repo: Repo,
    rev: str,
    *,
    worktree: str | None = None,
    dry_run: bool = False,
    strict: bool = False,
    wait: float | None = None,
    written: Written | None = None,
) -> ApplyReport:
    """``written``: told each path once it is written whole (``apply_worktree``)."""
    target = repo.commit(rev)
    if worktree is not None:
        path = Path(worktree).resolve()
        with repo_lock(worktree_lock_dir(repo, path), wait=wait):
            return _in_worktree(
                manifest, repo, target, path, dry_run=dry_run, strict=strict, wait=wait, written=written
            )
    root = repo.require_worktree("apply --commit without --worktree")
    with repo_lock(state_dir(repo), wait=wait):
        return _move_and_apply(manifest, repo, root, target, dry_run=dry_run, strict=strict, written=written)


def worktree_lock_dir(repo: Repo, path: Path) -> Path:
    """Where runs that create or patch the worktree at ``path`` take turns.

    Two runs racing to create the same new worktree would otherwise see each
    other's half-made directory; with this lock the loser is busy (exit 4).
    """
    return paths.worktree_lock(repo.common_dir, path)


def _ours_and_foreign(repo: Repo, root: Path) -> tuple[dict[str, tuple[Record, bytes]], list[str]]:
    """Changed tracked files, split into patchkit's own (untouched since written) and the rest."""
    owned: dict[str, list[tuple[Record, FileRecord]]] = {}
    for record in all_records(repo):
        for f in record.files:
            owned.setdefault(f.path, []).append((record, f))
    ours: dict[str, tuple[Record, bytes]] = {}
    foreign: list[str] = []
    for status, path in repo.changed_tracked_files():
        held = ((rec, written_content(root, f)) for rec, f in owned.get(path, []))
        match = next(((rec, data) for rec, data in held if data is not None), None)
        if match is not None:
            ours[path] = match
        else:
            foreign.append(f"{status.strip() or 'M'} {path}")
    return ours, foreign


def _move_and_apply(
    manifest: Manifest,
    repo: Repo,
    root: Path,
    target: Commit,
    *,
    dry_run: bool,
    strict: bool,
    in_worktree: bool = False,
    written: Written | None = None,
) -> ApplyReport:
    txn = Transaction(root, state_dir(repo), written=written)
    recovered = recover(repo, root, written=written)
    early, computed = _report_at(manifest, repo, target, where=str(root), strict=strict, dry_run=dry_run)
    if early is not None and early.refused:
        return early  # a required patch FAILs at REV: nothing moves
    ours, foreign = _ours_and_foreign(repo, root)
    if foreign:
        raise RefusedError(
            f"the work tree {root} has uncommitted changes that are not patchkit's own; nothing was changed "
            f"({plural(len(foreign), 'file')})",
            items=tuple(foreign),
            hint="commit them or move them aside yourself (patchkit never stashes)"
            + (
                ", or give --worktree a new directory"
                if in_worktree
                else ", or use --worktree DIR to patch a separate checkout"
            ),
        )
    if early is not None:
        return replace(early, notes=tuple(recovered) + early.notes)

    head = repo.head()
    if head == target.sha:
        # Already there: patch in place (an already patched tree is SKIP ALREADY_APPLIED, nothing written).
        computed = still_valid(computed, manifest, repo, root)
        report = apply_locked(
            manifest,
            repo,
            root,
            dry_run=False,
            strict=strict,
            recover_first=False,
            computed=computed,
            written=written,
        )
        return replace(report, notes=tuple(recovered) + report.notes)
    branch = repo.branch()
    moved_from = repo.commit(head) if head else None
    records = {rec.manifest_name: rec for rec, _ in ours.values()}
    notes = list(recovered) + [
        f"reverted manifest {name} (applied at {rec.base_commit[:10] if rec.base_commit else '?'}) before moving; "
        f"re-apply it if you need it at {target.short}"
        for name, rec in records.items()
        if name != manifest.name
    ]

    def restore_ours() -> None:
        # Put back exactly what patchkit had written, and its records.
        current = {p: (root / p).read_bytes() if (root / p).is_file() else b"" for p in ours}
        txn.write(
            [FileWrite(p, current[p], data, None) for p, (_, data) in ours.items() if current[p] != data],
            {record_rel(name): record_bytes(rec) for name, rec in records.items()},
        )
        end_move(repo)

    # 1. Revert patchkit's own edits to HEAD's content.
    writes = []
    for path in ours:
        entry = repo.ls_tree(head, [path]).get(path) if head else None
        if entry is None:
            owner = ours[path][0]
            raise RepoError(
                f"{path} is recorded as patched but is not in HEAD; cannot move safely",
                hint=f"inspect it, then `patchkit revert -m {manifest_arg(owner.manifest_name, owner.manifest_path)} "
                "--force`",
            )
        writes.append(FileWrite(path, ours[path][1], repo.read_blob(entry.oid), None))
    repo.close()
    # Journal the move first: a kill from here on is reported, and undone if nothing was written at REV.
    start_move(
        repo,
        txn,
        manifest=manifest.name,
        commit=head,
        branch=branch,
        target=target.sha,
        ours={path: data for path, (_, data) in ours.items()},
        records=list(records.values()),
    )
    crash_point("move:journal")
    txn.write(writes, {record_rel(name): None for name in records})
    crash_point("move:reverted")

    # 2. Move.
    try:
        repo.checkout_detached(target.sha)
    except GitFailed as exc:
        restore_ours()
        raise RefusedError(
            f"git refused to check out {target.short}; the tree is back as it was",
            items=tuple(exc.stderr.splitlines()[:10]),
        ) from None

    crash_point("move:checked-out")

    # 3. Apply (with the verdicts computed from the blobs, if the checkout holds exactly those).
    try:
        report = apply_locked(
            manifest,
            repo,
            root,
            dry_run=False,
            strict=strict,
            recover_first=False,
            computed=still_valid(computed, manifest, repo, root),
            written=written,
        )
        crash_point("move:applied")
    except BaseException:
        _move_back(repo, moved_from, branch)
        restore_ours()
        raise
    if report.refused:
        # The blobs said it applies; the checkout says otherwise (e.g. a
        # clean/smudge filter changed the files).  Leave no half state.
        _move_back(repo, moved_from, branch)
        restore_ours()
        if report.unwritable:
            notes.append(f"could not write {report.unwritable}; the tree was moved back")
        else:
            notes.append("the patches applied to the commit's blobs but not to its checkout; the tree was moved back")
        return replace(report, notes=tuple(notes) + report.notes)
    end_move(repo)
    return replace(report, notes=tuple(notes) + report.notes, moved_from=moved_from, moved_from_branch=branch)


def _move_back(repo: Repo, commit: Commit | None, branch: str | None) -> None:
    if branch is not None:
        repo.checkout_branch(branch)
    elif commit is not None:
        repo.checkout_detached(commit.sha)


def _in_worktree(
    manifest: Manifest,
    repo: Repo,
    target: Commit,
    path: Path,
    *,
    dry_run: bool,
    strict: bool,
    wait: float | None,
    written: Written | None = None,
) -> ApplyReport:
    path = path.resolve()
    known = {p.resolve() for p in repo.worktrees()}
    if path.exists():
        if path not in known:
            raise UsageError(
                f"{path} exists and is not a worktree of {repo.root or repo.git_dir}",
                hint="give a new directory (patchkit creates the worktree) or one listed by `git worktree list`",
            )
        with Repo.discover(path) as linked:
            if linked.git_dir.resolve() == linked.common_dir.resolve():
                raise UsageError(
                    f"{path} is the main checkout of {linked.common_dir}, not a linked worktree; "
                    "--worktree never moves or patches it",
                    hint="give a new directory (patchkit creates a linked worktree there), "
                    "or drop --worktree to move this tree itself",
                )
            root = linked.require_worktree("apply --commit")
            with repo_lock(state_dir(linked), wait=wait):
                report = _move_and_apply(
                    manifest,
                    linked,
                    root,
                    target,
                    dry_run=dry_run,
                    strict=strict,
                    in_worktree=True,
                    written=written,
                )
        return replace(report, worktree=str(path))
    early, computed = _report_at(manifest, repo, target, where=str(path), strict=strict, dry_run=dry_run)
    if early is not None:
        return replace(early, worktree=str(path))
    try:
        repo.add_worktree(path, target.sha)
    except GitFailed as exc:
        raise RepoError(f"git could not create a worktree at {path}: {exc.stderr}") from None
    try:
        with Repo.discover(path) as linked, repo_lock(state_dir(linked), wait=wait):
            computed = still_valid(computed, manifest, linked, path)
            report = apply_locked(
                manifest, linked, path, dry_run=False, strict=strict, computed=computed, written=written
            )
    except BaseException:
        _remove_worktree(repo, path)
        raise
    if report.refused:
        _remove_worktree(repo, path)
    return replace(report, worktree=str(path))


def _remove_worktree(repo: Repo, path: Path) -> None:
    try:
        repo.git("worktree", "remove", "--force", str(path))
    except GitFailed:
        shutil.rmtree(path, ignore_errors=True)
        repo.git("worktree", "prune", check=False)
