"""ensure-import: make sure a module-level import is present.

Missing names are added as one new import line after the module's leading
import block, or where the manifest places it (so a capture of an import
added anywhere in or at the edge of the block round-trips):

* ``after = "<an existing import statement>"``: on the line right after it;
* ``before = "<an existing import statement>"``: on the line right before it,
  below the blank lines and comments above it (they move above the new line:
  an import that sorts before another is written where isort would put it);
* ``position = "top"``: before the first statement of the leading import block
  (right after the module docstring, taking the first import's blank lines
  and comments as ``before`` does); with no import there, the default place.

At most one of the three.  The default place is right after the block's last
import, or after the module docstring when there is no import yet, or at the
very top (under the file's leading comments) when there is neither.

``new_group = true`` makes the new line a group of its own, as isort writes a
new section: one blank line between it and what it is placed against (below
the ``after`` import, the block's last import or the docstring; above the
``before`` import or the block's first one; at the very top, above the first
statement).  An existing ``from x import (...)`` is never rewritten: the
patch then touches only lines it owns.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.errors import InternalError
from patchkit.operations import edit_lazy
from patchkit.operations.base import Anchor, LoadContext, Outcome, PortTraits, PythonOperation
from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon, import_index, parse_statement
from patchkit.operations.lookup import FunctionNode, bound_names, is_docstring
from patchkit.operations.wording import one_line
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class ImportItem:
    """One name an import statement binds."""

    module: str | None  # "a.b" for `import a.b`; the from-module for `from m import x`
    level: int  # leading dots of a relative from-import
    name: str | None  # None for `import a.b`
    asname: str | None

    @property
    def binds(self) -> str:
        if self.asname:
            return self.asname
        if self.name is None:
            return (self.module or "").split(".")[0]
        return self.name

    def render(self) -> str:
        alias = f" as {self.asname}" if self.asname else ""
        if self.name is None:
            return f"import {self.module}{alias}"
        return f"from {'.' * self.level}{self.module or ''} import {self.name}{alias}"

    def spelled(self) -> str:
        return self.name if self.name is not None else (self.module or "")


def items_of(stmt: ast.Import | ast.ImportFrom) -> list[ImportItem]:
    if isinstance(stmt, ast.Import):
        return [ImportItem(a.name, 0, None, a.asname) for a in stmt.names]
    return [ImportItem(stmt.module, stmt.level, a.name, a.asname) for a in stmt.names]


def _imported(state: CodeState) -> dict[ImportItem, int]:
    """Each item the module's top-level imports bind -> the line of the first import of it."""
    out: dict[ImportItem, int] = {}
    for imp in state.top_level_imports():
        for item in items_of(imp):
            out.setdefault(item, imp.lineno)
    return out


def _binders(state: CodeState) -> dict[str, list[ast.stmt]]:
    """Each name bound at module level -> the statements that bind it, in source order."""
    out: dict[str, list[ast.stmt]] = {}
    for scoped in state.module_statements():
        for name in bound_names(scoped.node):
            out.setdefault(name, []).append(scoped.node)
    return out


def render_items(items: list[ImportItem]) -> str:
    first = items[0]
    if first.name is None:
        return "import " + ", ".join(f"{i.module}{' as ' + i.asname if i.asname else ''}" for i in items)
    names = ", ".join(f"{i.name}{' as ' + i.asname if i.asname else ''}" for i in items)
    return f"from {'.' * first.level}{first.module or ''} import {names}"


