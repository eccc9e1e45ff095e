"""insert: put statements before or after one anchor statement inside a function.

The anchor is matched on normalised code (formatting and comments do not
matter), at any depth of the function's blocks but not inside nested defs.
No match and more than one match are both errors: an insert never guesses.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from patchkit.errors import InternalError
from patchkit.operations import edit_lazy
from patchkit.operations.base import (
    REPLACES_PREVIOUS,
    Anchor,
    LoadContext,
    Operation,
    Outcome,
    PortTraits,
    PythonOperation,
    missing_in,
)
from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon, parse_statement
from patchkit.operations.lookup import FunctionNode, StatementMatch, walk_statements
from patchkit.operations.memo import Memo
from patchkit.operations.replace_function import missing_function
from patchkit.operations.wording import (
    SHOWN,
    UNLIMITED,
    alike_first,
    close_matches,
    first_difference,
    listed_with_more,
    one_line,
    similarities,
    unparse_short,
)
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst

    from patchkit.operations.payload import Payload


@dataclass(frozen=True)
class Insert(PythonOperation[int]):
    """insert: puts the body of a payload function before or after one anchor statement inside a function of the target.

    Reads ``function``, ``anchor`` (it must match exactly one statement), ``position``, ``source`` and ``body_of``.
    """

    op_name = "insert"
    port_traits = PortTraits(Anchor.FUNCTION, key="function")
    function: str
    anchor: str
    anchor_canon: str
    position: str  # "before" | "after"
    payload: Payload
    body_of: str
    statements: tuple[ast.stmt, ...]

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> Insert:
        anchor = str(table["anchor"])  # anchor, body_of, function, position: strings, as the schema has checked
        try:
            anchor_node = parse_statement(anchor)
        except ValueError as exc:
            ctx.error("anchor", f"{one_line(anchor)!r} {exc}")
        payload = ctx.payload(table)
        body_of = str(table["body_of"])
        fn = payload.find_function(body_of)
        if fn is None:
            ctx.error(
                "body_of",
                f"payload {payload.display} defines no function {body_of!r}",
                hint="the statements to insert are the body of that function",
            )
        statements = payload.body_statements(fn)
        if not statements or all(isinstance(s, ast.Pass) for s in statements):
            ctx.error("body_of", f"{body_of} in {payload.display} has no statements to insert")
        return cls(
            function=str(table["function"]),
            anchor=anchor,
            anchor_canon=canon(anchor_node),
            position=str(table["position"]),
            payload=payload,
            body_of=body_of,
            statements=tuple(statements),
        )

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        return missing_in(self.function, reason, is_class=False)

    def same_spot(self, other: Operation) -> bool:
        return isinstance(other, Insert) and (self.function, self.anchor_canon, self.position) == (
            other.function,
            other.anchor_canon,
            other.position,
        )

    def identity(self) -> dict[str, object]:
        return {
            "function": self.function,
            "anchor": self.anchor_canon,
            "position": self.position,
            "statements": canon(list(self.statements)),
        }

    def own_code(self) -> tuple[str, ...]:
        return (_sequence_digest(self.statements),)

    def edits(self) -> set[str]:
        return {self.function}

    def _matches(self, state: CodeState) -> tuple[Any, list[StatementMatch]]:
        fn, _owner, missing_class = state.find_function(self.function)
        if fn is None:
            return missing_function(state, self.function, missing_class), []
        # canon() starts with the node's type name: only statements of the
        # anchor's type can match, and others (whole if/for/with blocks) are
        # the expensive ones to canonicalise.
        kind = self.anchor_canon.partition("(")[0]
        text = state.def_text(fn, self.function)
        if text is not None and (self.anchor_canon, text) in NO_MATCH:
            return fn, []
        matches = [
            m
            for m in walk_statements(fn.body)
            if type(m.node).__name__ == kind and state.remembered("canon", m.node, canon) == self.anchor_canon
        ]
        if not matches and text is not None:
            NO_MATCH[(self.anchor_canon, text)] = True
        return fn, matches

    def analyze(self, state: CodeState) -> Outcome[int]:
        fn, matches = self._matches(state)
        if isinstance(fn, Outcome):
            return fn
        span = f"{self.function} (lines {fn.lineno}-{fn.end_lineno})"
        if not matches:
            return Outcome.fail(
                Reason.ANCHOR_NOT_FOUND,
                fn.lineno,
                f"no statement in {span} matches the anchor `{one_line(self.anchor, UNLIMITED)}`"
                + self._closest(fn, state),
            )
        if len(matches) > 1:
            lines = ", ".join(str(m.node.lineno) for m in matches)
            return Outcome.fail(
                Reason.ANCHOR_AMBIGUOUS,
                matches[0].node.lineno,
                f"the anchor `{one_line(self.anchor)}` matches {len(matches)} statements in {span}, "
                f"at lines {lines}; use a statement that occurs once",
            )
        match = matches[0]
        line = match.node.lineno
        if not state.alone_on_lines(match.node):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                line,
                f"the anchor at line {line} shares its line with other code (`;` or a one-line block); "
                "patchkit inserts whole lines, so split that line upstream or pick another anchor",
            )
        count = len(self.statements)
        if self.position == "before":
            neighbours = match.body[max(0, match.at - count) : match.at]
        else:
            neighbours = match.body[match.at + 1 : match.at + 1 + count]
        noun = "statement" if count == 1 else "statements"
        if len(neighbours) == count and canon(neighbours) == self._statements_canon:
            return Outcome.skip(
                Reason.ALREADY_APPLIED,
                line,
                f"{count} {noun} from {self.body_of} already {self.position} line {line} in {self.function}",
            )
        for old in range(1, MAX_PREVIOUS + 1 if state.previous else 1):
            # An older version of these statements that patchkit inserted: replace it, never add a second copy.
            if self.position == "before":
                near = match.body[max(0, match.at - old) : match.at]
            else:
                near = match.body[match.at + 1 : match.at + 1 + old]
            when = state.previous.get(_sequence_digest(near)) if len(near) == old else None
            if when is not None:
                return Outcome.apply(
                    line,
                    f"{REPLACES_PREVIOUS} the {old} statement(s) from {self.body_of} {self.position} "
                    f"line {line} in {self.function}, which patchkit wrote {when}, with the {count} {noun} "
                    f"now in {self.payload.display}",
                    plan=old,
                    replaces_previous=True,
                )
        return Outcome.apply(
            line,
            f"inserts {count} {noun} from {self.body_of} {self.position} line {line} "
            f"(`{unparse_short(match.node, 60)}`) in {self.function}",
        )

    @cached_property
    def _statements_canon(self) -> str:
        return canon(list(self.statements))

    def _closest(self, fn: FunctionNode, state: CodeState) -> str:
        """The statement most like the anchor, in full, and where the two first differ.

        With nothing close, a handful of the function's statements, most alike
        first: an ANCHOR_NOT_FOUND never leaves the reader without the code.
        Worked out once per text of the function (``CodeState.def_text``),
        with lines counted from the def, and placed at this version's def.
        """
        text = state.def_text(fn, self.function)
        key = (self.anchor, text) if text is not None else None
        render = CLOSEST.get(key) if key is not None else None
        if render is None:
            render = self._closest_from_def(fn, state)
            if key is not None:
                CLOSEST[key] = render
        return render(fn.lineno)

    def _closest_from_def(self, fn: FunctionNode, state: CodeState) -> Callable[[int], str]:
        """``_closest`` as a function of the def's line."""
        wanted = _anchor_text(self.anchor)
        candidates: dict[str, int] = {}  # text -> its line, counted from the def's
        for match in walk_statements(fn.body):
            if isinstance(match.node, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)):
                continue  # a compound statement's text is its whole block: not a useful suggestion
            candidates.setdefault(state.remembered("text", match.node, _full_text), match.node.lineno - fn.lineno)
        if not candidates:
            return lambda _at: "; the function has no simple statements"
        best = close_matches(wanted, tuple(candidates))
        if best:
            top, difference = best[0], first_difference(wanted, best[0])
            second = best[1] if len(best) > 1 else None

            def closest(at: int) -> str:
                shown = f"; closest: line {at + candidates[top]}: `{top}` ({difference})"
                if second is not None:
                    shown += f"; next: line {at + candidates[second]}: `{second}`"
                return shown

            return closest
        ranked = alike_first(wanted, list(candidates.items()), ratios=similarities(wanted, tuple(candidates)))

        def nothing_close(at: int) -> str:
            listed = [f"line {at + line}: `{one_line(text, 80)}`" for text, line in ranked[:SHOWN]]
            return f"; nothing close among its {len(ranked)} statements, most alike first: " + listed_with_more(
                listed, len(ranked)
            )

        return nothing_close

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        return state.function_span(self.function)

    def simulate(self, state: CodeState, outcome: Outcome[int], patch_id: str) -> None:
        _fn, matches = self._matches(state)
        match = matches[0]
        old = outcome.plan or 0  # statements of an older version to replace
        if self.position == "before":
            start, end = match.at - old, match.at
        else:
            start, end = match.at + 1, match.at + 1 + old
        match.body[start:end] = state.splice(self.statements, line=match.node.lineno, patch_id=patch_id)

    def transform(self, module: cst.Module, outcome: Outcome[int]) -> cst.Module:
        edit = edit_lazy()
        source_fn = edit.find_definition(self.payload.cst_module(), self.body_of, edit.cst.FunctionDef, scoped=False)
        stmts = list(edit.block_body(source_fn))
        if stmts and edit.is_cst_docstring(stmts[0]):
            stmts = stmts[1:]
        if stmts:
            stmts[0] = edit.without_leading_blank_lines(stmts[0])
        inserter = edit.AnchorInserter(self.anchor_canon, self.position, stmts, replace=outcome.plan or 0)
        new = edit.update_function(module, self.function, lambda fn: fn.visit(inserter))
        if inserter.hits != 1:
            raise InternalError(f"anchor matched {inserter.hits} statements in libcst, 1 in the analysis")
        return new


# A range check analyses one function in hundreds of file versions, and
# the statements an anchor is compared with rarely change between them: the
# text comparisons (difflib, the bulk of an ANCHOR_NOT_FOUND) are memoised on
# the texts alone, so shifted line numbers still hit.

NO_MATCH: Memo[tuple[str, str], bool] = Memo("insert: (anchor canon, def text) with no statement matching", 4096)
"""What depends on a function's body alone, per text of the def (``CodeState.def_text``): the
(anchor canon, def text) of a body with no statement matching that anchor."""
CLOSEST: Memo[tuple[str, str], Callable[[int], str]] = Memo("insert: (anchor, def text) -> closest statements", 4096)
"""(anchor, def text) -> the closest statements, as a function of the def's line."""


def _full_text(node: ast.AST) -> str:
    return unparse_short(node, UNLIMITED)


@lru_cache(maxsize=64)
def _anchor_text(anchor: str) -> str:
    return unparse_short(parse_statement(anchor), UNLIMITED)


MAX_PREVIOUS = 20  # the longest older version of an insert that is recognised


def _sequence_digest(stmts: Iterable[ast.AST]) -> str:
    return "sha256:" + hashlib.sha256(canon(list(stmts)).encode("utf-8")).hexdigest()
