"""Reading target files from a commit's blobs, without a checkout."""

from __future__ import annotations

from patchkit.git import Commit, Entry, Repo, TreeEntry, symlinked_parents
from patchkit.sources.base import FileRead, FileState, Source
from patchkit.sources.safety import symlink_dir_message

SYMLINK_DIR = "symlink-dir"  # the mode of a pseudo entry: (SYMLINK_DIR, the symlinked parent directory)


class CommitSource(Source):
    def __init__(self, repo: Repo, commit: Commit) -> None:
        self.repo = repo
        self._commit = commit
        self._entries: dict[str, TreeEntry | None] = {}

    @property
    def label(self) -> str:
        return f"commit {self._commit.short} {self._commit.subject!r}"

    @property
    def commit(self) -> Commit:
        return self._commit

    def prefetch(self, paths: list[str]) -> None:
        """One ls-tree for every target file instead of one per file."""
        entries = self.repo.ls_tree(self._commit.sha, paths)
        missing = [(self._commit.sha, path) for path in paths if path not in entries]
        links = symlinked_parents(self.repo, missing) if missing else {}
        for path in paths:
            link = links.get((self._commit.sha, path))
            self._entries[path] = entries.get(path) if link is None else TreeEntry(path, SYMLINK_DIR, link)

    def read(self, path: str) -> FileRead:
        if path not in self._entries:
            self.prefetch([path])
        entry = self._entries[path]
        return read_entry(self.repo, path, None if entry is None else (entry.mode, entry.oid))

    def grep(self, pattern: str) -> list[tuple[str, int, str]]:
        return self.repo.grep(pattern, self._commit.sha)

    def files(self) -> list[str]:
        return self.repo.list_files(self._commit.sha)


def read_entry(repo: Repo, path: str, entry: Entry) -> FileRead:
    """A FileRead for a (mode, oid) tree entry of a commit."""
    if entry is None:
        return FileRead(path, FileState.MISSING)
    mode, oid = entry
    if mode == SYMLINK_DIR:
        return FileRead(path, FileState.OUTSIDE, note=symlink_dir_message(path, oid))
    if mode == "120000":
        return FileRead(path, FileState.SYMLINK, oid=oid)
    if not mode.startswith("100"):
        return FileRead(path, FileState.NOT_FILE, oid=oid)
    return FileRead(path, FileState.OK, repo.read_blob(oid), oid, int(mode[-3:], 8))
