"""Which files patchkit may read and write in a work tree.

The sources (a work tree, a commit's blobs) and the engine's writers ask the
same question, so the answer lives at the bottom, here, and the same wording
reaches the user whichever of them refuses a path.
"""

from __future__ import annotations

import stat
from pathlib import Path, PurePosixPath


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
