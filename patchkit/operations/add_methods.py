"""add-methods: add methods from a payload class to a class in the target file."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchkit.operations import edit_lazy
from patchkit.operations.base import LoadContext, OnConflict, Operation, Outcome, missing_in
from patchkit.operations.code import CodeState, canon, digest, not_found_class, self_attributes
from patchkit.operations.definitions import DefPlan, NamedDef, classify, outcome_for, select, splice_defs
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst

    from patchkit.operations.payload import Payload


@dataclass(frozen=True)
class AddMethods(Operation):
    op_name = "add-methods"
    class_name: str
    payload: Payload
    payload_class: str
    methods: tuple[NamedDef, ...]
    on_conflict: OnConflict

    @classmethod
    def from_table(cls, table: Mapping[str, Any], ctx: LoadContext) -> AddMethods:
        payload = ctx.payload(table)
        class_name = table["class"]
        payload_class = table.get("payload_class", class_name)
        node = payload.find_class(payload_class)
        if node is None:
            key = "payload_class" if "payload_class" in table else "class"
            ctx.error(
                key,
                f"payload {payload.display} defines no class {payload_class!r}",
                hint="the payload must hold a class of that name whose body has the methods",
            )
        available = {m.name: m for m in payload.methods_of(node)}
        wanted = table.get("methods")
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
        return cls(
            class_name=class_name,
            payload=payload,
            payload_class=payload_class,
            methods=methods,
            on_conflict=OnConflict(table.get("on_conflict", "fail")),
        )

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        return missing_in(self.class_name, reason, is_class=True)

    def identity(self) -> dict[str, Any]:
        return {
            "class": self.class_name,
            "methods": [(m.name, canon(m.node)) for m in self.methods],
            "on_conflict": self.on_conflict.value,
        }

    def own_code(self) -> tuple[str, ...]:
        return tuple(digest(m.node) for m in self.methods)

    def adds(self) -> set[str]:
        return {f"{self.class_name}.{m.name}" for m in self.methods}

    def edits(self) -> set[str]:
        return {self.class_name}

    def analyze(self, state: CodeState) -> Outcome:
        target = state.find_class(self.class_name)
        if target is None:
            uses = self_attributes(m.node for m in self.methods) - {m.name for m in self.methods}
            return Outcome.fail(
                Reason.CLASS_NOT_FOUND,
                None,
                f"class {self.class_name} is not defined in {state.path}"
                + not_found_class(state, self.class_name, uses),
            )

        def member(name: str) -> ast.stmt | None:
            found: ast.stmt | None = None
            for stmt in target.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
                    found = stmt
                elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                        found = stmt
            return found

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

    def simulate(self, state: CodeState, outcome: Outcome, patch_id: str) -> None:
        target = state.find_class(self.class_name)
        assert target is not None
        end = target.end_lineno or target.lineno
        splice_defs(
            target.body,
            outcome.plan,
            insert_at=len(target.body),
            insert_line=end,
            splice=lambda nodes, line: state.splice(nodes, line=line, patch_id=patch_id),
        )

    def transform(self, module: cst.Module, outcome: Outcome) -> cst.Module:
        edit = edit_lazy()
        plan: DefPlan = outcome.plan
        payload_class = edit.find_definition(
            self.payload.cst_module(), self.payload_class, edit.cst.ClassDef, scoped=False
        )
        by_name = {
            stmt.name.value: stmt for stmt in edit.block_body(payload_class) if isinstance(stmt, edit.cst.FunctionDef)
        }

        def change(cls_node: cst.ClassDef) -> cst.ClassDef:
            body = edit.place_definitions(
                edit.block_body(cls_node),
                [(d.name, by_name[d.name]) for d, _ in plan.replace],
                [by_name[d.name] for d in plan.add],
                insert_at=None,
                blank_lines=1,
            )
            return edit.with_block_body(cls_node, body)

        return edit.update_class(module, self.class_name, change)
