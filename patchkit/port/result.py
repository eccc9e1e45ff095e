"""What ``port`` returns: every patch's port (how, each change with its commit, the verdict at the target),
the file changes, and the plan that holds them, with their ``--json`` forms (docs/json.md).

Frozen values only: the walk (``walk.py``) and the carrying (``carry.py``, ``merge.py``) build them, the
assembly (``assemble.py``) puts them together, ``commands/port.py`` prints and writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from patchkit.git import Commit
from patchkit.manifest import Manifest
from patchkit.results import PatchResult, Status
from patchkit.wording import plural


class How(str, Enum):
    """How a patch was carried to the target commit (one word per patch in the report)."""

    MOVED = "moved"  # its file, function or method moved: `file` / `function` follow
    RENAMED = "renamed"  # its class was renamed: `class` / `Class.method` follow
    MERGED = "merged"  # upstream's edit merged into the payload, `expect` refreshed
    UNCHANGED = "unchanged"  # applies at the target as it is
    UPSTREAMED = "upstreamed"  # upstream took the change
    CONFLICT = "conflict"  # ours and upstream's edit the same lines: refused
    FAILED = "failed"  # does not apply at the target, and port cannot carry it (the reason says why)


# When a patch changed in several ways, the word the report gives it (the rest are in `changes`).
PRECEDENCE = (How.CONFLICT, How.FAILED, How.UPSTREAMED, How.MERGED, How.RENAMED, How.MOVED)


@dataclass(frozen=True)
class PortChange:
    """One change port made to one patch: what (``how``), at which upstream commit it was needed, the manifest
    key (or payload) it changed, from what to what, and a note (a suggestion, what the merge did)."""

    how: How
    commit: Commit | None
    key: str
    before: str
    after: str
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "how": self.how.value,
            "commit": self.commit.sha if self.commit else None,
            "subject": self.commit.subject if self.commit else None,
            "key": self.key,
            "from": self.before,
            "to": self.after,
            "note": self.note or None,
        }


@dataclass(frozen=True)
class PortConflict:
    """Where ours and upstream's edit the same lines: the commit, the file and line (upstream's side, in the
    file at that commit), and both sides' lines."""

    commit: Commit
    file: str
    line: int | None
    ours: tuple[str, ...]
    upstream: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "file": self.file,
            "line": self.line,
            "ours": list(self.ours),
            "upstream": list(self.upstream),
        }


@dataclass(frozen=True)
class PatchPort:
    """One patch's port: how, every change with its commit, its verdict at the target, and (refused) why."""

    patch: str
    op: str
    required: bool
    how: How
    changes: tuple[PortChange, ...]
    result: PatchResult  # at the target, as ported
    message: str  # one line for people: what happened
    failed_at: Commit | None = None  # where it stopped applying and could not be carried
    conflict: PortConflict | None = None
    upstreamed_at: Commit | None = None
    dropped: bool = False
    evidence: Evidence | None = None  # upstream took part of it: measure whether the rest still earns its place

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "op": self.op,
            "required": self.required,
            "how": self.how.value,
            "message": self.message,
            "changes": [c.to_json() for c in self.changes],
            "status": self.result.status.value,
            "reason": self.result.reason.value if self.result.reason else None,
            "file": self.result.file,
            "failed_at": self.failed_at.sha if self.failed_at else None,
            "conflict": self.conflict.to_json() if self.conflict else None,
            "upstreamed_at": self.upstreamed_at.sha if self.upstreamed_at else None,
            "dropped": self.dropped,
            "evidence": self.evidence.to_json() if self.evidence else None,
        }


@dataclass(frozen=True)
class Evidence:
    """Why a ported patch may no longer be needed (upstream made some of its lines, at ``commit``) and the
    ``bench --without`` that measures it at the target."""

    commit: Commit
    made: int  # of the lines the patch adds or rewrites, how many upstream's version added too
    of: int
    command: str

    @property
    def why(self) -> str:
        return (
            f"upstream made {self.made} of its {self.of} changed lines at {self.commit.short} {self.commit.subject!r}"
        )

    def to_json(self) -> dict[str, object]:
        return {"commit": self.commit.sha, "made": self.made, "of": self.of, "why": self.why, "command": self.command}


@dataclass(frozen=True)
class FileChange:
    """A file of the manifest (the TOML or a payload) as port would leave it: its old and new bytes."""

    path: Path
    display: str
    before: bytes
    after: bytes


@dataclass(frozen=True)
class Bound:
    """A commit where port stopped carrying at its bound (``carries`` carries at one commit) while ``patches``
    were still to carry: they are reported as failed there, not left to read as a plain FAIL of their own."""

    commit: Commit
    carries: int
    patches: tuple[str, ...]

    @property
    def message(self) -> str:
        return (
            f"port stopped carrying at {self.commit.short} {self.commit.subject!r} after {self.carries} carries "
            f"(its bound at one commit) with {plural(len(self.patches), 'patch', 'patches')} still to carry: "
            + ", ".join(self.patches)
        )

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "carries": self.carries,
            "patches": list(self.patches),
            "message": self.message,
        }


def every_patch_upstreamed(patches: Sequence[PatchPort]) -> bool:
    """Upstream has every patch at the target: the manifest is retired there (see ``PortPlan.retired``)."""
    return bool(patches) and all(p.how is How.UPSTREAMED for p in patches)


@dataclass(frozen=True)
class PortPlan:
    """What ``port`` found: the walk (start, target, commits walked and stopped at), every patch's port, and the
    file changes; ``refused`` when a required patch cannot be carried (then nothing may be written)."""

    manifest: Manifest
    start: Commit
    target: Commit
    walked: int  # first-parent commits after the start up to the target
    stops: int  # of those, commits that touch a target file (evaluated)
    patches: tuple[PatchPort, ...]
    files: tuple[FileChange, ...]
    start_given: bool  # --from, or found as the newest commit where the manifest applies
    bounds: tuple[Bound, ...] = ()  # the commits where the carrying stopped at its bound, patches still to carry
    retired_since: Commit | None = None  # retired: the walked commit from which upstream has every patch

    @property
    def refused(self) -> bool:
        return any(p.required and p.result.status is Status.FAIL for p in self.patches)

    @property
    def retired(self) -> bool:
        """Upstream has every patch at the target.  Then the manifest is retired there rather than ported: no
        patch is dropped (a manifest has at least one) and nothing is written, because the file as it is
        still serves the commits before upstream took its patches, and a ported copy would serve none."""
        return every_patch_upstreamed(self.patches)

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "command": "port",
            "manifest": self.manifest.to_json(),
            "from": {**self.start.to_json(), "given": self.start_given},
            "to": self.target.to_json(),
            "walked": self.walked,
            "stops": self.stops,
            "refused": self.refused,
            "patches": [p.to_json() for p in self.patches],
            "files": [f.display for f in self.files],
            "bound_reached": [b.to_json() for b in self.bounds],
            "retired": self.retired,
            "retired_since": self.retired_since.sha if self.retired_since else None,
        }
