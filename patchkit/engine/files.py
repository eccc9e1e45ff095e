"""Which files patchkit may read and write in a work tree, and how their content is named.

Kept apart from ``transaction`` (temp files, journals) so that the read-only
paths (``status``, the guard before every benchmark, ``check``) do not load
what only a write needs.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path, PurePosixPath


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def outside_reason(root: Path, rel: str) -> str | None:
    """Why ``root/rel`` is not a file patchkit may read or write, or None.

    A path is outside the work tree when it is absolute, has a ``..`` part, or
    passes through a directory that is a symlink (wherever that points: a
    committed ``python/escape -> /elsewhere`` would otherwise make patchkit
    write outside the repository, unseen by ``git status``).  The last part
    being a symlink is the caller's to report (FileState.SYMLINK).
    """
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        return f"{rel} is not a path inside the work tree"
    current = root
    for depth, part in enumerate(pure.parts[:-1], start=1):
        current = current / part
        try:
            info = current.lstat()
        except (FileNotFoundError, NotADirectoryError):
            return None  # nothing there to pass through (a write creates real directories)
        if stat.S_ISLNK(info.st_mode):
            return symlink_dir_message(rel, "/".join(pure.parts[:depth]))
    return None


def symlink_dir_message(rel: str, link: str) -> str:
    """The one wording for a target under a symlinked directory (work tree and commit alike)."""
    return (
        f"{rel} is under {link}, which is a symlink; patchkit edits files inside the work tree only, "
        "never through a symlinked directory"
    )
