"""edit-statement: hunks of a unified diff applied inside one named module-level statement.

Real changes also land in module-level statements that are not functions: a
list or dict assigned to a name (``EntryClass = [...]``, a registry), a class
body's assignments, the module docstring, the ``if __name__ == "__main__":``
block.  This op scopes hunks to one of them, named by ``statement``:

* a name: the module-body statement that binds it (an assignment, a class,
  a def; the last one, as Python binds it);
* ``"__doc__"``: the module docstring;
* ``"__main__"``: the top-level ``if __name__ == "__main__":`` block.

The region runs from the statement's first line (the comment lines right
above it included) to its last.  Matching, verdicts and messages are
``edit-function``'s (``ScopedHunks``); a statement that is not there is
``TARGET_NOT_FOUND``, with the module-level names there are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from patchkit.operations.base import Anchor, Merge, Outcome, PortTraits
from patchkit.operations.code import CodeState
from patchkit.operations.edit_function import NamedHunks, Plan, Region
from patchkit.operations.lookup import bound_names, is_docstring
from patchkit.operations.wording import what_is_there
from patchkit.results import Reason

DOC, MAIN = "__doc__", "__main__"


def is_main_block(stmt: ast.stmt) -> bool:
    test = getattr(stmt, "test", None)
    return (
        isinstance(stmt, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def statement_index(body: list[ast.stmt], name: str) -> int | None:
    """Index in the module body of the statement ``name`` designates (see the module docstring)."""
    if name == DOC:
        return 0 if body and is_docstring(body[0]) else None
    found = None
    for index, stmt in enumerate(body):
        if (name == MAIN and is_main_block(stmt)) or (name != MAIN and name in bound_names(stmt)):
            found = index
    return found


def statement_lines(body: list[ast.stmt], index: int, lines: list[str]) -> tuple[int, int]:
    stmt = body[index]
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
    floor = (body[index - 1].end_lineno or 0) + 1 if index else 1
    while first > floor and lines[first - 2].startswith("#"):
        first -= 1
    return first, stmt.end_lineno or stmt.lineno


@dataclass(frozen=True)
class EditStatement(NamedHunks):
    """edit-statement: applies the hunks of a unified diff payload inside one module-level statement of the target file.

    Reads ``statement`` (a name the statement binds, ``"__doc__"`` or ``"__main__"``) and ``source``.
    """

    op_name = "edit-statement"
    port_traits = PortTraits(
        Anchor.STATEMENT, key="statement", merge=Merge.REGION, merge_on=Reason.CONFLICT, diff_payload=True
    )
    key = "statement"
    what = "the statement"

    def _what(self) -> str:
        if self.target == DOC:
            return "the module docstring"
        if self.target == MAIN:
            return 'the `if __name__ == "__main__":` block'
        return f"the statement that binds {self.target}"

    def region(self, state: CodeState) -> Region | Outcome[object]:
        body = state.tree.body
        index = statement_index(body, self.target)
        if index is None:
            suggestions = (
                what_is_there("module-level names", self.target, state.module_names())
                if self.target not in (DOC, MAIN)
                else ""
            )
            missing = {DOC: "module docstring", MAIN: 'top-level `if __name__ == "__main__":` block'}.get(
                self.target, f"module-level statement that binds {self.target}"
            )
            return Outcome.fail(Reason.TARGET_NOT_FOUND, None, f"{state.path} has no {missing}" + suggestions)
        stmt = body[index]
        bad = self._own_lines(state, stmt, self._what(), "its")
        if bad is not None:
            return bad
        first, last = statement_lines(body, index, state.lines)
        return Region(first, last, f"{self._what()} (lines {first}-{last})", "the end of the statement")

    def graft(self, state: CodeState, plan: Plan) -> tuple[list[ast.stmt], set[int]]:
        body = state.tree.body
        index = statement_index(body, self.target)
        assert index is not None
        new = ast.parse("".join(plan.new_lines)).body
        for stmt in new:
            ast.increment_lineno(stmt, plan.first - 1)
        body[index : index + 1] = new
        return new, {id(n) for stmt in new for n in ast.walk(stmt)}
