"""Groups: variants of one change, resolved over the patches' verdicts.

A ``[[group]]`` lists members (patch ids, or nested group ids) that carry
the same change to different upstream locations.  Evaluation stays per
patch and per file (so range checks keep caching per blob); groups are a pure
function of the whole commit's verdicts, applied after ``requires``:

* A group is *satisfied* when a member applies or is in place (a patch
  APPLY/SKIP, a nested group satisfied).  Every member that can apply does.
* A member that cannot apply while its group, or an enclosing group, is
  satisfied is not a failure: it becomes SKIP ``OTHER_VARIANT``, its own
  reason kept in the message.  A nested group that is not satisfied while an
  enclosing one is counts as an unused variant in the same way.
* A patch that cannot apply because something it ``requires`` is an unused
  variant (a member turned OTHER_VARIANT, or an unused group) is there only
  for that variant: it becomes OTHER_VARIANT too.  This is how the helper
  definitions of a variant stay out where none of its inserts goes in,
  without being reported as failures.
* A group none of whose members applies (and no enclosing group is
  satisfied) is WARN/FAIL ``NO_VARIANT`` by its ``required``; its members keep
  their own WARN/FAIL and reasons, and the group's message lists them all.

``requires`` may name a group: it is met when the group is satisfied
(``group_met``, used by ``evaluate.resolve_requires``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from patchkit.manifest import Manifest
from patchkit.results import GroupResult, PatchResult, Reason, Status, failed


def group_met(manifest: Manifest, group_id: str, met: Callable[[str], bool]) -> bool:
    """Is the group satisfied, given ``met(patch_id)`` for its patch members (recursively)?"""
    group = manifest.group(group_id)
    assert group is not None
    return any(
        group_met(manifest, member, met) if manifest.group(member) is not None else met(member)
        for member in group.members
    )


def _verdict(result: PatchResult) -> str:
    return f"{result.status.value} {result.reason.value if result.reason else ''}".strip()


class _Resolver:
    def __init__(self, manifest: Manifest, results: Sequence[PatchResult]) -> None:
        self.manifest = manifest
        self.raw = {r.patch: r for r in results}
        self.groups = {g.id: g for g in manifest.groups}
        self._satisfied: dict[str, bool] = {}

    def member_ok(self, member: str) -> bool:
        if member in self.groups:
            return self.satisfied(member)
        return self.raw[member].in_effect

    def satisfied(self, group_id: str) -> bool:
        if group_id not in self._satisfied:
            self._satisfied[group_id] = any(self.member_ok(m) for m in self.groups[group_id].members)
        return self._satisfied[group_id]

    def covering(self, member: str) -> str | None:
        """The nearest enclosing group that is satisfied (the one whose variant is used here)."""
        owner = self._owner(member)
        while owner is not None:
            if self.satisfied(owner):
                return owner
            owner = self.groups[owner].parent
        return None

    def _owner(self, member: str) -> str | None:
        if member in self.groups:
            return self.groups[member].parent
        return self.manifest.patch(member).group

    def unused(self, group_id: str) -> str | None:
        """For a group that is not satisfied: the enclosing group that is (else None)."""
        if self.satisfied(group_id):
            return None
        return self.covering(group_id)

    def covered_by(self, group_id: str) -> tuple[str, ...]:
        return tuple(m for m in self.groups[group_id].members if self.member_ok(m))


def apply_groups(manifest: Manifest, results: Sequence[PatchResult]) -> tuple[PatchResult, ...]:
    """The patches' verdicts with group semantics: unused variants become SKIP OTHER_VARIANT."""
    if not manifest.groups:
        return tuple(results)
    resolver = _Resolver(manifest, results)
    final = {r.patch: r for r in results}

    def other_variant(result: PatchResult, why: str) -> PatchResult:
        return replace(
            result,
            status=Status.SKIP,
            reason=Reason.OTHER_VARIANT,
            message=f"{why}; on its own: {_verdict(result)}: {result.message}",
        )

    for patch in manifest.patches:
        result = final[patch.id]
        if patch.group is None or result.in_effect or result.reason is Reason.INTERNAL:
            continue
        group = resolver.covering(patch.id)
        if group is not None:
            used = ", ".join(resolver.covered_by(group))
            final[patch.id] = other_variant(result, f"another variant of group {group} applies here ({used})")
    changed = True
    while changed:  # requirements that are unused variants, to a fixpoint (chains: imports -> helpers -> group)
        changed = False
        for patch in manifest.patches:
            result = final[patch.id]
            if result.in_effect or result.reason in (Reason.OTHER_VARIANT, Reason.INTERNAL):
                continue
            for dep in patch.requires:
                if dep in resolver.groups:
                    group = resolver.unused(dep)
                    why = None if group is None else f"group {dep}, a variant of group {group}, is not used here"
                else:
                    why = f"{dep} is SKIP OTHER_VARIANT" if final[dep].reason is Reason.OTHER_VARIANT else None
                if why is not None:
                    final[patch.id] = other_variant(result, f"needed only by an unused variant: requires {why}")
                    changed = True
                    break
    return tuple(final[r.patch] for r in results)


