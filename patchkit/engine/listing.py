"""The git side of a range check, started before anything else is loaded.

A range check waits on two ``git log`` processes per range: one lists the
commits, the other the target files' first-parent changes.  On a large
history they are most of a check's time, and they need little: the range
(for the first) and the manifest's target paths (for the second).  So the
``check`` command starts them before it imports the evaluation machinery or
opens the verdict cache, and all of that is loaded while git works on
another core (``commands/check.py``).  ``engine/check.py`` reads them.

This module imports nothing but ``patchkit.git``: importing it must not
delay the first git process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from patchkit.errors import RevisionError
from patchkit.git import Pending, Repo

RangeSpec = tuple[str, list[str], list[str], str]  # (as written, rev-list spec, its ends, separator)


def split_range(spec: str) -> tuple[list[str], str]:
    for sep in ("...", ".."):
        if sep in spec:
            left, right = spec.split(sep, 1)
            return [left or "HEAD", right or "HEAD"], sep
    return [spec], ""


def range_specs(ranges: Sequence[str]) -> list[RangeSpec]:
    """Each range as (as written, rev-list spec, its ends, separator).

    Nothing is resolved here: git lists the range straight away, and only if
    that fails are the ends resolved one by one to name the unknown one.
    """
    out = []
    for spec in ranges:
        if spec.startswith("-") or not spec.strip():
            raise RevisionError(f"range {spec!r} is not a revision range", hint="give a range such as v0.5.8..main")
        ends, sep = split_range(spec)
        out.append((spec, [spec], ends, sep))
    return out


@dataclass
class Listing:
    """The ranges' commit lists and target-file changes, being produced by git in the background.

    ``start_listing`` needs no manifest; ``watch`` adds the change logs once
    the manifest's target files are known.  ``close`` reaps whatever was not
    read (a later step failed): no git process is left running.
    """

    specs: list[RangeSpec]
    pending: list[Pending]
    files: tuple[str, ...] | None = None
    diffs: list[Pending | None] = field(default_factory=list)

    def watch(self, repo: Repo, files: Sequence[str]) -> None:
        """Start the change logs of ``files`` (once; a later call with the same files is a no-op)."""
        if self.files is not None:
            if self.files == tuple(files):
                return
            self.close_diffs()
        self.files = tuple(files)
        self.diffs = [repo.spawn_path_changes(rev_spec, files) if files else None for _, rev_spec, _, _ in self.specs]

    def close_diffs(self) -> None:
        for diff in self.diffs:
            if diff is not None:
                diff.close()
        self.diffs = []
        self.files = None

    def close(self) -> None:
        for process in self.pending:
            process.close()
        self.close_diffs()


def start_listing(repo: Repo, ranges: Sequence[str]) -> Listing:
    specs = range_specs(ranges)
    return Listing(specs, [repo.spawn_rev_list(rev_spec) for _, rev_spec, _, _ in specs])


__all__ = ["Listing", "range_specs", "split_range", "start_listing"]
