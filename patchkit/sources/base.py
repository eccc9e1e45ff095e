"""The Source interface and what reading one file returns."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum

from patchkit.git import Commit, Repo


class FileState(str, Enum):
    OK = "ok"
    MISSING = "missing"
    SYMLINK = "symlink"
    NOT_FILE = "not-file"  # a directory or a submodule
    OUTSIDE = "outside"  # under a symlinked directory (or otherwise not inside the tree)


@dataclass(frozen=True)
class FileRead:
    """A target file as a source read it: its state, its bytes where it has some, and what a write must keep."""

    path: str
    state: FileState
    data: bytes | None = None
    oid: str | None = None  # git object id of ``data``: the cache key
    mode: int | None = None  # permission bits to keep when writing (work tree only)
    note: str | None = None  # OUTSIDE: why


class Source(ABC):
    repo: Repo

    @property
    @abstractmethod
    def label(self) -> str:
        """How reports name this source ("work tree" or a commit)."""

    @property
    @abstractmethod
    def commit(self) -> Commit | None: ...

    @abstractmethod
    def read(self, path: str) -> FileRead: ...

    @abstractmethod
    def grep(self, pattern: str) -> list[tuple[str, int, str]]: ...

    @abstractmethod
    def files(self) -> list[str]: ...

    def find_definition(self, kind: str, name: str, *, exclude: str | None = None) -> list[tuple[str, int]]:
        """Where ``class NAME`` / ``def NAME`` is defined in the tree (for hints)."""
        keyword = "class" if kind == "class" else "(async[[:space:]]+)?def"
        pattern = rf"^[[:space:]]*{keyword}[[:space:]]+{re.escape(name)}[[:space:]]*[(:]"
        return [(path, line) for path, line, _ in self.grep(pattern) if path != exclude]
