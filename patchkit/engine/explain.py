"""`explain`: which upstream commit made a patch stop applying, and how.

The patch is evaluated at every ancestor of the commit asked about (the same
cached machinery as ``check``, so this costs about the number of distinct
versions of the target file).  From that commit, the walk follows failing
parents; a failing commit whose parents all apply introduced the failure.
Walking through merges this way names the side-branch commit, not the
merge, when the failure came in from a side branch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from patchkit.engine.check import check_range
from patchkit.engine.evaluate import decode, evaluate
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, Patch
from patchkit.operations.base import TextOperation, TextState
from patchkit.operations.code import CodeState
from patchkit.results import PatchResult, Reason
from patchkit.sources import CommitSource

MAX_DIFF_LINES = 80


@dataclass(frozen=True)
class Introduction:
    """A commit that made the patch stop applying: its parent where the patch still applied, the verdicts before and
    after, the diff hunks that touch what the patch targets, and, when the file went missing, where git says it moved.
    """

    commit: Commit
    parent: Commit | None
    result_before: PatchResult | None
    result_after: PatchResult
    diff: str  # the hunks of the target file that touch what the patch targets
    renamed_to: str | None

    def to_json(self) -> dict[str, object]:
        return {
            **self.commit.to_json(),
            "parent": self.parent.sha if self.parent else None,
            "result_before": self.result_before.to_json() if self.result_before else None,
            "result_after": self.result_after.to_json(),
            "renamed_to": self.renamed_to,
            "diff": self.diff,
        }


@dataclass(frozen=True)
class ExplainReport:
    """What ``patchkit explain`` found for one patch at one commit: its verdict there and, where it fails, the commits
    that introduced the failure and those where its reason changed on the way back.
    """

    manifest: Manifest
    patch: Patch
    commit: Commit
    result: PatchResult
    introduced: tuple[Introduction, ...]
    never_applied: bool  # failing back to a root commit on some line of history
    checked: int  # ancestors evaluated
    # Failing commits whose failing parent failed for another reason:
    # (commit, reason before, reason after), newest first.
    reason_changes: tuple[tuple[Commit, Reason | None, Reason | None], ...] = ()

    @property
    def failing(self) -> bool:
        return not self.result.ok

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "command": "explain",
            "manifest": self.manifest.to_json(),
            "patch": self.patch.id,
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "result": self.result.to_json(),
            "introduced_by": [i.to_json() for i in self.introduced],
            "never_applied": self.never_applied,
            "reason_changes": [
                {**c.to_json(), "from": a.value if a else None, "to": b.value if b else None}
                for c, a, b in self.reason_changes
            ],
            "where": self.result.hint,
            "ancestors_checked": self.checked,
        }


def explain(manifest: Manifest, repo: Repo, patch_id: str, rev: str = "HEAD") -> ExplainReport:
    patch = manifest.patch(patch_id)
    at = repo.commit(rev)
    column = manifest.patches.index(patch)
    result = evaluate(manifest, CommitSource(repo, at)).results[column]
    if result.ok:
        return ExplainReport(manifest, patch, at, result, (), False, 1)

    history = check_range(manifest, repo, ranges=[at.sha], hints=False)
    by_sha = {row.commit.sha: row for row in history.commits}

    def failing(sha: str) -> bool:
        return not by_sha[sha].results[column].ok

    introduced: list[Introduction] = []
    changes: list[tuple[Commit, Reason | None, Reason | None]] = []
    never = False
    for sha, parents, bad in walk_back(
        at.sha, lambda sha: [p for p in by_sha[sha].commit.parents if p in by_sha], failing
    ):
        row = by_sha[sha]
        if not parents:
            never = True
        elif not bad:
            parent = by_sha[parents[0]]
            introduced.append(
                _introduction(repo, patch, row.commit, parent.commit, parent.results[column], row.results[column])
            )
        for p in bad:
            here, there = row.results[column].reason, by_sha[p].results[column].reason
            if here is not there:
                changes.append((row.commit, there, here))
    introduced.sort(key=lambda i: i.commit.date, reverse=True)
    changes.sort(key=lambda c: c[0].date, reverse=True)
    repo.close()
    return ExplainReport(manifest, patch, at, result, tuple(introduced), never, len(by_sha), tuple(changes))


def walk_back(
    start: str, parents_of: Callable[[str], Sequence[str]], keep: Callable[[str], bool]
) -> Iterator[tuple[str, list[str], list[str]]]:
    """Walk from ``start`` back through the parents for which ``keep`` holds, each commit once.

    Yields every commit reached with its known parents (``parents_of``) and those of them ``keep`` holds
    for.  A commit with known parents none of which is kept is where the kept state began on that line
    of history: ``explain``'s introducing commit (``keep``: the patch fails), and ``check --since``'s
    changing commit (``keep``: the tip's verdict).  Following every kept parent, not only the first,
    names the side-branch commit rather than the merge when the state came in from a side branch.
    """
    stack, seen = [start], {start}
    while stack:
        sha = stack.pop()
        parents = list(parents_of(sha))
        kept = [p for p in parents if keep(p)]
        yield sha, parents, kept
        for p in kept:
            if p not in seen:
                seen.add(p)
                stack.append(p)


def _introduction(
    repo: Repo, patch: Patch, commit: Commit, parent: Commit, before: PatchResult, after: PatchResult
) -> Introduction:
    renamed = None
    if after.reason is Reason.FILE_NOT_FOUND:
        renamed = repo.renamed_to(parent.sha, commit.sha, patch.file)
    span = _span_at(repo, patch, parent)
    diff = repo.diff_text(parent.sha, commit.sha, [patch.file])
    more = f"git diff {parent.short} {commit.short} -- {patch.file}"
    return Introduction(commit, parent, before, after, _relevant_hunks(diff, span, more), renamed)


def _span_at(repo: Repo, patch: Patch, commit: Commit) -> tuple[int, int] | None:
    read = CommitSource(repo, commit).read(patch.file)
    text, problem = decode(read)
    if problem is not None or text is None:
        return None
    op = patch.op
    if isinstance(op, TextOperation):  # the file is text to it, whether or not it parses as Python
        return op.span(TextState(patch.file, text))
    try:
        state = CodeState.parse(patch.file, text)
    except (SyntaxError, ValueError):
        return None
    return op.span(state)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def _relevant_hunks(diff: str, span: tuple[int, int] | None, full_command: str) -> str:
    """The hunks whose old side overlaps ``span``; all hunks if none does."""
    lines = diff.splitlines()
    hunks: list[list[str]] = []
    header: list[str] = []
    for line in lines:
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
        else:
            header.append(line)
    chosen = hunks
    if span is not None:
        start, end = span
        overlapping = []
        for hunk in hunks:
            match = _HUNK.match(hunk[0])
            if not match:
                continue
            old_start = int(match.group(1))
            old_len = int(match.group(2) or "1")
            if old_start <= end and start <= old_start + max(old_len, 1) - 1:
                overlapping.append(hunk)
        chosen = overlapping or hunks
    out = [line for line in header if line.startswith(("---", "+++", "rename", "deleted", "new file"))]
    for hunk in chosen:
        out.extend(hunk)
    if len(out) > MAX_DIFF_LINES:
        out = [*out[:MAX_DIFF_LINES], f"... ({len(out) - MAX_DIFF_LINES} more lines: {full_command})"]
    return "\n".join(out)
