"""The semantic checks after the schema: [[group]] tables, references and composition."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from patchkit.errors import ManifestError
from patchkit.manifest.locate import Lines
from patchkit.manifest.model import Group, Patch
from patchkit.manifest.resolve import close_matches


def load_groups(
    tables: list[dict[str, Any]],
    patch_tables: list[dict[str, Any]],
    patches: list[Patch],
    patch_index: dict[str, int],
    display: str,
    lines: Lines,
) -> tuple[list[Group], list[Patch]]:
    """The [[group]] tables, checked; and the patches with their group and effective ``required``.

    A member is a patch id or a group id; each id is a member of at most one
    group, nesting has no cycles, and a member does not set ``required``
    itself: the outermost group's ``required`` decides for every variant.
    """

    def error(index: int, key: str | None, path: str, message: str, hint: str | None = None) -> ManifestError:
        return ManifestError(
            message, file=display, key_path=path, line=lines.line_of(index, key, table="group"), hint=hint
        )

    group_index: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):
        gid = table["id"]
        if gid in patch_index:
            raise error(index, "id", f"group[{index}].id", f"duplicate id {gid!r} (patch[{patch_index[gid]}] has it)")
        if gid in group_index:
            other = group_index[gid]
            raise error(index, "id", f"group[{index}].id", f"duplicate id {gid!r} (group[{other}] has it too)")
        group_index[gid] = index
    known = list(patch_index) + list(group_index)
    parent: dict[str, str] = {}
    for index, table in enumerate(tables, start=1):
        for position, member in enumerate(table["members"], start=1):
            path = f"group[{index}].members[{position}]"
            if member == table["id"]:
                raise error(index, "members", path, "a group cannot be its own member")
            if member not in known:
                close = close_matches(member, known)
                raise error(
                    index,
                    "members",
                    path,
                    f"no patch or group has id {member!r}",
                    f"did you mean {close[0]!r}?" if close else None,
                )
            if member in parent:
                owner = parent[member]
                raise error(
                    index,
                    "members",
                    path,
                    f"{member!r} is already a member of group[{group_index[owner]}] ({owner!r}); "
                    "an id can be a variant in one group only",
                    "nest the groups instead: make one group a member of the other",
                )
            parent[member] = table["id"]
    for gid in group_index:  # no cycles through nesting
        seen_ids, current = [gid], parent.get(gid)
        while current is not None:
            if current == gid:
                index = group_index[gid]
                raise error(
                    index,
                    "members",
                    f"group[{index}].members",
                    f"groups nest in a cycle: {' -> '.join([*seen_ids, gid])}",
                )
            seen_ids.append(current)
            current = parent.get(current)

    def root(member: str) -> dict[str, Any]:
        while member in parent:
            member = parent[member]
        return tables[group_index[member] - 1]

    for member, owner in parent.items():
        kind = "group" if member in group_index else "patch"
        index = group_index[member] if kind == "group" else patch_index[member]
        if "required" in (tables if kind == "group" else patch_tables)[index - 1]:
            top = root(member)
            raise ManifestError(
                f"{member!r} is a variant in group {owner!r} and takes `required` from group "
                f"{top['id']!r}; it cannot set its own",
                file=display,
                key_path=f"{kind}[{index}].required",
                line=lines.line_of(index, "required", table=kind),
                hint=f"remove it here and set `required` on group[{group_index[top['id']]}] ({top['id']!r})",
            )

    groups = [
        Group(
            index=index,
            id=table["id"],
            members=tuple(table["members"]),
            required=root(table["id"]).get("required", True),
            description=table.get("description"),
            parent=parent.get(table["id"]),
        )
        for index, table in enumerate(tables, start=1)
    ]
    patches = [
        replace(p, group=parent[p.id], required=root(p.id).get("required", True)) if p.id in parent else p
        for p in patches
    ]
    return groups, patches


def check_requires(patches: list[Patch], known_ids: list[str], display: str, lines: Lines) -> None:
    """Every ``requires`` entry names another patch or a group of the manifest."""
    for patch in patches:
        for position, dep in enumerate(patch.requires, start=1):
            key = f"patch[{patch.index}].requires[{position}]"
            if dep == patch.id:
                raise ManifestError(
                    "a patch cannot require itself",
                    file=display,
                    key_path=key,
                    line=lines.line_of(patch.index, "requires"),
                )
            if dep not in known_ids:
                close = close_matches(dep, known_ids)
                raise ManifestError(
                    f"no patch or group has id {dep!r}",
                    file=display,
                    key_path=key,
                    line=lines.line_of(patch.index, "requires"),
                    hint=f"did you mean {close[0]!r}?" if close else None,
                )


def _prefixes(qualname: str) -> set[str]:
    parts = qualname.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def check_composition(patches: list[Patch], display: str, lines: Lines) -> None:
    """Refuse patch sets that cannot be idempotent.

    A patch that edits code an earlier patch of the same file adds (an
    insert into an added method, a list item on an added list) would, on the
    next run, make the earlier patch see "its" code changed and report a
    conflict.  Such code belongs in the earlier patch's payload, which the
    manifest's author owns.  Likewise two inserts at the same anchor and
    position could not tell their statements apart on the next run.
    """
    for later_index, later in enumerate(patches):
        for earlier in patches[:later_index]:
            if earlier.file != later.file:
                continue
            if not earlier.op.same_form(later.op):
                raise ManifestError(
                    f"{later.file} has both a text patch (op diff) and a structured patch "
                    f"(patch[{earlier.index}] {earlier.id!r} and patch[{later.index}] {later.id!r}); "
                    "a diff edits text that the structured ops' syntax tree would not see",
                    file=display,
                    key_path=f"patch[{later.index}]",
                    line=lines.line_of(later.index, None),
                    hint="carry the whole change of this file in one op kind (all diff, or all structured)",
                )
            touched = set().union(*(_prefixes(q) for q in later.op.edits() | later.op.adds()))
            clash = sorted(earlier.op.adds() & touched)
            same_spot = earlier.op.same_spot(later.op)
            if clash:
                raise ManifestError(
                    f"edits {clash[0]}, which patch[{earlier.index}] ({earlier.id!r}) adds from its payload; "
                    "a later patch cannot change code an earlier one supplies (the next run could not recognise it)",
                    file=display,
                    key_path=f"patch[{later.index}]",
                    line=lines.line_of(later.index, None),
                    hint=f"make that change in patch[{earlier.index}]'s payload instead",
                )
            if same_spot:
                raise ManifestError(
                    f"inserts at the same anchor and position as patch[{earlier.index}] ({earlier.id!r})",
                    file=display,
                    key_path=f"patch[{later.index}]",
                    line=lines.line_of(later.index, "anchor"),
                    hint="put both sets of statements in one payload function and use one insert",
                )
