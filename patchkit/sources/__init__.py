"""Where target files are read from: a work tree on disk, or a commit's blobs.

Operations and the engine see only ``Source``; a range check reads commits
straight from the object database, without a checkout.
"""

from __future__ import annotations

from patchkit.sources.base import FileRead, FileState, Source
from patchkit.sources.commit import CommitSource, read_entry
from patchkit.sources.worktree import WorktreeSource

__all__ = ["CommitSource", "FileRead", "FileState", "Source", "WorktreeSource", "read_entry"]
