"""The git side of a range check, started before anything else is loaded.

A range check waits on two ``git log`` processes per range: one lists the
commits, the other the target files' first-parent changes.  On a large
history they are most of a check's time, and they need little: the range
(for the first) and the manifest's target paths (for the second).  So the
``check`` command starts them before it imports the evaluation machinery or
opens the verdict cache, and all of that is loaded while git works on
another core (``commands/check.py``).  ``engine/check.py`` reads them.

git walks a range (``A..B``) to its end before it prints a line, so the
change log is instead a walk from the range's tips that shows every commit
it passes (``Repo.spawn_change_stream``); ``read_range`` reads it as it
comes, hands each change on at once (the check's workers start on a blob
while git still walks), keeps the range's commits, and stops git once it has
seen them all.  On SGLang the walk passes 14-31 commits outside a range of
6,317 before it is stopped.  Both logs are started ``ahead`` (``git.Pending``):
their pipes are grown so that git walks on while the manifest and the engine
load, rather than stopping at a full 64 KiB pipe some 1,500 commits in.

This module imports little beyond ``patchkit.git``: importing it must not
delay the first git process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from patchkit.errors import InternalError, RevisionError
from patchkit.git import Commit, Entry, GitFailed, Pending, Repo, change_records, parse_log

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
        self.diffs = [repo.spawn_change_stream(tips(spec), files) if files else None for spec in self.specs]

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


def tips(spec: RangeSpec) -> list[str]:
    """Where a walk that reaches every commit of the range starts: its positive ends."""
    written, _rev_spec, ends, sep = spec
    if sep == "..":
        return [ends[1]]
    if sep == "...":
        return ends
    return [written]


Changes = dict[str, dict[str, Entry]]  # commit -> {path: its entry}


class _LogBox(TypedDict, total=False):
    """What the thread reading the commit list leaves: its text, or git's failure."""

    text: str
    error: GitFailed


def read_range(
    log: Pending, stream: Pending | None, on_change: Callable[[Mapping[str, Entry]], None] | None = None
) -> tuple[list[Commit], Changes]:
    """A range's commits (oldest first) and its commits' target changes.

    The commit list is read in a thread while this one reads the change
    stream (``Repo.spawn_change_stream``) record by record: once the list is
    known, records of commits outside the range are dropped, and the walk is
    stopped as soon as every commit of the range has been seen.
    ``on_change`` gets each record's changes as they arrive, so work on their
    blobs can start while git still walks, even before the range is known:
    the walk passes few commits outside the range (those older than its
    bottom come last, and it stops there), so little is done in vain.
    Raises GitFailed if either git process failed (the commit list's error
    first).
    """
    if stream is None:
        return parse_log(log.text()), {}
    box: _LogBox = {}

    def read_log() -> None:
        try:
            box["text"] = log.text()
        except GitFailed as exc:
            box["error"] = exc

    listed: list[Commit] | None = None
    left: set[str] = set()  # range commits not seen yet
    early: list[tuple[str, dict[str, Entry]]] = []  # records read before the range was known
    found: Changes = {}

    def take(sha: str, changes: dict[str, Entry]) -> None:
        if sha in left:
            left.discard(sha)
            if changes:
                found[sha] = changes

    def know() -> None:
        """The commit list is in: keep the records read so far that belong to it."""
        nonlocal listed, left, early
        listed = parse_log(box["text"])
        left = {c.sha for c in listed}
        for record in early:
            take(*record)
        early = []

    reader = threading.Thread(target=read_log, daemon=True)
    if log.read:  # the caller has the list already: the walk is never ahead of it
        read_log()
        if "error" not in box:
            know()
    else:
        reader.start()
    complete = False
    try:
        for sha, changes in change_records(stream):
            if changes and on_change is not None:
                on_change(changes)  # even before the range is known: few records lie outside it
            if listed is None and not reader.is_alive():
                if "error" in box:
                    break
                know()
            if listed is None:
                early.append((sha, changes))
                continue
            take(sha, changes)
            if not left:
                complete = True
                break
        if reader.ident is not None:
            reader.join()
        if "error" in box:
            raise box["error"]
        if listed is None:
            know()
            complete = not left
        if not complete:
            stream.finish()  # raises if git failed
            raise InternalError(f"git's walk from the range's tips missed {len(left)} of its commits")
    finally:
        stream.close()  # stops the walk where it is: the rest of history is not needed
    assert listed is not None
    return listed, found


def start_listing(repo: Repo, ranges: Sequence[str]) -> Listing:
    specs = range_specs(ranges)
    return Listing(specs, [repo.spawn_rev_list(rev_spec) for _, rev_spec, _, _ in specs])


__all__ = ["Listing", "range_specs", "read_range", "split_range", "start_listing", "tips"]
