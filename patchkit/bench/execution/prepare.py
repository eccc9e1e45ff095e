"""Getting a tree ready to benchmark: worktree at REV, every manifest applied, guarded, version file.

* One linked worktree per commit, reused across runs, under
  ``<git-common-dir>/patchkit/worktrees/<sha12>`` unless ``--worktree-root``
  says otherwise.  The first manifest goes through ``apply_at_commit(...,
  worktree=...)``, which reads the verdicts from the commit's blobs first: a
  required FAIL there refuses before any worktree is created.  The other
  manifests are applied to that worktree in order.  A reused worktree that
  another version of a manifest patched is reverted first (``reapply_stale``).
* ``guard_tree`` is the one place that decides whether a patched tree may be
  benchmarked: ``patchkit.guard.evaluate_guard`` for every manifest (commit,
  patches in place and up to date, record intact, no interrupted run, clean
  tree), with the import check of ``[bench].import_check`` run by the bench
  interpreter in the server's environment on the manifest that has
  ``[bench]``.  It refuses exactly when ``patchkit guard`` would; the stored
  guard report is every manifest's ``GuardReport.to_json()``.  A required
  patch that FAILs at the commit refuses earlier, before any worktree exists.
* ``scm_version_file``: the file setuptools-scm would write for the commit
  (guess-next-dev scheme: tag ``vX.Y.Z`` at distance N gives
  ``X.Y.(Z+1).devN+g<sha>``, an exact tag gives ``X.Y.Z``; no tag gives
  ``0.1.devN+g<sha>`` with N the commit count), so that a server started
  from the worktree reports a version that names the commit.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit import paths
from patchkit.bench.execution.job import bench_env, bench_python
from patchkit.bench.records.record import ManifestJson, PatchStateJson, patch_state
from patchkit.engine.apply import ApplyReport, apply_worktree
from patchkit.engine.check import check_range
from patchkit.engine.commit_apply import apply_at_commit
from patchkit.engine.record import load_record
from patchkit.engine.revert import revert_worktree
from patchkit.engine.transaction import atomic_write
from patchkit.git import Commit, GitFailed, Repo
from patchkit.guard.api import evaluate_guard
from patchkit.manifest import Manifest
from patchkit.manifest.bench import BenchConfig
from patchkit.results import Status


@dataclass(frozen=True)
class Prepared:
    """A commit's tree made ready to benchmark, or refused with why: the worktree, every manifest's apply report,
    the guard report, the variables the guard adds to the server's environment, and the version file's text."""

    commit: Commit
    tree: Path | None  # None when refused before a worktree existed
    reports: tuple[ApplyReport, ...]
    refused: bool
    reasons: tuple[str, ...]  # why it is refused: patch, status, reason, message
    guard: dict[str, Any]  # the guard's JSON report, read back by key (refusal)
    guard_env: dict[str, str]
    version: str | None  # what scm_version_file holds

    def manifests_json(self) -> list[ManifestJson]:
        """Per manifest, per patch: what apply did (status, reason) and the state that gives the tree
        (``patch_state``), with the patch's payload digest (its operation's fingerprint: every input
        of the code it writes), so that compare can tell which patched code ran."""
        out: list[ManifestJson] = []
        for report in self.reports:
            fingerprints = {p.id: p.op.fingerprint for p in report.manifest.patches}
            results: list[PatchStateJson] = []
            for x in report.results:
                reason = x.reason.value if x.reason else None
                results.append(
                    {
                        "patch": x.patch,
                        "status": x.status.value,
                        "reason": reason,
                        "state": patch_state(x.status, x.reason),
                        "payload": f"sha256:{fingerprints[x.patch]}" if x.patch in fingerprints else None,
                    }
                )
            out.append({"name": report.manifest.name, "digest": report.manifest.digest, "results": results})
        return out


def worktree_root(repo: Repo, override: str | None) -> Path:
    if override:
        return Path(override).resolve()
    return paths.bench_worktrees(repo.common_dir)


def _blocking(report: ApplyReport) -> list[str]:
    return [
        f"{report.manifest.name}:{r.patch} {r.status.value} {r.reason.value if r.reason else ''} "
        f"({r.where()}: {r.message})"
        for r in report.results
        if r.status is Status.FAIL
    ]


def prepare_commit(
    repo: Repo,
    manifests: Sequence[Manifest],
    commit: Commit,
    root: Path,
    config: BenchConfig,
    *,
    sets: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    allow_dirty: bool = False,
    progress: Callable[[str, str], None] | None = None,
) -> Prepared:
    """``sets`` (``--set``) and ``base_env`` (patchkit's environment) make the import check's environment;
    ``allow_dirty`` is the guard's ``--allow-dirty``; ``progress(phase, detail)`` hears each step begin."""
    say = progress or (lambda phase, detail: None)
    path = root / commit.sha[:12]
    root.mkdir(parents=True, exist_ok=True)
    reports: list[ApplyReport] = []
    if path.exists() and path.resolve() in {p.resolve() for p in repo.worktrees()}:
        reapply_stale(path, manifests)
    say("applying", manifests[0].name)
    first = apply_at_commit(manifests[0], repo, commit.sha, worktree=str(path))
    reports.append(first)
    if first.refused:
        tree = path if path.exists() else None
        return Prepared(commit, tree, tuple(reports), True, tuple(_blocking(first)), {}, {}, None)
    linked = Repo.discover(path)
    try:
        for manifest in manifests[1:]:
            say("applying", manifest.name)
            report = apply_worktree(manifest, linked)
            reports.append(report)
            if report.refused:
                return Prepared(commit, path, tuple(reports), True, tuple(_blocking(report)), {}, {}, None)
        python = bench_python(config)
        if python is None:
            problem = f"the interpreter {config.python!r} of [bench].python is not found on PATH"
            return Prepared(commit, path, tuple(reports), True, (problem,), {}, {}, None)
        env = import_env(config, path, python, sets or {}, os.environ if base_env is None else base_env)
        generated = (config.scm_version_file,) if config.scm_version_file is not None else ()
        say("guard", ", ".join(m.name for m in manifests))
        guard, problems = guard_tree(
            linked,
            manifests,
            config.import_check,
            python=python,
            env=env,
            allow_dirty=allow_dirty,
            generated=generated,
        )
    finally:
        linked.close()
    if problems:
        return Prepared(commit, path, tuple(reports), True, tuple(problems), guard, {}, None)
    version = None
    if config.scm_version_file is not None:
        version = scm_version(repo, commit.sha)
        write_scm_version_file(path / config.scm_version_file, version)
    guard_env = {
        "PATCHKIT_BENCH_COMMIT": commit.sha,
        "PATCHKIT_BENCH_TREE": str(path),
        "PATCHKIT_BENCH_MANIFESTS": ",".join(f"{m.name}@{m.digest}" for m in manifests),
    }
    return Prepared(commit, path, tuple(reports), False, (), guard, guard_env, version)


def reapply_stale(path: Path, manifests: Sequence[Manifest]) -> None:
    """A reused worktree patched by another version of a manifest (any edit of the file changes its
    digest, and the guard refuses such a record) is reverted first, every manifest in reverse order,
    so that applying writes a record of this version.  Hand edits still refuse: revert is not forced."""
    linked = Repo.discover(path)
    try:
        digests = {m.name: record.manifest_digest for m in manifests if (record := load_record(linked, m.name))}
        if any(digests.get(m.name, m.digest) != m.digest for m in manifests):
            for manifest in reversed(manifests):
                if manifest.name in digests:
                    revert_worktree(manifest.name, linked)
    finally:
        linked.close()


def import_env(
    config: BenchConfig, tree: Path, python: str, sets: Mapping[str, str], base: Mapping[str, str]
) -> dict[str, str]:
    """The environment the import check runs in: the server's (``inherit``, ``PYTHONPATH``, ``[bench].env``)
    before a port is picked or a profile chosen: vars of the first profile, ``{port}`` as --set/vars give it
    (else 0), no profile ``env``."""
    values = {**config.resolve_vars(config.profile_names()[0], sets), "tree": str(tree), "python": python}
    values.setdefault("port", "0")
    return bench_env(config, tree, None, values, base=base)


def guard_tree(
    repo: Repo,
    manifests: Sequence[Manifest],
    import_check: Sequence[str] = (),
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    allow_dirty: bool = False,
    generated: Sequence[str] = (),
) -> tuple[dict[str, object], list[str]]:
    """The guard step: (report to store, problems that refuse the run).

    ``patchkit.guard.evaluate_guard`` per manifest, as ``patchkit guard -m M``
    would run it; the manifest with ``[bench]`` also checks that every
    ``import_check`` module resolves inside the tree for ``python`` run in
    ``env`` from the tree's root, as the server is started.  ``generated`` are the files bench
    writes into the tree (the ``scm_version_file``): with the bytecode caches the server leaves,
    they are patchkit's own, not changes that refuse the tree; any other change refuses as
    ``patchkit guard`` would.
    """

    reports = []
    for manifest in manifests:
        imports = tuple(import_check) if manifest.bench is not None else ()
        reports.append(
            evaluate_guard(
                repo,
                manifest,
                python=python if imports else None,
                imports=imports,
                env=env,
                cwd=repo.root,
                allow_dirty=allow_dirty,
                generated=generated,
                python_origin="[bench].python",
            )
        )
    problems = [f"{r.manifest.name}: [{c.check}] {c.message}" for r in reports for c in r.failed]
    return {"ok": not problems, "reports": [r.to_json() for r in reports]}, problems


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
    """Write the version file, or leave it alone when it already holds these bytes.

    A reused worktree may have a server running from it (a Slurm job submitted by a submitter that
    died, whose command is run again): its probe refuses a file changed since the server loaded it,
    even to the same bytes, so an unchanged file is never rewritten."""
    node = re.search(r"\+g([0-9a-f]+)", version)
    text = _TEMPLATE.format(
        version=version, version_tuple=_version_tuple(version), commit_id=f"g{node.group(1)}" if node else None
    )
    data = text.encode("utf-8")
    with contextlib.suppress(OSError):  # absent or unreadable: write it
        if path.read_bytes() == data:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, 0o644)


def unpatchable_commits(manifests: Sequence[Manifest], repo: Repo, commits: Sequence[Commit]) -> dict[str, str]:
    """The commits where a manifest cannot apply (a required FAIL), with the failing patches: read
    from the blobs (``check_range``, no checkout), so that bisect never prepares nor benchmarks them."""

    out: dict[str, str] = {}
    for manifest in manifests:
        report = check_range(manifest, repo, commits=[c.sha for c in commits], hints=False)
        for row in report.commits:
            if row.failed and row.commit.sha not in out:
                out[row.commit.sha] = ", ".join(
                    f"{manifest.name}:{r.patch} {r.reason.value if r.reason else ''}".rstrip()
                    for r in row.results
                    if r.status is Status.FAIL
                )
    return out
