"""Getting a tree ready to benchmark: worktree at REV, every manifest applied, guarded, version file.

* One linked worktree per commit, reused across runs, under
  ``<git-common-dir>/patchkit/worktrees/<sha12>`` unless ``--worktree-root``
  says otherwise.  The first manifest goes through ``apply_at_commit(...,
  worktree=...)``, which reads the verdicts from the commit's blobs first: a
  required FAIL there refuses before any worktree is created.  The other
  manifests are applied to that worktree in order.
* ``_guard_tree`` is the one place that decides whether a tree may be
  benchmarked.  Until ``patchkit.guard`` lands it asks ``status_worktree``
  for every manifest: every required patch must be in place.
* ``scm_version_file``: the file setuptools-scm would write for the commit
  (guess-next-dev scheme: tag ``vX.Y.Z`` at distance N gives
  ``X.Y.(Z+1).devN+g<sha>``, an exact tag gives ``X.Y.Z``; no tag gives
  ``0.1.devN+g<sha>`` with N the commit count), so that a server started
  from the worktree reports a version that names the commit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit.engine.apply import ApplyReport, apply_worktree, status_worktree
from patchkit.engine.commit_apply import apply_at_commit
from patchkit.engine.fsutil import atomic_write
from patchkit.git import Commit, GitFailed, Repo
from patchkit.manifest import Manifest
from patchkit.results import Status

GUARD_ENV = ("PATCHKIT_BENCH_COMMIT", "PATCHKIT_BENCH_TREE", "PATCHKIT_BENCH_MANIFESTS")


@dataclass(frozen=True)
class Prepared:
    commit: Commit
    tree: Path | None  # None when refused before a worktree existed
    reports: tuple[ApplyReport, ...]
    refused: bool
    reasons: tuple[str, ...]  # why it is refused: patch, status, reason, message
    guard: dict[str, Any]
    guard_env: dict[str, str]
    version: str | None  # what scm_version_file holds

    def manifests_json(self) -> list[dict[str, Any]]:
        return [
            {
                "name": r.manifest.name,
                "digest": r.manifest.digest,
                "results": [
                    {"patch": x.patch, "status": x.status.value, "reason": x.reason.value if x.reason else None}
                    for x in r.results
                ],
            }
            for r in self.reports
        ]


def worktree_root(repo: Repo, override: str | None) -> Path:
    if override:
        return Path(override).resolve()
    return repo.common_dir / "patchkit" / "worktrees"


def _blocking(report: ApplyReport) -> list[str]:
    return [
        f"{report.manifest.name}:{r.patch} {r.status.value} {r.reason.value if r.reason else ''} "
        f"({r.where()}: {r.message})"
        for r in report.results
        if r.status is Status.FAIL
    ]


def prepare_commit(
    repo: Repo, manifests: Sequence[Manifest], commit: Commit, root: Path, *, scm_version_file: str | None
) -> Prepared:
    path = root / commit.sha[:12]
    root.mkdir(parents=True, exist_ok=True)
    reports: list[ApplyReport] = []
    first = apply_at_commit(manifests[0], repo, commit.sha, worktree=str(path))
    reports.append(first)
    if first.refused:
        tree = path if path.exists() else None
        return Prepared(commit, tree, tuple(reports), True, tuple(_blocking(first)), {}, {}, None)
    linked = Repo.discover(path)
    try:
        for manifest in manifests[1:]:
            report = apply_worktree(manifest, linked)
            reports.append(report)
            if report.refused:
                return Prepared(commit, path, tuple(reports), True, tuple(_blocking(report)), {}, {}, None)
        guard, problems = _guard_tree(linked, manifests)
    finally:
        linked.close()
    if problems:
        return Prepared(commit, path, tuple(reports), True, tuple(problems), guard, {}, None)
    version = None
    if scm_version_file is not None:
        version = scm_version(repo, commit.sha)
        write_scm_version_file(path / scm_version_file, version)
    guard_env = {
        "PATCHKIT_BENCH_COMMIT": commit.sha,
        "PATCHKIT_BENCH_TREE": str(path),
        "PATCHKIT_BENCH_MANIFESTS": ",".join(f"{m.name}@{m.digest}" for m in manifests),
    }
    return Prepared(commit, path, tuple(reports), False, (), guard, guard_env, version)


def _guard_tree(repo: Repo, manifests: Sequence[Manifest]) -> tuple[dict[str, Any], list[str]]:
    """The guard step: (report to store, problems that refuse the run).  The one place to swap for patchkit.guard."""
    report: dict[str, Any] = {"kind": "status", "manifests": []}
    problems: list[str] = []
    for manifest in manifests:
        status = status_worktree(manifest, repo)
        report["manifests"].append(
            {
                "name": manifest.name,
                "complete": status.complete,
                "edited_after_apply": list(status.edited),
                "results": [dict(r.to_json(), state=status.state_of(r)) for r in status.results],
            }
        )
        for r in status.results:
            if r.required and r.status is not Status.SKIP:
                problems.append(f"{manifest.name}:{r.patch} is {status.state_of(r)} ({r.where()}: {r.message})")
        problems.extend(f"{manifest.name}: {p} was edited after patching" for p in status.edited)
    report["ok"] = not problems
    return report, problems


def scm_version(repo: Repo, sha: str) -> str:
    """The version setuptools-scm (guess-next-dev, node-and-date) gives a clean checkout of ``sha``."""
    try:
        described = repo.git("describe", "--tags", "--long", "--match", "*[0-9]*", sha).strip()
    except GitFailed:
        described = ""
    match = re.fullmatch(r"(?P<tag>.+)-(?P<distance>\d+)-g(?P<node>[0-9a-f]+)", described)
    node = match.group("node") if match else repo.git("rev-parse", "--short", sha).strip()
    if match is None:
        count = int(repo.git("rev-list", "--count", sha).strip())
        return f"0.1.dev{count}+g{node}"
    tag = re.sub(r"^(?:[\w-]+-)?[vV]?", "", match.group("tag"))
    distance = int(match.group("distance"))
    if distance == 0:
        return tag
    parts = re.match(r"^(\d+(?:\.\d+)*)(.*)$", tag)
    if parts is None or parts.group(2):
        return f"{tag}.post1.dev{distance}+g{node}"
    numbers = parts.group(1).split(".")
    numbers[-1] = str(int(numbers[-1]) + 1)
    return f"{'.'.join(numbers)}.dev{distance}+g{node}"


_TEMPLATE = """\
# file generated by patchkit bench, as setuptools-scm writes it
# don't change, don't track in version control

__all__ = ["__version__", "__version_tuple__", "version", "version_tuple", "__commit_id__", "commit_id"]

__version__ = version = {version!r}
__version_tuple__ = version_tuple = {version_tuple!r}
__commit_id__ = commit_id = {commit_id!r}
"""


def _version_tuple(version: str) -> tuple[int | str, ...]:
    public, _, local = version.partition("+")
    out: list[int | str] = [int(p) if p.isdigit() else p for p in public.split(".")]
    if local:
        out.append(local)
    return tuple(out)


def write_scm_version_file(path: Path, version: str) -> None:
    node = re.search(r"\+g([0-9a-f]+)", version)
    text = _TEMPLATE.format(
        version=version, version_tuple=_version_tuple(version), commit_id=f"g{node.group(1)}" if node else None
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"), 0o644)