@dataclass(frozen=True)
class EnsureImport(PythonOperation[str]):
    """ensure-import: makes sure the target module imports what one import statement does, adding a line if not.

    Reads ``import``; at most one of ``after``, ``before`` or ``position = "top"``, and ``new_group``, place that line.
    """

    op_name = "ensure-import"
    port_traits = PortTraits(Anchor.IMPORTS)
    code: str
    items: tuple[ImportItem, ...]
    after: str | None = None  # an import statement, as written in the manifest
    after_canon: str | None = None
    before: str | None = None  # likewise
    before_canon: str | None = None
    position: str | None = None  # "top"
    new_group: bool = False  # a blank line between the new line and what it is placed against

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> EnsureImport:
        code = str(table["import"])  # the schema has checked each value's type: str() and bool() only narrow
        stmt = _import_statement(ctx, "import", code)
        if any(alias.name == "*" for alias in stmt.names):
            ctx.error("import", "star imports cannot be ensured: name each symbol")
        placed = [key for key in ("after", "before", "position") if key in table]
        if len(placed) > 1:
            ctx.error(placed[1], f"`{placed[0]}` and `{placed[1]}` both place the import: keep one")
        after, after_canon = import_anchor(ctx, table, "after")
        before, before_canon = import_anchor(ctx, table, "before")
        return cls(
            code=code,
            items=tuple(items_of(stmt)),
            after=after,
            after_canon=after_canon,
            before=before,
            before_canon=before_canon,
            position=None if table.get("position") is None else str(table["position"]),
            new_group=bool(table.get("new_group", False)),
        )

    def identity(self) -> dict[str, object]:
        out: dict[str, object] = {"import": self.code, "after": self.after_canon}
        if self.before_canon is not None or self.position is not None:
            out.update(before=self.before_canon, position=self.position)
        if self.new_group:
            out["new_group"] = True
        return out

    def _after_index(self, state: CodeState) -> int | None:
        """Index in the module body of the ``after`` import (the last one that matches)."""
        return import_index(state.tree.body, self.after_canon)

    def _before_index(self, state: CodeState) -> int | None:
        """Index of the statement the new import goes right before (``before`` / ``position``)."""
        if self.before is not None:
            return import_index(state.tree.body, self.before_canon, last=False)
        body = state.tree.body
        start = 1 if body and is_docstring(body[0]) else 0
        if start < len(body) and isinstance(body[start], (ast.Import, ast.ImportFrom)):
            return start
        return None

    def analyze(self, state: CodeState) -> Outcome[str]:
        existing = state.top_level_imports()
        imported = state.derived("ensure-import:imported", _imported)
        present: list[tuple[ImportItem, int]] = []
        missing: list[ImportItem] = []
        for item in self.items:
            line = imported.get(item)
            if line is not None:
                present.append((item, line))
                continue
            clash = self._clash(state, item)
            if clash is not None:
                return Outcome.fail(
                    Reason.CONFLICT,
                    clash.lineno,
                    f"the module already binds {item.binds!r} at line {clash.lineno} "
                    f"({_describe(clash)}); importing `{item.render()}` would rebind it. "
                    "Import it under another name (`as ...`) in the manifest and the payload",
                )
            missing.append(item)
        if not missing:
            lines = sorted({line for _, line in present})
            where = ", ".join(f"line {line}{self._branch(state, existing, line)}" for line in lines)
            return Outcome.skip(Reason.ALREADY_APPLIED, lines[0], f"`{self.code}` is already imported ({where})")
        new_code = render_items(missing)
        line = state.import_insert_line()
        message = f"adds `{new_code}` {_default_place(state)}"
        if self.after is not None:
            index = self._after_index(state)
            if index is None:
                return Outcome.fail(
                    Reason.TARGET_NOT_FOUND,
                    None,
                    f"`after`: no module-level import statement is `{one_line(self.after)}` in {state.path}",
                )
            anchor = state.tree.body[index]
            line = anchor.lineno if id(anchor) in state.added_by else (anchor.end_lineno or anchor.lineno) + 1
            message = f"adds `{new_code}` after line {anchor.lineno} (`{one_line(self.after)}`)"
        elif self.before is not None or self.position is not None:
            index = self._before_index(state)
            if index is None and self.before is not None:
                return Outcome.fail(
                    Reason.TARGET_NOT_FOUND,
                    None,
                    f"`before`: no module-level import statement is `{one_line(self.before)}` in {state.path}",
                )
            if index is not None:
                anchor = state.tree.body[index]
                line = anchor.lineno
                what = f"`{one_line(self.before)}`" if self.before is not None else "the first import"
                message = f"adds `{new_code}` before line {anchor.lineno} ({what})"
        if self.new_group:
            message += ", as a group of its own (a blank line between)"
        if present:
            message += f" ({', '.join(i.spelled() for i, _ in present)} already imported)"
        return Outcome.apply(line, message, plan=new_code)

    @staticmethod
    def _branch(state: CodeState, imports: list[ast.Import | ast.ImportFrom], line: int) -> str:
        node = next(imp for imp in imports if imp.lineno == line)
        branch = state.branch_of(node)
        return f", {branch}" if branch else ""

    def _clash(self, state: CodeState, item: ImportItem) -> ast.stmt | None:
        name = item.binds
        for stmt in state.derived("ensure-import:binders", _binders).get(name, ()):
            # `import a.b` and `import a.c` both bind `a`: that is no clash.
            if (
                isinstance(stmt, ast.Import)
                and item.name is None
                and not item.asname
                and any(a.asname is None and a.name.split(".")[0] == name for a in stmt.names)
            ):
                continue
            return stmt
        return None

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        return (1, state.import_insert_line())

    def simulate(self, state: CodeState, outcome: Outcome[str], patch_id: str) -> None:
        node = ast.parse(outcome.planned).body
        before = self._before_index(state) if self.before is not None or self.position is not None else None
        if self.after is not None:
            after = self._after_index(state)
            assert after is not None
            index = after + 1
        elif before is not None:
            index = before
        else:
            index = state.import_block_end()
        state.tree.body[index:index] = state.splice(node, line=outcome.line or 1, patch_id=patch_id)

    def transform(self, module: cst.Module, outcome: Outcome[str]) -> cst.Module:
        edit = edit_lazy()
        stmt = edit.cst.parse_statement(outcome.planned + "\n")
        body = list(module.body)
        if self.after is not None:
            index = edit.cst_import_index(body, self.after_canon)
            if index is None:
                raise InternalError(f"libcst edit could not find the `after` import `{one_line(self.after)}`")
            body.insert(index + 1, edit.grouped_below(stmt, self.new_group))
        elif (self.before is not None or self.position is not None) and self._cst_before_index(body) is not None:
            at = self._cst_before_index(body)
            assert at is not None
            body[at : at + 1] = edit.grouped_above(stmt, body[at], self.new_group)
        else:
            self._insert_at_default_place(body, stmt)
        return module.with_changes(body=body)

    def _insert_at_default_place(
        self,
        body: list[cst.SimpleStatementLine | cst.BaseCompoundStatement],
        stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement,
    ) -> None:
        """After the block's last import or the docstring; in a module with neither, at the top."""
        edit = edit_lazy()
        at = edit.import_block_end(body)
        if at > 0 or not body:
            body.insert(at, edit.grouped_below(stmt, self.new_group))
        else:  # under the file's leading comments (libcst's module header), above its first statement
            body[0:1] = edit.grouped_above(stmt, body[0], self.new_group)

    def _cst_before_index(self, body: Sequence[cst.BaseStatement]) -> int | None:
        edit = edit_lazy()
        if self.before is not None:
            found = edit.cst_import_index(body, self.before_canon, last=False)
            if found is None:
                raise InternalError(f"libcst edit could not find the `before` import `{one_line(self.before)}`")
            return found
        start = 1 if body and edit.is_cst_docstring(body[0]) else 0
        return start if start < len(body) and edit.is_cst_import(body[start]) else None


