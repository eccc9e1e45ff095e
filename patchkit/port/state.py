"""What every job of ``port``'s walk shares: the repository, the working copy of the manifest and the manifest
as last loaded from it, one ``Track`` per patch, and ``Stop``, the refusal to carry one patch over one step.

The walk (``walk.py``) owns the loop over commits; carrying an anchor (``carry.py``) and merging a payload
(``merge.py``) read and change this state, one patch at a time.  What a patch's op is to port (what it is
anchored to, under which key; which region its payload merges) is the op's own ``port_traits``
(``operations/base.py``): nothing here, nor anywhere in ``port/``, names an op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from patchkit.engine.evaluate import Evaluation, decode, evaluate
from patchkit.errors import InternalError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, Patch
from patchkit.port.follow import Def, defs_in, find_def
from patchkit.port.result import PortChange, PortConflict
from patchkit.port.workspace import Workspace
from patchkit.results import Status
from patchkit.sources import CommitSource


class Stop(Exception):
    """A patch that cannot be carried over this step: why, and (an overlap) the two sides."""

    def __init__(self, message: str, conflict: PortConflict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.conflict = conflict


@dataclass
class Track:
    """One patch along the walk: where it last applied (commit, file, target) and what port did to it."""

    base: Commit
    file: str
    target: str | None
    changes: list[PortChange] = field(default_factory=list)
    last: Status = Status.APPLY  # its verdict at the last stop
    failed: tuple[Commit, str, PortConflict | None] | None = None
    upstreamed: Commit | None = None
    partly: tuple[Commit, int, int] | None = None  # where upstream first made some of its lines: (commit, made, of)
    in_effect: bool = True  # its code applied or was in place at the last stop (not a group's unused variant)


class PortState:
    """The working copy of ``manifest`` on its way from the start to ``target``, and every patch's track.

    A context manager: leaving it removes the working copy's temporary directory."""

    def __init__(self, manifest: Manifest, repo: Repo, target: Commit) -> None:
        self.repo = repo
        self.manifest = manifest
        self.target = target
        self.work = Workspace(manifest)
        self.current = self.work.load()
        self.tracks: dict[str, Track] = {}

    def __enter__(self) -> PortState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.work.close()

    def reload(self) -> None:
        """Load the working copy again after a change (a patch may have moved along with another)."""
        self.current = self.work.load()

    def text(self, commit: Commit, path: str) -> str | None:
        text, problem = decode(CommitSource(self.repo, commit).read(path))
        return None if problem is not None else text

    def evaluate(self, commit: Commit) -> Evaluation:
        return evaluate(self.current, CommitSource(self.repo, commit), hints=False)

    def table(self, patch: Patch) -> dict[str, Any]:
        return self.work.table(patch.id)[1]

    def record(self, patch_id: str, change: PortChange) -> None:
        self.tracks[patch_id].changes.append(change)

    def old_def(self, patch: Patch, qualname: str, *, is_class: bool = False) -> Def:
        """The def (or class) ``qualname`` where the patch last applied: the merge base, what a move is
        followed from."""
        track = self.tracks[patch.id]
        text = self.text(track.base, track.file)
        found = find_def(track.file, text, qualname) if text is not None else None
        if found is None or found.is_class != is_class:
            raise Stop(f"{qualname} is not in {track.file} at {track.base.short} either (where the patch last applied)")
        return found

    def candidates(self, commit: Commit, files: set[str]) -> list[Def]:
        """Every def and class of the Python files ``files`` at ``commit``: where a moved one may be now."""
        out: list[Def] = []
        for path in sorted(files):
            if not path.endswith((".py", ".pyi")):
                continue
            text = self.text(commit, path)
            if text is not None:
                out.extend(defs_in(path, text))
        return out


def anchor_key(patch: Patch) -> str:
    """The table key that names what a patch whose anchor port follows (a function, a class) is anchored to."""
    key = patch.op.port_traits.key
    if key is None:
        raise InternalError(f"{patch.op_name} declares a {patch.op.port_traits.anchor.value} anchor without its key")
    return key


def target_of(patch: Patch, table: dict[str, Any]) -> str | None:
    """The function or class a patch is anchored to, as its table names it; None for other anchors."""
    traits = patch.op.port_traits
    target = table.get(anchor_key(patch)) if traits.follows else None
    return None if target is None else str(target)
