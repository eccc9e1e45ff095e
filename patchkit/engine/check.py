"""Check a manifest at every commit of a range, without checking anything out.

Cost follows the number of distinct versions of the target files, not the
number of commits:

1. One ``git log`` lists the commits; one more lists, for the commits whose
   diff against their first parent touches a target file, the new tree
   entries (mode, blob id), as git walks (``engine/listing.py``): blobs the
   cache lacks go to the worker processes as soon as they appear.  Walking
   the commits oldest first, each commit's target entries are its first
   parent's plus that diff (a commit whose first parent is outside the range
   gets one ``ls-tree``).  This is exact across
   merges: a merge's tree is its first parent's plus its first-parent diff.
2. Commits are grouped by their tuple of target entries, and each distinct
   tuple is evaluated once.  Per file, verdicts are cached by (path, entry,
   patch fingerprints) in memory and in ``<git-common-dir>/patchkit/cache.sqlite``,
   so a blob is read and analysed once, ever.
3. Hints (where a missing class or file went) depend on the whole tree, so
   they are computed once per window of equal verdicts, at its first commit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from patchkit import paths
from patchkit.engine import pool
from patchkit.engine.cache import VerdictCache, file_key
from patchkit.engine.evaluate import evaluate_file, order_results, resolve_requires
from patchkit.engine.groups import group_results
from patchkit.engine.hints import annotate
from patchkit.engine.listing import Listing, read_range, start_listing
from patchkit.engine.pool import Feed, evaluate_many
from patchkit.engine.upstreamed import Upstreamed, upstreamed
from patchkit.errors import RepoError, RevisionError
from patchkit.git import Commit, Entry, GitFailed, Repo, symlinked_parents
from patchkit.jsontext import INDENT, array_text, encode_str, fragment, object_text
from patchkit.manifest import Manifest, Patch
from patchkit.results import GroupResult, PatchResult, Reason, Status
from patchkit.sources import CommitSource, read_entry
from patchkit.sources.commit import SYMLINK_DIR

if TYPE_CHECKING:
    from patchkit.engine.pool import Workers
    from patchkit.engine.since import SinceReport


@dataclass(frozen=True)
class CommitResults:
    """One commit of a range check: every patch's verdict there, in manifest order, and every group's.

    Commits with the same versions of the target files share one ``results`` tuple.
    """

    commit: Commit
    results: tuple[PatchResult, ...]
    failed: bool  # a required patch FAILs here
    groups: tuple[GroupResult, ...] = ()  # one per [[group]], manifest order

    def to_json(self) -> dict[str, object]:
        return {
            **self.commit.to_json(),
            "results": [r.to_json() for r in self.results],
            "groups": [g.to_json() for g in self.groups],
        }


class _Run:
    """Consecutive commits (of a window)."""

    commits: tuple[Commit, ...]

    @property
    def count(self) -> int:
        return len(self.commits)

    @property
    def first(self) -> Commit:
        return self.commits[0]

    @property
    def last(self) -> Commit:
        return self.commits[-1]


@dataclass(frozen=True)
class Window(_Run):
    """A run of consecutive commits where one patch has one status and reason."""

    patch: str
    status: Status
    reason: Reason | None
    commits: tuple[Commit, ...]
    first_result: PatchResult

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "status": self.status.value,
            "reason": self.reason.value if self.reason else None,
            "count": self.count,
            "first": self.first.sha,
            "last": self.last.sha,
            "message": self.first_result.message,
            "hint": self.first_result.hint,
        }


@dataclass(frozen=True)
class GroupWindow(_Run):
    """A run of consecutive commits where one group has one status, reason and set of covering members."""

    group: str
    status: Status
    reason: Reason | None
    covered_by: tuple[str, ...]
    commits: tuple[Commit, ...]
    first_result: GroupResult

    def to_json(self) -> dict[str, object]:
        return {
            "group": self.group,
            "status": self.status.value,
            "reason": self.reason.value if self.reason else None,
            "covered_by": list(self.covered_by),
            "count": self.count,
            "first": self.first.sha,
            "last": self.last.sha,
            "message": self.first_result.message,
        }


@dataclass(frozen=True)
class CheckStats:
    """The counts behind a range check: commits checked, distinct states of the target files (each evaluated once),
    and the verdict cache's hits and misses.
    """

    commits: int
    distinct_states: int
    cache_hits: int
    cache_misses: int


@dataclass(frozen=True)
class CheckReport:
    """What ``patchkit check`` found over a range: every commit's verdicts, and the windows (runs of consecutive
    commits) where each patch or group keeps one verdict, which the report and the ``upstreamed`` verdicts read.
    """

    manifest: Manifest
    commits: tuple[CommitResults, ...]
    windows: tuple[Window, ...]
    stats: CheckStats
    group_windows: tuple[GroupWindow, ...] = ()
    upstreamed: tuple[Upstreamed, ...] = ()  # range verdicts: see engine/upstreamed.py
    # A commit given with --commit whose parent is not the commit listed before it: how many commits
    # after that one it is (None: not a descendant of it, another line of history).
    relations: Mapping[str, int | None] = field(default_factory=dict)
    since: SinceReport | None = None  # check --since REV: the verdicts that changed since REV (engine/since.py)

    @property
    def failed(self) -> bool:
        return any(c.failed for c in self.commits)

    @property
    def last_good(self) -> Commit | None:
        """The newest checked commit where no required patch FAILs."""
        for item in reversed(self.commits):
            if not item.failed:
                return item.commit
        return None

    def windows_of(self, patch_id: str) -> list[Window]:
        return [w for w in self.windows if w.patch == patch_id]

    def group_windows_of(self, group_id: str) -> list[GroupWindow]:
        return [w for w in self.group_windows if w.group == group_id]

    def matrix(self) -> dict[str, dict[str, tuple[Status, Reason | None]]]:
        return {c.commit.sha: {r.patch: (r.status, r.reason) for r in c.results} for c in self.commits}

    def to_json(self) -> dict[str, object]:
        return {**self._json_head(), "commits": [c.to_json() for c in self.commits], **self._json_tail()}

    def json_text(self) -> str:
        """``json.dumps(self.to_json(), indent=2, ensure_ascii=False)``, built in a fraction of its time."""
        return "".join(self.json_chunks())

    def json_chunks(self) -> Iterator[str]:
        """The text of ``json_text`` in pieces, to write one by one.

        Commits of one state share their results and groups tuples, so each
        distinct pair is encoded once (``patchkit/jsontext.py``) and that one
        string is handed out for every commit: no per-commit encoding, and no
        copy of the whole text, which a long range makes large
        (``tests/test_check_jobs.py`` pins the bytes).
        """

        mark = "\x00"  # never in JSON text: control characters are escaped
        items = [(k, fragment(v, 1)) for k, v in self._json_head().items()]
        items.append(("commits", mark))
        items.extend((k, fragment(v, 1)) for k, v in self._json_tail().items())
        before, after = object_text(items).split(mark)
        yield before
        if not self.commits:
            yield "[]"
        shared: dict[tuple[int, int], str] = {}
        key_pad = ",\n" + INDENT * 3
        first = "[\n" + INDENT * 2 + "{\n" + INDENT * 3  # opens the first commit's object
        later = ",\n" + INDENT * 2 + "{\n" + INDENT * 3
        # A commit's own fields are strings, always the same keys: one template, each value encoded.
        keys = list(self.commits[0].commit.to_json()) if self.commits else []
        template = (later + key_pad.join(encode_str(k) + ": \0" for k in keys)).replace("{", "{{").replace("}", "}}")
        template = template.replace("\0", "{}")  # "\0" is never in JSON text: the value's place
        for n, c in enumerate(self.commits):
            key = (id(c.results), id(c.groups))
            tail = shared.get(key)
            if tail is None:
                results = array_text([fragment(r.to_json(), 4) for r in c.results], 3)
                groups = array_text([fragment(g.to_json(), 4) for g in c.groups], 3)
                tail = shared[key] = f'{key_pad}"results": {results}{key_pad}"groups": {groups}\n{INDENT * 2}}}'
            head = template.format(*map(encode_str, c.commit.to_json().values()))
            yield first + head[len(later) :] if n == 0 else head
            yield tail
        if self.commits:
            yield "\n" + INDENT + "]"
        yield after

    def _json_head(self) -> dict[str, object]:
        return {"version": 1, "command": "check", "manifest": self.manifest.to_json()}

    def _json_tail(self) -> dict[str, object]:
        good = self.last_good
        return {
            "windows": [w.to_json() for w in self.windows],
            "group_windows": [w.to_json() for w in self.group_windows],
            "upstreamed": [u.to_json() for u in self.upstreamed],
            "last_good": None if good is None else {"commit": good.sha, "subject": good.subject},
            "failed": self.failed,
            "stats": {
                "commits": self.stats.commits,
                "distinct_states": self.stats.distinct_states,
                "cache_hits": self.stats.cache_hits,
                "cache_misses": self.stats.cache_misses,
            },
            "since": None if self.since is None else self.since.to_json(),
        }


# -- commit selection -----------------------------------------------------------


def select_commits(
    repo: Repo,
    ranges: Sequence[str],
    commits: Sequence[str],
    files: Sequence[str] = (),
    listing: Listing | None = None,
    on_change: Callable[[Mapping[str, Entry]], None] | None = None,
) -> tuple[list[Commit], dict[str, dict[str, Entry]], set[str]]:
    """The commits to check (ranges oldest first, then --commit ones), the
    first-parent changes of ``files`` along the ranges, and the shas that
    came from a range.  A range's two git logs run concurrently, and
    ``on_change`` sees each range commit's changes as git finds them
    (``listing.read_range``)."""
    listing = listing or start_listing(repo, ranges)
    listing.watch(repo, files)
    diffs = listing.diffs
    seen: set[str] = set()
    out: list[Commit] = []
    changes: dict[str, dict[str, Entry]] = {}
    try:
        for (spec, _rev_spec, ends, sep), pending, diff in zip(listing.specs, listing.pending, diffs, strict=True):
            try:
                listed, found = read_range(pending, diff, on_change)
                changes.update(found)
            except GitFailed as exc:
                repo.resolve_all(ends)  # raises, naming the unknown end
                raise RevisionError(f"git cannot list {spec!r}: {exc.stderr}") from None
            if not listed:
                if sep == ".." and len(set(repo.resolve_all(ends))) == 1:
                    hint = f"both ends are the same commit; {ends[0]}..{ends[1]} lists the commits after {ends[0]}"
                elif sep == "..":
                    hint = f"{ends[0]} already contains {ends[1]}; did you mean {ends[1]}..{ends[0]}?"
                else:
                    hint = f"check the range with `git log --oneline {spec}`"
                raise RevisionError(f"range {spec!r} is empty", hint=hint)
            _refuse_truncated(repo, spec, listed)
            for commit in listed:
                if commit.sha not in seen:
                    seen.add(commit.sha)
                    out.append(commit)
    finally:
        # A failed range leaves the other git logs unread: reap them (no process left running).
        listing.close()
    from_ranges = set(seen)
    extra = repo.resolve_all(list(commits)) if commits else []
    fresh = repo.topo_sorted([sha for sha in dict.fromkeys(extra) if sha not in seen])
    for commit in repo.commits(fresh):
        seen.add(commit.sha)
        out.append(commit)
    return out, changes, from_ranges


def _refuse_truncated(repo: Repo, spec: str, listed: Sequence[Commit]) -> None:
    if not repo.is_shallow:
        return
    boundary = repo.shallow_boundary()
    cut = [c for c in listed if c.sha in boundary]
    if cut:
        raise RepoError(
            f"this is a shallow clone and the history of {spec!r} is cut off at {cut[0].short} "
            f"{cut[0].subject!r}: the range needs commits that were not fetched",
            hint="run `git fetch --unshallow` (or `git fetch --deepen N`) and check again",
        )


# -- evaluation --------------------------------------------------------------------


@dataclass
class _Results:
    """One file version's verdicts in the shape ``resolve_requires`` reads (a ``FileEval``'s ``results``), whether
    they come from the verdict cache or from a fresh evaluation.
    """

    results: tuple[PatchResult, ...]


def _file_evaluator(repo: Repo, cache: VerdictCache) -> Callable[..., _Results]:
    def evaluate(ref: tuple[str, Entry], patches: Sequence[Patch], held: Mapping[str, str]) -> _Results:
        path, entry = ref
        key = file_key(path, entry, patches, held)
        found = cache.get(key)
        if found is None:
            fe = evaluate_file(read_entry(repo, path, entry), patches, held)
            found = cache.put(key, fe.results)
        return _Results(found)

    return evaluate


def _early_workers(manifest: Manifest, repo: Repo, cache: VerdictCache, listing: Listing, jobs: int) -> Workers | None:
    """Worker processes started while git lists the range, if the run looks cold.

    Looks cold: some target file's version at a range's tip is not in the
    cache (one ``ls-tree``, while the listing runs).  A warm run starts none;
    a cold one finds them ready when the blobs are known.  Either way the
    report is the same: this only decides when processes start.
    """

    if jobs < 2 or not listing.specs or not pool.can_fork():
        return None
    by_file = manifest.by_file()
    for _spec, _rev_spec, ends, _sep in listing.specs:
        try:
            tree = repo.ls_tree(ends[-1], list(by_file))
        except GitFailed:
            return None  # a bad end: the listing will say so
        for path, patches in by_file.items():
            entry = (tree[path].mode, tree[path].oid) if path in tree else None
            if entry is not None and cache.peek(file_key(path, entry, patches, {})) is None:
                return pool.Workers(repo, by_file, jobs)
    return None


class _feeder:
    """``select_commits``'s ``on_change``: each changed version the cache lacks goes to the workers at once."""

    def __init__(self, manifest: Manifest, cache: VerdictCache, workers: Workers) -> None:
        self.by_file = manifest.by_file()
        self.cache = cache
        self.feed = Feed(workers)
        self.asked: set[tuple[str, Entry]] = set()

    def __call__(self, changes: Mapping[str, Entry]) -> None:
        for path, entry in changes.items():
            ref = (path, entry)
            if entry is None or path not in self.by_file or ref in self.asked:
                continue
            self.asked.add(ref)
            if self.cache.peek(file_key(path, entry, self.by_file[path], {})) is None:
                self.feed.add(ref)


