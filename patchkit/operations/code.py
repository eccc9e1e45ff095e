"""The read-only model of a Python file that operations analyse.

Verdicts are computed on the stdlib ``ast`` (about 9x faster to build than a
libcst tree on a 40 KB file, and it carries line numbers for free); edits are
made with libcst (``operations/edit.py``), which round-trips every byte it does
not touch.  One analysis serves ``apply``, ``status`` and ``check``, so a range
check and an apply can never disagree about a verdict.  After an edit the
engine re-analyses libcst's output and requires every applied patch to read
back as ALREADY_APPLIED (see ``engine/evaluate.py``).

Patches on one file compose in manifest order: after a patch APPLYs, its
effect is *simulated* on the ast (the payload's nodes are spliced in), so the
next patch sees the file as it will be.  Spliced nodes carry the line where
they will land, so every line number reported refers to the file as read.

Definitions are found by one lookup, ``find_class`` / ``find_function``: in a
target file's module scope (top-level if / try branches included, see
``resolve_scoped``) or, with ``scoped=False``, in a payload's module body; in
every block the last definition of a name wins.  ``edit.find_definition`` is
the same lookup on libcst.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, TypeVar, cast

NodeT = TypeVar("NodeT", bound=ast.AST)
T = TypeVar("T")

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

# CodeState.remembered's values by (what, exact source span), across every file version a process reads.
_SPAN_MEMO: dict[tuple[str, str], str] = {}
_SPAN_MEMO_MAX = 200_000
_SPAN_LINES = 12

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def canon(node: ast.AST | Sequence[ast.AST]) -> str:
    """A stable text form of code, blind to formatting and comments.

    Unlike ``ast.dump`` it skips empty and ``None`` fields, so that fields
    added by newer Pythons (``type_params`` in 3.12) leave digests unchanged.
    """
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, ast.AST):
            out.append(type(value).__name__)
            out.append("(")
            for name in value._fields:
                item = getattr(value, name, None)
                if item is None or (isinstance(item, list) and not item):
                    continue
                if name in ("kind", "type_comment"):
                    continue
                out.append(name)
                out.append("=")
                walk(item)
                out.append(",")
            out.append(")")
        elif isinstance(value, list):
            out.append("[")
            for item in value:
                walk(item)
                out.append(",")
            out.append("]")
        else:
            out.append(repr(value))

    walk(node)
    return "".join(out)


def digest(node: ast.AST) -> str:
    """The digest that `expect` in a replace-function patch is compared to."""
    return digest_of_canon(canon(node))


def digest_of_canon(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


_PAYLOAD_CANON: dict[int, tuple[ast.AST, str]] = {}


def payload_canon(node: ast.AST) -> str:
    """``canon(node)`` of a payload's node, computed once: payload trees live as long as the
    manifest and are never edited, yet every version of a target compares against them."""
    hit = _PAYLOAD_CANON.get(id(node))
    if hit is None or hit[0] is not node:
        hit = _PAYLOAD_CANON[id(node)] = (node, canon(node))  # the node is kept: its id is not reused
    return hit[1]


def short_digest(value: str) -> str:
    return value[: len("sha256:") + 12]


def parse_statement(code: str) -> ast.stmt:
    """Parse exactly one statement (raises ValueError with a reason otherwise)."""
    try:
        tree = ast.parse(code.strip("\n"))
    except SyntaxError as exc:
        raise ValueError(f"is not valid Python ({exc.msg})") from None
    if len(tree.body) != 1:
        raise ValueError(f"must be exactly one statement, found {len(tree.body)}")
    return tree.body[0]


def one_line(code: str, limit: int = 80) -> str:
    """Code shown inside a message: first line, trimmed."""
    text = " ".join(part.strip() for part in code.strip().splitlines())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unparse_short(node: ast.AST, limit: int = 80) -> str:
    try:
        return one_line(ast.unparse(node), limit)
    except Exception:  # noqa: BLE001 (ast.unparse is best-effort on odd nodes; a message must not crash
        return type(node).__name__


@dataclass
class CodeState:
    """One file being evaluated: its text, its (mutable) ast, and splice marks."""

    path: str
    text: str
    tree: ast.Module
    # ids of nodes spliced in by simulation -> id of the patch that added them
    # digest() of code patchkit's record says patchkit wrote into this file -> when
    # (older payload versions: patchkit's own code, which a new version replaces)
    previous: dict[str, str] = field(default_factory=dict)
    added_by: dict[int, str] = field(default_factory=dict)
    _lines: list[str] | None = field(default=None, repr=False)
    # (what, id(node)) -> (node, text): see remembered()
    _memo: dict[tuple[str, int], tuple[ast.AST, str]] = field(default_factory=dict, repr=False, compare=False)
    _edited: bool = field(default=False, repr=False, compare=False)  # changed() was called: see _span()
    _in_place: bool = field(default=False, repr=False, compare=False)  # ... by an op that edits in place
    _edited_names: set[str] = field(default_factory=set, repr=False, compare=False)  # see def_text()
    _module: list[ScopedStatement] | None = field(default=None, repr=False, compare=False)
    _derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # see derived()

    @classmethod
    def parse(cls, path: str, text: str) -> CodeState:
        return cls(path=path, text=text, tree=ast.parse(text, filename=path))

    def remembered(self, what: str, node: ast.AST, compute: Callable[[ast.AST], str]) -> str:
        """``compute(node)``, computed once until the tree changes.

        Every patch on a file walks the same statements (ten inserts into one
        function canonicalise its statements ten times); the engine calls
        ``changed()`` after each simulated APPLY, which may edit any node.
        """
        key = (what, id(node))
        hit = self._memo.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        span = self._span(node)
        value = _SPAN_MEMO.get((what, span)) if span is not None else None
        if value is None:
            value = compute(node)
            if span is not None:
                if len(_SPAN_MEMO) >= _SPAN_MEMO_MAX:
                    _SPAN_MEMO.clear()
                _SPAN_MEMO[(what, span)] = value
        self._memo[key] = (node, value)  # the node is kept alive, so its id is not reused
        return value

    def _span(self, node: ast.AST) -> str | None:
        """The exact source text a statement was parsed from, as a key shared by every version of a file.

        A range check evaluates hundreds of versions of one file whose functions
        mostly hold the same statements; what ``remembered`` computes (canonical
        forms, unparsed text) depends only on the node, and a node parsed from
        the same text is the same node.  Only while the tree is as parsed (no
        simulated APPLY yet), and not for a def or class (its decorators lie
        outside its lines) or a block longer than a few lines.  Once a simulated APPLY has
        spliced statements into the tree, only simple statements (no block that could have
        received them) still read as their text; once one edited a statement in place, none.
        """
        if self._in_place or not isinstance(node, ast.stmt) or isinstance(node, _DEF_KINDS):
            return None
        if self._edited and isinstance(node, _HAS_BLOCKS):
            return None
        first, last = node.lineno, node.end_lineno
        if last is None or node.end_col_offset is None or last - first > _SPAN_LINES:
            return None
        lines = self.lines[first - 1 : last]
        return f"{node.col_offset}:{node.end_col_offset}:" + "\n".join(lines)

    def def_text(self, node: ast.AST, name: str) -> str | None:
        """The exact source lines the def ``name`` was parsed from (with its column), as a key
        shared by every version of a file for what depends on the def's body alone.

        None where its body may differ from those lines: an op edited statements in place, the
        def itself was spliced in (``added_by``), or a simulated APPLY changed code under a name
        that contains it or lies in it (``Operation.edits``: an insert into this function).  The
        test suite checks at every call that the text parses to the def's body as it is.
        """
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if self._in_place or first is None or last is None or id(node) in self.added_by:
            return None
        for edited in self._edited_names:
            if edited == name or name.startswith(edited + ".") or edited.startswith(name + "."):
                return None
        # From the first decorator: they are part of the def (and of its canon()).
        first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return f"{getattr(node, 'col_offset', 0)}:" + "\n".join(self.lines[first - 1 : last])

    def def_canon(self, node: ast.stmt, name: str) -> str:
        """``canon(node)`` of the def ``name`` (any other statement: computed each time),
        once per text of the def (``def_text``) across every version of the file."""
        text = self.def_text(node, name) if isinstance(node, _DEF_KINDS) else None
        if text is None:
            return canon(node)
        value = _SPAN_MEMO.get(("def-canon", text))
        if value is None:
            value = canon(node)
            if len(_SPAN_MEMO) >= _SPAN_MEMO_MAX:
                _SPAN_MEMO.clear()
            _SPAN_MEMO[("def-canon", text)] = value
        return value

    def changed(self, *, in_place: bool = True, names: Iterable[str] = ()) -> None:
        """The tree was edited (a simulated APPLY): forget what ``remembered`` computed.

        ``in_place``: the op may have edited statements that were there (``Operation.edits_in_place``);
        False when it only spliced new ones in.  ``names``: whose code it changed (``Operation.edits``)."""
        self._memo.clear()
        self._edited = True
        self._edited_names.update(names)
        self._in_place = self._in_place or in_place
        self._module = None
        self._derived.clear()

    def derived(self, what: str, compute: Callable[[CodeState], T]) -> T:
        """``compute(self)``, a view of the whole tree (an index of its imports, of the names
        it binds), computed once until a simulated APPLY changes the tree.  ``what`` names
        ``compute``: one name, one function."""
        if what not in self._derived:
            self._derived[what] = compute(self)
        return cast(T, self._derived[what])

    @property
    def last_line(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") or not self.text else 1)

    # -- lookups -----------------------------------------------------------

    def module_statements(self) -> Iterator[ScopedStatement]:
        """Every statement that binds in the module namespace, in source order.

        That is the module body and, recursively, the branches of top-level
        ``if`` / ``try`` blocks (SGLang defines classes, functions and imports
        under ``if _is_cuda:`` and ``try: ... except ImportError:``).
        """
        return iter(self._scoped())

    def _scoped(self) -> list[ScopedStatement]:
        """``module_statements`` as a list: every lookup walks it; kept until a simulated APPLY edits the tree."""
        if self._module is None:
            self._module = list(scope_statements(self.tree.body, self.lines))
        return self._module

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            # Python counts lines at \n, \r\n and \r only (not at \f or \x1c); without a \r
            # that is str.split, ten times faster than the pattern on a 150 KB file.
            self._lines = _LINE_BREAK.split(self.text) if "\r" in self.text else self.text.split("\n")
        return self._lines

    def find_class(self, dotted: str) -> ast.ClassDef | None:
        return find_class(self.tree.body, dotted, lines=self.lines, module=self._scoped())

    def find_function(self, qualname: str) -> tuple[FunctionNode | None, ast.ClassDef | None, str | None]:
        """Return (function, owning class, missing class name).

        The third item names the class that is missing when the qualname's
        class part does not resolve, so callers can say CLASS_NOT_FOUND rather
        than FUNCTION_NOT_FOUND.  A name bound in more than one branch raises
        ``AmbiguousTarget`` (the engine reports it; nothing is guessed).
        """
        return find_function(self.tree.body, qualname, lines=self.lines, module=self._scoped())

    def function_span(self, qualname: str) -> tuple[int, int] | None:
        """Lines of the function, or of its class when the method is missing."""
        fn, owner, _missing = self.find_function(qualname)
        node = fn or owner
        return (node.lineno, node.end_lineno or node.lineno) if node else None

    def module_binding(self, name: str) -> ast.stmt | None:
        """The statement that binds ``name`` at module level (def, class, assignment, import)."""
        return resolve_scoped(name, [item for item in self.module_statements() if name in bound_names(item.node)])

    def module_names(self) -> list[tuple[str, int]]:
        """(name, line) for everything bound at module level, in source order."""
        return [(n, item.node.lineno) for item in self.module_statements() for n in sorted(bound_names(item.node))]

    def all_classes(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []

        def walk(body: list[ast.stmt], prefix: str) -> None:
            for stmt in body:
                if isinstance(stmt, ast.ClassDef):
                    qual = prefix + stmt.name
                    out.append((qual, stmt.lineno))
                    walk(stmt.body, qual + ".")

        walk([item.node for item in self.module_statements()], "")
        return out

    def functions_in(self, owner: ast.ClassDef | None) -> list[tuple[str, int]]:
        body = owner.body if owner is not None else [item.node for item in self.module_statements()]
        return [(stmt.name, stmt.lineno) for stmt in body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def top_level_imports(self) -> list[ast.Import | ast.ImportFrom]:
        """Imports that bind names at module level, including in top-level if / try blocks."""
        return [item.node for item in self.module_statements() if isinstance(item.node, (ast.Import, ast.ImportFrom))]

    def branch_of(self, node: ast.stmt) -> str | None:
        """ "under `if _is_cuda:` (line 3)" for a statement in a top-level block, else None."""
        for item in self.module_statements():
            if item.node is node:
                return item.branch
        return None

    def import_block_end(self) -> int:
        """Index in ``tree.body`` after the leading docstring-and-imports block."""
        end = 0
        for index, stmt in enumerate(self.tree.body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or (index == 0 and is_docstring(stmt)):
                end = index + 1
            else:
                break
        return end

    def import_insert_line(self) -> int:
        """Line before which a new import goes: after the leading import block."""
        end = self.import_block_end()
        if end == 0:
            return 1
        last = self.tree.body[end - 1]
        if id(last) in self.added_by:
            # Added by an earlier patch of this run: its "line" is where it
            # will be inserted, which is also where the next import goes.
            return last.lineno
        return (last.end_lineno or last.lineno) + 1

    def alone_on_lines(self, node: ast.stmt) -> bool:
        """False for ``if x: y = 1`` or ``a = 1; b = 2``.

        patchkit inserts whole lines, so it cannot place code next to a
        statement that shares its lines with other code.
        """
        if id(node) in self.added_by:
            return True
        lines = self.lines
        first = lines[node.lineno - 1]
        before = first.encode("utf-8")[: node.col_offset].decode("utf-8", "replace")
        if before.strip():
            return False
        last_no = node.end_lineno or node.lineno
        last = lines[last_no - 1].encode("utf-8")
        after = last[node.end_col_offset or len(last) :].decode("utf-8", "replace").strip()
        return not after or after.startswith("#")

    # -- simulation (used after an APPLY verdict) -----------------------------

    def splice(self, nodes: Iterable[NodeT], *, line: int, patch_id: str) -> list[NodeT]:
        """Deep-copy payload nodes and mark them as added at ``line``."""
        return [_clone_at(node, line, patch_id, self.added_by) for node in nodes]


def _clone_at(node: NodeT, line: int, patch_id: str, added_by: dict[int, str]) -> NodeT:
    """A deep copy of an ast (a tree: no cycles, nothing shared that matters) placed at ``line``.

    What ``copy.deepcopy`` and an ``ast.walk`` setting ``lineno`` would give,
    in one pass and about five times faster: a range check splices payload
    code into every file version it simulates an APPLY on.
    """
    new = type(node).__new__(type(node))
    attrs = new.__dict__
    for key, value in node.__dict__.items():
        if isinstance(value, ast.AST):
            value = _clone_at(value, line, patch_id, added_by)
        elif isinstance(value, list):
            value = [_clone_at(v, line, patch_id, added_by) if isinstance(v, ast.AST) else v for v in value]
        attrs[key] = value
    if hasattr(new, "lineno"):  # statements, expressions, args, patterns...
        attrs["lineno"] = line
        attrs["end_lineno"] = line
    added_by[id(new)] = patch_id
    return new


_FUNCTION_KINDS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _find_named(
    body: list[ast.stmt],
    name: str,
    kinds: tuple[type, ...],
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


def _named(stmt: ast.stmt, name: str, kinds: tuple[type, ...]) -> bool:
    return isinstance(stmt, kinds) and isinstance(stmt, _DEF_KINDS) and stmt.name == name


_DEF_KINDS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


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
            (ast.ClassDef,),
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
        _FUNCTION_KINDS,
        scoped=scoped and owner is None,
        lines=lines,
        module=module if owner is None else None,
    )
    return (found if isinstance(found, _FUNCTION_KINDS) else None), owner, None


class ScopedStatement(NamedTuple):
    """A module-level statement and its block (a tuple: built for every statement of every version)."""

    node: ast.stmt
    block: list[ast.stmt]  # the list that holds it (the module body or a branch)
    describe: Callable[[], str] | None = None  # None at the top; else what ``branch`` says

    @property
    def branch(self) -> str | None:
        """None at the top; else e.g. "under `if _is_cuda:` at line 3".

        Worded only when asked (a message needs it): every lookup walks the
        module's statements, and unparsing each ``if`` test on every walk was
        a tenth of a range check's analysis time."""
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
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
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
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return None


