"""Where patchkit keeps its own files: under the git directory, and in the user's cache.

Every root is named here, so that what a command writes and what another
reads (a lock, the verdict cache, the bench store) cannot drift apart; the
engine names the files of one tree's own state inside its root (``lock``,
``applied/``, ``objects``, ``journal.json``, ``move.json``).  Two roots under git:

* ``common_dir/patchkit``: shared by every work tree of a repository (caches,
  the bench store, the bench's work trees, the locks that guard creating one);
* ``git_dir/patchkit``: one work tree's own state (records, lock, journal,
  backups), since what is applied is a property of that tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

NAME = "patchkit"


def shared(common_dir: Path) -> Path:
    """What every work tree of the repository shares."""
    return common_dir / NAME


def work_tree_state(git_dir: Path) -> Path:
    """One work tree's records, lock, journal and backups."""
    return git_dir / NAME


def verdict_cache(common_dir: Path) -> Path:
    """The range check's verdicts by file version, valid for any work tree."""
    return shared(common_dir) / "cache.sqlite"


def schema_checked(common_dir: Path) -> Path:
    """Marker files of manifests that passed the JSON Schema and the ``[bench]`` checks
    (``manifest.loader.checked_marker``)."""
    return shared(common_dir) / "schema-checked"


def bench_store(common_dir: Path) -> Path:
    """The bench runs' SQLite store."""
    return shared(common_dir) / "bench.sqlite"


def bench_runs(common_dir: Path) -> Path:
    """The bench runs' logs and output files, one folder a run (wherever ``--store`` puts the store)."""
    return shared(common_dir) / "bench-runs"


def bench_worktrees(common_dir: Path) -> Path:
    """Where ``patchkit bench`` checks commits out, unless told another place."""
    return shared(common_dir) / "worktrees"


def worktree_lock(common_dir: Path, path: Path) -> Path:
    """The lock of the runs that create or patch the linked work tree at ``path``."""
    key = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    return shared(common_dir) / f"worktree-{key}"


def report_cache(common_dir: Path) -> Path:
    """``patchkit report``'s compressed plotly.js, kept between reports (``report/page.py``)."""
    return shared(common_dir) / "report"


def user_cache() -> Path:
    """The user's cache directory for patchkit (``$XDG_CACHE_HOME/patchkit``), where no repository is at hand."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / NAME


def why_unwritable(folder: Path) -> OSError | None:
    """Why a file cannot be written in ``folder``, or None if one can: a 64 KiB page written, synced and
    removed.  sqlite and a failed cache write report only "disk full" or "read-only database"; the errno
    of a real write is what tells a full disk from a quota, a read-only mount or permissions."""
    probe = folder / f".{NAME}-probe.{os.getpid()}.{NAME}-tmp"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"\0" * 65536)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return None
