"""The footprints of a line of commits, read from git: what each first-parent commit changes, with no checkout.

One ``git log --raw`` lists every commit of the line with the blob ids of every path it changes
(``Repo.line_changes``), one ``git log -p -U0 -- '*.py'`` where the lines of its Python files changed
(``Repo.spawn_line_hunks``, started first so that both run at once), and only Python files' blobs are read
(``Repo.read_blob_if_present``: one persistent ``cat-file`` process, never fetching a missing blob).  A
file's first version on the line is compiled whole (``code.summarize``); each later version is compared
with the last a changed function at a time (``regions.update``), or compiled whole where that cannot
tell.  A ``FootprintCache`` keeps each blob's summary by blob id and each Python file's changes by blob
pair: a blob id names its content, so nothing in it goes stale, and a second reading of a line (the hunt
reads it again as launches come in; ``--dry-run`` then the search) costs the git logs alone.

Per changed path, conservatively:

* a build or dependency input (``kinds``), a submodule, a symbolic link: ``BUILD``, never inert;
* a non-Python file: ``DATA`` (a mode change too);
* a Python file: the functions whose code changed, or module level (``code.compare``); a file added or
  deleted (a rename is both; an exact one is named in the detail), a mode change, a blob missing from a
  partial clone, a version that does not compile: module level.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from patchkit.footprint.changes import Change, ChangeKind, Footprint
from patchkit.footprint.code import Summary, Unreadable, compare, summarize
from patchkit.footprint.kinds import SUBMODULE_MODE, SYMLINK_MODE, PathKind, path_kind
from patchkit.footprint.regions import Hunk, RegionMemo, update
from patchkit.git import GitFailed, RawChange, Repo, parse_hunks

_ABSENT = "000000"


@dataclass
class FootprintCache:
    """What a line's reading keeps, for the next reading of it or of another line over the same history (a
    hunt reads its line again as launches come in): each blob's summary by blob id (exact, or derived from
    the version before it), and each Python file's changes by (path, old blob, new blob).  A blob id names
    its content, so nothing here goes stale."""

    summaries: dict[str, Summary | Unreadable] = field(default_factory=dict)
    pairs: dict[tuple[str, str, str], tuple[Change, ...]] = field(default_factory=dict)
    regions: RegionMemo = field(default_factory=dict)
    full_compiles: int = 0  # how many blobs were compiled whole (the rest: only the functions that changed)


def line_footprints(repo: Repo, good: str, bad: str, cache: FootprintCache | None = None) -> tuple[Footprint, ...]:
    """The footprint of every first-parent commit after ``good`` up to ``bad``, oldest first (``good``'s own
    is not in it: the line's commits are judged against it)."""
    cache = cache if cache is not None else FootprintCache()
    good, bad = repo.resolve(good), repo.resolve(bad)
    patch = repo.spawn_line_hunks(good, bad)
    try:
        line = repo.line_changes(good, bad)
        needed = any((c.path, c.old_oid, c.new_oid) not in cache.pairs for _sha, raw in line for c in raw)
        try:
            hunks = parse_hunks(patch.bytes()) if needed else {}
        except GitFailed:
            hunks = {}  # a blob missing from a partial clone: every Python file is compiled whole
    finally:
        patch.close()
    reader = _Reader(repo, cache, hunks)
    return tuple(Footprint(sha, reader.commit_changes(sha, raw)) for sha, raw in line)


class _Reader:
    """Reads one line's changes: blobs through the repository's reader, the last text of each path kept
    (the next change of that path starts from it)."""

    def __init__(self, repo: Repo, cache: FootprintCache, hunks: dict[tuple[str, str], list[Hunk]]) -> None:
        self.repo = repo
        self.cache = cache
        self.hunks = hunks
        self.texts: dict[str, tuple[str, bytes | None]] = {}

    def commit_changes(self, sha: str, raw: tuple[RawChange, ...]) -> tuple[Change, ...]:
        """One commit's changes, in path order."""
        renamed = _renames(raw)
        out: list[Change] = []
        for change in sorted(raw, key=lambda c: c.path):
            found = path_change(change)
            if found is None:
                key = (change.path, change.old_oid, change.new_oid)
                found = self.cache.pairs.get(key)
                if found is None:
                    found = self.cache.pairs[key] = self.python(sha, change)
            if change.path in renamed:
                found = tuple(Change(c.path, c.kind, c.qualname, f"{c.detail} ({renamed[change.path]})") for c in found)
            out.extend(found)
        return tuple(out)

    def python(self, sha: str, change: RawChange) -> tuple[Change, ...]:
        path = change.path
        mode: tuple[Change, ...] = ()
        if _ABSENT not in (change.old_mode, change.new_mode) and change.old_mode != change.new_mode:
            mode = (Change(path, ChangeKind.MODULE, None, f"mode {change.old_mode} -> {change.new_mode}"),)
        if change.old_mode == _ABSENT or change.new_mode == _ABSENT:
            return (Change(path, ChangeKind.MODULE, None, "file added" if change.status == "A" else "file deleted"),)
        hunks = self.hunks.get((sha, path))
        old_text, new_text = self.text(path, change.old_oid), self.text(path, change.new_oid)
        if hunks and old_text is not None and new_text is not None:
            # The summary kept from the last version (derived: only its changed functions compiled), else, or where
            # that cannot tell (a hunk in a span it does not know), the old version compiled whole.
            known = self.cache.summaries.get(change.old_oid)
            derived_first = isinstance(known, Summary) and not known.exact
            for attempt in range(2 if derived_first else 1):
                old = known if derived_first and attempt == 0 else self.exact(path, change.old_oid)
                if not isinstance(old, Summary):
                    break
                done = update(path, old, (old_text, new_text), hunks, self.cache.regions)
                if done is not None:
                    found, derived = done
                    kept = self.cache.summaries.get(change.new_oid)
                    if not isinstance(kept, Summary) or not kept.exact:
                        self.cache.summaries[change.new_oid] = derived
                    return (*found, *mode)
        return (*compare(path, self.exact(path, change.old_oid), self.exact(path, change.new_oid)), *mode)

    def exact(self, path: str, oid: str) -> Summary | Unreadable:
        """A blob's summary from a compile of all of it."""
        known = self.cache.summaries.get(oid)
        if isinstance(known, Unreadable) or (isinstance(known, Summary) and known.exact):
            return known
        data = self.text(path, oid)
        if data is None:
            summary: Summary | Unreadable = Unreadable("blob missing from this repository (partial clone)")
        else:
            summary = summarize(data, path)
            self.cache.full_compiles += 1
        self.cache.summaries[oid] = summary
        return summary

    def text(self, path: str, oid: str) -> bytes | None:
        last = self.texts.get(path)
        if last is not None and last[0] == oid:
            return last[1]
        data = self.repo.read_blob_if_present(oid)
        self.texts[path] = (oid, data)
        return data


def path_change(change: RawChange) -> tuple[Change, ...] | None:
    """The change of a path that needs no blob read, or None for a Python file whose blobs tell."""
    modes = (change.old_mode, change.new_mode)
    if SUBMODULE_MODE in modes:
        return (Change(change.path, ChangeKind.BUILD, None, "submodule"),)
    if SYMLINK_MODE in modes:
        return (Change(change.path, ChangeKind.BUILD, None, "symbolic link"),)
    kind = path_kind(change.path)
    if kind is PathKind.BUILD:
        return (Change(change.path, ChangeKind.BUILD, None, _state(change)),)
    if kind is PathKind.DATA:
        return (Change(change.path, ChangeKind.DATA, None, _state(change)),)
    if _ABSENT not in modes and change.old_mode != change.new_mode:
        # The executable bit of a script: run by path, it matters; imported, it does not.  Module level.
        detail = f"mode {change.old_mode} -> {change.new_mode}"
        if change.old_oid == change.new_oid:
            return (Change(change.path, ChangeKind.MODULE, None, detail),)
    return None


def _state(change: RawChange) -> str:
    if change.status == "A":
        return "file added"
    if change.status == "D":
        return "file deleted"
    if change.old_mode != change.new_mode and _ABSENT not in (change.old_mode, change.new_mode):
        return f"mode {change.old_mode} -> {change.new_mode}"
    return "changed"


def _renames(raw: tuple[RawChange, ...]) -> dict[str, str]:
    """Exact renames (a deletion and an addition of the same blob in one commit), for the detail only:
    each side keeps its conservative answer."""
    deleted = {c.old_oid: c.path for c in raw if c.status == "D"}
    out: dict[str, str] = {}
    for c in raw:
        if c.status == "A" and c.new_oid in deleted:
            out[c.path] = f"renamed from {deleted[c.new_oid]}"
            out[deleted[c.new_oid]] = f"renamed to {c.path}"
    return out
