"""Lookups on a Python file's ``ast``: the one way every op finds what it targets.

Definitions are found by one lookup, ``find_class`` / ``find_function``: in a
target file's module scope (top-level if / try branches included, see
``resolve_scoped``) or, with ``scoped=False``, in a payload's module body; in
every block the last definition of a name wins.  ``edit.find_definition`` is
the same lookup on libcst.  A name bound in more than one branch is
``AmbiguousTarget``: patchkit does not guess which branch runs.

Inside a function, ``walk_statements`` visits every statement of its body
(not those of nested defs).  ``not_found_class`` says what a missing class
was probably renamed to, from the file's structure.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import partial
from types import UnionType
from typing import TYPE_CHECKING, NamedTuple

from patchkit.operations.wording import closest, unparse_short, what_is_there

if TYPE_CHECKING:
    from patchkit.operations.code import CodeState

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
"""A function or method (also what ``isinstance`` tests for one)."""

DEF_KINDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
"""The statements that define a name with a body of their own: a def or a class (a new scope)."""

HAS_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match)
"""Statements with blocks of statements (everything else is a simple statement: nothing to descend into)."""


def _find_named(
    body: list[ast.stmt],
    name: str,
    kinds: type | UnionType,
    *,
    scoped: bool,
    lines: Sequence[str],
    module: Sequence[ScopedStatement] | None = None,
) -> ast.stmt | None:
    """The definition of ``name`` Python binds in ``body``: the last one.

    ``scoped`` (a target file's module body): also in the branches of
    top-level if / try blocks, with ``resolve_scoped``'s rule (may raise
    AmbiguousTarget).  Otherwise (a class body, or a payload): the block itself.
    """
    if scoped:
        items = module if module is not None else list(scope_statements(body, lines))
        return resolve_scoped(name, [item for item in items if _named(item.node, name, kinds)])
    last: ast.stmt | None = None
    for stmt in body:
        if _named(stmt, name, kinds):
            last = stmt
    return last


def _named(stmt: ast.stmt, name: str, kinds: type | UnionType) -> bool:
    return isinstance(stmt, kinds) and isinstance(stmt, DEF_KINDS) and stmt.name == name


def find_class(
    body: list[ast.stmt],
    dotted: str,
    *,
    scoped: bool = True,
    lines: Sequence[str] = (),
    module: Sequence[ScopedStatement] | None = None,
) -> ast.ClassDef | None:
    """The class ``A.B`` in a module ``body`` (see ``_find_named`` for ``scoped``;
    ``module``: ``scope_statements(body, lines)`` if the caller has it already)."""
    found: ast.ClassDef | None = None
    for depth, part in enumerate(dotted.split(".")):
        node = _find_named(
            body,
            part,
            ast.ClassDef,
            scoped=scoped and depth == 0,
            lines=lines,
            module=module if depth == 0 else None,
        )
        if not isinstance(node, ast.ClassDef):
            return None
        found = node
        body = found.body
    return found


def find_function(
    body: list[ast.stmt],
    qualname: str,
    *,
    scoped: bool = True,
    lines: Sequence[str] = (),
    module: Sequence[ScopedStatement] | None = None,
) -> tuple[FunctionNode | None, ast.ClassDef | None, str | None]:
    """(function or method, owning class, name of the missing class) for ``qualname`` in a module ``body``."""
    *owners, name = qualname.split(".")
    owner = find_class(body, ".".join(owners), scoped=scoped, lines=lines, module=module) if owners else None
    if owners and owner is None:
        return None, None, ".".join(owners)
    found = _find_named(
        owner.body if owner else body,
        name,
        FunctionNode,
        scoped=scoped and owner is None,
        lines=lines,
        module=module if owner is None else None,
    )
    return (found if isinstance(found, FunctionNode) else None), owner, None


class ScopedStatement(NamedTuple):
    """A module-level statement and its block (a tuple: built for every statement of every version)."""

    node: ast.stmt
    block: list[ast.stmt]  # the list that holds it (the module body or a branch)
    describe: Callable[[], str] | None = None  # None at the top; else what ``branch`` says

    @property
    def branch(self) -> str | None:
        """None at the top; else e.g. "under `if _is_cuda:` at line 3".

        Worded only when asked (a message needs it): every lookup walks the
        module's statements, and few of those walks end in a message, so
        unparsing each ``if`` test on every walk would be work thrown away."""
        return self.describe() if self.describe is not None else None


def _branches(stmt: ast.stmt) -> Iterator[tuple[list[ast.stmt], Callable[[], str]]]:
    """The blocks of a top-level ``if`` / ``try`` whose names bind in the module namespace."""
    if isinstance(stmt, ast.If):
        yield stmt.body, lambda: f"under `if {unparse_short(stmt.test, 60)}:` at line {stmt.lineno}"
        if stmt.orelse:
            yield stmt.orelse, lambda: f"under the `else:` of the if at line {stmt.lineno}"
    elif isinstance(stmt, (ast.Try, ast.TryStar)):
        yield stmt.body, lambda: f"under `try:` at line {stmt.lineno}"
        for handler in stmt.handlers:
            yield handler.body, partial(_except_label, handler)
        if stmt.orelse:
            yield stmt.orelse, lambda: f"under the `else:` of the try at line {stmt.lineno}"
        if stmt.finalbody:
            yield stmt.finalbody, lambda: f"under the `finally:` of the try at line {stmt.lineno}"


def _except_label(handler: ast.ExceptHandler) -> str:
    caught = f" {unparse_short(handler.type, 60)}" if handler.type is not None else ""
    return f"under `except{caught}:` at line {handler.lineno}"


def scope_statements(
    body: list[ast.stmt], lines: Sequence[str] = (), describe: Callable[[], str] | None = None
) -> Iterator[ScopedStatement]:
    """The statements of a module scope in source order, descending into if / try branches.

    With the file's ``lines``, a one-line branch (``else: x = 1``) is left
    out, as libcst's side (``edit.scoped_path``) leaves it: patchkit edits
    whole lines.
    """
    for stmt in body:
        yield ScopedStatement(stmt, body, describe)
        if not isinstance(stmt, _BRANCHING):
            continue
        for block, label in _branches(stmt):
            first = block[0]
            if lines and first.lineno <= len(lines):
                before = lines[first.lineno - 1].encode("utf-8")[: first.col_offset].decode("utf-8", "replace")
                if before.strip():
                    continue
            yield from scope_statements(block, lines, label)


_BRANCHING = (ast.If, ast.Try, ast.TryStar)


class AmbiguousTarget(Exception):
    """A name bound in more than one branch of top-level ``if`` / ``try`` blocks.

    patchkit cannot know which branch runs, so it does not pick one; the
    engine turns this into a FAIL ``UNSUPPORTED_TARGET`` that lists every line.
    """

    def __init__(self, name: str, found: Sequence[ScopedStatement]) -> None:
        self.name = name
        self.found = tuple(found)
        places = ", ".join(f"line {item.node.lineno} ({item.branch or 'at the top level'})" for item in found)
        super().__init__(
            f"{name} is defined in more than one branch: {places}; which one runs depends on the condition, "
            "so patchkit does not guess: target a name defined once, or patch upstream so one definition remains"
        )

    @property
    def line(self) -> int:
        return self.found[-1].node.lineno


def resolve_scoped(name: str, found: Sequence[ScopedStatement]) -> ast.stmt | None:
    """The definition Python binds, or AmbiguousTarget.

    The last one wins when it is at the top level (it runs after the others,
    whatever the conditions) or when every definition is in the same block;
    otherwise the answer depends on a condition.
    """
    if not found:
        return None
    last = found[-1]
    if last.branch is None or all(item.block is last.block for item in found):
        return last.node
    raise AmbiguousTarget(name, found)


def replace_statement(body: list[ast.stmt], old: ast.stmt, new: ast.stmt) -> None:
    """Put ``new`` where ``old`` is, in ``body`` or one of its if / try branches."""
    for item in scope_statements(body):
        if item.node is old:
            item.block[item.block.index(old)] = new
            return
    raise ValueError("statement to replace is not in this scope")


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def bound_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module namespace."""
    if isinstance(stmt, DEF_KINDS):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        names: set[str] = set()
        for target in stmt.targets:
            names |= _target_names(target)
        return names
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return _target_names(stmt.target)
    if isinstance(stmt, ast.Import):
        return {alias.asname or alias.name.split(".")[0] for alias in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {alias.asname or alias.name for alias in stmt.names}
    return set()


def _target_names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        out: set[str] = set()
        for element in target.elts:
            out |= _target_names(element)
        return out
    return set()


def definition_name(stmt: ast.stmt) -> str | None:
    """The single name a payload definition provides, or None if it is not one."""
    if isinstance(stmt, DEF_KINDS):
        return stmt.name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return None


_ATTRIBUTE_CALLS = ("getattr", "hasattr", "setattr", "delattr")


def self_attributes(nodes: Iterable[ast.AST]) -> set[str]:
    """The ``self.X`` names the given methods read or call (also as ``getattr(self, "X", ...)`` and
    its kin): what they need of the class they go into."""
    out: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                out.add(sub.attr)
            elif (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Name)
                and sub.func.id in _ATTRIBUTE_CALLS
                and len(sub.args) >= 2
                and isinstance(sub.args[0], ast.Name)
                and sub.args[0].id == "self"
                and isinstance(sub.args[1], ast.Constant)
                and isinstance(sub.args[1].value, str)
            ):
                out.add(sub.args[1].value)
    return out