def _prefill(
    manifest: Manifest,
    repo: Repo,
    cache: VerdictCache,
    files: Sequence[str],
    distinct: Sequence[tuple[Entry, ...]],
    jobs: int,
    feed: _feeder | None = None,
) -> None:
    """Evaluate, in a process pool, every file version the states need that the cache lacks.

    Only the first pass of ``resolve_requires`` (no patch held back) is done
    ahead: it is nearly all the work, and a held-back pass depends on the
    other files' verdicts, which the sequential loop has.  With ``feed``, the
    workers got most versions while git listed the range; the rest (those the
    range's first commits inherit) are sent the same way now.
    """
    if jobs < 2:
        return
    by_file = manifest.by_file()
    wanted: dict[str, tuple[str, Entry]] = {}
    for state in distinct:
        for path, entry in zip(files, state, strict=True):
            if path in by_file and entry is not None:
                key = file_key(path, entry, by_file[path], {})
                if key not in wanted and cache.peek(key) is None:
                    wanted[key] = (path, entry)

    if feed is not None:  # the workers are running: what git's walk did not bring goes the same way
        for ref in wanted.values():
            feed.feed.add(ref)
        for key, ref in wanted.items():
            cache.prefill(key, feed.feed.result(ref))
        return
    done = evaluate_many(repo, by_file, list(wanted.values()), jobs)
    if done is not None:
        for key, results in zip(wanted, done, strict=True):
            cache.prefill(key, results)