def _default_place(state: CodeState) -> str:
    """Where the default place is in this file, in words."""
    body = state.tree.body
    end = state.import_block_end()
    if end > 0 and isinstance(body[end - 1], (ast.Import, ast.ImportFrom)):
        return "after the import block"
    if end > 0:
        return "after the module docstring (the module has no import yet)"
    return "at the top of the module (it has no import yet)"


def _import_statement(ctx: LoadContext, key: str, code: str) -> ast.Import | ast.ImportFrom:
    try:
        stmt = parse_statement(code)
    except ValueError as exc:
        ctx.error(key, f"{code!r} {exc}")
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
        ctx.error(key, f"{code!r} is not an import statement")
    return stmt


def import_anchor(ctx: LoadContext, table: Mapping[str, object], key: str) -> tuple[str | None, str | None]:
    """(as written, ``canon``) of the import statement an optional ``key`` (``after``, ``before``) names,
    for ``code.import_index`` / ``edit.cst_import_index``; a manifest error if it is not one."""
    value = table.get(key)
    if value is None:
        return None, None
    written = str(value)  # the schema has checked it is a string
    return written, canon(_import_statement(ctx, key, written))


def _describe(stmt: ast.stmt) -> str:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return f"`{ast.unparse(stmt)}`"
    if isinstance(stmt, ast.ClassDef):
        return f"class {stmt.name}"
    if isinstance(stmt, FunctionNode):
        return f"def {stmt.name}"
    return "an assignment"
