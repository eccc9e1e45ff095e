"""move-import: import a name from its new module instead of its old one.

Upstream keeps moving names between modules (SGLang moved ``DeepEPMode`` from
``sglang.srt.utils`` to ``sglang.srt.layers.moe.utils``).  ``ensure-import``
rightly reports CONFLICT when the old import already binds the name; this op
says "import it from the new place instead".

Only ``from`` imports written directly in the module body are considered (not
inside ``try`` or ``if``).  The edit keeps the old statement's layout:

* the old statement held only ``name``: its module is rewritten in place
  (parentheses, alias, comments and the line all stay);
* it held other names too: ``name`` is dropped from it (commas and line breaks
  of the remaining names are kept) and ``from TO import name`` goes on the
  line right after it; with ``position = "before"``, on the line right before
  it (below its blank lines and comments, which move above the new line);
  with ``after = "<an import statement>"``, right after that statement;
  with ``new_group = true``, as a group of its own: one blank line between the
  new line and the statement it is placed against.

An ``as`` alias is carried over.  If the module already imports ``name`` from
``to`` as well, the old import is only dropped.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchkit.errors import InternalError
from patchkit.operations import edit_lazy
from patchkit.operations.base import Anchor, LoadContext, Outcome, PortTraits, PythonOperation
from patchkit.operations.code import CodeState
from patchkit.operations.digests import import_index
from patchkit.operations.ensure_import import import_anchor
from patchkit.operations.lookup import bound_names
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst


def _split_module(spec: str) -> tuple[int, str | None]:
    stripped = spec.lstrip(".")
    return len(spec) - len(stripped), stripped or None


@dataclass(frozen=True)
class Plan:
    """How the move stands in one module: the old import's index (None: already gone), whether it held only this name,
    whether the module already imports the name from ``to``, and the alias to carry over.
    """

    old_index: int | None  # index in the module body of the old import (None: already gone)
    alone: bool  # the old import held only this name
    have_new: bool  # the module already imports the name from `to`
    asname: str | None


@dataclass(frozen=True)
class MoveImport(PythonOperation[Plan]):
    """move-import: imports a name from its new module instead of its old one, keeping the old statement's layout.

    Reads ``name``, ``from`` and ``to``; ``position`` or ``after``, and ``new_group``, place a new import line.
    """

    op_name = "move-import"
    port_traits = PortTraits(Anchor.IMPORTS)
    edits_in_place = True  # simulate() edits an existing statement (see PythonOperation)
    name: str
    source: str  # `from`
    dest: str  # `to`
    position: str = "after"  # of the new line, relative to the old import: "after" | "before"
    after: str | None = None  # an import statement the new line goes right after
    after_canon: str | None = None
    new_group: bool = False  # a blank line between the new line and what it is placed against

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> MoveImport:
        if table["from"] == table["to"]:
            ctx.error("to", f"`from` and `to` are the same module ({table['to']!r})")
        if "position" in table and "after" in table:
            ctx.error("after", "`position` and `after` both place the new import: keep one")
        after, after_canon = import_anchor(ctx, table, "after")
        return cls(  # the schema has checked each value's type: str() and bool() only narrow
            name=str(table["name"]),
            source=str(table["from"]),
            dest=str(table["to"]),
            position=str(table.get("position", "after")),
            after=after,
            after_canon=after_canon,
            new_group=bool(table.get("new_group", False)),
        )

    def identity(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "from": self.source, "to": self.dest}
        if self.position != "after" or self.after_canon is not None:
            out.update(position=self.position, after=self.after_canon)
        if self.new_group:
            out["new_group"] = True
        return out

    def _after_index(self, body: list[ast.stmt]) -> int | None:
        return import_index(body, self.after_canon)

    def _is(self, stmt: ast.stmt, spec: str) -> ast.alias | None:
        level, module = _split_module(spec)
        if not isinstance(stmt, ast.ImportFrom) or stmt.level != level or stmt.module != module:
            return None
        return next((a for a in stmt.names if a.name == self.name), None)

    def _find(self, body: list[ast.stmt]) -> tuple[int | None, ast.alias | None, int | None, ast.alias | None]:
        old_i = new_i = None
        old_a = new_a = None
        for index, stmt in enumerate(body):
            alias = self._is(stmt, self.source)
            if alias is not None:
                old_i, old_a = index, alias
            alias = self._is(stmt, self.dest)
            if alias is not None:
                new_i, new_a = index, alias
        return old_i, old_a, new_i, new_a

    def analyze(self, state: CodeState) -> Outcome[Plan]:
        body = state.tree.body
        old_i, old_a, new_i, new_a = self._find(body)
        binds = {self.name}
        for alias in (old_a, new_a):
            if alias is not None:
                binds.add(alias.asname or alias.name)
        for index, stmt in enumerate(body):
            if index in (old_i, new_i):
                continue
            clash = binds & bound_names(stmt)
            if clash:
                what = f"`{ast.unparse(stmt)}`" if isinstance(stmt, (ast.Import, ast.ImportFrom)) else "a definition"
                return Outcome.fail(
                    Reason.CONFLICT,
                    stmt.lineno,
                    f"line {stmt.lineno} binds {sorted(clash)[0]!r} some other way ({what}); "
                    f"moving the import of {self.name} from {self.source} to {self.dest} would not decide which wins",
                )
        if old_i is None and new_i is not None:
            line = body[new_i].lineno
            return Outcome.skip(
                Reason.ALREADY_APPLIED, line, f"{self.name} is already imported from {self.dest} (line {line})"
            )
        if old_i is None:
            return Outcome.fail(
                Reason.TARGET_NOT_FOUND,
                None,
                f"{state.path} imports {self.name} neither from {self.source} nor from {self.dest} at module level",
            )
        assert old_a is not None
        old = body[old_i]
        if not state.alone_on_lines(old):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                old.lineno,
                f"the import of {self.name} at line {old.lineno} shares its line with other code (`;`); "
                "split that line upstream",
            )
        alone = len(old.names) == 1  # type: ignore[attr-defined]
        asname = old_a.asname if new_a is None else new_a.asname
        if new_a is not None and (new_a.asname or None) != (old_a.asname or None):
            return Outcome.fail(
                Reason.CONFLICT,
                body[new_i].lineno,  # type: ignore[index]
                f"{self.name} is imported from both {self.source} (line {old.lineno}) and {self.dest} "
                f"(line {body[new_i].lineno}) under different names",  # type: ignore[index]
            )
        if self.after is not None and new_a is None and not alone and self._after_index(body) is None:
            return Outcome.fail(
                Reason.TARGET_NOT_FOUND,
                None,
                f"`after`: no module-level import statement is `{self.after}` in {state.path}",
            )
        if new_a is not None:
            message = (
                f"drops {self.name} from the import of {self.source} (line {old.lineno}); "
                f"{self.dest} already provides it"
            )
        else:
            message = f"imports {self.name} from {self.dest} instead of {self.source} (line {old.lineno})"
        return Outcome.apply(old.lineno, message, plan=Plan(old_i, alone, new_a is not None, asname))

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        old_i, _, new_i, _ = self._find(state.tree.body)
        index = old_i if old_i is not None else new_i
        if index is None:
            return None
        stmt = state.tree.body[index]
        return (stmt.lineno, stmt.end_lineno or stmt.lineno)

    def _new_node(self, asname: str | None) -> ast.ImportFrom:
        level, module = _split_module(self.dest)
        return ast.ImportFrom(module=module, names=[ast.alias(self.name, asname)], level=level)

    def simulate(self, state: CodeState, outcome: Outcome[Plan], patch_id: str) -> None:
        plan = outcome.planned
        body = state.tree.body
        assert plan.old_index is not None
        old = body[plan.old_index]
        assert isinstance(old, ast.ImportFrom)
        added = [] if plan.have_new else state.splice([self._new_node(plan.asname)], line=old.lineno, patch_id=patch_id)
        if plan.alone:
            body[plan.old_index : plan.old_index + 1] = added
        else:
            old.names = [a for a in old.names if a.name != self.name]
            at = self._new_index(body, plan.old_index)
            body[at:at] = added

    def _new_index(self, body: list[Any], old_index: int, find_after: Any = None) -> int:
        """Where the new line goes in ``body`` (the old import, still there, at ``old_index``)."""
        if self.after is not None:
            index = (find_after or self._after_index)(body)
            assert index is not None
            return int(index) + 1
        return old_index if self.position == "before" else old_index + 1

    def transform(self, module: cst.Module, outcome: Outcome[Plan]) -> cst.Module:
        import libcst

        plan = outcome.planned
        body = list(module.body)
        index = _cst_index(body, self.source, self.name)
        line = body[index]
        assert isinstance(line, libcst.SimpleStatementLine)
        old = line.body[0]
        assert isinstance(old, libcst.ImportFrom) and not isinstance(old.names, libcst.ImportStar)
        level, dest = _split_module(self.dest)
        if plan.alone and plan.have_new:
            del body[index]
        elif plan.alone:
            new_mod = libcst.parse_expression(dest) if dest else None
            body[index] = line.with_changes(body=[old.with_changes(module=new_mod, relative=[libcst.Dot()] * level)])
        else:
            names = list(old.names)
            at = next(i for i, a in enumerate(names) if _alias_name(a) == self.name)
            removed = names.pop(at)
            if at == len(names):  # it was the last one: the new last takes its comma (or none)
                names[-1] = names[-1].with_changes(comma=removed.comma)
            body[index] = line.with_changes(body=[old.with_changes(names=names)])
            if not plan.have_new:
                alias = f" as {plan.asname}" if plan.asname else ""
                new = libcst.parse_statement(f"from {self.dest} import {self.name}{alias}\n")
                at = self._new_index(body, index, self._cst_after_index)
                edit = edit_lazy()
                if at == index:  # before the old import: under its blank lines and comments
                    body[index : index + 1] = edit.grouped_above(new, body[index], self.new_group)
                else:
                    body.insert(at, edit.grouped_below(new, self.new_group))
        return module.with_changes(body=body)

    def _cst_after_index(self, body: list[object]) -> int | None:
        return edit_lazy().cst_import_index(body, self.after_canon)


def _alias_name(alias: cst.ImportAlias) -> str:
    return edit_lazy().code_of(alias.name).strip()


def _cst_index(body: Sequence[cst.BaseStatement], spec: str, name: str) -> int:
    import libcst

    code_of = edit_lazy().code_of
    level, module = _split_module(spec)
    found = None
    for index, stmt in enumerate(body):
        if not isinstance(stmt, libcst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if not isinstance(small, libcst.ImportFrom) or isinstance(small.names, libcst.ImportStar):
            continue
        here = code_of(small.module).strip() if small.module is not None else None
        if len(small.relative) == level and here == module and any(_alias_name(a) == name for a in small.names):
            found = index
    if found is None:
        raise InternalError(f"libcst edit could not find `from {spec} import {name}` that the analysis found")
    return found
