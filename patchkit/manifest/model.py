"""The manifest's frozen values: patches, groups of variants, and the manifest that holds them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.errors import UsageError
from patchkit.manifest.resolve import close_matches

if TYPE_CHECKING:
    from patchkit.manifest.bench import BenchConfig
    from patchkit.operations.base import Operation
    from patchkit.results import Reason


@dataclass(frozen=True)
class Patch:
    """One ``[[patch]]`` table: an operation on one target file, with what the verdict tables show of it."""

    index: int  # 1-based position among [[patch]] tables
    id: str
    op: Operation
    file: str
    required: bool
    requires: tuple[str, ...]
    description: str | None
    hints: Mapping[Reason, str] = field(default_factory=dict)
    group: str | None = None  # the [[group]] this patch is a variant in

    @property
    def op_name(self) -> str:
        return self.op.op_name


@dataclass(frozen=True)
class Group:
    """Variants of one change: members (patch or group ids) that carry it to different upstream locations."""

    index: int  # 1-based position among [[group]] tables
    id: str
    members: tuple[str, ...]
    required: bool  # its own, or (nested) that of the outermost group
    description: str | None
    parent: str | None = None  # the group this group is a member of


def bench_given(bench: BenchConfig | None = None) -> BenchConfig | None:
    """A ``bench_parser`` whose table is already built (or absent: the default)."""
    return bench


@dataclass(frozen=True)
class Manifest:
    """A loaded, checked manifest: its patches in file order, its groups of variants, and a digest over
    the manifest and every payload it uses (what records and bench runs name it by)."""

    path: Path
    display: str
    name: str
    summary: str | None
    patches: tuple[Patch, ...]
    digest: str  # over the manifest and every payload it uses
    groups: tuple[Group, ...] = ()
    # Builds ``bench`` on first use.  The loader runs it at load time unless these exact bytes passed
    # the [bench] checks before (``loader.checked_marker``): then only ``patchkit bench`` pays for it.
    bench_parser: Callable[[], BenchConfig | None] = field(default=bench_given, compare=False, repr=False)

    @cached_property
    def bench(self) -> BenchConfig | None:
        """The ``[bench]`` table, if any (``manifest/bench.py``)."""
        return self.bench_parser()

    def files(self) -> list[str]:
        """Target files in first-use order."""
        return list(dict.fromkeys(p.file for p in self.patches))

    def by_file(self) -> dict[str, list[Patch]]:
        """The patches of each target file, in manifest order (files in first-use order)."""
        out: dict[str, list[Patch]] = {}
        for patch in self.patches:
            out.setdefault(patch.file, []).append(patch)
        return out

    def patch(self, patch_id: str) -> Patch:
        for patch in self.patches:
            if patch.id == patch_id:
                return patch
        known = [p.id for p in self.patches]
        close = close_matches(patch_id, known)
        raise UsageError(
            f"manifest {self.name} has no patch {patch_id!r}",
            hint=f"did you mean {close[0]!r}?" if close else f"patches: {', '.join(known)}",
        )

    def group(self, group_id: str) -> Group | None:
        for group in self.groups:
            if group.id == group_id:
                return group
        return None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "path": self.display, "digest": self.digest}
