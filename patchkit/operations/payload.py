"""Payloads: the real Python files in ``patches/`` that hold the code a patch adds.

A payload is read and checked when the manifest loads, so a missing file or a
missing definition is a manifest error before any target file is touched.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.operations.lookup import (
    AmbiguousTarget,
    FunctionNode,
    definition_name,
    find_class,
    find_function,
    is_docstring,
)

if TYPE_CHECKING:
    import libcst as cst

    from patchkit.operations.code import CodeState


DEFAULT_INDENT = "    "


def indent_unit(text: str) -> str:
    """A module's indentation unit as libcst reads it (its ``default_indent``): the indent of its
    first indented block, 4 spaces when it has none.  libcst writes an inserted block whose own
    indent is its module's unit with the unit of the module it goes into."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.INDENT:
                return token.string  # the first block: its indent is the whole unit
    except (tokenize.TokenError, SyntaxError):
        pass
    return DEFAULT_INDENT


@dataclass(frozen=True)
class Placement:
    """Where a payload definition lands: the column of its first line and the target's indentation
    unit.  ``known``: read from the target file; else assumed from the payload's own indentation
    (``validate`` without the target: as deep as the target's nesting, at the payload's unit)."""

    column: int
    unit: str
    known: bool = True

    @classmethod
    def of(cls, payload: Payload, depth: int, target: CodeState | None, find: Callable[[], int | None]) -> Placement:
        """At ``find()``'s column in ``target`` with the target's unit, where ``target`` is at hand and
        ``find`` finds the spot; else ``depth`` levels of the payload's own unit (``known`` False)."""
        column = None
        if target is not None:
            try:
                column = find()
            except AmbiguousTarget:
                column = None
        if target is None or column is None:
            return cls(depth * len(payload.indent), payload.indent, known=False)
        return cls(column, target.derived("indent-unit", lambda state: indent_unit(state.text)))


