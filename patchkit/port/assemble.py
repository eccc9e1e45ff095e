"""Assembling the ported manifest's report: one ``PatchPort`` per patch, from its track and its verdict at the
target, and (``--drop-upstreamed``) the upstreamed patches removed from the working copy, unless every patch is
upstreamed: that manifest is retired, not emptied (``PortPlan.retired``).

Each patch gets one word (``How``) for what port did to it, the first of ``PRECEDENCE`` that applies, with
every change and the commit that needed it; a patch that upstream took is named with the commit since
which upstream has it (found by the walk, or before the start: ``upstreamed_since``); a patch still
carried after upstream made part of it gets the ``bench --without`` that measures whether the rest is
still needed (``Evidence``).
"""

from __future__ import annotations

from dataclasses import replace

from patchkit.engine.evaluate import Evaluation
from patchkit.manifest import Patch
from patchkit.port.result import PRECEDENCE, Evidence, How, PatchPort, every_patch_upstreamed
from patchkit.port.state import PortState, Track
from patchkit.port.walk import Start, upstreamed_since
from patchkit.results import Reason, Status


def assemble(state: PortState, found: Start, final: Evaluation, drop: bool) -> list[PatchPort]:
    """Every patch's port: how it was carried (one word, ``PRECEDENCE``), its changes, its verdict at the target
    (``final``) and what to say of it; with ``drop``, the upstreamed patches nothing else needs removed."""
    out: list[PatchPort] = []
    for patch, result in zip(state.current.patches, final.results, strict=True):
        track = state.tracks[patch.id]
        changes = tuple(track.changes)
        conflict = None
        failed_at = None
        if track.failed is not None and not result.ok:
            failed_at, message, conflict = track.failed
            how = How.CONFLICT if conflict is not None else How.FAILED
            message = f"cannot be carried over {failed_at.short} {failed_at.subject!r}: {message}"
        elif not result.ok:
            how = How.FAILED
            message = f"{result.reason.value if result.reason else ''}: {result.message}"
        elif result.status is Status.SKIP and result.reason is not Reason.OTHER_VARIANT:
            how = How.UPSTREAMED
            at = track.upstreamed
            if at is not None:
                message = f"upstream has it since {at.short} {at.subject!r}"
            else:
                since, before, there = upstreamed_since(found, patch.id)
                if before == "applied":
                    at = since
                    message = f"upstream has it since {since.short} {since.subject!r}"
                elif before == "failed" and there is not None:
                    why = there.reason.value if there.reason else there.status.value
                    message = (
                        f"upstream has it since {since.short} {since.subject!r}; "
                        f"before that it was not in effect ({why})"
                    )
                else:
                    message = f"upstream has it since {since.short} or earlier (the oldest commit looked at)"
            track.upstreamed = at
        elif result.reason is Reason.OTHER_VARIANT:
            how = How.UNCHANGED
            message = "not needed here: it serves a variant that does not fit while another does (OTHER_VARIANT)"
        else:
            kinds = {c.how for c in changes}
            how = next((h for h in PRECEDENCE if h in kinds), How.UNCHANGED)
            message = (
                "; ".join(f"{c.key}: {c.before} -> {c.after} at {c.commit.short if c.commit else '-'}" for c in changes)
                or "applies at the target as it is"
            )
            if patch.group is not None and not changes:
                message = f"variant of group {patch.group}: applies at the target as it is"
        out.append(
            PatchPort(
                patch=patch.id,
                op=patch.op_name,
                required=patch.required,
                how=how,
                changes=changes,
                result=result,
                message=message,
                failed_at=failed_at,
                conflict=conflict,
                upstreamed_at=track.upstreamed if how is How.UPSTREAMED else None,
                dropped=False,
                evidence=_evidence(state, patch, how, track),
            )
        )
    if drop and not every_patch_upstreamed(out):  # a retired manifest keeps its patches (PortPlan.retired)
        out = _drop(state, out)
    return out


def _evidence(state: PortState, patch: Patch, how: How, track: Track) -> Evidence | None:
    """A patch still carried (merged, moved, renamed) after upstream made some of its lines: the bench that
    says whether the rest still earns its place."""
    if track.partly is None or how not in (How.MERGED, How.MOVED, How.RENAMED, How.UNCHANGED):
        return None
    commit, made, of = track.partly
    command = f"patchkit bench -m {state.manifest.display} --without {patch.id} --commit {state.target.short}"
    return Evidence(commit, made, of, command)


def _drop(state: PortState, ports: list[PatchPort]) -> list[PatchPort]:
    """Remove the upstreamed patches no other patch requires and no group lists."""
    needed = {dep for p in state.current.patches for dep in p.requires}
    in_groups = {m for g in state.current.groups for m in g.members}
    out = []
    for port in ports:
        if port.how is How.UPSTREAMED and port.patch not in needed and port.patch not in in_groups:
            index, _ = state.work.table(port.patch)
            state.work.toml.remove(index)
            port = replace(port, dropped=True)
        elif port.how is How.UPSTREAMED:
            port = replace(port, message=port.message + " (kept: another patch or a group names it)")
        out.append(port)
    return out
