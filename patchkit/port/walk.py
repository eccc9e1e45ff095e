"""Walking the commits: from the start (where the manifest applies) down the first-parent line to the target.

``find_start`` is where the walk begins: ``--from``, or the newest first-parent ancestor of the target
where no required patch FAILs (the verdicts looked at on the way are kept: they say since when upstream
has a patch already in place at the start, ``upstreamed_since``).  ``walk`` then stops only at commits
that touch a file the manifest (as ported so far) targets, evaluates the working copy there from the
commit's blobs, and carries every patch that stopped applying (``carry.py``), one change at a time, the
manifest loaded again after each (a patch may have moved along with another).

The carrying at one commit has a bound, ``CARRY_ROUNDS`` changes: a carry that keeps changing a patch that
still does not apply must not loop.  Reaching it is reported, not silent: the commit and the patches still
to carry are in the plan (``Bound``, ``bound_reached`` in ``--json``), and each of those patches fails
there with a message that says the bound stopped it, not a verdict of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchkit.engine.check import check_range
from patchkit.engine.evaluate import Evaluation
from patchkit.errors import RevisionError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, Patch
from patchkit.port.carry import carry
from patchkit.port.result import Bound
from patchkit.port.state import PortState, Stop, Track, target_of
from patchkit.results import PatchResult, Reason, Status

# How far back the start is looked for when --from is not given (first-parent commits before the target).
START_SEARCH = (64, 1024, 8192)
# How many changes port makes at one commit before it stops carrying there (and says so).
CARRY_ROUNDS = 16


@dataclass(frozen=True)
class Walked:
    """The walk's end: the evaluation at its last stop (the target), how many commits it stopped at, and the
    commits where the carrying reached its bound."""

    last: Evaluation
    stops: int
    bounds: tuple[Bound, ...]


def walk(state: PortState, start: Commit, commits: Sequence[tuple[Commit, tuple[str, ...]]]) -> Walked:
    """Walk ``commits`` (first-parent commits after ``start``, with the paths each touches) over ``state``."""
    first = state.evaluate(start)
    for patch, result in zip(state.current.patches, first.results, strict=True):
        state.tracks[patch.id] = Track(
            start, patch.file, target_of(patch, state.table(patch)), last=result.status, in_effect=result.in_effect
        )
    stops = 0
    last = first
    bounds: list[Bound] = []
    for commit, paths in commits:
        touched = set(paths)
        if not touched & set(state.current.files()) and commit.sha != state.target.sha:
            continue
        stops += 1
        last, bound = _step(state, commit, touched)
        if bound is not None:
            bounds.append(bound)
    return Walked(last, stops, tuple(bounds))


def _to_carry(state: PortState, patch: Patch, result: PatchResult) -> bool:
    """A patch that applied (or was in place) at the last stop and does not here, for a reason of its own.

    A variant of a ``[[group]]`` is carried when it was the one in effect and no variant fits here (the
    group leaves it its own FAIL); while another variant fits, it is that group's unused one
    (OTHER_VARIANT, ``ok``) and stays as it is, for the commits it serves."""
    track = state.tracks[patch.id]
    return (
        not result.ok
        and track.failed is None
        and track.last in (Status.APPLY, Status.SKIP)
        and track.in_effect
        and result.reason is not Reason.DEPENDENCY
    )


def _step(state: PortState, commit: Commit, touched: set[str]) -> tuple[Evaluation, Bound | None]:
    """Evaluate at ``commit``; carry every patch that stopped applying here, one change at a time (the
    manifest is loaded again after each: a patch may have moved along with another), until none is left or
    ``CARRY_ROUNDS`` changes were made (the ``Bound``, with the patches still to carry)."""
    here = state.evaluate(commit)
    bound = None
    for _round in range(CARRY_ROUNDS):
        carried = False
        for patch, result in zip(state.current.patches, here.results, strict=True):
            if not _to_carry(state, patch, result):
                continue
            try:
                carried = carry(state, patch, result, commit, touched)
            except Stop as stop:
                state.tracks[patch.id].failed = (commit, stop.message, stop.conflict)
            if carried:
                break
        if not carried:
            break
        state.reload()
        here = state.evaluate(commit)
    else:
        left = tuple(p.id for p, r in zip(state.current.patches, here.results, strict=True) if _to_carry(state, p, r))
        bound = Bound(commit, CARRY_ROUNDS, left) if left else None
    for patch, result in zip(state.current.patches, here.results, strict=True):
        track = state.tracks[patch.id]
        if result.status is Status.APPLY:
            track.base, track.file, track.target = commit, patch.file, target_of(patch, state.table(patch))
        elif result.status is Status.SKIP and result.reason is not Reason.OTHER_VARIANT:
            if track.last is Status.APPLY and track.upstreamed is None:
                track.upstreamed = commit
        elif _to_carry(state, patch, result):
            why = f"{result.reason.value if result.reason else result.status.value}: {result.message}"
            if bound is not None:  # every patch still to carry here is one the bound stopped
                why = f"port's bound of {CARRY_ROUNDS} carries at one commit was reached before its turn ({why})"
            track.failed = (commit, why, None)
        track.last = result.status
        track.in_effect = result.in_effect
    return here, bound


# -- finding the start ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """Where the walk starts, and the verdicts at the first-parent commits looked at to find it (newest first):
    they say since when upstream has a patch that is already in place at the start."""

    commit: Commit
    history: tuple[tuple[Commit, dict[str, PatchResult]], ...]
    given: bool


def find_start(manifest: Manifest, repo: Repo, target: Commit, given: str | None) -> Start:
    """The commit the walk starts from: ``--from``, which must be an ancestor of the target where the manifest
    applies; else the newest first-parent ancestor of the target (the target included) where it does."""
    if given is not None:
        start = repo.commit(given)
        if repo.distance(start.sha, target.sha) is None:
            raise RevisionError(
                f"--from {given} ({start.short}) is not an ancestor of {target.short}",
                hint="port walks forward: pass an older commit with --from",
            )
        report = check_range(manifest, repo, commits=[start.sha], hints=False)
        if report.failed:
            bad = [r for r in report.commits[0].results if r.status is Status.FAIL]
            raise RevisionError(
                f"the manifest does not apply at --from {given} ({start.short}): "
                + ", ".join(f"{r.patch} {r.reason.value if r.reason else ''}" for r in bad),
                hint="pass a commit where `patchkit check --commit REV` has no FAIL",
            )
        return Start(start, ((start, {r.patch: r for r in report.commits[0].results}),), True)
    seen = 0
    history: list[tuple[Commit, dict[str, PatchResult]]] = []
    found: Commit | None = None
    for count in START_SEARCH:
        shas = repo.git("rev-list", "--first-parent", f"--max-count={count}", target.sha).split()[seen:]
        if not shas:
            break
        report = check_range(manifest, repo, commits=shas, hints=False)
        rows = {row.commit.sha: row for row in report.commits}
        for sha in shas:  # newest first
            row = rows[sha]
            history.append((row.commit, {r.patch: r for r in row.results}))
            if found is None and not row.failed:
                found = row.commit
        seen += len(shas)
        if found is not None:
            return Start(found, tuple(history), False)
    raise RevisionError(
        f"no first-parent ancestor of {target.short} within {seen} commits has the manifest applying",
        hint="pass --from REV, a commit where `patchkit check --commit REV` has no FAIL",
    )


def upstreamed_since(start: Start, patch_id: str) -> tuple[Commit, str, PatchResult | None]:
    """For a patch already in upstream at the start: the oldest commit of the unbroken run of first-parent
    commits (up to the start) where it is, and what came before it: "applied" (the patch applied at the
    commit before: upstream took it at the one returned), "failed" (it did not apply there either: that
    result) or "unknown" (it is in upstream at every commit looked at)."""
    newer = start.commit
    past = False
    for commit, results in start.history:
        past = past or commit.sha == start.commit.sha
        if not past:
            continue
        result = results.get(patch_id)
        if result is None:
            break
        if result.status is Status.APPLY:
            return newer, "applied", result
        if result.status is not Status.SKIP or result.reason is Reason.OTHER_VARIANT:
            return newer, "failed", result
        newer = commit
    return newer, "unknown", None