def check_range(
    manifest: Manifest,
    repo: Repo,
    *,
    ranges: Sequence[str] = (),
    commits: Sequence[str] = (),
    use_cache: bool = True,
    hints: bool = True,
    progress: Callable[[int, int], None] | None = None,
    listing: Listing | None = None,
    jobs: int = 1,
) -> CheckReport:
    """Evaluate every patch at every selected commit (HEAD if nothing is selected).

    ``listing``: from ``start_listing(repo, ranges)`` if the caller started
    listing the ranges already.  ``jobs``: processes that evaluate uncached
    blobs (``engine/pool.py``); the report is the same for every value.
    """
    if not ranges and not commits:
        commits = ["HEAD"]
    files = manifest.files()
    cache = VerdictCache(paths.verdict_cache(repo.common_dir) if use_cache else None)
    by_state: dict[tuple[Entry, ...], tuple[PatchResult, ...]] = {}
    groups: dict[tuple[Entry, ...], tuple[GroupResult, ...]] = {}
    workers: Workers | None = None
    try:
        try:
            listing = listing or start_listing(repo, ranges)
            listing.watch(repo, files)
            workers = _early_workers(manifest, repo, cache, listing, jobs)
            feed = None if workers is None else _feeder(manifest, cache, workers)
            selected, changes, from_ranges = select_commits(repo, ranges, commits, files, listing, feed)
            # Commits from ranges are covered by the path-limited log; a commit
            # given alone with --commit is not, and gets its own ls-tree.
            states = _states(repo, selected, changes, files, from_ranges, cache)
        except GitFailed as exc:
            raise RevisionError(f"git could not list the history: {exc.stderr}") from None
        distinct = list(dict.fromkeys(states.values()))
        if hints and selected and None in states[selected[0].sha]:
            # A file absent at the first commit gets a hint naming files of the same name
            # in that commit's tree: list it now, on a core the evaluation leaves idle.
            repo.prefetch_files(selected[0].sha)
        _prefill(manifest, repo, cache, files, distinct, jobs, feed)
        if workers is not None:
            workers.close()
            workers = None
        evaluate = _file_evaluator(repo, cache)
        for done, state in enumerate(distinct, start=1):
            refs = {path: (path, state[i]) for i, path in enumerate(files)}
            evals = resolve_requires(manifest, refs, evaluate)
            by_state[state] = order_results(manifest, evals)
            groups[state] = group_results(manifest, by_state[state])
            if progress is not None:
                progress(done, len(distinct))
        failing = {
            state: any(r.status is Status.FAIL for r in res) or any(g.status is Status.FAIL for g in groups[state])
            for state, res in by_state.items()
        }
        rows = [
            CommitResults(c, by_state[states[c.sha]], failing[states[c.sha]], groups[states[c.sha]]) for c in selected
        ]
        if hints:
            rows = _with_hints(manifest, repo, rows, cache, [states[row.commit.sha] for row in rows])
    finally:
        if workers is not None:
            workers.close()
        cache.close()
        repo.close()
        repo.close_prefetched()
    windows = _windows(manifest, rows)
    stats = CheckStats(len(rows), len(distinct), cache.hits, cache.misses)
    relations = _relations(repo, [row.commit for row in rows], from_ranges)
    taken = tuple(upstreamed([p.id for p in manifest.patches], windows))
    return CheckReport(
        manifest, tuple(rows), tuple(windows), stats, tuple(_group_windows(manifest, rows)), taken, relations
    )