def closest(name: str, candidates: Sequence[tuple[str, int]], limit: int = 3) -> list[tuple[str, int]]:
    """Candidates that look like ``name`` (best first), with their lines."""
    by_name: dict[str, int] = {}
    for candidate, line in candidates:
        by_name.setdefault(candidate, line)
    keys = list(by_name)
    matches = difflib.get_close_matches(name, keys, n=limit, cutoff=0.6)
    # Also a rename that keeps the stem: KimiK25ForX -> KimiK25VLForX scores high
    # already; a suffix match catches Outer.Inner moved under another class.
    tail = name.rsplit(".", 1)[-1]
    for key in keys:
        if key not in matches and key.rsplit(".", 1)[-1] == tail and len(matches) < limit:
            matches.append(key)
    return [(match, by_name[match]) for match in matches]


SHOWN = 5  # how many names a not-found message lists when none is close
UNLIMITED = 1 << 30  # for one_line(): show the code in full


def alike_first(
    name: str, candidates: Sequence[tuple[str, int]], ratios: Mapping[str, float] | None = None
) -> list[tuple[str, int]]:
    """Every candidate (once, first line kept), most similar to ``name`` first, then by line.

    ``ratios``: the candidates' similarity to ``name``, if the caller has them."""
    by_name: dict[str, int] = {}
    for candidate, line in candidates:
        by_name.setdefault(candidate, line)
    if ratios is None:
        ratios = {text: difflib.SequenceMatcher(None, name, text).ratio() for text in by_name}
    return sorted(by_name.items(), key=lambda item: (-ratios[item[0]], item[1]))


