"""The pre-benchmark guard: may a number be produced from this tree?

Python API (what ``patchkit guard``, ``patchkit run``, the pytest plugin and
``patchkit bench`` call)::

    from patchkit.guard import require, evaluate_guard, GuardError, PartialApplicationError

    report = require("../sglang", "kimi-k25-eagle3", python="/venv/bin/python", imports=["sglang"])
    # every check passed; report.commit.sha is what is being measured

    report = evaluate_guard("../sglang", "kimi-k25-eagle3")   # never raises for a failed check
    if not report.ok:
        for check in report.failed:
            print(check.check, check.message)

``require(repo, manifest, *, python=None, imports=(), allow_dirty=False,
strict=False) -> GuardReport``: ``repo`` and ``manifest`` are paths (str or
``Path``; a manifest may also be a bare name) or the objects ``open_repo`` and
``load_manifest`` return.  It returns the report when every check passes and
raises otherwise: ``PartialApplicationError`` when a required patch is not in
place or cannot apply, ``GuardError`` (its base class, a ``PatchkitError``
with exit code 1) for any other failed check; both carry ``.report``.  Bad
input (no repository, a manifest that does not load, an interpreter that does
not start) raises the usual ``PatchkitError`` subclasses (exit code 2).

``evaluate_guard(...)`` takes the same arguments plus ``bisect=False`` and
returns the report whatever the checks say; ``report.ok``,
``report.failed``, ``report.exit_code(bisect=...)`` and ``report.to_json()``
give the verdict (``bisect=True`` also evaluates HEAD's blobs on failure so
the exit code can tell 125, cannot be patched here, from 128, wrong setup).

The checks (``patchkit.guard.checks``): ``commit`` (HEAD is a commit),
``patches`` (every required patch reads SKIP, as ``patchkit status`` shows;
no patch holds an older payload version), ``record`` (the files patchkit
wrote are unchanged; the record is of this manifest version; no killed
patchkit run left a journal or a moved HEAD), ``clean`` (no change outside
patchkit's recorded edits, no untracked file), and ``import:PKG`` per
package (``patchkit.guard.probe``: the interpreter resolves PKG inside this
tree, without importing it).

Modules: ``checks`` (one function per check), ``probe`` (the interpreter
probe), ``report`` (``GuardReport``, exit codes, JSON), ``api`` (this API),
``pytest_plugin`` (``--patchkit-manifest``, registered as a ``pytest11`` entry
point).
"""

from __future__ import annotations

from typing import Any

from patchkit.errors import GuardError, PartialApplicationError

__all__ = ["Check", "GuardError", "GuardReport", "PartialApplicationError", "evaluate_guard", "require"]

_LAZY = {
    "require": "patchkit.guard.api",
    "evaluate_guard": "patchkit.guard.api",
    "GuardReport": "patchkit.guard.report",
    "Check": "patchkit.guard.checks",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'patchkit.guard' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