def _relations(repo: Repo, listed: Sequence[Commit], from_ranges: set[str]) -> dict[str, int | None]:
    """For each --commit commit whose parent is not the commit listed before it: its distance from
    that one (None: not a descendant).  Two small git calls each, for the few commits given by hand."""
    out: dict[str, int | None] = {}
    for before, commit in pairwise(listed):
        if commit.sha in from_ranges or (commit.parents and commit.parents[0] == before.sha):
            continue
        out[commit.sha] = repo.distance(before.sha, commit.sha)
    return out


def _states(
    repo: Repo,
    selected: Sequence[Commit],
    changes: Mapping[str, Mapping[str, Entry]],
    files: Sequence[str],
    covered: set[str],
    cache: VerdictCache,
) -> dict[str, tuple[Entry, ...]]:
    index = {path: i for i, path in enumerate(files)}
    states: dict[str, tuple[Entry, ...]] = {}
    for commit in selected:
        parent = commit.parents[0] if commit.parents else None
        if commit.sha in covered and (parent is None or parent in states):
            # Inherit from the first parent (or start empty at a root) and
            # apply this commit's first-parent diff, if the log listed one.
            state: list[Entry] = list(states[parent]) if parent is not None else [None] * len(files)
            for path, entry in changes.get(commit.sha, {}).items():
                if path in index:
                    state[index[path]] = entry
        else:
            tree = repo.ls_tree(commit.sha, files)
            state = [(tree[p].mode, tree[p].oid) if p in tree else None for p in files]
        states[commit.sha] = tuple(state)
    return _mark_symlinked_dirs(repo, states, files, cache)


