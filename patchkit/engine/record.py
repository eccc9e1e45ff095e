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
from collections.abc import Sequence
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
    """A file patchkit wrote: its digests before the first write and after the last, so that later edits
    (by a person, a checkout, another manifest) and a clean revert can be told apart."""

    path: str
    mode: int
    before_sha256: str  # content before the first patchkit write (backup in objects/)
    after_sha256: str  # content patchkit left
    clean_before: bool  # before == the file at the base commit

    def to_json(self) -> dict[str, object]:
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
class Layers:
    """How one manifest's files sit among other manifests' writes to the same files.

    A later manifest that patches a file an earlier one wrote records, as its "before", exactly what
    the earlier one left: the records chain.  ``over``: files this manifest wrote that later manifests
    patched over, the file still holding the top one's write (path -> those manifests, lowest first):
    intact, not edited.  ``under``: files this manifest patched over earlier manifests' intact writes
    (path -> those manifests, lowest first), down to one that started from a clean file.  A file whose
    chain breaks anywhere (an edit by none of them) is in neither.
    """

    over: dict[str, tuple[str, ...]]
    under: dict[str, tuple[str, ...]]
    bottom: dict[str, FileRecord]  # for each path in ``under``: the lowest manifest's entry (it saw the clean file)

    def names(self) -> list[str]:
        return sorted({name for chain in [*self.over.values(), *self.under.values()] for name in chain})


def stacking(records: Sequence[Record], path: str) -> list[str]:
    """The manifests whose records list ``path``, lowest layer first.

    The order follows the records' own chain (each later write started from the earlier one's
    result), whatever the file holds now; records the chain does not reach follow, oldest first.
    """
    entries = sorted(
        ((r.applied_at, r.manifest_name, f) for r in records for f in r.files if f.path == path),
        key=lambda item: (item[0], item[1]),
    )
    order: list[str] = []
    current = next((item for item in entries if item[2].clean_before), entries[0] if entries else None)
    while current is not None and current[1] not in order:
        order.append(current[1])
        after = current[2].after_sha256
        current = next((item for item in entries if item[1] not in order and item[2].before_sha256 == after), None)
    return order + [name for _at, name, _f in entries if name not in order]


def layers(root: Path, record: Record, records: Sequence[Record]) -> Layers:
    """The layering of ``record`` among ``records`` (all the tree's records; ``record`` may be among them)."""
    others = [r for r in records if r.manifest_name != record.manifest_name]
    over: dict[str, tuple[str, ...]] = {}
    under: dict[str, tuple[str, ...]] = {}
    bottom: dict[str, FileRecord] = {}
    if not others:
        return Layers(over, under, bottom)
    for f in record.files:
        entries = [(r.manifest_name, g) for r in others for g in r.files if g.path == f.path]
        if not entries:
            continue
        if written_content(root, f) is None and outside_reason(root, f.path) is None:
            try:
                now: str | None = sha256((root / f.path).read_bytes())
            except (FileNotFoundError, IsADirectoryError):
                now = None
            chain: list[str] = []
            at = f.after_sha256
            while now is not None:
                step = next(((n, g) for n, g in entries if n not in chain and g.before_sha256 == at), None)
                if step is None:
                    break
                chain.append(step[0])
                at = step[1].after_sha256
                if at == now:
                    over[f.path] = tuple(chain)
                    break
        if not f.clean_before:
            below: list[str] = []
            at = f.before_sha256
            while True:
                down = next(((n, g) for n, g in entries if n not in below and g.after_sha256 == at), None)
                if down is None:
                    break
                below.insert(0, down[0])
                if down[1].clean_before:
                    under[f.path] = tuple(below)
                    bottom[f.path] = down[1]
                    break
                at = down[1].before_sha256
    return Layers(over, under, bottom)


@dataclass(frozen=True)
class Record:
    """What one manifest's last apply left in a work tree (``<git-dir>/patchkit/records/<name>.json``):
    the manifest and its digest, the base commit, the files written and the patches applied."""

    manifest_name: str
    manifest_path: str
    manifest_digest: str
    base_commit: str | None
    applied_at: str
    files: tuple[FileRecord, ...]
    patches: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, object]:
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
