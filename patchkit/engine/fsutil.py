"""Atomic file writes, and writing several files as one transaction.

A single file is written to a temp file in its own directory and moved into
place with ``os.replace``.  Several files are written in two phases: first
every temp file (nothing the user sees has changed yet), then the renames.
A journal in the git dir lists the files with backups of their old content,
so a run killed between two renames is rolled back by the next patchkit
command (``recover``).  A failure during the renames rolls back at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import RefusedError, UnwritableError


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically, keeping (or setting) its permission bits."""
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".patchkit-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@dataclass(frozen=True)
class FileWrite:
    path: str  # relative to the root
    before: bytes  # what the file must still hold when we replace it
    after: bytes
    mode: int | None


class ObjectStore:
    """Content-addressed copies of file contents (backups for revert and recovery)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes) -> str:
        digest = sha256(data)
        path = self.root / digest[:2] / digest[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data, 0o644)
        return digest

    def get(self, digest: str) -> bytes | None:
        path = self.root / digest[:2] / digest[2:]
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return data if sha256(data) == digest else None


class Transaction:
    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = root
        self.state_dir = state_dir
        self.journal = state_dir / "journal.json"
        self.objects = ObjectStore(state_dir / "objects")

    def recover(self) -> list[str]:
        """Roll back a transaction a killed process left half done.  Returns the restored paths."""
        if not self.journal.exists():
            return []
        entries = json.loads(self.journal.read_text(encoding="utf-8"))["files"]
        restored: list[str] = []
        for entry in entries:
            full = self.root / entry["path"]
            try:
                current = sha256(full.read_bytes())
            except FileNotFoundError:
                continue
            if current == entry["after"]:
                before = self.objects.get(entry["before"])
                if before is not None:
                    atomic_write(full, before, entry["mode"])
                    restored.append(entry["path"])
        self.journal.unlink()
        return restored

    def write(self, writes: Sequence[FileWrite]) -> None:
        """Write every file or none.  Raises RefusedError if a file changed under us."""
        if not writes:
            return
        temps: list[tuple[FileWrite, Path, str]] = []
        current = ""  # what is being written, for the refusal if the OS says no
        try:
            for w in writes:
                current = w.path
                full = self.root / w.path
                mode = w.mode if w.mode is not None else (full.stat().st_mode & 0o7777)
                fd, tmp = tempfile.mkstemp(prefix=f".{full.name}.", suffix=".patchkit-tmp", dir=full.parent)
                temps.append((w, full, tmp))
                with os.fdopen(fd, "wb") as handle:
                    handle.write(w.after)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(tmp, mode)
            changed = [w.path for w, full, _ in temps if full.read_bytes() != w.before]
            if changed:
                raise RefusedError(
                    "files changed on disk while patchkit was working; nothing was written",
                    items=tuple(changed),
                    hint="run the command again",
                )
            current = str(self.journal)
            self.state_dir.mkdir(parents=True, exist_ok=True)
            journal = {
                "files": [
                    {
                        "path": w.path,
                        "before": self.objects.put(w.before),
                        "after": sha256(w.after),
                        "mode": w.mode if w.mode is not None else 0o644,
                    }
                    for w, _, _ in temps
                ]
            }
            atomic_write(self.journal, json.dumps(journal, indent=1).encode(), 0o644)
            done: list[tuple[FileWrite, Path]] = []
            try:
                for w, full, tmp in temps:
                    current = w.path
                    os.replace(tmp, full)
                    done.append((w, full))
            except BaseException:
                for w, full in reversed(done):
                    atomic_write(full, w.before, w.mode)
                raise
            self.journal.unlink()
        except OSError as exc:
            # Nothing was replaced (or every replacement was rolled back above).
            raise UnwritableError(current, exc.strerror or type(exc).__name__) from None
        finally:
            for _, _, tmp in temps:
                _unlink(tmp)