def _mark_symlinked_dirs(
    repo: Repo, states: dict[str, tuple[Entry, ...]], files: Sequence[str], cache: VerdictCache
) -> dict[str, tuple[Entry, ...]]:
    """A target absent because a parent directory is a symlink gets the
    pseudo entry (SYMLINK_DIR, that directory): UNSUPPORTED_FILE, as apply says.

    Which commits were looked at, and what was found, is a fact of those
    commits' trees, so it is kept in the cache per path: a warm check asks git
    only about commits it has not seen (a file absent from thousands of
    commits would otherwise cost one lookup per commit on every warm run).
    """
    missing: dict[str, list[str]] = {}
    for sha, state in states.items():
        for path, entry in zip(files, state, strict=True):
            if entry is None:
                missing.setdefault(path, []).append(sha)
    if not missing:
        return states
    links: dict[tuple[str, str], str] = {}
    ask: list[tuple[str, str]] = []
    known: dict[str, tuple[set[str], dict[str, str]]] = {}
    for path, shas in missing.items():
        checked, found = known[path] = cache.symlink_facts(path)
        links.update(((sha, path), found[sha]) for sha in shas if sha in found)
        ask.extend((sha, path) for sha in shas if sha not in checked)
    if ask:
        answers = symlinked_parents(repo, ask)
        links.update(answers)
        for path in {path for _, path in ask}:
            checked, found = known[path]
            asked = {sha for sha, p in ask if p == path}
            cache.remember_symlink_facts(
                path, checked | asked, {**found, **{sha: link for (sha, p), link in answers.items() if p == path}}
            )
    index = {path: i for i, path in enumerate(files)}
    for (sha, path), link in links.items():
        marked = list(states[sha])
        marked[index[path]] = (SYMLINK_DIR, link)
        states[sha] = tuple(marked)
    return states


