"""patchkit: local patches on a moving upstream, as declarative libcst codemods.

The Python API (no click involved)::

    from patchkit import load_manifest, open_repo, apply_worktree, check_range

    manifest = load_manifest("manifests/kimi-k25-eagle3.toml")
    report = apply_worktree(manifest, open_repo("../sglang"), dry_run=True)
    if report.refused:
        ...

Every verdict is a frozen ``PatchResult``; refusals are values, and errors
are ``PatchkitError`` subclasses carrying their exit code.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from patchkit.git import Repo

# Lazy re-exports keep `import patchkit` (and `patchkit --help`) cheap.
_EXPORTS = {
    "load_manifest": "patchkit.manifest",
    "Manifest": "patchkit.manifest",
    "Patch": "patchkit.manifest",
    "PatchResult": "patchkit.results",
    "Status": "patchkit.results",
    "Reason": "patchkit.results",
    "evaluate": "patchkit.engine.evaluate",
    "Evaluation": "patchkit.engine.evaluate",
    "apply_worktree": "patchkit.engine.apply",
    "revert_worktree": "patchkit.engine.revert",
    "status_worktree": "patchkit.engine.status",
    "ApplyReport": "patchkit.engine.apply",
    "RevertReport": "patchkit.engine.revert",
    "StatusReport": "patchkit.engine.status",
    "check_range": "patchkit.engine.check",
    "CheckReport": "patchkit.engine.check",
    "apply_at_commit": "patchkit.engine.commit_apply",
    "explain": "patchkit.engine.explain",
    "PatchkitError": "patchkit.errors",
    "ExitCode": "patchkit.errors",
}

__all__ = ["__version__", "open_repo", *_EXPORTS]  # noqa: PLE0604 (the lazy names are strings)


def open_repo(path: str | Path = ".") -> Repo:
    from pathlib import Path as _Path

    from patchkit.git import Repo as _Repo

    return _Repo.discover(_Path(path))


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'patchkit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
