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

"Drop the patch" is right only while upstream still has the change.  When the
patch applies again after the in-place commits (upstream reverted the change,
or its code went another way), upstream no longer has it: the line says so,
from where, and that the patch is to be kept or rebased, never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.results import Reason, Status

if TYPE_CHECKING:
    from patchkit.engine.check import Window
    from patchkit.git import Commit

TAKEN = (Reason.ALREADY_APPLIED, Reason.UPSTREAM_PROVIDES)
CHANGED = (Reason.CONFLICT, Reason.DRIFT)


@dataclass(frozen=True)
class Upstreamed:
    """One patch's range verdict.  Two kinds:

    * upstream still has the change: in place from ``taken`` on, then CONFLICT/DRIFT from ``changed``
      on, with no commit between where the patch applies ("upstream took this change at X and changed
      it at Y: drop the patch, or rebase it on Y");
    * upstream no longer has it: after ``taken`` the patch applies again from ``removed`` on (a revert,
      or the code went another way) and the change is never in place again in the range; ``changed``,
      if any, is where the patch then stops matching.  Dropping the patch would lose the change, so the
      message says what happened and not to drop it.
    """

    patch: str
    taken: Commit  # first commit of the (last) run of windows where the change is in place
    changed: Commit | None  # first commit of the later window where the patch no longer matches (CONFLICT/DRIFT)
    taken_in_range: bool  # False: the change was already in place at the range's first commit
    reason: Reason | None  # ``changed``'s window's reason (CONFLICT or DRIFT); None without one
    removed: Commit | None = None  # first commit after ``taken`` where the patch applies again: upstream dropped it

    @property
    def label(self) -> str:
        return "UPSTREAMED" if self.removed is None else "UPSTREAMED, THEN REMOVED"

    @property
    def message(self) -> str:
        if self.removed is None:
            assert self.changed is not None
            took = "took this change at" if self.taken_in_range else "had this change by"
            return (
                f"upstream {took} {_named(self.taken)} and changed it at {_named(self.changed)}: "
                f"drop the patch, or rebase it on {self.changed.short}"
            )
        since = "from" if self.taken_in_range else "at the range's start,"
        had = (
            f"upstream had this change {since} {_named(self.taken)}, until {_named(self.removed)}, "
            "where it is gone and the patch applies again"
        )
        if self.changed is None:
            return had + ": upstream does not have the change at the range's end, so keep the patch"
        assert self.reason is not None
        return (
            f"{had}; from {_named(self.changed)} the patch reads {self.reason.value}: upstream does not have "
            f"the change there, so rebase the patch on {self.changed.short} rather than drop it"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "taken": _commit_json(self.taken),
            "taken_in_range": self.taken_in_range,
            "changed": _commit_json(self.changed),
            "removed": _commit_json(self.removed),
            "reason": self.reason.value if self.reason else None,
            "message": self.message,
        }


def _named(commit: Commit) -> str:
    return f"{commit.short} ({commit.subject})"


def _commit_json(commit: Commit | None) -> dict[str, str] | None:
    return None if commit is None else {"commit": commit.sha, "subject": commit.subject}


def _taken(window: Window) -> bool:
    return window.status is Status.SKIP and window.reason in TAKEN


def _changed(window: Window) -> bool:
    return window.status in (Status.FAIL, Status.WARN) and window.reason in CHANGED


def upstreamed(patch_ids: Sequence[str], windows: Sequence[Window]) -> list[Upstreamed]:
    """Per patch (manifest order), what the last run of in-place windows was followed by.

    Only the last run counts: what came after it is what upstream holds at the range's end.  Nothing is
    said when the change is still in place at the end (each commit's SKIP says it), or when what follows
    is neither an APPLY nor a CONFLICT/DRIFT (a FUNCTION_NOT_FOUND says its own words).
    """
    out: list[Upstreamed] = []
    for pid in patch_ids:
        mine = [w for w in windows if w.patch == pid]
        last = max((i for i, w in enumerate(mine) if _taken(w)), default=None)
        if last is None or last == len(mine) - 1:
            continue
        start = last
        while start > 0 and _taken(mine[start - 1]):
            start -= 1
        after = mine[last + 1 :]
        gone = next((i for i, w in enumerate(after) if w.status is Status.APPLY), None)
        if gone is None:
            changed = next((w for w in after if _changed(w)), None)
            if changed is not None:
                assert changed.reason is not None
                out.append(Upstreamed(pid, mine[start].first, changed.first, start > 0, changed.reason))
            continue
        changed = next((w for w in after[gone + 1 :] if _changed(w)), None)
        out.append(
            Upstreamed(
                pid,
                mine[start].first,
                None if changed is None else changed.first,
                start > 0,
                None if changed is None else changed.reason,
                removed=after[gone].first,
            )
        )
    return out
