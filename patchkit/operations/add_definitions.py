"""add-definitions: add module-level functions, classes or assignments from a payload."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.operations import edit_lazy
from patchkit.operations.base import Anchor, LoadContext, OnConflict, Outcome, PortTraits, PythonOperation
from patchkit.operations.code import CodeState
from patchkit.operations.definitions import DefPlan, NamedDef, classify, outcome_for, select, splice_defs
from patchkit.operations.digests import canon, digest
from patchkit.operations.wording import what_is_there
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst

    from patchkit.operations.payload import Payload


@dataclass(frozen=True)
class AddDefinitions(PythonOperation[DefPlan]):
    """add-definitions: adds the payload's module-level functions, classes or assignments to the target module.

    Reads ``source``, ``names`` (default: all), ``on_conflict``, and ``position`` ("end", "after-imports") or
    ``before``, where new definitions go.
    """

    op_name = "add-definitions"
    port_traits = PortTraits(Anchor.MODULE, renamed_with_class=("before",))
    payload: Payload
    definitions: tuple[NamedDef, ...]
    on_conflict: OnConflict
    position: str  # "end" | "after-imports"
    before: str | None

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> AddDefinitions:
        # The schema has checked each value's type (names: a list of strings): the conversions only narrow.
        names = table.get("names")
        payload = ctx.payload(table)
        definitions = select(
            ctx,
            payload.definitions(),
            [str(name) for name in names] if isinstance(names, list) else None,
            key="names",
            empty=f"{payload.display} has no module-level definitions to add",
            missing=lambda name: f"{payload.display} defines no module-level {name!r}",
            listed="it defines",
        )
        return cls(
            payload=payload,
            definitions=definitions,
            on_conflict=OnConflict(table.get("on_conflict", "fail")),
            position=str(table.get("position", "end")),
            before=None if table.get("before") is None else str(table["before"]),
        )

    def identity(self) -> dict[str, object]:
        return {
            "definitions": [(d.name, canon(d.node)) for d in self.definitions],
            "on_conflict": self.on_conflict.value,
            "position": self.position,
            "before": self.before,
        }

    def own_code(self) -> tuple[str, ...]:
        return tuple(digest(d.node) for d in self.definitions)

    def adds(self) -> set[str]:
        return {d.name for d in self.definitions}

    def _insert_index(self, state: CodeState) -> int | None:
        if self.before is not None:
            stmt = state.module_binding(self.before)
            if stmt is None:
                return None
            # Before the top-level statement that holds it (a definition in an
            # `if` / `try` branch: before that whole block).
            body = state.tree.body
            for i, top in enumerate(body):  # nearly always a top-level statement itself
                if top is stmt:
                    return i
            return next(i for i, top in enumerate(body) if any(s is stmt for s in ast.walk(top)))
        if self.position == "after-imports":
            return state.import_block_end()
        return len(state.tree.body)

    def _insert_line(self, state: CodeState, index: int) -> int:
        body = state.tree.body
        if index < len(body):
            return body[index].lineno
        return state.last_line + 1

    def analyze(self, state: CodeState) -> Outcome[DefPlan]:
        plan = classify(
            self.definitions,
            state.module_binding,
            self.on_conflict,
            state.previous,
            canon_of=lambda name, node: state.def_canon(node, name),
        )
        index = self._insert_index(state)
        if index is None and plan.add:
            names = state.module_names()
            return Outcome.fail(
                Reason.TARGET_NOT_FOUND,
                None,
                f"`before = {self.before!r}`: nothing named {self.before} is defined at module level"
                + what_is_there("names", self.before or "", names, "at module level"),
            )
        line = self._insert_line(state, index) if index is not None else 1
        return outcome_for(plan, where="the module", where_line=line, payload=self.payload.display, kind="definitions")

    def simulate(self, state: CodeState, outcome: Outcome[DefPlan], patch_id: str) -> None:
        index = self._insert_index(state)
        assert index is not None or not outcome.planned.add
        splice_defs(
            state.tree.body,
            outcome.planned,
            insert_at=index if index is not None else len(state.tree.body),
            insert_line=outcome.line or 1,
            splice=lambda nodes, line: state.splice(nodes, line=line, patch_id=patch_id),
        )

    def transform(self, module: cst.Module, outcome: Outcome[DefPlan]) -> cst.Module:
        edit = edit_lazy()
        plan = outcome.planned
        payload_body = self.payload.cst_module().body

        def payload_stmt(name: str) -> cst.BaseStatement:
            return [s for s in payload_body if name in edit.cst_bound_names(s)][-1]

        body = list(module.body)
        for d, _ in plan.replace:  # in place, also inside a top-level if / try branch
            body = edit.replace_scoped(
                body, edit.binds(d.name), edit.keeping_leading_lines(payload_stmt(d.name)), d.name
            )
        if self.before is not None:
            insert_at: int | None = edit.top_index(body, edit.binds(self.before), self.before)
        elif self.position == "after-imports":
            insert_at = edit.import_block_end(body)
        else:
            insert_at = None
        new_body = edit.place_definitions(
            body,
            [],
            [payload_stmt(d.name) for d in plan.add],
            insert_at=insert_at,
            blank_lines=2,
        )
        return module.with_changes(body=new_body)