def listed_with_more(items: Sequence[str], total: int) -> str:
    more = total - len(items)
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


def what_is_there(kind: str, name: str, candidates: Sequence[tuple[str, int]], scope: str = "in this file") -> str:
    """What a not-found message shows: never a bare "not found".

    "; closest classes in this file: A (line 3)" when some names look alike;
    otherwise the names the file does define, a handful with their lines, most
    alike first, and how many more ("; the 9 classes in this file, most alike
    first: B (line 4), ... and 4 more"); or "; there are no classes in this
    file".
    """
    matches = closest(name, candidates)
    if matches:
        return f"; closest {kind} {scope}: " + ", ".join(f"{n} (line {line})" for n, line in matches)
    ranked = alike_first(name, candidates)
    if not ranked:
        return f"; there are no {kind} {scope}"
    shown = [f"{n} (line {line})" for n, line in ranked[:SHOWN]]
    if len(ranked) <= SHOWN:
        return f"; {kind} {scope}: {', '.join(shown)}"
    return f"; the {len(ranked)} {kind} {scope}, most alike first: " + listed_with_more(shown, len(ranked))


def self_attributes(nodes: Iterable[ast.AST]) -> set[str]:
    """The ``self.X`` names the given methods read or call: what they need of the class they go into."""
    out: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                out.add(sub.attr)
    return out


