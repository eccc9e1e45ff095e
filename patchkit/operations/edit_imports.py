"""edit-imports: hunks of a unified diff applied inside the module's import block.

``ensure-import`` and ``move-import`` say what they do (this name is
imported, from there) and survive any reordering; but real edits of the
import block also drop imports, rename or regroup them, or add one name to a
``from m import (...)`` list while another leaves.  Rather than carry such an
edit with a ``diff`` of the whole file, this op scopes its hunks to the
leading import block: from the first import after the module docstring (and
the comment lines right above it) to the last import of the block.  The
matching, verdicts and messages are ``edit-function``'s (``ScopedHunks``):
zero fuzz, offsets within the block, SKIP in reverse (``ALREADY_APPLIED``
where the record shows patchkit wrote the lines, else ``UPSTREAM_PROVIDES``), CONFLICT
naming the hunk, the line, the expected and the found.  No block: FAIL
``TARGET_NOT_FOUND``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from patchkit.operations.base import Anchor, LoadContext, Merge, Operation, Outcome, PortTraits
from patchkit.operations.code import CodeState
from patchkit.operations.edit_function import Plan, Region, ScopedHunks
from patchkit.operations.lookup import is_docstring
from patchkit.results import Reason


def import_block(body: list[ast.stmt]) -> tuple[int, int]:
    """[start, end) indices of the leading import statements (after a module docstring)."""
    start = 1 if body and is_docstring(body[0]) else 0
    end = start
    while end < len(body) and isinstance(body[end], (ast.Import, ast.ImportFrom)):
        end += 1
    return start, end


def block_lines(body: list[ast.stmt], lines: list[str]) -> tuple[int, int] | None:
    """(first, last) 1-based lines of the import block, widened over the comments right above it."""
    start, end = import_block(body)
    if start == end:
        return None
    first = body[start].lineno
    floor = (body[start - 1].end_lineno or 0) + 1 if start else 1
    while first > floor and lines[first - 2].startswith("#"):
        first -= 1
    return first, body[end - 1].end_lineno or body[end - 1].lineno


@dataclass(frozen=True)
class EditImports(ScopedHunks):
    """edit-imports: applies the hunks of a unified diff payload inside the target module's leading import block.

    Reads ``source`` only: there is one import block, so nothing names it.
    """

    op_name = "edit-imports"
    port_traits = PortTraits(Anchor.IMPORTS, merge=Merge.REGION, merge_on=Reason.CONFLICT, diff_payload=True)

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> EditImports:
        written, sha, hunks = cls.read_hunks(table, ctx, "the import block")
        return cls(source=written, sha256=sha, hunks=hunks)

    def identity(self) -> dict[str, object]:
        return {"imports": True, "diff": self.sha256}

    @property
    def region_key(self) -> str:
        return "imports"

    def same_spot(self, other: Operation) -> bool:
        return isinstance(other, EditImports)

    def region(self, state: CodeState) -> Region | Outcome:
        body = state.tree.body
        span = block_lines(body, state.lines)
        if span is None:
            return Outcome.fail(Reason.TARGET_NOT_FOUND, None, f"{state.path} has no import block at its top")
        start, end = import_block(body)
        if any(id(stmt) in state.added_by for stmt in body[start:end]):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                span[0],
                "an earlier patch of this manifest added an import to the block; "
                "edit-imports needs the block's own lines: put this patch before that one",
            )
        bad = self._text_ok(state, span[0])
        if bad is not None:
            return bad
        first, last = span
        return Region(first, last, f"the import block (lines {first}-{last})", "the end of the import block")

    def graft(self, state: CodeState, plan: Plan) -> tuple[list[ast.stmt], set[int]]:
        body = state.tree.body
        start, end = import_block(body)
        new = ast.parse("".join(plan.new_lines)).body
        for stmt in new:
            ast.increment_lineno(stmt, plan.first - 1)
        body[start:end] = new
        return new, {id(n) for stmt in new for n in ast.walk(stmt)}
