"""libcst editing helpers shared by the operations' ``transform`` steps.

Everything here rebuilds only the nodes on the path to the edit; libcst keeps
every other node (and so every other byte) as it was parsed.  Targets are
found the same way ``lookup.py`` finds them on the ast: the last definition of a
name in its block, statements compared by ``canon``.  ``find_definition`` (a
payload's definitions, ``scoped=False``) and ``update_definition`` (a target's)
are the one libcst definition lookup.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import libcst as cst

from patchkit.errors import InternalError
from patchkit.operations.digests import canon

_EMPTY = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def statement_canons(stmt: cst.BaseStatement) -> list[str]:
    """canon() of each ast statement this cst statement holds (``a; b`` holds two)."""
    tree = ast.parse(code_of(stmt))
    return [canon(s) for s in tree.body]


def _replace_last(
    body: Sequence[cst.BaseStatement],
    match: Callable[[cst.BaseStatement], bool],
    change: Callable[[cst.BaseStatement], cst.BaseStatement | Sequence[cst.BaseStatement]],
    what: str,
) -> list[cst.BaseStatement]:
    return _rebuild(body, _locate(body, match, what, scoped=False), change)


def _locate(
    body: Sequence[cst.BaseStatement], match: Callable[[cst.BaseStatement], bool], what: str, *, scoped: bool
) -> tuple[Step, ...]:
    """Where the last statement ``match`` accepts is: in ``body`` itself, or (``scoped``) see ``scoped_path``."""
    if scoped:
        return scoped_path(body, match, what)
    index = None
    for i, stmt in enumerate(body):
        if match(stmt):
            index = i
    if index is None:
        raise InternalError(f"libcst edit could not find {what} that the analysis found")
    return ((index, None),)


# -- the module scope: the body and the branches of top-level if / try blocks ----------------
#
# Mirrors code.scope_statements on the ast: same blocks, same order, same rule
# for which definition of a name is the target (code.resolve_scoped).  The
# analysis reports an ambiguous name before any edit, so here it is a bug.

Step = tuple[int, object]  # (index in the block, how to enter the sub-block there, or None at the end)


def _sub_blocks(stmt: cst.BaseStatement) -> list[tuple[object, object, list[cst.BaseStatement]]]:
    """(selector, block key, statements) for the branches of an if / try statement."""
    out: list[tuple[object, object, list[cst.BaseStatement]]] = []

    def block(node: cst.BaseSuite) -> list[cst.BaseStatement] | None:
        return list(node.body) if isinstance(node, cst.IndentedBlock) else None  # one-line suites: not targets

    if isinstance(stmt, cst.If):
        branches: list[tuple[object, cst.BaseSuite]] = [("body", stmt.body)]
        if isinstance(stmt.orelse, cst.Else):
            branches.append(("else", stmt.orelse.body))
        for selector, suite in branches:
            stmts = block(suite)
            if stmts is not None:
                out.append((selector, ("block", id(suite)), stmts))
        if isinstance(stmt.orelse, cst.If):  # `elif`: the ast sees an `else:` block holding one `if`
            out.append(("elif", ("elif", id(stmt)), [stmt.orelse]))
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        suites: list[tuple[object, cst.BaseSuite]] = [("body", stmt.body)]
        handlers: Sequence[cst.ExceptHandler | cst.ExceptStarHandler] = stmt.handlers
        suites += [(("handler", k), handler.body) for k, handler in enumerate(handlers)]
        if stmt.orelse is not None:
            suites.append(("else", stmt.orelse.body))
        if stmt.finalbody is not None:
            suites.append(("finally", stmt.finalbody.body))
        for selector, suite in suites:
            stmts = block(suite)
            if stmts is not None:
                out.append((selector, ("block", id(suite)), stmts))
    return out


def _with_sub_block(stmt: Any, selector: Any, stmts: list[cst.BaseStatement]) -> cst.BaseStatement:
    def suite(node: Any) -> Any:
        return node.with_changes(body=stmts)

    if selector == "body":
        return stmt.with_changes(body=suite(stmt.body))
    if selector == "elif":
        (only,) = stmts
        return stmt.with_changes(orelse=only)
    if selector == "else":
        return stmt.with_changes(orelse=stmt.orelse.with_changes(body=suite(stmt.orelse.body)))
    if selector == "finally":
        return stmt.with_changes(finalbody=stmt.finalbody.with_changes(body=suite(stmt.finalbody.body)))
    _kind, k = selector
    handlers = list(stmt.handlers)
    handlers[k] = handlers[k].with_changes(body=suite(handlers[k].body))
    return stmt.with_changes(handlers=handlers)


def _scope_walk(
    body: Sequence[cst.BaseStatement], key: object = "top", path: tuple[Step, ...] = ()
) -> Iterator[tuple[cst.BaseStatement, object, tuple[Step, ...]]]:
    for index, stmt in enumerate(body):
        yield stmt, key, (*path, (index, None))
        for selector, sub_key, stmts in _sub_blocks(stmt):
            yield from _scope_walk(stmts, sub_key, (*path, (index, selector)))


def scoped_path(
    body: Sequence[cst.BaseStatement], match: Callable[[cst.BaseStatement], bool], what: str
) -> tuple[Step, ...]:
    """Where the targeted definition is: the same one code.resolve_scoped picks."""
    found = [(key, path) for stmt, key, path in _scope_walk(body) if match(stmt)]
    if not found:
        raise InternalError(f"libcst edit could not find {what} that the analysis found")
    last_key, last_path = found[-1]
    if len(last_path) == 1 or all(key == last_key for key, _ in found):
        return last_path
    raise InternalError(f"libcst edit found {what} in more than one branch, which the analysis reports")


def _rebuild(
    body: Sequence[cst.BaseStatement],
    path: tuple[Step, ...],
    change: Callable[[cst.BaseStatement], cst.BaseStatement | Sequence[cst.BaseStatement]],
) -> list[cst.BaseStatement]:
    (index, selector), *rest = path
    out = list(body)
    if selector is None:
        new = change(out[index])
        out[index : index + 1] = [new] if isinstance(new, cst.BaseStatement) else list(new)
        return out
    stmt = out[index]
    inner = next(stmts for sel, _key, stmts in _sub_blocks(stmt) if sel == selector)
    out[index] = _with_sub_block(stmt, selector, _rebuild(inner, tuple(rest), change))
    return out


def replace_scoped(
    body: Sequence[cst.BaseStatement],
    match: Callable[[cst.BaseStatement], bool],
    change: Callable[[cst.BaseStatement], cst.BaseStatement | Sequence[cst.BaseStatement]],
    what: str,
) -> list[cst.BaseStatement]:
    """``_replace_last`` for the module scope: the definition may sit in an if / try branch."""
    return _rebuild(body, scoped_path(body, match, what), change)


def top_index(body: Sequence[cst.BaseStatement], match: Callable[[cst.BaseStatement], bool], what: str) -> int:
    """Index of the top-level statement that holds the targeted definition."""
    return scoped_path(body, match, what)[0][0]


def _named(kind: type, name: str) -> Callable[[cst.BaseStatement], bool]:
    return lambda stmt: isinstance(stmt, kind) and isinstance(stmt, _DEFS) and stmt.name.value == name


_DEFS = (cst.ClassDef, cst.FunctionDef)


BlockT = TypeVar("BlockT", cst.ClassDef, cst.FunctionDef)


def block_body(node: cst.ClassDef | cst.FunctionDef) -> list[cst.BaseStatement]:
    body = node.body
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    # `class A: pass` -- a one-line suite; edits turn it into an indented block.
    assert isinstance(body, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=list(body.body))]


def with_block_body(node: BlockT, stmts: Sequence[cst.BaseStatement]) -> BlockT:
    body = node.body
    if isinstance(body, cst.IndentedBlock):
        return node.with_changes(body=body.with_changes(body=list(stmts)))
    assert isinstance(body, cst.SimpleStatementSuite)
    return node.with_changes(
        body=cst.IndentedBlock(body=list(stmts), header=body.trailing_whitespace),
        whitespace_before_colon=node.whitespace_before_colon,
    )


def _definition_steps(dotted: str, kind: type) -> list[tuple[type, str]]:
    """``A.B.f`` as lookups: classes ``A`` and ``B``, then ``f`` of ``kind``."""
    *owners, name = dotted.split(".")
    return [*((cst.ClassDef, owner) for owner in owners), (kind, name)]


def _statement_at(body: Sequence[cst.BaseStatement], path: tuple[Step, ...]) -> cst.BaseStatement:
    (index, selector), *rest = path
    stmt = body[index]
    if selector is None:
        return stmt
    inner = next(stmts for sel, _key, stmts in _sub_blocks(stmt) if sel == selector)
    return _statement_at(inner, tuple(rest))


def find_definition(module: cst.Module, dotted: str, kind: type[BlockT], *, scoped: bool = True) -> BlockT:
    """The class or function ``dotted`` (``A.B.f``) of a module, as the ast side finds it.

    ``scoped``: the module level includes the branches of top-level if / try
    blocks (a target file); otherwise only the module body (a payload).  In
    every block the last definition of a name wins.
    """
    body: Sequence[cst.BaseStatement] = module.body
    node: cst.BaseStatement | None = None
    for depth, (step_kind, name) in enumerate(_definition_steps(dotted, kind)):
        node = _statement_at(body, _locate(body, _named(step_kind, name), dotted, scoped=scoped and depth == 0))
        if isinstance(node, cst.ClassDef):
            body = block_body(node)
    assert isinstance(node, kind)
    return node


def update_definition(
    module: cst.Module,
    dotted: str,
    kind: type[BlockT],
    change: Callable[[BlockT], cst.BaseStatement | Sequence[cst.BaseStatement]],
) -> cst.Module:
    """``module`` with the definition ``find_definition`` finds replaced by ``change(it)``."""
    steps = _definition_steps(dotted, kind)

    def descend(body: Sequence[cst.BaseStatement], depth: int) -> list[cst.BaseStatement]:
        step_kind, name = steps[depth]

        def apply(stmt: cst.BaseStatement) -> cst.BaseStatement | Sequence[cst.BaseStatement]:
            if depth == len(steps) - 1:
                assert isinstance(stmt, kind)
                return change(stmt)
            assert isinstance(stmt, cst.ClassDef)
            return with_block_body(stmt, descend(block_body(stmt), depth + 1))

        what = f"{'class' if step_kind is cst.ClassDef else 'function'} {dotted}"
        return _rebuild(body, _locate(body, _named(step_kind, name), what, scoped=depth == 0), apply)

    return module.with_changes(body=descend(module.body, 0))


def update_class(module: cst.Module, dotted: str, change: Callable[[cst.ClassDef], cst.ClassDef]) -> cst.Module:
    return update_definition(module, dotted, cst.ClassDef, change)


def update_function(
    module: cst.Module,
    qualname: str,
    change: Callable[[cst.FunctionDef], cst.BaseStatement | Sequence[cst.BaseStatement]],
) -> cst.Module:
    return update_definition(module, qualname, cst.FunctionDef, change)  # async defs: FunctionDef too


def spaced(stmt: cst.BaseStatement, blank_lines: int = 1) -> cst.BaseStatement:
    """The statement with exactly ``blank_lines`` blank lines before it.

    Comments attached above it in the payload are kept.
    """
    leading = list(getattr(stmt, "leading_lines", ()))
    while leading and leading[0].comment is None:
        leading.pop(0)
    return stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * blank_lines + leading)


def without_leading_blank_lines(stmt: cst.BaseStatement) -> cst.BaseStatement:
    return spaced(stmt, 0)


class AnchorInserter(cst.CSTTransformer):
    """Inserts statements before/after the one statement whose canon matches."""

    def __init__(self, anchor: str, position: str, stmts: Sequence[cst.BaseStatement], *, replace: int = 0) -> None:
        super().__init__()
        self.anchor = anchor
        self.position = position
        self.stmts = list(stmts)
        self.replace = replace  # statements next to the anchor to drop (an older version of the insert)
        self.hits = 0
        self._depth = 0

    # Do not look inside nested functions or classes: the anchor belongs to
    # the function the patch names, as in code.walk_statements.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        return self._depth == 1

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self._depth -= 1
        return updated

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        out: list[cst.BaseStatement] = []
        changed = False
        skip = 0
        for orig, upd in zip(original.body, updated.body, strict=True):
            if skip:
                skip -= 1
                continue
            if self.anchor in statement_canons(orig):
                self.hits += 1
                changed = True
                if self.position == "before":
                    if self.replace:
                        del out[-self.replace :]
                    out.extend(self.stmts)
                    out.append(upd)
                else:
                    out.append(upd)
                    out.extend(self.stmts)
                    skip = self.replace
            else:
                out.append(upd)
        return updated.with_changes(body=out) if changed else updated


def _cst_target_names(node: cst.BaseExpression) -> set[str]:
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for element in node.elements:
            out |= _cst_target_names(element.value)
        return out
    return set()


def is_cst_docstring(stmt: cst.BaseStatement) -> bool:
    """Mirror of code.is_docstring: a statement that is a lone string literal."""
    # Not libcst.matchers: importing it costs more than libcst itself, on every apply.
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_cst_import(stmt: cst.BaseStatement) -> bool:
    """A line of imports only (``import a`` or ``from b import c``; ``;`` may join several)."""
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body
    )


def cst_import_index(body: Sequence[cst.BaseStatement], wanted: str | None, *, last: bool = True) -> int | None:
    """``code.import_index`` on libcst: the line holding exactly the import statement whose ``canon`` is
    ``wanted`` (the last one, or with ``last=False`` the first)."""
    found = None
    for index, stmt in enumerate(body):
        if is_cst_import(stmt) and statement_canons(stmt) == [wanted]:
            found = index
            if not last:
                break
    return found


def import_block_end(body: Sequence[cst.BaseStatement]) -> int:
    """Mirror of CodeState.import_block_end: the index after the leading docstring-and-imports block."""
    end = 0
    for index, stmt in enumerate(body):
        if is_cst_import(stmt) or (index == 0 and is_cst_docstring(stmt)):
            end = index + 1
        else:
            break
    return end


Line = cst.SimpleStatementLine | cst.BaseCompoundStatement
"""A statement of a module body (one with leading lines)."""


def grouped_below(new: Line, group: bool) -> Line:
    """``new``, to be inserted right below a statement: with ``group``, after one blank line
    (a group of its own); the statement below it keeps its own blank lines and comments."""
    return new.with_changes(leading_lines=[cst.EmptyLine()]) if group else new


def grouped_above(new: Line, anchor: Line, group: bool) -> list[Line]:
    """``new`` and ``anchor``, with ``new`` right above ``anchor``, below the blank lines and comments
    that were above ``anchor`` (they move above ``new``); with ``group``, one blank line between the two."""
    return [
        new.with_changes(leading_lines=anchor.leading_lines),
        anchor.with_changes(leading_lines=[cst.EmptyLine()] if group else []),
    ]


def cst_bound_names(stmt: cst.BaseStatement) -> set[str]:
    """Mirror of code.bound_names for libcst statements."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return {stmt.name.value}
    names: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    names |= _cst_target_names(target.target)
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                names |= _cst_target_names(small.target)
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    names.add(code_of(bound).split(".")[0].strip())
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    names.add(code_of(bound).strip())
    return names


