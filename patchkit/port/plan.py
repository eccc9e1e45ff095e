"""`port`: carry a manifest forward to a later upstream commit, as a rebase carries commits.

The walk starts at a commit where the manifest applies (``--from``, or the
newest first-parent ancestor of the target where no required patch FAILs)
and goes down the first-parent line to the target, one commit at a time,
stopping only at commits that touch a file the manifest (as ported so far)
targets.  At each such commit the working manifest is evaluated from the
commit's blobs (no checkout); a patch that applied at the previous stop and
does not apply here is carried over this one step, by what its op declares
(``PortTraits``, ``operations/base.py``):

* its file was renamed (git's rename detection): ``file`` follows;
* the function it is anchored to is gone: it is looked for in the files this
  commit changed, by code (``port/follow.py``), and ``file`` and the key that
  names the function follow;
* its class is gone: a new class with the most alike body is the class
  renamed, and every patch of that file that names the class follows (its
  class, its ``Class.method``, a key that names the class as a definition);
* upstream edited the region its op merges (the def a payload replaces: DRIFT;
  the lines around a diff payload's hunks in its def, import block or
  statement: CONFLICT): the payload is merged three ways (base: upstream's
  version at the last commit where the patch applied; ours: the payload;
  theirs: upstream's version now), and a replaced def's digest is refreshed;
  an overlap refuses the patch, naming both sides;
* a patch that applied and now reads SKIP is one upstream took, at this
  commit.
* a variant of a ``[[group]]`` is carried as any patch is when it was the
  one in effect and no variant of its group fits here; while another one
  fits, it is the group's unused variant and stays as written.

Porting step by step is what makes a merge work where one jump from the
start to the target would conflict (upstream first taking part of the
change, then editing it), and what lets every change be named with the
commit that needed it.

The package by job: ``walk.py`` walks the commits (and finds the start),
``carry.py`` carries an anchor, ``merge.py`` merges a payload,
``assemble.py`` assembles each patch's report, over the state they share
(``state.py``: the working copy, ``workspace.py``, and each patch's track);
``result.py`` holds the values returned.  This module puts them together.

Nothing is written here: the result is a plan (every changed file's old and
new bytes) that ``commands/port.py`` prints, or writes all at once.  Every
edit is made on a copy of the manifest and its payloads in a temporary
directory, loaded again after each change with the ordinary loader, so a
ported manifest is checked exactly as any manifest is; the plan is only
offered when the copy, evaluated at the target, has no required FAIL.  A
manifest upstream has every patch of at the target is retired, not ported
(``PortPlan.retired``): its plan changes no file, since the manifest as it
is still serves the commits before, and one emptied of its patches would be
no manifest.
"""

from __future__ import annotations

from patchkit.engine.evaluate import render
from patchkit.git import Repo
from patchkit.manifest import Manifest
from patchkit.port.assemble import assemble
from patchkit.port.result import PortPlan, every_patch_upstreamed
from patchkit.port.state import PortState
from patchkit.port.walk import find_start, walk


def port(
    manifest: Manifest, repo: Repo, to: str, *, start: str | None = None, drop_upstreamed: bool = False
) -> PortPlan:
    """The plan that carries ``manifest`` from its start (see ``find_start``) to ``to``; writes nothing."""
    target = repo.commit(to)
    found = find_start(manifest, repo, target, start)
    begin = found.commit
    commits = repo.first_parent_changes(begin.sha, target.sha) if begin.sha != target.sha else []
    with PortState(manifest, repo, target) as state:
        walked = walk(state, begin, commits)
        # What apply would write at the target, verified as apply verifies it: a ported patch that reads
        # APPLY but does not render (FAIL INTERNAL) refuses the port, as it would refuse the apply.
        final = render(walked.last)[1]
        patches = assemble(state, found, final, drop_upstreamed)
        retired = every_patch_upstreamed(patches)
        files = () if retired else tuple(state.work.changes())  # a retired manifest is left as it is
        if drop_upstreamed and any(p.dropped for p in patches):
            state.work.load()  # a dropped table leaves a manifest that must still load
    repo.close()
    since = None
    if retired:  # the newest of the commits where upstream took a patch, in walk order (None: before the start)
        order = {c.sha: i for i, (c, _paths) in enumerate(commits)}
        known = [p.upstreamed_at for p in patches if p.upstreamed_at is not None]
        since = max(known, key=lambda c: order.get(c.sha, -1), default=None)
    return PortPlan(
        manifest,
        begin,
        target,
        len(commits),
        walked.stops,
        tuple(patches),
        files,
        found.given,
        walked.bounds,
        retired_since=since,
    )


__all__ = ["port"]
