"""Reading target files from a work tree on disk."""

from __future__ import annotations

import stat
from pathlib import Path

from patchkit.git import Commit, Repo
from patchkit.sources.base import FileRead, FileState, Source
from patchkit.sources.safety import outside_reason


class WorktreeSource(Source):
    def __init__(self, repo: Repo, root: Path) -> None:
        self.repo = repo
        self.root = root

    @property
    def label(self) -> str:
        return f"work tree {self.root}"

    @property
    def commit(self) -> Commit | None:
        return self.repo.head_commit()

    def read(self, path: str) -> FileRead:
        full = self.root / path
        outside = outside_reason(self.root, path)
        if outside is not None:
            return FileRead(path, FileState.OUTSIDE, note=outside)
        try:
            info = full.lstat()
        except FileNotFoundError:
            return FileRead(path, FileState.MISSING)
        except NotADirectoryError:
            return FileRead(path, FileState.MISSING)
        if stat.S_ISLNK(info.st_mode):
            return FileRead(path, FileState.SYMLINK)
        if not stat.S_ISREG(info.st_mode):
            return FileRead(path, FileState.NOT_FILE)
        data = full.read_bytes()
        return FileRead(path, FileState.OK, data, self.repo.hash_blob(data), stat.S_IMODE(info.st_mode))

    def grep(self, pattern: str) -> list[tuple[str, int, str]]:
        return self.repo.grep(pattern, None)

    def files(self) -> list[str]:
        return self.repo.list_files(None)
