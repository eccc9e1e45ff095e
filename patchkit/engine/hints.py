"""Hints: where a missing class, function or file went, from the rest of the tree.

Kept out of ``PatchResult.message`` because they depend on the whole tree,
not only on the target file: a range check caches messages per blob and
computes hints once per window instead (see ``engine/check.py``).

A missing file's hint says where it went (deleted or renamed, in which
commit) or where it first appears.  A range check knows more than one commit
does: when no earlier commit of the range has the file and a later one does,
the hint names that later commit (``arrival``), read from the range's own
listing, instead of walking all of history and every branch for it (a second
or more on a large repository, on the first run).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from patchkit.git import Commit, GitFailed
from patchkit.manifest import Manifest, Patch
from patchkit.results import PatchResult, Reason
from patchkit.sources import Source


def missing_name(patch: Patch, reason: Reason) -> tuple[str, str] | None:
    """("class" | "def", name) that a CLASS/FUNCTION_NOT_FOUND result is about."""
    return patch.op.missing_target(reason)


def tree_hint(patch: Patch, result: PatchResult, source: Source, arrival: Commit | None = None) -> str | None:
    reason = result.reason
    try:
        if reason in (Reason.CLASS_NOT_FOUND, Reason.FUNCTION_NOT_FOUND):
            wanted = missing_name(patch, reason)
            if wanted is None:
                return None
            kind, name = wanted
            hits = source.find_definition(kind, name, exclude=patch.file)
            if not hits:
                return None
            shown = ", ".join(f"{path}:{line}" for path, line in hits[:3])
            more = f" (and {len(hits) - 3} more)" if len(hits) > 3 else ""
            label = "class" if kind == "class" else "def"
            return f"{label} {name} is defined in {shown}{more}"
        if reason is Reason.FILE_NOT_FOUND:
            return file_hint(patch.file, source, arrival)
    except GitFailed:
        return None  # a hint is a courtesy: never fail a report over one
    return None


def file_hint(path: str, source: Source, arrival: Commit | None = None) -> str | None:
    """``arrival``: the first commit of the range being checked that has the file,
    when no earlier one does (then no history walk is needed to say where it appears)."""
    repo = source.repo
    commit = source.commit
    parts: list[str] = []
    if arrival is not None:
        parts.append(f"in this range it first exists at {arrival.short} {arrival.subject!r} ({arrival.date[:10]})")
    elif commit is not None:
        gone = repo.first_change(commit.sha, path, filter="D")
        if gone is not None:
            parent = gone.parents[0] if gone.parents else None
            target = repo.renamed_to(parent, gone.sha, path) if parent else None
            what = f"renamed to {target}" if target else "deleted"
            parts.append(f"{what} in {gone.short} {gone.subject!r} ({gone.date[:10]})")
        else:
            added = repo.git("log", "--all", "--diff-filter=A", "--format=%H", "--", path).split()
            if added:
                first = repo.commit(added[-1])
                parts.append(
                    f"it first appears in {first.short} {first.subject!r} ({first.date[:10]}), "
                    "which is not in this commit's history"
                )
    base = os.path.basename(path)
    same_name = [f for f in source.files() if os.path.basename(f) == base and f != path]
    if same_name:
        parts.append(f"a file named {base} exists at {', '.join(same_name[:3])}")
    return "; ".join(parts) or None


def annotate(
    manifest: Manifest,
    results: Sequence[PatchResult],
    source: Source,
    cache: dict[tuple[str, ...], str | None] | None = None,
    arrival: Commit | None = None,
) -> tuple[PatchResult, ...]:
    """Add the manifest's own hints and tree hints to non-OK results.

    ``cache`` may be shared across calls: a tree hint depends only on the
    source, the file, the reason and the missing name, so patches on one file
    that fail alike share one lookup.  ``arrival`` (see ``file_hint``) is part
    of a FILE_NOT_FOUND lookup's key: that hint names it.
    """
    cache = {} if cache is None else cache
    out = []
    for result in results:
        patch = manifest.patch(result.patch)
        parts: list[str] = []
        if result.reason is not None and result.reason in patch.hints:
            parts.append(patch.hints[result.reason])
        if not result.ok and result.reason is not None:
            key: tuple[str, ...] = (
                source.label,
                patch.file,
                result.reason.value,
                str(missing_name(patch, result.reason)),
            )
            if arrival is not None and result.reason is Reason.FILE_NOT_FOUND:
                key += (arrival.sha,)  # the hint names it
            if key not in cache:
                cache[key] = tree_hint(patch, result, source, arrival)
            found = cache[key]
            if found:
                parts.append(found)
        # A manifest hint may end its sentence; do not print "..; ..".
        out.append(result.with_hint("; ".join(p.rstrip(". ") for p in parts) if parts else None))
    return tuple(out)