def _blocks(stmt: ast.stmt) -> Iterator[tuple[list[ast.stmt], int]]:
    """Each block of statements in ``stmt``, with how many levels below ``stmt``'s line its
    statements stand (a ``match`` statement's case bodies: two, below the ``case`` lines)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block, 1
    for handler in getattr(stmt, "handlers", None) or []:
        yield handler.body, 1  # `except` lines stand where their `try` does
    for case in getattr(stmt, "cases", None) or []:
        yield case.body, 2


def _landing_columns(node: ast.stmt, column: int, payload_unit: int, target_unit: int) -> dict[int, int]:
    """id(statement) -> the column each statement of ``node`` lands at when ``node`` lands at ``column``.

    A block indented by the payload's unit per level is written at the target's; any other indent is
    kept as written (libcst's ``IndentedBlock.indent``)."""
    out = {id(node): column}

    def walk(stmt: ast.stmt, at: int) -> None:
        for block, levels in _blocks(stmt):
            for child in block:
                indent = child.col_offset - stmt.col_offset
                if child.lineno == stmt.lineno or indent < 0:  # `if x: y`, on the opening line
                    landed = at + indent
                elif indent == levels * payload_unit:
                    landed = at + levels * target_unit
                else:
                    landed = at + indent
                out[id(child)] = landed
                walk(child, landed)

    walk(node, column)
    return out


def _multiline_strings(node: ast.stmt) -> Iterator[tuple[ast.Constant, ast.stmt]]:
    """Each string of ``node`` whose continuation lines hold text, with the statement it is in."""

    def walk(stmt: ast.stmt) -> Iterator[tuple[ast.Constant, ast.stmt]]:
        children = [child for block, _levels in _blocks(stmt) for child in block]
        inner = {id(n) for child in children for n in ast.walk(child)}
        for sub in ast.walk(stmt):
            if id(sub) in inner or not isinstance(sub, ast.Constant) or not isinstance(sub.value, str):
                continue
            if (sub.end_lineno or 0) > sub.lineno and any(line.strip() for line in sub.value.split("\n")[1:]):
                yield sub, stmt
        for child in children:
            yield from walk(child)

    return walk(node)


@dataclass
class Payload:
    """A Python payload file, read and parsed once per manifest load: the code the add, replace and insert ops take.

    Its libcst tree is parsed only when a patch is rendered (``cst_module``).
    """

    path: Path  # absolute
    display: str  # as written in the manifest
    text: str
    tree: ast.Module
    sha256: str
    _cst: cst.Module | None = field(default=None, repr=False)

    def cst_module(self) -> cst.Module:
        # libcst is imported only when something is actually edited: a range
        # check never needs it.
        if self._cst is None:
            import libcst

            self._cst = libcst.parse_module(self.text)
        return self._cst

    def find_class(self, dotted: str) -> ast.ClassDef | None:
        # A payload is a module-level file: no if / try branches, the last definition wins.
        return find_class(self.tree.body, dotted, scoped=False)

    def methods_of(self, node: ast.ClassDef) -> list[FunctionNode]:
        return [s for s in node.body if isinstance(s, FunctionNode)]

    def find_function(self, qualname: str) -> FunctionNode | None:
        return find_function(self.tree.body, qualname, scoped=False)[0]

    @cached_property
    def indent(self) -> str:
        """The payload's own indentation unit, as libcst reads it (``indent_unit``)."""
        return indent_unit(self.text)

    def string_warnings(self, node: ast.stmt, place: Placement, what: str) -> list[tuple[int, str]]:
        """(line, message) for each multi-line string in ``node`` whose value would change on apply.

        ``apply`` writes a payload definition's code lines at the target's indentation (libcst: the
        definition at ``place.column``, and every block the payload indents by its own unit at the
        target's unit; a block indented otherwise keeps its own indent), but, rightly, not the
        continuation lines of a multi-line string (they are part of its value).  A string whose
        opening line would land at another column than the payload writes it at keeps its
        continuation lines where they were: read against the code around it, another value.
        """
        columns = _landing_columns(node, place.column, len(self.indent), len(place.unit))
        out = []
        for sub, holder in _multiline_strings(node):
            written, landed = holder.col_offset, columns[id(holder)]
            if written == landed:
                continue
            if node.col_offset != place.column:
                why = f"the payload writes {what} at column {node.col_offset}, the target at column {place.column}"
            else:
                why = (
                    f"the payload indents a level by {len(self.indent)} columns and the target file by "
                    f"{len(place.unit)}, so the line that opens it moves from column {written} to column {landed}"
                )
            assumed = "" if place.known else f" (assuming the target indents by the payload's {len(self.indent)})"
            out.append(
                (
                    sub.lineno,
                    f"{self.display} line {sub.lineno}: the multi-line string in {what} would change value on "
                    f"apply: {why}, and a string's continuation lines are not re-indented; write {what} at "
                    f"column {place.column}, {len(place.unit)} columns a level{assumed} (inside `class ...:` "
                    "lines as deep as the target)",
                )
            )
        return out

    def definitions(self) -> dict[str, ast.stmt]:
        """Top-level definitions by name (imports and docstrings are not definitions)."""
        out: dict[str, ast.stmt] = {}
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or is_docstring(stmt):
                continue
            name = definition_name(stmt)
            if name is not None:
                out[name] = stmt
        return out

    def body_statements(self, fn: FunctionNode) -> list[ast.stmt]:
        body = list(fn.body)
        if body and is_docstring(body[0]):
            body = body[1:]
        return body


class PayloadCache:
    """Loads each payload file once per manifest load."""

    def __init__(self) -> None:
        self._by_path: dict[Path, Payload] = {}
        self._raw: dict[Path, RawPayload] = {}

    def load_raw(self, path: Path) -> bytes:
        """A payload that is not Python (a ``diff`` op's unified diff): its bytes."""
        resolved = path.resolve()
        cached = self._raw.get(resolved)
        if cached is None:
            data = resolved.read_bytes()
            cached = self._raw[resolved] = RawPayload(resolved, hashlib.sha256(data).hexdigest(), data)
        return cached.data

    def load(self, path: Path, display: str) -> Payload:
        """Raises OSError, UnicodeDecodeError or SyntaxError; the loader words them."""
        resolved = path.resolve()
        cached = self._by_path.get(resolved)
        if cached is not None:
            return cached
        data = resolved.read_bytes()
        text = data.decode("utf-8")
        tree = ast.parse(text, filename=str(resolved))
        payload = Payload(
            path=resolved,
            display=display,
            text=text,
            tree=tree,
            sha256=hashlib.sha256(data).hexdigest(),
        )
        self._by_path[resolved] = payload
        return payload

    def all(self) -> list[Payload | RawPayload]:
        return [*self._by_path.values(), *self._raw.values()]


@dataclass(frozen=True)
class RawPayload:
    """A payload that is not Python (a ``diff`` op's unified diff): its bytes, and the sha256 that goes into the
    manifest's digest as every payload's does.
    """

    path: Path  # absolute
    sha256: str
    data: bytes