def _runs(rows: Sequence[CommitResults]) -> list[tuple[int, int]]:
    """[start, end) of consecutive rows sharing one results tuple (one state)."""
    runs: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i].results is not rows[start].results:
            runs.append((start, i))
            start = i
    return runs


def _column_windows(
    rows: Sequence[CommitResults], runs: Sequence[tuple[int, int]], column: int
) -> Iterable[tuple[int, int, PatchResult]]:
    """(first run, end run, first result) of each window of one patch's column."""
    i = 0
    while i < len(runs):
        first = rows[runs[i][0]].results[column]
        j = i + 1
        while j < len(runs) and _same(rows[runs[j][0]].results[column], first):
            j += 1
        yield i, j, first
        i = j


class _StoredLookups(dict[tuple[str, ...], str | None]):
    """``annotate``'s lookup cache, backed by the verdict cache's hints table.

    ``annotate`` keys a lookup by (source label, file, reason, missing name,
    and the arrival commit where there is one); stored, the label becomes the
    full id of the commit being annotated (a commit's tree never changes), and
    a FILE_NOT_FOUND hint without an arrival, which searches every branch,
    also carries a digest of the refs.
    """

    def __init__(self, repo: Repo, cache: VerdictCache) -> None:
        super().__init__()
        self.repo = repo
        self.cache = cache
        self.commit = ""
        self._refs: str | None = None

    def _stored_key(self, key: tuple[str, ...]) -> str:
        _label, *rest = key
        parts = [self.commit, *rest]
        if len(rest) == 3 and rest[1] == Reason.FILE_NOT_FOUND.value:  # no arrival: the hint searches every ref
            if self._refs is None:
                listed = self.repo.git("show-ref", "--head", check=False)
                self._refs = hashlib.sha256(listed.encode()).hexdigest()
            parts.append(self._refs)
        return "hint:" + json.dumps(parts)

    def __contains__(self, key: object) -> bool:
        if super().__contains__(key):
            return True
        assert isinstance(key, tuple)
        found, hint = self.cache.get_hint(self._stored_key(key))
        if found:
            super().__setitem__(key, hint)
        return found

    def __setitem__(self, key: tuple[str, ...], value: str | None) -> None:
        super().__setitem__(key, value)
        self.cache.put_hint(self._stored_key(key), value)