def binds(name: str) -> Callable[[cst.BaseStatement], bool]:
    return lambda stmt: name in cst_bound_names(stmt)


def keeping_leading_lines(new: cst.BaseStatement) -> Callable[[cst.BaseStatement], cst.BaseStatement]:
    """A replacement that keeps the blank lines and comments above the old statement."""

    def change(old: cst.BaseStatement) -> cst.BaseStatement:
        return new.with_changes(leading_lines=getattr(old, "leading_lines", ()))

    return change


def place_definitions(
    body: Sequence[cst.BaseStatement],
    replace: Sequence[tuple[str, cst.BaseStatement]],
    add: Sequence[cst.BaseStatement],
    *,
    insert_at: int | None,
    blank_lines: int,
) -> list[cst.BaseStatement]:
    """Replace the last binding of each name, then insert ``add`` (None: at the end)."""
    out = list(body)
    for name, new in replace:
        out = _replace_last(out, binds(name), keeping_leading_lines(new), name)
    added = [spaced(stmt, blank_lines) for stmt in add]
    index = len(out) if insert_at is None else insert_at
    if added and index == 0:
        # First statement of its block (e.g. of an empty module): no blank lines above it.
        added[0] = spaced(added[0], 0)
    out[index:index] = added
    following = index + len(added)
    if added and following < len(out):
        # Keep the added block apart from what follows: add blank lines above
        # the next statement if it has fewer (never remove any of upstream's).
        nxt = out[following]
        have = 0
        for line in getattr(nxt, "leading_lines", ()):
            if line.comment is not None:
                break
            have += 1
        if have < blank_lines:
            extra = [cst.EmptyLine(indent=False)] * (blank_lines - have)
            out[following] = nxt.with_changes(leading_lines=extra + list(getattr(nxt, "leading_lines", ())))
    return out
