"""``check --since REV``: which verdicts changed between the last run's tip (REV) and this one, and which upstream
commit changed each.

The question a nightly job asks is not "does every patch apply?" (a patch broken for a week answers that every
night) but "what did upstream's new commits change?".  ``--since REV`` answers it from git alone: it checks
``REV..TIP`` (every new commit, merges included), evaluates REV itself (and the few older commits that side
branches of the range start from), and compares each patch's and group's verdict (status and reason) at REV with
the one at TIP.  Each change is attributed as ``explain`` attributes a failure (``explain.walk_back``): from TIP
back through the commits that are already as TIP is, to those whose parents all differ.  "As TIP is" means failing
(or applying) when REV applied (or failed): a newly failing patch is named by the commit where it stopped applying,
as ``explain`` names it, and a later commit that only changed its reason is listed apart (``reason_changes``);
between two applying or two failing verdicts it means TIP's status and reason.  Through a merge this names the
side-branch commit, not the merge; where the verdict came in from a side branch older than REV (the walk leaves
the range still as TIP is), it names the merge that brought it onto TIP's line (first parents).

Why a revision rather than a stored previous verdict: REV is evaluated with today's manifest, so a fix to the
manifest is never mistaken for an upstream change, nothing needs storing but a commit id (a CI cache, a tag, a
ref), and anyone can ask the same question by hand (``--since v0.5.9``).  The verdict cache makes REV's
evaluation nearly free, since the last run already evaluated it.

Only a required patch (or group) that newly FAILs at TIP makes the run fail (exit 1); under ``--strict`` a newly
WARNing one does too.  A patch that already failed at REV fails "again", not "newly", whatever its reason now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from patchkit.commit import Commit
from patchkit.engine.check import CheckReport, CommitResults, check_range
from patchkit.engine.explain import walk_back
from patchkit.errors import UsageError
from patchkit.git import Repo
from patchkit.manifest import Manifest
from patchkit.results import GroupResult, PatchResult, Reason, Status

Verdict = tuple[Status, Reason | None]


@dataclass(frozen=True)
class SincePlan:
    """What ``--since REV`` checks: ``ranges``/``commits`` for the range check (``REV..TIP``; TIP alone when it is
    REV), and the two commits compared."""

    since: str  # REV's full id
    tip: str  # TIP's full id
    ranges: tuple[str, ...]
    commits: tuple[str, ...]


@dataclass(frozen=True)
class VerdictChange:
    """One patch (``kind`` "patch") or group ("group") whose status or reason at TIP differs from REV's, with the
    upstream commits that changed it (newest first) and whether it now newly fails."""

    kind: str
    id: str
    before: PatchResult | GroupResult  # at REV
    after: PatchResult | GroupResult  # at TIP
    changed_by: tuple[Commit, ...]
    newly_failing: bool
    # After the change, commits of the range where the reason changed on the way to TIP (commit, from, to),
    # newest first: a patch that stopped applying at X and reads FILE_NOT_FOUND since Y.
    reason_changes: tuple[tuple[Commit, Reason | None, Reason | None], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "id": self.id,
            "required": self.after.required,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "changed_by": [c.to_json() for c in self.changed_by],
            "reason_changes": [
                {**c.to_json(), "from": a.value if a else None, "to": b.value if b else None}
                for c, a, b in self.reason_changes
            ],
            "newly_failing": self.newly_failing,
        }


@dataclass(frozen=True)
class SinceReport:
    """What changed between REV and TIP: every verdict change, in manifest order (patches, then groups)."""

    since: Commit
    tip: Commit
    strict: bool
    changes: tuple[VerdictChange, ...]
    commits: int  # new commits checked (REV..TIP)

    @property
    def failed(self) -> bool:
        """A required patch or group newly FAILs at TIP (or, under ``--strict``, newly WARNs): exit 1."""
        return any(c.newly_failing for c in self.changes)

    def to_json(self) -> dict[str, object]:
        return {
            "since": self.since.to_json(),
            "tip": self.tip.to_json(),
            "commits": self.commits,
            "strict": self.strict,
            "changes": [c.to_json() for c in self.changes],
            "failed": self.failed,
        }


def plan(repo: Repo, since: str, ranges: Sequence[str], commits: Sequence[str]) -> SincePlan:
    """Resolve ``--since REV`` against the tip (the one ``--commit``, else HEAD); refuse what cannot be compared."""
    if ranges:
        raise UsageError(
            "--since REV checks the range REV..TIP itself, so it takes no --range",
            hint="name the tip with --commit TIP (default HEAD)",
        )
    if len(commits) > 1:
        raise UsageError("--since REV compares one tip with REV: give --commit once", hint="or leave it out for HEAD")
    tip_rev = commits[0] if commits else "HEAD"
    since_sha, tip_sha = repo.resolve(since), repo.resolve(tip_rev)
    if not repo.is_ancestor(since_sha, tip_sha):
        raise UsageError(
            f"--since {since} ({since_sha[:10]}) is not an ancestor of {tip_rev} ({tip_sha[:10]}), so there is no "
            "history between them to compare",
            hint="give the commit the last run checked on this line of history (after upstream rewrote it, "
            "run once without --since)",
        )
    if since_sha == tip_sha:
        return SincePlan(since_sha, tip_sha, (), (tip_sha,))
    return SincePlan(since_sha, tip_sha, (f"{since_sha}..{tip_sha}",), ())


def changes_since(
    manifest: Manifest,
    repo: Repo,
    report: CheckReport,
    since_plan: SincePlan,
    *,
    strict: bool = False,
    use_cache: bool = True,
) -> SinceReport:
    """Compare REV with TIP over ``report`` (the check of ``since_plan``), evaluating REV and the range's other
    outside parents with one more (cached) range check."""
    rows = {row.commit.sha: row for row in report.commits}
    tip = rows[since_plan.tip]
    new = 0 if since_plan.since == since_plan.tip else len(report.commits)
    if since_plan.since in rows:  # TIP is REV: nothing is new
        return SinceReport(tip.commit, tip.commit, strict, (), new)
    outside = {p for row in report.commits for p in row.commit.parents if p not in rows} | {since_plan.since}
    baseline = check_range(manifest, repo, commits=sorted(outside), use_cache=use_cache)
    known: dict[str, CommitResults] = {row.commit.sha: row for row in baseline.commits}
    known.update(rows)
    before = known[since_plan.since]
    changes: list[VerdictChange] = []
    for column, patch in enumerate(manifest.patches):
        change = _change("patch", patch.id, column, before, tip, known, rows, strict)
        if change is not None:
            changes.append(change)
    for column, group in enumerate(manifest.groups):
        change = _change("group", group.id, column, before, tip, known, rows, strict)
        if change is not None:
            changes.append(change)
    return SinceReport(before.commit, tip.commit, strict, tuple(changes), new)


def _pick(row: CommitResults, kind: str, column: int) -> PatchResult | GroupResult:
    return row.results[column] if kind == "patch" else row.groups[column]


def _verdict(result: PatchResult | GroupResult) -> Verdict:
    return (result.status, result.reason)


def _failing(status: Status, strict: bool) -> bool:
    return status is Status.FAIL or (strict and status is Status.WARN)


def _change(
    kind: str,
    item: str,
    column: int,
    before: CommitResults,
    tip: CommitResults,
    known: Mapping[str, CommitResults],
    in_range: Mapping[str, CommitResults],
    strict: bool,
) -> VerdictChange | None:
    was, now = _pick(before, kind, column), _pick(tip, kind, column)
    if _verdict(was) == _verdict(now):
        return None

    def verdict(sha: str) -> Verdict:
        return _verdict(_pick(known[sha], kind, column))

    def same(sha: str) -> bool:
        # Across applying and failing, the walk is explain's: back to where it stopped (or started) applying, so a
        # failure is named by the commit that broke it, not by a later one that only changed its reason.
        if was.ok != now.ok:
            return _pick(known[sha], kind, column).ok == now.ok
        return verdict(sha) == _verdict(now)

    def parents_of(sha: str) -> list[str]:
        # Commits outside the range are where the walk stops: their own parents were not evaluated.
        return [p for p in known[sha].commit.parents if p in known] if sha in in_range else []

    found: list[str] = []
    then: list[tuple[Commit, Reason | None, Reason | None]] = []
    for sha, parents, kept in walk_back(tip.commit.sha, parents_of, same):
        if sha in in_range and parents and not kept:
            found.append(sha)
        then.extend(
            (known[sha].commit, verdict(p)[1], verdict(sha)[1])
            for p in kept
            if sha in in_range and verdict(p) != verdict(sha)
        )
    if not found:
        # The verdict came from before REV on a side branch: the merge that brought it onto TIP's line changed it.
        sha = tip.commit.sha
        while (first := known[sha].commit.parents[:1]) and first[0] in in_range and same(first[0]):
            sha = first[0]
        found = [sha]
    by = sorted((known[sha].commit for sha in found), key=lambda c: c.date, reverse=True)
    then.sort(key=lambda change: change[0].date, reverse=True)
    newly = _failing(now.status, strict) and not _failing(was.status, strict)
    return VerdictChange(kind, item, was, now, tuple(by), newly, tuple(then))