def _members(cls: ast.ClassDef) -> set[str]:
    """Methods, class attributes and ``self.X = ...`` attributes of a class."""
    out: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
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


def renamed_class(state: CodeState, name: str, uses: Collection[str] = ()) -> tuple[str, int, str] | None:
    """The class ``name`` was most probably renamed to, by structure, not spelling: (name, line, why).

    Signals: being the module's ``EntryClass``; having the members the patch uses (``uses``, the
    ``self.X`` its code reads); the bases the others do not share; then the spelling, least.  A
    candidate is named only when it clearly stands out (a score of 2 or more, 1 ahead of the next).
    """
    classes = [item.node for item in state.module_statements() if isinstance(item.node, ast.ClassDef)]
    if len(classes) < 2:
        return None  # one class or none: the listing that follows names it anyway
    entry = _entry_classes(state)
    wanted = set(uses)
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
        if wanted:
            shared = sorted(wanted & _members(cls))
            score += 2 * len(shared) / len(wanted)
            if shared:
                shown = ", ".join(shared[:4]) + (f" and {len(shared) - 4} more" if len(shared) > 4 else "")
                why.append(f"it has {shown}, which the patch uses")
        bases = {ast.unparse(b) for b in cls.bases}
        if bases and all(base_counts[b] == 1 for b in bases):
            score += 0.25  # the only class on these bases (the vision blocks share theirs)
        score += difflib.SequenceMatcher(None, name, cls.name).ratio() * 0.5
        scored.append((score, cls, why))
    scored.sort(key=lambda item: -item[0])
    best = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else 0.0
    if best[0] < 2 or best[0] - runner_up < 1 or not best[2]:
        return None
    return best[1].name, best[1].lineno, " and ".join(best[2])


