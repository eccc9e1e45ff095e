"""The one list every CI format is written from: each patch and group of a check, per window of equal verdicts.

A range check already groups each patch's commits into windows (runs of consecutive commits with one status and
reason: ``CheckReport.windows``); a CI report needs exactly that unit.  A test case per commit would repeat one
verdict thousands of times over a long range, and a test case per patch would hide where it changed.  So a
``Case`` is one patch (or ``[[group]]``) over one window, with the result at the window's first commit (its
file, line, message and hint, as the table and ``--json`` show them).

Annotations (GitHub, GitLab) are fewer: one per failing patch or group, its newest failing window (the state
closest to the tip), because GitHub shows at most ten error annotations per step; the earlier failing windows are
counted in it and listed whole in the JUnit report and ``--json``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.results import PatchResult, Reason, Status

if TYPE_CHECKING:
    from patchkit.commit import Commit
    from patchkit.engine.check import CheckReport
    from patchkit.manifest import Manifest


@dataclass(frozen=True)
class Case:
    """One patch (``kind`` "patch") or group ("group") over one window of consecutive commits with one verdict.

    ``file``/``line``: the upstream file and line of the result at the window's first commit; for a group, those
    of its first member patch there (a group's own result names no file).
    """

    manifest: str
    kind: str
    id: str
    op: str | None  # the patch's op; None for a group
    required: bool
    status: Status
    reason: Reason | None
    file: str | None
    line: int | None
    message: str
    hint: str | None
    first: Commit
    last: Commit
    count: int  # commits in the window

    def failing(self, strict: bool) -> bool:
        """A failure for CI: FAIL always, WARN under ``--strict`` (as check's exit code counts them)."""
        return self.status is Status.FAIL or (strict and self.status is Status.WARN)

    @property
    def label(self) -> str:
        return self.id if self.kind == "patch" else f"group {self.id}"

    @property
    def verdict(self) -> str:
        """``FAIL CLASS_NOT_FOUND``, or ``APPLY``."""
        return f"{self.status.value} {self.reason.value}" if self.reason else self.status.value

    @property
    def where(self) -> str:
        """``file:line`` (or the file alone, or ``-`` for a group without one)."""
        if self.file is None:
            return "-"
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def span(self) -> str:
        """The commits: ``1a2b3c4d5e``, or ``1a2b3c4d5e..6f7a8b9c0d (12 commits)`` (first and last listed)."""
        if self.count == 1:
            return self.first.short
        return f"{self.first.short}..{self.last.short} ({self.count:,} commits)"

    @property
    def summary(self) -> str:
        """One line: verdict, where, message and hint."""
        text = f"{self.verdict} at {self.where}: {self.message}"
        return f"{text}; hint: {self.hint}" if self.hint else text


def cases(report: CheckReport) -> list[Case]:
    """Every patch's windows in manifest order, then every group's."""
    manifest = report.manifest
    rows = {row.commit.sha: row for row in report.commits}
    column = {patch.id: i for i, patch in enumerate(manifest.patches)}
    out: list[Case] = []
    for patch in manifest.patches:
        for w in report.windows_of(patch.id):
            r = w.first_result
            out.append(
                Case(
                    manifest.name,
                    "patch",
                    patch.id,
                    r.op,
                    r.required,
                    w.status,
                    w.reason,
                    r.file,
                    r.line,
                    r.message,
                    r.hint,
                    w.first,
                    w.last,
                    w.count,
                )
            )
    for group in manifest.groups:
        member = _first_patch(manifest, group.id)
        for gw in report.group_windows_of(group.id):
            g = gw.first_result
            at: PatchResult | None = None
            if member is not None:
                at = rows[gw.first.sha].results[column[member]]
            out.append(
                Case(
                    manifest.name,
                    "group",
                    group.id,
                    None,
                    g.required,
                    gw.status,
                    gw.reason,
                    at.file if at else None,
                    at.line if at else None,
                    g.message,
                    None,
                    gw.first,
                    gw.last,
                    gw.count,
                )
            )
    return out


def findings(report: CheckReport) -> list[tuple[Case, int]]:
    """What the annotations show: per patch and group, its newest WARN/FAIL window, with how many earlier windows
    of the same patch or group were WARN/FAIL too.  In ``cases`` order."""
    newest: dict[tuple[str, str], tuple[Case, int]] = {}
    for case in cases(report):
        if case.status in (Status.WARN, Status.FAIL):
            key = (case.kind, case.id)
            earlier = newest[key][1] + 1 if key in newest else 0
            newest[key] = (case, earlier)
    return list(newest.values())


def _first_patch(manifest: Manifest, group_id: str) -> str | None:
    """The group's first member that is a patch, through nested groups."""
    groups = {g.id: g for g in manifest.groups}
    for member in groups[group_id].members:
        if member in groups:
            found = _first_patch(manifest, member)
            if found is not None:
                return found
        else:
            return member
    return None


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def printable(text: str) -> str:
    """``text`` with what XML 1.0 and UTF-8 cannot carry (control characters, the lone surrogates a commit subject
    decoded with ``surrogateescape`` can hold) as U+FFFD: a report a CI system refuses to parse is worse than one
    replaced character."""
    return _NOT_XML.sub("\ufffd", text)
