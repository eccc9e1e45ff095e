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
"""

from __future__ import annotations

import ast
import copy
import difflib
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

NodeT = TypeVar("NodeT", bound=ast.AST)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


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
    return "sha256:" + hashlib.sha256(canon(node).encode("utf-8")).hexdigest()


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

    @classmethod
    def parse(cls, path: str, text: str) -> CodeState:
        return cls(path=path, text=text, tree=ast.parse(text, filename=path))

    @property
    def last_line(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") or not self.text else 1)

    # -- lookups -----------------------------------------------------------

    def find_class(self, dotted: str) -> ast.ClassDef | None:
        body: list[ast.stmt] = self.tree.body
        found: ast.ClassDef | None = None
        for part in dotted.split("."):
            found = _last_named(body, part, (ast.ClassDef,))  # type: ignore[assignment]
            if found is None:
                return None
            body = found.body
        return found

    def find_function(self, qualname: str) -> tuple[FunctionNode | None, ast.ClassDef | None, str | None]:
        """Return (function, owning class, missing class name).

        The third item names the class that is missing when the qualname's
        class part does not resolve, so callers can say CLASS_NOT_FOUND rather
        than FUNCTION_NOT_FOUND.
        """
        *owners, name = qualname.split(".")
        owner: ast.ClassDef | None = None
        body: list[ast.stmt] = self.tree.body
        if owners:
            owner = self.find_class(".".join(owners))
            if owner is None:
                return None, None, ".".join(owners)
            body = owner.body
        node = _last_named(body, name, (ast.FunctionDef, ast.AsyncFunctionDef))
        return node, owner, None  # type: ignore[return-value]

    def function_span(self, qualname: str) -> tuple[int, int] | None:
        """Lines of the function, or of its class when the method is missing."""
        fn, owner, _missing = self.find_function(qualname)
        node = fn or owner
        return (node.lineno, node.end_lineno or node.lineno) if node else None

    def module_binding(self, name: str) -> ast.stmt | None:
        """The last top-level statement that binds ``name`` (def, class, assignment)."""
        found: ast.stmt | None = None
        for stmt in self.tree.body:
            if name in bound_names(stmt):
                found = stmt
        return found

    def all_classes(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []

        def walk(body: list[ast.stmt], prefix: str) -> None:
            for stmt in body:
                if isinstance(stmt, ast.ClassDef):
                    qual = prefix + stmt.name
                    out.append((qual, stmt.lineno))
                    walk(stmt.body, qual + ".")

        walk(self.tree.body, "")
        return out

    def functions_in(self, owner: ast.ClassDef | None) -> list[tuple[str, int]]:
        body = owner.body if owner is not None else self.tree.body
        return [(stmt.name, stmt.lineno) for stmt in body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def top_level_imports(self) -> list[ast.Import | ast.ImportFrom]:
        """Imports that bind names at module level, including in top-level try blocks."""
        out: list[ast.Import | ast.ImportFrom] = []
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                out.append(stmt)
            elif isinstance(stmt, ast.Try):
                out.extend(s for s in stmt.body if isinstance(s, (ast.Import, ast.ImportFrom)))
        return out

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

    def describe_added(self, node: ast.AST) -> str | None:
        return self.added_by.get(id(node))

    def alone_on_lines(self, node: ast.stmt) -> bool:
        """False for ``if x: y = 1`` or ``a = 1; b = 2``.

        patchkit inserts whole lines, so it cannot place code next to a
        statement that shares its lines with other code.
        """
        if id(node) in self.added_by:
            return True
        if self._lines is None:
            # Python counts lines at \n, \r\n and \r only (not at \f or \x1c).
            self._lines = _LINE_BREAK.split(self.text)
        lines = self._lines
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
        out: list[NodeT] = []
        for node in nodes:
            clone = copy.deepcopy(node)
            for sub in ast.walk(clone):
                if hasattr(sub, "lineno"):  # statements, expressions, args, patterns...
                    setattr(sub, "lineno", line)  # noqa: B010 (ast.AST itself declares no lineno)
                    setattr(sub, "end_lineno", line)  # noqa: B010
                self.added_by[id(sub)] = patch_id
            out.append(clone)
        return out


def _last_named(body: list[ast.stmt], name: str, kinds: tuple[type, ...]) -> ast.stmt | None:
    # Python binds the last definition of a name, so that is the one we patch.
    found = None
    for stmt in body:
        if isinstance(stmt, kinds) and getattr(stmt, "name", None) == name:
            found = stmt
    return found


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


def format_closest(
    kind: str, matches: list[tuple[str, int]], everything: Sequence[tuple[str, int]] = (), scope: str = "in this file"
) -> str:
    """ "; closest classes in this file: A (line 3)", or, with no close match
    and a short list, every candidate (a renamed class often looks nothing
    like its old name)."""
    if matches:
        listed = ", ".join(f"{name} (line {line})" for name, line in matches)
        return f"; closest {kind} {scope}: {listed}"
    if everything and len(everything) <= 5:
        listed = ", ".join(f"{name} (line {line})" for name, line in everything)
        return f"; {kind} {scope}: {listed}"
    if not everything:
        return f"; there are no {kind} {scope}"
    return ""


@dataclass(frozen=True)
class StatementMatch:
    node: ast.stmt
    body: list[ast.stmt]  # the block that holds it (mutable, for simulation)
    index: int


def walk_statements(body: list[ast.stmt]) -> Iterator[StatementMatch]:
    """Every statement inside a function body, depth first, not into nested defs."""
    for index, stmt in enumerate(body):
        yield StatementMatch(stmt, body, index)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
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
