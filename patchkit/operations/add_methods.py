"""add-methods: add methods from a payload class to a class in the target file.

New methods go at the end of the class, or, with ``after = "member"`` /
``before = "member"``, right after / before that member of the class (a
method, a nested class or an assigned name; the last one of that name), so
that a method written between two others is kept there.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.operations import edit_lazy
from patchkit.operations.base import Anchor, LoadContext, OnConflict, Outcome, PortTraits, PythonOperation, missing_in
from patchkit.operations.code import CodeState
from patchkit.operations.definitions import DefPlan, NamedDef, classify, outcome_for, select, splice_defs
from patchkit.operations.digests import canon, digest
from patchkit.operations.lookup import DEF_KINDS, not_found_class, self_attributes
from patchkit.operations.payload import Payload, Placement
from patchkit.operations.wording import what_is_there
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class AddMethods(PythonOperation[DefPlan]):
    """add-methods: adds methods of a payload class to a class of the target file, at its end or next to a member.

    Reads ``class``, ``source``, ``payload_class``, ``methods`` (default: all), ``on_conflict``, and ``after`` or
    ``before``, the member the new methods go next to.
    """

    op_name = "add-methods"
    port_traits = PortTraits(Anchor.CLASS, key="class", payload_key="payload_class")
    class_name: str
    payload: Payload
    payload_class: str
    methods: tuple[NamedDef, ...]
    on_conflict: OnConflict
    place: tuple[str, str] | None = None  # ("after" | "before", member name)

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> AddMethods:
        # The schema has checked each value's type (methods: a list of strings): the conversions only narrow.
        payload = ctx.payload(table)
        class_name = str(table["class"])
        payload_class = str(table.get("payload_class", class_name))
        node = payload.find_class(payload_class)
        if node is None:
            key = "payload_class" if "payload_class" in table else "class"
            ctx.error(
                key,
                f"payload {payload.display} defines no class {payload_class!r}",
                hint="the payload must hold a class of that name whose body has the methods",
            )
        available = {m.name: m for m in payload.methods_of(node)}
        listed = table.get("methods")
        wanted = [str(name) for name in listed] if isinstance(listed, list) else None
        methods = select(
            ctx,
            available,
            wanted,
            key="methods",
            empty=f"class {payload_class} in {payload.display} has no methods to add",
            missing=lambda name: f"class {payload_class} in {payload.display} has no method {name!r}",
            listed="it has",
        )
        if wanted is not None:
            dupes = {n for n in wanted if wanted.count(n) > 1}
            if dupes:
                ctx.error("methods", f"lists {', '.join(sorted(dupes))} more than once")
        placed = [key for key in ("after", "before") if key in table]
        if len(placed) > 1:
            ctx.error("before", "`after` and `before` both place the methods: keep one")
        place = (placed[0], str(table[placed[0]])) if placed else None
        if place is not None and place[1] in {m.name for m in methods}:
            ctx.error(placed[0], f"{place[1]!r} is one of the methods this patch adds; name a member already there")
        return cls(
            class_name=class_name,
            payload=payload,
            payload_class=payload_class,
            methods=methods,
            on_conflict=OnConflict(table.get("on_conflict", "fail")),
            place=place,
        )

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        return missing_in(self.class_name, reason, is_class=True)

    def warnings(self, target: CodeState | None = None) -> list[tuple[int, str]]:
        def column() -> int | None:  # new members stand where the class's own do (in its block)
            found = target.find_class(self.class_name) if target is not None else None
            return None if found is None else found.body[0].col_offset

        place = Placement.of(self.payload, len(self.class_name.split(".")), target, column)
        return [w for m in self.methods for w in self.payload.string_warnings(m.node, place, f"method {m.name}")]

    def identity(self) -> dict[str, object]:
        out: dict[str, object] = {
            "class": self.class_name,
            "methods": [(m.name, canon(m.node)) for m in self.methods],
            "on_conflict": self.on_conflict.value,
        }
        if self.place is not None:
            out["place"] = list(self.place)
        return out

    def own_code(self) -> tuple[str, ...]:
        return tuple(digest(m.node) for m in self.methods)

    def adds(self) -> set[str]:
        return {f"{self.class_name}.{m.name}" for m in self.methods}

    def edits(self) -> set[str]:
        return {self.class_name}

    def analyze(self, state: CodeState) -> Outcome[DefPlan]:
        target = state.find_class(self.class_name)
        if target is None:
            added = {m.name for m in self.methods}
            uses = self_attributes(m.node for m in self.methods) - added
            return Outcome.fail(
                Reason.CLASS_NOT_FOUND,
                None,
                f"class {self.class_name} is not defined in {state.path}"
                + not_found_class(state, self.class_name, uses, added),
            )

        def member(name: str) -> ast.stmt | None:
            index = member_index(target.body, name)
            return None if index is None else target.body[index]

        if self.place is not None and member(self.place[1]) is None:
            side, name = self.place
            return Outcome.fail(
                Reason.TARGET_NOT_FOUND,
                target.lineno,
                f"class {self.class_name} (line {target.lineno}) has no member {name} to add the methods {side}"
                + what_is_there("methods", name, state.functions_in(target), f"in class {self.class_name}"),
            )

        plan = classify(
            self.methods,
            member,
            self.on_conflict,
            state.previous,
            canon_of=lambda name, node: state.def_canon(node, f"{self.class_name}.{name}"),
        )
        return outcome_for(
            plan,
            where=f"class {self.class_name} (line {target.lineno})",
            where_line=target.lineno,
            payload=self.payload.display,
            kind="methods",
        )

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        node = state.find_class(self.class_name)
        return (node.lineno, node.end_lineno or node.lineno) if node else None

    def simulate(self, state: CodeState, outcome: Outcome[DefPlan], patch_id: str) -> None:
        target = state.find_class(self.class_name)
        assert target is not None
        end = target.end_lineno or target.lineno
        at = len(target.body)
        if self.place is not None:
            index = member_index(target.body, self.place[1])
            assert index is not None
            at = index + 1 if self.place[0] == "after" else index
            near = target.body[index]
            end = (near.end_lineno or near.lineno) if self.place[0] == "after" else near.lineno
        splice_defs(
            target.body,
            outcome.planned,
            insert_at=at,
            insert_line=end,
            splice=lambda nodes, line: state.splice(nodes, line=line, patch_id=patch_id),
        )

    def transform(self, module: cst.Module, outcome: Outcome[DefPlan]) -> cst.Module:
        edit = edit_lazy()
        plan = outcome.planned
        payload_class = edit.find_definition(
            self.payload.cst_module(), self.payload_class, edit.cst.ClassDef, scoped=False
        )
        by_name = {
            stmt.name.value: stmt for stmt in edit.block_body(payload_class) if isinstance(stmt, edit.cst.FunctionDef)
        }

        def change(cls_node: cst.ClassDef) -> cst.ClassDef:
            current = edit.block_body(cls_node)
            insert_at = None
            if self.place is not None:
                side, name = self.place
                index = max(i for i, stmt in enumerate(current) if edit.binds(name)(stmt))
                insert_at = index + 1 if side == "after" else index
            body = edit.place_definitions(
                current,
                [(d.name, by_name[d.name]) for d, _ in plan.replace],
                [by_name[d.name] for d in plan.add],
                insert_at=insert_at,
                blank_lines=1,
            )
            return edit.with_block_body(cls_node, body)

        return edit.update_class(module, self.class_name, change)


def member_index(body: list[ast.stmt], name: str) -> int | None:
    """Index of the last statement of a class body that binds ``name`` (def, class, assignment)."""
    found: int | None = None
    for index, stmt in enumerate(body):
        if isinstance(stmt, DEF_KINDS) and stmt.name == name:
            found = index
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = index
    return found
