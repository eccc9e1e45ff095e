"""The range verdict "upstream took this change at X and changed it at Y".

Every commit's own verdict is right on its own: where upstream has the
patch's code, SKIP ``ALREADY_APPLIED`` (or ``UPSTREAM_PROVIDES``); where
upstream later edited that code, the patch no longer matches, CONFLICT or
DRIFT.  Read commit by commit, the second looks like a patch that broke.
Read over the range, it says something else: the change is upstream, so the
patch is to be dropped from X on, or rebased on Y if it still carries
something.  ``check --range`` reports that as one line per patch (and in
JSON, ``upstreamed``); no per-commit status or reason changes, so exit codes
and ``--strict`` mean what they meant (docs/statuses.md, "Range verdicts").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchkit.results import Reason, Status

if TYPE_CHECKING:
    from patchkit.engine.check import Window
    from patchkit.git import Commit

TAKEN = (Reason.ALREADY_APPLIED, Reason.UPSTREAM_PROVIDES)
CHANGED = (Reason.CONFLICT, Reason.DRIFT)


@dataclass(frozen=True)
class Upstreamed:
    patch: str
    taken: Commit  # first commit of the first window where the change is in place
    changed: Commit  # first commit of the first later window where it no longer matches
    taken_in_range: bool  # False: the change was already in place at the range's first commit
    reason: Reason  # the later window's reason (CONFLICT or DRIFT)

    @property
    def message(self) -> str:
        took = "took this change at" if self.taken_in_range else "had this change by"
        return (
            f"upstream {took} {self.taken.short} ({self.taken.subject}) and changed it at "
            f"{self.changed.short} ({self.changed.subject}): drop the patch, or rebase it on {self.changed.short}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.patch,
            "taken": {"commit": self.taken.sha, "subject": self.taken.subject},
            "taken_in_range": self.taken_in_range,
            "changed": {"commit": self.changed.sha, "subject": self.changed.subject},
            "reason": self.reason.value,
            "message": self.message,
        }


def upstreamed(patch_ids: Sequence[str], windows: Sequence[Window]) -> list[Upstreamed]:
    """Per patch (manifest order), the first in-place window followed by a CONFLICT / DRIFT one."""
    out: list[Upstreamed] = []
    for pid in patch_ids:
        mine = [w for w in windows if w.patch == pid]
        for index, window in enumerate(mine):
            if window.status is not Status.SKIP or window.reason not in TAKEN:
                continue
            later = next(
                (w for w in mine[index + 1 :] if w.status in (Status.FAIL, Status.WARN) and w.reason in CHANGED),
                None,
            )
            if later is not None:
                assert later.reason is not None
                out.append(Upstreamed(pid, window.first, later.first, index > 0, later.reason))
            break
    return out