def _with_hints(
    manifest: Manifest,
    repo: Repo,
    rows: list[CommitResults],
    cache: VerdictCache,
    row_states: Sequence[tuple[Entry, ...]],
) -> list[CommitResults]:
    """Manifest hints everywhere; tree hints once per window, at its first commit (stored in the cache).

    A missing file that no earlier commit of the range has and a later one
    does is hinted from the range itself (``hints.file_hint``'s ``arrival``):
    no history walk.  That hint is a fact of two commits (the one annotated
    and the arrival), and is stored under both ids.
    """
    runs = _runs(rows)
    hinted = [list(rows[start].results) for start, _ in runs]
    lookups = _StoredLookups(repo, cache)
    files = manifest.files()
    for column, patch in enumerate(manifest.patches):
        at = files.index(patch.file)
        present = [_real(state[at]) for state in row_states]
        for i, j, first in _column_windows(rows, runs, column):
            if first.ok and not patch.hints:
                continue
            start = runs[i][0]
            commit = rows[start].commit
            source = CommitSource(repo, commit)
            arrival = None
            if first.reason is Reason.FILE_NOT_FOUND and not any(present[:start]):
                arrival = next((rows[k].commit for k in range(runs[j - 1][1], len(rows)) if present[k]), None)
            lookups.commit = commit.sha
            hint = annotate(manifest, [first], source, lookups, arrival)[0].hint
            for k in range(i, j):
                hinted[k][column] = hinted[k][column].with_hint(hint)
    repo.close()
    out: list[CommitResults] = []
    for (start, end), results in zip(runs, hinted, strict=True):
        shared = tuple(results)
        out.extend(CommitResults(rows[i].commit, shared, rows[i].failed, rows[i].groups) for i in range(start, end))
    return out


def _real(entry: Entry) -> bool:
    """The file is there (not absent, not behind a symlinked directory)."""
    return entry is not None and entry[0] != SYMLINK_DIR


def _same(a: PatchResult, b: PatchResult) -> bool:
    return a.status is b.status and a.reason is b.reason


def _windows(manifest: Manifest, rows: Sequence[CommitResults]) -> list[Window]:
    runs = _runs(rows)
    windows: list[Window] = []
    for column, patch in enumerate(manifest.patches):
        for i, j, first in _column_windows(rows, runs, column):
            commits = tuple(rows[k].commit for k in range(runs[i][0], runs[j - 1][1]))
            windows.append(Window(patch.id, first.status, first.reason, commits, first))
    return windows


def _group_windows(manifest: Manifest, rows: Sequence[CommitResults]) -> list[GroupWindow]:
    """Per group, runs of consecutive commits with one status, reason and set of covering members."""
    windows: list[GroupWindow] = []
    for column, group in enumerate(manifest.groups):
        start = 0
        for i in range(1, len(rows) + 1):
            first = rows[start].groups[column]
            if i < len(rows):
                here = rows[i].groups[column]
                if (here.status, here.reason, here.covered_by) == (first.status, first.reason, first.covered_by):
                    continue
            commits = tuple(row.commit for row in rows[start:i])
            windows.append(GroupWindow(group.id, first.status, first.reason, first.covered_by, commits, first))
            start = i
    return windows


__all__ = ["CheckReport", "CommitResults", "Window", "check_range", "select_commits"]
