"""What the launches of one hunt ran, from their stored coverage: the ``Ran`` the pruning rule reads.

Each launch keeps what its probed processes ran (``proof/coverage.py``, the store's ``coverage`` table), in
absolute paths.  ``ran_of`` joins a set of stored runs into one ``bench.stats.relevance.Ran``:

* ``functions``: the union of (repository-relative path, qualified name) of the code objects that started in
  any probed process of any launch; ``modules``: the tree's module files that ran; ``data_files``: the tree's
  files read as files (a module's source the program opened itself, too: never the import system's reads).
  A path is made repository-relative by removing the launch's worktree root (its ``PATCHKIT_BENCH_TREE``), by
  the path as recorded or by its real path; a file outside the tree is left out;
* ``granularity``: ``function`` only when every launch recorded functions in every process, else ``file``;
* ``blind``: one sentence per reason the probe cannot vouch for what ran: a launch with no stored coverage,
  a Python process the probe never ran in (``-I``, ``-S``, ``-E``, ``env={}``: ``proof/unprobed.py``), a
  process of the server's tree that is not Python (the proof's process-tree accounting), an ``exec`` the probe
  did not follow, a process in which the probe failed or could not write.  While ``blind`` is not empty, the
  rule calls nothing inert.

What the probe cannot see, so neither can this: docs/concepts/proof.md ("What ran").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from patchkit.bench.records.record import RunRecord
from patchkit.bench.records.store import Store
from patchkit.bench.stats.relevance import Ran
from patchkit.proof.document import CoverageJson


def ran_of(store: Store, runs: Iterable[RunRecord]) -> Ran:
    """The ``Ran`` of ``runs`` (the stored launches of one hunt), each with the coverage the store keeps for it."""
    launches = []
    for run in runs:
        coverage = store.coverage(run.run_id) if run.run_id is not None else None
        launches.append((run, coverage if coverage is not None else run.coverage))
    return ran_from(launches)


def ran_from(launches: Iterable[tuple[RunRecord, CoverageJson | None]]) -> Ran:
    """The ``Ran`` of launches given with their coverage (None: none kept): the pure part of ``ran_of``."""
    functions: set[tuple[str, str]] = set()
    modules: set[str] = set()
    data_files: set[str] = set()
    blind: list[str] = []
    fine = True
    for run, coverage in launches:
        who = _who(run)
        if coverage is None:
            why = "no server was started" if run.proof is None else "the probe was off, or an older patchkit ran it"
            blind.append(f"{who} has no stored coverage ({why}): what it ran is not known")
            fine = False
            continue
        fine = fine and coverage.get("granularity") == "function" and bool(coverage.get("processes"))
        if not coverage.get("processes"):
            blind.append(f"{who}: no process of its server ran the probe")
        relative = _relative(run, coverage)
        for path, names in (coverage.get("functions") or {}).items():
            rel = relative(path)
            if rel is not None:
                functions.update((rel, str(name)) for name, _line in names)
        modules.update(rel for rel in map(relative, coverage.get("modules") or ()) if rel is not None)
        # a module's source among them was opened by the program itself, not by an import (the probe tells them
        # apart): any change to it counts (relevance: a Python file read as a file)
        data_files.update(rel for rel in map(relative, coverage.get("reads") or ()) if rel is not None)
        blind.extend(f"{who}: {line}" for line in coverage.get("blind") or ())
        blind.extend(f"{who}: {line}" for line in _unprobed(run))
    return Ran(
        granularity="function" if fine else "file",
        functions=frozenset(functions),
        modules=frozenset(modules),
        data_files=frozenset(data_files),
        blind=tuple(dict.fromkeys(blind)),
    )


def _who(run: RunRecord) -> str:
    number = f"run {run.run_id}" if run.run_id is not None else "a run"
    return f"{number} (launch {run.launch} of {run.commit.sha[:12]})"


def _relative(run: RunRecord, coverage: CoverageJson) -> TreeRelative:
    return TreeRelative(tree_root(run, coverage))


def tree_root(run: RunRecord, coverage: CoverageJson) -> str | None:
    """The launch's worktree: as the coverage names it, else the record's ``PATCHKIT_BENCH_TREE`` or server cwd."""
    root = coverage.get("root") or run.env.get("PATCHKIT_BENCH_TREE") or (run.commands or {}).get("cwd")
    return str(root) if root else None


class TreeRelative:
    """A recorded path made repository-relative by removing the launch's worktree root, as recorded or by its
    real path (a tree reached through a symlink); None for a file outside the tree."""

    def __init__(self, root: str | None) -> None:
        forms: list[str] = []
        if root:
            for form in (os.path.normpath(root), os.path.realpath(root)):
                prefix = form.rstrip(os.sep) + os.sep
                if prefix not in forms:
                    forms.append(prefix)
        self.prefixes: Sequence[str] = forms

    def __call__(self, path: str) -> str | None:
        normal = os.path.normpath(path)
        for prefix in self.prefixes:
            if normal.startswith(prefix):
                return normal[len(prefix) :].replace(os.sep, "/")
        return None


def _unprobed(run: RunRecord) -> list[str]:
    """What the proof found from outside the probe: each Python process that ran without it, with why, and each
    process of the server's tree that is not Python."""
    proof = run.proof or {}
    unaccounted = list(proof.get("unaccounted") or ())
    out = [
        f"pid {item.get('pid')} ({' '.join(item.get('argv') or ()) or '?'}) ran without the probe: {item.get('why')}"
        for item in unaccounted
    ]
    python = {f"pid {item.get('pid')} " for item in unaccounted}
    out.extend(
        f"{line} is not Python: the probe cannot see what it ran"
        for line in proof.get("unprobed") or ()
        if not any(str(line).startswith(p) for p in python)
    )
    return out
