"""ensure-list-item: make sure an item is in a module-level list or tuple.

Typical use: register a class in ``EntryClass = [...]``.  A single value
(``EntryClass = Foo``) becomes a list holding both.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchkit.operations import edit_lazy
from patchkit.operations.base import Anchor, LoadContext, Outcome, PortTraits, PythonOperation
from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon
from patchkit.operations.wording import one_line, what_is_there
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst

_SINGLE = (ast.Name, ast.Attribute)


@dataclass(frozen=True)
class EnsureListItem(PythonOperation[None]):
    """ensure-list-item: makes sure an expression is an item of a module-level list or tuple.

    Reads ``target``, the name the list is assigned to, and ``item``; a single value there becomes a list of both.
    """

    op_name = "ensure-list-item"
    port_traits = PortTraits(Anchor.STATEMENT, key="target")
    edits_in_place = True  # simulate() edits an existing statement (see PythonOperation)
    target: str
    item: str
    item_node: ast.expr

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> EnsureListItem:
        item = str(table["item"])  # item and target: strings, as the schema has checked
        try:
            node = ast.parse(item.strip(), mode="eval").body
        except SyntaxError as exc:
            ctx.error("item", f"{item!r} is not a Python expression ({exc.msg})")
        return cls(target=str(table["target"]), item=item.strip(), item_node=node)

    def identity(self) -> dict[str, object]:
        return {"target": self.target, "item": canon(self.item_node)}

    def edits(self) -> set[str]:
        return {self.target}

    def _value(self, state: CodeState) -> tuple[ast.stmt | None, ast.expr | None]:
        stmt = state.module_binding(self.target)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            return stmt, stmt.value
        return stmt, None

    def analyze(self, state: CodeState) -> Outcome[None]:
        stmt, value = self._value(state)
        if stmt is None:
            names = state.module_names()
            return Outcome.fail(
                Reason.TARGET_NOT_FOUND,
                None,
                f"nothing named {self.target} is assigned at module level in {state.path}"
                + what_is_there("names", self.target, names),
            )
        line = stmt.lineno
        if value is None or not isinstance(value, (ast.List, ast.Tuple, *_SINGLE)):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                line,
                f"{self.target} (line {line}) is not a list, tuple or single name, so `{self.item}` cannot be "
                "added to it; edit it with a replace or insert patch instead",
            )
        elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        wanted = canon(self.item_node)
        if any(canon(e) == wanted for e in elements):
            return Outcome.skip(Reason.ALREADY_APPLIED, line, f"{self.item} is already in {self.target} (line {line})")
        shape = "list" if isinstance(value, ast.List) else "tuple" if isinstance(value, ast.Tuple) else "single value"
        message = f"adds {self.item} to {self.target} (line {line})"
        if shape == "single value":
            message += f", turning `{one_line(ast.unparse(value), 40)}` into a list"
        return Outcome.apply(line, message)

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        stmt = state.module_binding(self.target)
        return (stmt.lineno, stmt.end_lineno or stmt.lineno) if stmt else None

    def simulate(self, state: CodeState, outcome: Outcome[None], patch_id: str) -> None:
        stmt, value = self._value(state)
        assert isinstance(stmt, (ast.Assign, ast.AnnAssign)) and value is not None
        new = state.splice([self.item_node], line=stmt.lineno, patch_id=patch_id)[0]
        if isinstance(value, (ast.List, ast.Tuple)):
            value.elts.append(new)
        else:
            stmt.value = ast.List(elts=[value, new], ctx=ast.Load())

    def transform(self, module: cst.Module, outcome: Outcome[None]) -> cst.Module:
        edit = edit_lazy()
        cst_mod = edit.cst
        new_item = cst_mod.parse_expression(self.item)

        def change(line: Any) -> Any:
            small = next(
                s
                for s in line.body
                if isinstance(s, (cst_mod.Assign, cst_mod.AnnAssign))
                and self.target in edit.cst_bound_names(cst_mod.SimpleStatementLine(body=[s]))
            )
            new_small = small.with_changes(value=_append(small.value, new_item, cst_mod))
            return line.with_changes(body=[new_small if s is small else s for s in line.body])

        body = edit.replace_scoped(module.body, edit.binds(self.target), change, self.target)
        return module.with_changes(body=body)


def _append(value: Any, item: Any, cst: Any) -> Any:
    """Append to a list/tuple node, copying the spacing its elements already use."""
    if not isinstance(value, (cst.List, cst.Tuple)):
        return cst.List(
            elements=[
                cst.Element(value=value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Element(value=item),
            ]
        )
    elements = list(value.elements)
    if not elements:
        return value.with_changes(elements=[cst.Element(value=item)])
    last = elements[-1]
    trailing = last.comma if isinstance(last.comma, cst.Comma) else None
    if len(elements) >= 2 and isinstance(elements[-2].comma, cst.Comma):
        between = elements[-2].comma
    elif isinstance(value, cst.List) and isinstance(value.lbracket.whitespace_after, cst.ParenthesizedWhitespace):
        # One element on its own line: separate the new one the same way.
        between = cst.Comma(whitespace_after=value.lbracket.whitespace_after)
    elif (
        isinstance(value, cst.Tuple)
        and value.lpar
        and isinstance(value.lpar[0].whitespace_after, cst.ParenthesizedWhitespace)
    ):
        between = cst.Comma(whitespace_after=value.lpar[0].whitespace_after)
    else:
        between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    closing = _closing(value, cst)
    if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(
        between.whitespace_after, cst.ParenthesizedWhitespace
    ):
        # One item per line.  The line break before the bracket (with any
        # comment on the last item's line) belongs to the bracket: it becomes
        # the old last item's separator, and the bracket gets a plain one.
        separator = closing.with_changes(last_line=between.whitespace_after.last_line)
        old_comma = trailing if trailing is not None else cst.Comma()
        elements[-1] = last.with_changes(comma=old_comma.with_changes(whitespace_after=separator))
        elements.append(cst.Element(value=item, comma=trailing) if trailing is not None else cst.Element(value=item))
        plain = closing.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        return _with_closing(value.with_changes(elements=elements), plain, cst)
    elements[-1] = last.with_changes(comma=between)
    # A trailing comma (and the space before the bracket) moves to the new last element.
    elements.append(cst.Element(value=item, comma=trailing) if trailing is not None else cst.Element(value=item))
    return value.with_changes(elements=elements)


def _closing(value: Any, cst: Any) -> Any:
    if isinstance(value, cst.List):
        return value.rbracket.whitespace_before
    return value.rpar[-1].whitespace_before if value.rpar else None


def _with_closing(value: Any, whitespace: Any, cst: Any) -> Any:
    if isinstance(value, cst.List):
        return value.with_changes(rbracket=value.rbracket.with_changes(whitespace_before=whitespace))
    rpar = list(value.rpar)
    rpar[-1] = rpar[-1].with_changes(whitespace_before=whitespace)
    return value.with_changes(rpar=rpar)