def _members(cls: ast.ClassDef) -> set[str]:
    """Methods, class attributes and ``self.X = ...`` attributes of a class."""
    out: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, DEF_KINDS):
            out.add(stmt.name)
        out |= bound_names(stmt) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else set()
    for sub in ast.walk(cls):
        if not (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)):
            continue
        if isinstance(sub.value, ast.Name) and sub.value.id == "self":
            out.add(sub.attr)
    return out


def _entry_classes(state: CodeState) -> set[str]:
    """Names the module assigns to ``EntryClass`` (SGLang's model registry reads it)."""
    out: set[str] = set()
    for item in state.module_statements():
        node = item.node
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            out |= {v.id for v in values if isinstance(v, ast.Name)}
    return out


def _shown(names: Sequence[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def renamed_class(
    state: CodeState, name: str, uses: Collection[str] = (), members: Collection[str] = ()
) -> tuple[str, int, str] | None:
    """The class ``name`` was most probably renamed to, by structure, not spelling: (name, line, why).

    Signals, strongest first: being the module's ``EntryClass``; holding the class's old members
    (``members``: the methods the patch puts there, the payload's; one whose code the tree's record
    says patchkit wrote there is named as such); having the members the patch uses (``uses``, the
    ``self.X`` its code reads); the bases the others do not share; the position in the file (the
    last class, where a model file defines the model its other classes build); then the spelling,
    least.  A candidate is named only when it clearly stands out (a score of 2 or more, 1 ahead of
    the next).
    """
    classes = [item.node for item in state.module_statements() if isinstance(item.node, ast.ClassDef)]
    if len(classes) < 2:
        return None  # one class or none: the listing that follows names it anyway
    entry = _entry_classes(state)
    wanted = set(uses)
    old = set(members)
    last = max(classes, key=lambda cls: cls.lineno)
    base_counts: dict[str, int] = {}
    for cls in classes:
        for base in {ast.unparse(b) for b in cls.bases}:
            base_counts[base] = base_counts.get(base, 0) + 1
    scored: list[tuple[float, ast.ClassDef, list[str]]] = []
    for cls in classes:
        score, why = 0.0, []
        if cls.name in entry:
            score += 2
            why.append("it is the file's EntryClass")
        if old:
            held = sorted(old & _members(cls))
            score += 2 * len(held) / len(old)
            ours = [n for n in held if _written_by_patchkit(state, cls, n)]
            if ours:
                why.append(f"it holds {_shown(ours)}, which patchkit wrote there")
            elif held:
                why.append(f"it already has {_shown(held)}, which the patch adds")
        if wanted:
            shared = sorted(wanted & _members(cls))
            score += 2 * len(shared) / len(wanted)
            if shared:
                why.append(f"it has {_shown(shared)}, which the patch uses")
        bases = {ast.unparse(b) for b in cls.bases}
        if bases and all(base_counts[b] == 1 for b in bases):
            score += 0.25  # the only class on these bases (the vision blocks share theirs)
        if cls is last:
            score += 0.5
            why.append("it is the file's last class")
        score += difflib.SequenceMatcher(None, name, cls.name).ratio() * 0.5
        scored.append((score, cls, why))
    scored.sort(key=lambda item: -item[0])
    best = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else 0.0
    if best[0] < 2 or best[0] - runner_up < 1 or not best[2]:
        return None
    return best[1].name, best[1].lineno, " and ".join(best[2])


def _written_by_patchkit(state: CodeState, cls: ast.ClassDef, member: str) -> bool:
    """Whether ``cls``'s definition of ``member`` is code the tree's record says patchkit wrote."""
    return any(
        isinstance(stmt, DEF_KINDS) and stmt.name == member and state.patchkit_wrote(stmt) is not None
        for stmt in cls.body
    )


def not_found_class(state: CodeState, name: str, uses: Collection[str] = (), members: Collection[str] = ()) -> str:
    """What follows "class X is not defined in F": a probable rename first when the structure says
    so and the spelling does not already point at it, then the classes there (``what_is_there``)."""
    classes = state.all_classes()
    listing = what_is_there("classes", name, classes)
    renamed = renamed_class(state, name, uses, members)
    if renamed is None:
        return listing
    alike = closest(name, classes)
    if alike and alike[0][0] == renamed[0]:
        return listing  # the spelling already names it first
    return f"; probably renamed to {renamed[0]} (line {renamed[1]}): {renamed[2]}" + listing


class StatementMatch(NamedTuple):
    """A statement and where it sits (a tuple: a range check builds millions of them)."""

    node: ast.stmt
    body: list[ast.stmt]  # the block that holds it (mutable, for simulation)
    at: int  # its index in body


def walk_statements(body: list[ast.stmt]) -> Iterator[StatementMatch]:
    """Every statement inside a function body, depth first, not into nested defs."""
    for index, stmt in enumerate(body):
        yield StatementMatch(stmt, body, index)
        if isinstance(stmt, DEF_KINDS) or not isinstance(stmt, HAS_BLOCKS):
            continue
        for block in _sub_blocks(stmt):
            yield from walk_statements(block)


def _sub_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body