def group_results(manifest: Manifest, results: Sequence[PatchResult]) -> tuple[GroupResult, ...]:
    """One verdict per group (manifest order), from the patches' final verdicts."""
    if not manifest.groups:
        return ()
    resolver = _Resolver(manifest, results)
    final = {r.patch: r for r in results}
    out: dict[str, GroupResult] = {}

    def result_of(group_id: str) -> GroupResult:
        if group_id in out:
            return out[group_id]
        group = resolver.groups[group_id]
        covered = resolver.covered_by(group_id)
        member_results: list[tuple[str, Status, Reason | None, str]] = []
        for member in group.members:
            if member in resolver.groups:
                sub = result_of(member)
                member_results.append((member, sub.status, sub.reason, sub.message))
            else:
                r = final[member]
                member_results.append((member, r.status, r.reason, r.message))
        if covered:
            applying = [m for m, status, _, _ in member_results if m in covered and status is Status.APPLY]
            if applying:
                status, reason = Status.APPLY, None
                message = f"applies through {', '.join(applying)}"
            else:
                status = Status.SKIP
                reason = next(r for m, _, r, _ in member_results if m in covered)
                message = f"in place through {', '.join(covered)}"
            if len(covered) < len(group.members):
                rest = [m for m in group.members if m not in covered]
                message += f"; not here: {', '.join(rest)} (SKIP OTHER_VARIANT)"
        elif (enclosing := resolver.unused(group_id)) is not None:
            status, reason = Status.SKIP, Reason.OTHER_VARIANT
            used = ", ".join(resolver.covered_by(enclosing))
            message = f"no member fits here, but another variant of group {enclosing} applies ({used})"
        else:
            status, reason = failed(required=group.required), Reason.NO_VARIANT
            listed = "; ".join(
                f"{m}: {s.value} {r.value if r else ''}".rstrip() + f" ({msg})" for m, s, r, msg in member_results
            )
            message = f"no variant applies here: {listed}"
        out[group_id] = GroupResult(group_id, status, reason, group.required, group.members, covered, message)
        return out[group_id]

    return tuple(result_of(g.id) for g in manifest.groups)


def requirement_failure(manifest: Manifest, dep: str, results: Mapping[str, PatchResult]) -> str | None:
    """Why the requirement ``dep`` (a patch or group id) is not met, or None when it is."""
    if manifest.group(dep) is not None:
        if group_met(manifest, dep, lambda pid: results[pid].in_effect):
            return None
        return f"held back: requires group {dep}, none of whose variants applies here"
    dep_result = results[dep]
    if dep_result.in_effect:
        return None
    return f"held back: requires {dep}, which is {_verdict(dep_result)}"
