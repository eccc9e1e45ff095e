"""Payloads: the real Python files in ``patches/`` that hold the code a patch adds.

A payload is read and checked when the manifest loads, so a missing file or a
missing definition is a manifest error before any target file is touched.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.operations.lookup import FunctionNode, definition_name, find_class, find_function, is_docstring

if TYPE_CHECKING:
    import libcst as cst


@dataclass
class Payload:
    path: Path  # absolute
    display: str  # as written in the manifest
    text: str
    tree: ast.Module
    sha256: str
    _cst: Any = field(default=None, repr=False)

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

    def string_warnings(self, node: ast.stmt, depth: int, what: str) -> list[tuple[int, str]]:
        """(line, message) for each multi-line string in ``node`` whose value would change.

        ``apply`` re-indents a payload definition's code lines to the target's
        indentation but, rightly, not the continuation lines of a multi-line
        string (they are part of its value).  A definition written at another
        column than its target (``depth`` levels, assuming 4 spaces each) would
        land with a docstring whose lines are indented differently: another value.
        """
        want = 4 * depth
        if node.col_offset == want:
            return []
        out = []
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Constant) or not isinstance(sub.value, str):
                continue
            if (sub.end_lineno or 0) > sub.lineno and any(line.strip() for line in sub.value.split("\n")[1:]):
                out.append(
                    (
                        sub.lineno,
                        f"{self.display} line {sub.lineno}: the multi-line string in {what} would change "
                        f"value on apply: the payload writes {what} at column {node.col_offset}, the target "
                        f"at column {want}, and a string's continuation lines are not re-indented; write it "
                        f"at the target's column (inside `class ...:` lines as deep as the target)",
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
    path: Path  # absolute
    sha256: str
    data: bytes
