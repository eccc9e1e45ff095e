"""The hunt's pruning, on the execution side: which commits of the line could change what the launches ran.

``bisect`` launches only where code that ran changed (#49).  The pure rule is ``bench.stats.relevance``; the
search asks a ``Judge`` (``bench.stats.pruning``) after GOOD's and BAD's first launches and after every round.
This module is that judge for a real hunt: ``LineJudge`` reads the line's footprints once, when the bisect is
planned (``patchkit.footprint.line_footprints``: what each commit changes, from its blobs, with no checkout),
and on each call judges every commit against what the hunt's launches ran so far (``records.coverage.ran_of``
over the runs it was told of: GOOD's, BAD's and every commit's measured since, each read from the store once).

Which launches count: every run of the hunt whose server started (its proof is stored) or that is ok.  A
launch that failed before any server ran says nothing of what runs; one that started and then failed ran
code all the same, and counting it only makes fewer commits inert.

Pruning is off (``LineRelevance.off`` says why, and every commit counts as relevant) while:

* GOOD and BAD have not both run: the rule needs what both ends ran (a function only BAD calls is in the
  line's code too);
* the probe cannot vouch for what ran (``Ran.blind``): a Python process without the probe (a worker started
  with ``python -I``), an ``exec`` it did not follow, a process of the server that is not Python, a launch
  without stored coverage;
* the line's footprints could not be read (git failed).

``suspects`` is the list a user reads before the search: the commits that changed code that ran, each with the
changes that make it relevant (``relevance.suspects``: with a blind probe, read as if it saw everything, and
so a lower bound, which the listing says).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from patchkit.bench.records.coverage import ran_of
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.records.store import Store
from patchkit.bench.stats.pruning import LineRelevance, relevance_json
from patchkit.bench.stats.relevance import Ran, Relevance, judge, suspects
from patchkit.errors import RepoError
from patchkit.footprint.changes import Footprint
from patchkit.footprint.line import FootprintCache, line_footprints
from patchkit.git import Commit, GitFailed, Repo

NOT_YET = "GOOD and BAD have not both run yet: what the launches run is not known"
EVERY_COMMIT = "--every-commit: every commit of the line is searched"


@dataclass(frozen=True)
class Suspects:
    """The suspects of a line at one moment: the relevant commits with the changes that make each relevant, how
    many commits the line has besides GOOD, the granularity of what ran, and why the list is only a lower bound
    (the probe was blind: ``Ran.blind``'s first reason) or could not be made (``off``: no launch, no footprints)."""

    commits: tuple[Relevance, ...]
    line: int  # the commits after GOOD (BAD included)
    granularity: str | None  # "function" or "file"; None: nothing ran yet
    blind: str | None = None  # the list reads the probe as if it saw everything: a lower bound
    off: str | None = None  # no list: why

    def to_json(self, subjects: Mapping[str, str]) -> dict[str, object]:
        return {
            "commits": [relevance_json(r, subjects) for r in self.commits],
            "line": self.line,
            "granularity": self.granularity,
            "lower_bound": self.blind,
            "unknown": self.off,
        }


class LineJudge:
    """The ``Judge`` of one hunt: the line's footprints, read once, against what its launches ran so far.

    ``launched(record)`` tells it of each launch as it is stored; calling it judges the line.  What ran is
    kept as the union of the launches read so far, so that each stored coverage is read once."""

    def __init__(self, store: Store, line: Sequence[Commit], footprints: Sequence[Footprint] | None, why: str = ""):
        self.store = store
        self.line = tuple(line)
        self.footprints = None if footprints is None else tuple(footprints)
        self.unreadable = why  # why the footprints are None
        self._pending: list[RunRecord] = []
        self._ran: Ran | None = None
        self._seen: set[int] = set()
        self._ends: set[str] = set()
        self.listed: Suspects | None = None  # the suspects as listed before the search (``bisect`` sets it)

    def launched(self, records: Iterable[RunRecord]) -> None:
        """The hunt's launches, as they are stored (a run told of twice counts once)."""
        ends = {self.line[0].sha, self.line[-1].sha}
        for record in records:
            if record.run_id is None or record.run_id in self._seen:
                continue
            if record.proof is None and record.outcome is not Outcome.OK:
                continue  # no server started: it ran nothing
            self._seen.add(record.run_id)
            self._pending.append(record)
            if record.commit.sha in ends:
                self._ends.add(record.commit.sha)

    def ran(self) -> Ran | None:
        """What the launches told of so far ran (None: none yet)."""
        if self._pending:
            more = ran_of(self.store, self._pending)
            self._pending = []
            self._ran = more if self._ran is None else union(self._ran, more)
        return self._ran

    @property
    def ends_ran(self) -> bool:
        return len(self._ends) == 2

    def off(self) -> str | None:
        """Why pruning cannot be on now, or None."""
        if self.footprints is None:
            return self.unreadable
        ran = self.ran()
        if ran is None or not self.ends_ran:
            return NOT_YET
        if ran.blind:
            more = f" (and {len(ran.blind) - 1} more)" if len(ran.blind) > 1 else ""
            return f"the probe cannot vouch for what ran: {ran.blind[0]}{more}"
        return None

    def __call__(self) -> LineRelevance:
        off = self.off()
        ran = self.ran() or Ran("file", frozenset(), frozenset(), frozenset())
        if off is not None:
            ran = replace(ran, blind=(off,))  # every change relevant, for the reason pruning is off
        judged = tuple(judge(fp, ran) for fp in self.footprints or ())
        return LineRelevance((Relevance(self.line[0].sha, ()), *judged), off)

    def suspects(self) -> Suspects:
        """The commits of the line that changed code that ran, with why (``relevance.suspects``)."""
        size = len(self.line) - 1
        if self.footprints is None:
            return Suspects((), size, None, off=self.unreadable)
        ran = self.ran()
        if ran is None or not self.ends_ran:
            return Suspects((), size, None if ran is None else ran.granularity, off=NOT_YET)
        blind = ran.blind[0] if ran.blind else None
        return Suspects(suspects(self.footprints, ran), size, ran.granularity, blind=blind)


def union(a: Ran, b: Ran) -> Ran:
    """What two sets of launches ran together: ``ran_of`` over both (the coarser granularity, every reason)."""
    return Ran(
        granularity="function" if a.granularity == b.granularity == "function" else "file",
        functions=a.functions | b.functions,
        modules=a.modules | b.modules,
        data_files=a.data_files | b.data_files,
        blind=tuple(dict.fromkeys((*a.blind, *b.blind))),
    )


def line_judge(store: Store, repo: Repo, line: Sequence[Commit], cache: FootprintCache | None = None) -> LineJudge:
    """A ``LineJudge`` with the line's footprints read now; a line git cannot read leaves pruning off, with why
    (pruning saves launches; it is never a reason not to hunt)."""
    good, bad = line[0], line[-1]
    try:
        footprints = line_footprints(repo, good.sha, bad.sha, cache if cache is not None else FootprintCache())
    except (GitFailed, RepoError) as exc:
        return LineJudge(store, line, None, f"the line's changes could not be read from git: {exc}")
    if [fp.commit for fp in footprints] != [c.sha for c in line[1:]]:
        return LineJudge(store, line, None, "git's first-parent line and the footprints' disagree")
    return LineJudge(store, line, footprints)
