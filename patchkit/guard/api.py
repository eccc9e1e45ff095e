"""``evaluate_guard`` (the report) and ``require`` (the report, or an exception).

The work, in order of cost: the import probe (one interpreter start) and two
git processes (HEAD with its branch; ``git status --porcelain``) are started
as soon as the repository is found, and run while the manifest loads and
``status_worktree`` evaluates it on the work tree; the record is read from
the git dir.  Only when the guard fails in
bisect mode is the manifest evaluated again, on HEAD's blobs (``check_range``
on one commit, cached by blob), to tell "cannot be patched here" (125) from a
wrong setup (128).
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from patchkit import paths
from patchkit.engine.record import Record, all_records, edited_since, load_record, stacking
from patchkit.engine.status import status_worktree
from patchkit.errors import GuardError, PartialApplicationError, UsageError
from patchkit.git import Pending, Repo, parse_head, parse_porcelain
from patchkit.guard.checks import (
    Check,
    check_clean,
    check_commit,
    check_import,
    check_patches,
    check_record,
    head_digest_reader,
)
from patchkit.guard.report import GuardReport

if TYPE_CHECKING:
    from patchkit.guard.probe import InterpreterFacts, ProbeRun
from patchkit.manifest import Manifest, bad_manifest_first, load_manifest

RepoLike = str | Path | Repo
ManifestLike = str | Path | Manifest


def require_python_for_imports(python: str | None, imports: Sequence[str]) -> None:
    """``--import PKG`` is checked in the interpreter the server runs with: there must be one."""
    if imports and python is None:
        raise UsageError(
            f"--import {imports[0]} needs --python PY",
            hint="name the interpreter the server runs with, e.g. --python /venv/bin/python",
        )


def open_for_guard(repo: RepoLike, manifest: ManifestLike) -> tuple[Repo, Manifest]:
    git_repo = _repo_of(repo, manifest)
    return git_repo, _manifest_of(manifest, git_repo)


def _repo_of(repo: RepoLike, manifest: ManifestLike) -> Repo:
    if isinstance(repo, Repo):
        return repo
    if isinstance(manifest, Manifest):
        return Repo.discover(Path(repo))
    with bad_manifest_first(manifest):
        return Repo.discover(Path(repo))


def _manifest_of(manifest: ManifestLike, git_repo: Repo) -> Manifest:
    if isinstance(manifest, Manifest):
        return manifest
    # Schema checks are remembered in the git dir: the guard runs before every benchmark.
    return load_manifest(manifest, valid_cache=paths.schema_checked(git_repo.common_dir))


def evaluate_guard(
    repo: RepoLike,
    manifest: ManifestLike,
    *,
    python: str | None = None,
    imports: Sequence[str] = (),
    allow_dirty: bool = False,
    strict: bool = False,
    bisect: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    generated: Collection[str] | None = None,
    python_origin: str = "--python",
) -> GuardReport:
    """Run every check and return the report; raises only for bad input
    (``PatchkitError``: no repository, bad manifest, an interpreter that does
    not start).  ``imports`` without ``python`` probes ``sys.executable``;
    ``env`` and ``cwd`` are what the probe runs with (None: patchkit's own;
    ``patchkit bench`` gives the server's environment and the tree).
    ``generated``: the files ``patchkit bench`` writes into its worktrees, which
    with bytecode caches are not changes outside patchkit's edits (``check_clean``).  ``python_origin``: where
    ``python`` was named, as an interpreter that does not start is reported (``[bench].python`` for bench)."""
    git_repo = _repo_of(repo, manifest)
    packages = tuple(dict.fromkeys(imports))
    run: ProbeRun | None = None
    started: list[Pending] = []
    try:
        if python is not None or packages:
            from patchkit.guard.probe import ProbeRun

            run = ProbeRun(python or sys.executable, packages, env=env, cwd=cwd, origin=python_origin)
        if git_repo.root is not None:
            # HEAD and `git status` run while the manifest loads and the tree is evaluated.
            started = [git_repo.spawn_head(), git_repo.spawn_status()]
        loaded = _manifest_of(manifest, git_repo)
        root = git_repo.require_worktree("guard")
        head_pending, changes_pending = started
        status = status_worktree(loaded, git_repo, head=head_pending)
        commit, branch = parse_head(head_pending)
        changes = parse_porcelain(changes_pending.bytes())
        facts: InterpreterFacts | None = run.result() if run is not None else None
    except BaseException:
        for pending in started:
            pending.close()
        if run is not None:
            run.cancel()
        raise
    head = commit.sha if commit else None
    checks: list[Check] = [
        check_commit(commit, branch),
        check_patches(status, strict=strict, tree=root),
        check_record(
            loaded,
            status.record,
            status.edited,
            status.interrupted,
            out_of_date=bool(status.out_of_date),
            layered=status.layers,
            sharing=_sharing(git_repo, status.record, status.edited),
            paths={r.manifest_name: r.manifest_path for r in all_records(git_repo)} if status.edited else None,
            tree=root,
        ),
        check_clean(
            changes,
            status.record,
            head,
            head_digest_reader(git_repo, head),
            allow_dirty=allow_dirty,
            others=_other_records(git_repo, loaded.name, changes),
            generated=generated,
            layered=status.layers,
        ),
    ]
    if facts is not None:
        tracked: list[str] = []

        def listing() -> list[str]:
            if not tracked:
                tracked.extend(git_repo.list_files(head))
            return tracked

        checks.extend(check_import(facts, package, root, listing) for package in facts.packages)
    commit_results = None
    if bisect and head is not None and not all(c.ok for c in checks):
        from patchkit.engine.check import check_range

        commit_results = check_range(loaded, git_repo, commits=[head], hints=False).commits[0].results
    git_repo.close()
    return GuardReport(
        loaded, str(root), commit, branch, tuple(checks), status, facts, strict, allow_dirty, commit_results
    )


def _other_records(repo: Repo, name: str, changes: Sequence[tuple[str, str]]) -> list[tuple[Record, set[str]]]:
    """Other manifests' records that cover a changed file, with their files edited since."""
    own = load_record(repo, name)
    changed = {path for _status, path in changes} - ({f.path for f in own.files} if own else set())
    if not changed:
        return []
    out = []
    for record in all_records(repo):
        if record.manifest_name != name and changed & {f.path for f in record.files}:
            out.append((record, set(edited_since(repo, record))))
    return out


def _sharing(repo: Repo, record: Record | None, edited: Sequence[str]) -> dict[str, list[str]]:
    """For each edited file another manifest also patched: every manifest on it, lowest layer first."""
    if record is None or not edited:
        return {}
    records = all_records(repo)
    stacks = {path: stacking(records, path) for path in edited}
    return {path: stack for path, stack in stacks.items() if len(stack) > 1}


class RequireOptions(TypedDict, total=False):
    """``require``'s keyword arguments: ``evaluate_guard``'s, whose defaults apply."""

    python: str | None
    imports: Sequence[str]
    allow_dirty: bool
    strict: bool


def require(repo: RepoLike, manifest: ManifestLike, **options: Unpack[RequireOptions]) -> GuardReport:
    """The report when every check passes; otherwise raise.

    ``PartialApplicationError`` when a required patch (with ``strict``: any
    patch) is not in place or cannot apply; ``GuardError`` (its base class)
    for any other failed check.  Either carries the report as ``.report``.
    """
    report = evaluate_guard(repo, manifest, **options)
    if report.ok:
        return report
    failed = report.failed
    where = f"at {report.commit.sha[:10]}" if report.commit else "with no commit"
    message = (
        f"the tree {report.target} {where} is not fit to benchmark with manifest {report.manifest.name}: "
        + "; ".join(f"[{c.check}] {c.message}" for c in failed)
    )
    items = tuple(f"{c.check}: {c.message}" for c in failed)
    cls = PartialApplicationError if report.patches_missing else GuardError
    raise cls(message, report=report, items=items)
