"""The record of what patchkit wrote, kept in the git dir (never in the tree).

``<git-dir>/patchkit/applied/<manifest-name>.json`` holds the manifest's name
and digest, the commit the tree was at, and for every file written: its
digest before and after, whether it was clean (equal to HEAD) before, and a
backup of its old content in ``<git-dir>/patchkit/objects``.  ``revert``,
``status`` and ``apply --commit`` read it to tell patchkit's own edits from
the user's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from patchkit import __version__, paths
from patchkit.engine.files import sha256
from patchkit.errors import RepoError
from patchkit.git import Repo
from patchkit.sources.safety import outside_reason

RECORD_VERSION = 1


def state_dir(repo: Repo) -> Path:
    """Per-work-tree state: records, lock, journal, backups."""
    return paths.work_tree_state(repo.git_dir)


@dataclass(frozen=True)
class FileRecord:
    path: str
    mode: int
    before_sha256: str  # content before the first patchkit write (backup in objects/)
    after_sha256: str  # content patchkit left
    clean_before: bool  # before == the file at the base commit

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": self.mode,
            "before_sha256": self.before_sha256,
            "after_sha256": self.after_sha256,
            "clean_before": self.clean_before,
        }


def written_content(root: Path, f: FileRecord) -> bytes | None:
    """The file's bytes while it still holds what patchkit wrote there, else None.

    The one test of "this file is still patchkit's own" (revert, status, the
    guard, the record's next version and ``apply --commit``).  A path that
    leads through a symlinked directory is never read, and is not patchkit's.
    """
    if outside_reason(root, f.path) is not None:
        return None
    full = root / f.path
    try:
        data = full.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    return data if sha256(data) == f.after_sha256 else None


def edited_since(repo: Repo, record: Record) -> list[str]:
    """Files patchkit wrote that no longer hold what patchkit left."""
    root = repo.require_worktree("revert")
    return [f.path for f in record.files if written_content(root, f) is None]


@dataclass(frozen=True)
class Record:
    manifest_name: str
    manifest_path: str
    manifest_digest: str
    base_commit: str | None
    applied_at: str
    files: tuple[FileRecord, ...]
    patches: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "patchkit": __version__,
            "manifest": {"name": self.manifest_name, "path": self.manifest_path, "digest": self.manifest_digest},
            "base_commit": self.base_commit,
            "applied_at": self.applied_at,
            "files": [f.to_json() for f in self.files],
            "patches": list(self.patches),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        return cls(
            manifest_name=data["manifest"]["name"],
            manifest_path=data["manifest"]["path"],
            manifest_digest=data["manifest"]["digest"],
            base_commit=data["base_commit"],
            applied_at=data["applied_at"],
            files=tuple(FileRecord(**f) for f in data["files"]),
            patches=tuple(data["patches"]),
        )


def record_rel(name: str) -> str:
    """The record's path inside the state dir (how a Transaction names it)."""
    return f"applied/{name}.json"


def record_path(repo: Repo, name: str) -> Path:
    return state_dir(repo) / record_rel(name)


def record_bytes(record: Record) -> bytes:
    return (json.dumps(record.to_json(), indent=2) + "\n").encode()


def load_record(repo: Repo, name: str) -> Record | None:
    path = record_path(repo, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError) as exc:
        raise RepoError(
            f"the patchkit record {path} is unreadable ({exc})",
            hint="move it aside; `patchkit status` will then treat the tree as unpatched",
        ) from None
    if data.get("version") != RECORD_VERSION:
        raise RepoError(
            f"the patchkit record {path} has version {data.get('version')}, this patchkit reads {RECORD_VERSION}"
        )
    return Record.from_json(data)


def all_records(repo: Repo) -> list[Record]:
    folder = state_dir(repo) / "applied"
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        record = load_record(repo, path.stem)
        if record is not None:
            out.append(record)
    return out


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def previous_code(record: Record | None) -> dict[str, str]:
    """Digests of the definitions patchkit wrote (any payload version) -> when, from the record.

    With it, code patchkit wrote is recognised as patchkit's own: a new payload
    version replaces it (APPLY), it is never kept as "upstream's".
    """
    out: dict[str, str] = {}
    if record is None:
        return out
    for entry in record.patches:
        for code in entry.get("code", ()):
            out[code] = f"on {entry.get('written_at') or record.applied_at} (manifest {record.manifest_digest[:19]}…)"
    return out
