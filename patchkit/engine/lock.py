"""One patchkit at a time per work tree: an advisory lock in the git dir.

``flock`` is released by the kernel when the holder dies, so a crashed run
never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from patchkit.errors import WRITE_ERRNOS, BusyError, UnwritableError


@contextmanager
def repo_lock(state_dir: Path, *, wait: float | None = None, what: str = "") -> Iterator[None]:
    """The repository's lock, waited for up to ``wait`` seconds.  ``wait`` is None for a caller whose verb has
    no ``--wait`` (``run --apply``, the bench verbs' worktrees, the Python API): it does not wait, and the
    refusal does not name an option that verb lacks."""
    path = state_dir / "lock"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            raise
        raise UnwritableError.from_os(path, exc) from None
    try:
        deadline = time.monotonic() + (wait or 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder(path)
                    waited = f", still after waiting {wait:g} s" if wait else ""
                    if wait is None:
                        hint = "wait for it to finish, then run this again"
                    else:
                        hint = f"wait for it to finish, or pass {'a longer ' if wait else ''}--wait SECONDS"
                    raise BusyError(
                        f"another patchkit is working on this repository ({holder}){waited}", hint=hint
                    ) from None
                time.sleep(0.05)
        command = what or " ".join(["patchkit", *sys.argv[1:]])
        info = f"pid {os.getpid()}, `{command}`, since {datetime.now(UTC):%H:%M:%S} UTC"
        with contextlib.suppress(OSError):  # who holds the lock is a courtesy: a full disk must not stop us
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode(), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_held(state_dir: Path) -> bool:
    """Whether another process holds the lock right now (takes and drops it if free)."""
    path = state_dir / "lock"
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we took
    return False


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or "holder unknown"