def not_found_class(state: CodeState, name: str, uses: Collection[str] = ()) -> str:
    """What follows "class X is not defined in F": a probable rename first when the structure says
    so and the spelling does not already point at it, then the classes there (``what_is_there``)."""
    classes = state.all_classes()
    listing = what_is_there("classes", name, classes)
    renamed = renamed_class(state, name, uses)
    if renamed is None:
        return listing
    alike = closest(name, classes)
    if alike and alike[0][0] == renamed[0]:
        return listing  # the spelling already names it first
    return f"; probably renamed to {renamed[0]} (line {renamed[1]}): {renamed[2]}" + listing


def first_difference(a: str, b: str, context: int = 12) -> str:
    """Where two texts first differ: "at character 27: `…, b)` here, `…, b, extra=1)` there"."""
    index = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        index += 1
    start = max(0, index - context)
    lead = "…" if start else ""

    def piece(text: str) -> str:
        rest = text[start : index + 2 * context]
        if index >= len(text):
            return f"`{lead}{rest}` (it ends there)" if rest else "nothing more (it ends there)"
        tail = "…" if index + 2 * context < len(text) else ""
        return f"`{lead}{rest}{tail}`"

    return f"they first differ at character {index + 1}: the anchor has {piece(a)}, the statement has {piece(b)}"


class StatementMatch(NamedTuple):
    """A statement and where it sits (a tuple: a range check builds millions of them)."""

    node: ast.stmt
    body: list[ast.stmt]  # the block that holds it (mutable, for simulation)
    at: int  # its index in body


def walk_statements(body: list[ast.stmt]) -> Iterator[StatementMatch]:
    """Every statement inside a function body, depth first, not into nested defs."""
    for index, stmt in enumerate(body):
        yield StatementMatch(stmt, body, index)
        if isinstance(stmt, _NESTED_SCOPES) or not isinstance(stmt, _HAS_BLOCKS):
            continue
        for block in _sub_blocks(stmt):
            yield from walk_statements(block)


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Statements with blocks of statements (everything else is a simple statement: nothing to descend into).
_HAS_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match)


def _sub_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body
