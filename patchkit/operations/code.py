"""The read-only model of a Python file that operations analyse: ``CodeState``.

Verdicts are computed on the stdlib ``ast`` (a range check builds one for
every version of every target file, and the ast is the quicker tree to build;
it also carries line numbers); edits are made with libcst (``operations/edit.py``), which round-trips every byte it does
not touch.  One analysis serves ``apply``, ``status`` and ``check``, so a range
check and an apply can never disagree about a verdict.  After an edit the
engine re-analyses libcst's output and requires every applied patch to read
back as ALREADY_APPLIED (see ``engine/evaluate.py``).

Patches on one file compose in manifest order: after a patch APPLYs, its
effect is *simulated* on the ast (the payload's nodes are spliced in), so the
next patch sees the file as it will be.  Spliced nodes carry the line where
they will land, so every line number reported refers to the file as read.

``CodeState``'s lookups (``find_class``, ``find_function``, ...) are those of
``lookup.py`` on this file's module scope; what it computes from a piece of
source text alone is kept across file versions in ``SPAN_MEMO``
(``memo.Memo``).  What "the same code" means (``canon``, ``digest``) is ``digests.py``'s.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar, cast

from patchkit.operations.digests import canon, digest
from patchkit.operations.lookup import (
    DEF_KINDS,
    HAS_BLOCKS,
    FunctionNode,
    ScopedStatement,
    bound_names,
    find_class,
    find_function,
    is_docstring,
    resolve_scoped,
    scope_statements,
)
from patchkit.operations.memo import Memo

NodeT = TypeVar("NodeT", bound=ast.AST)
T = TypeVar("T")

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

SPAN_MEMO: Memo[tuple[str, str], str] = Memo("CodeState.remembered and def_canon, by source text", 200_000)
"""``CodeState.remembered``'s and ``def_canon``'s values by (what, exact source text), across every
file version a process reads."""
_SPAN_LINES = 12


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
    _derived: dict[str, object] = field(default_factory=dict, repr=False, compare=False)  # see derived()

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
        value = SPAN_MEMO.get((what, span)) if span is not None else None
        if value is None:
            value = compute(node)
            if span is not None:
                SPAN_MEMO[(what, span)] = value
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
        if self._in_place or not isinstance(node, ast.stmt) or isinstance(node, DEF_KINDS):
            return None
        if self._edited and isinstance(node, HAS_BLOCKS):
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
        text = self.def_text(node, name) if isinstance(node, DEF_KINDS) else None
        if text is None:
            return canon(node)
        value = SPAN_MEMO.get(("def-canon", text))
        if value is None:
            value = canon(node)
            SPAN_MEMO[("def-canon", text)] = value
        return value

    def changed(self, *, in_place: bool = True, names: Iterable[str] = ()) -> None:
        """The tree was edited (a simulated APPLY): forget what ``remembered`` computed.

        ``in_place``: the op may have edited statements that were there (``PythonOperation.edits_in_place``);
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

    def replace_text(self, text: str) -> None:
        """The file's text after an op edited it as text (``edit-function``: the lines of a region),
        its ast already edited to match: ``lines`` is computed again from it."""
        self.text = text
        self._lines = None

    def patchkit_wrote(self, node: ast.stmt) -> str | None:
        """When the tree's record says patchkit wrote this code (any payload version), else None."""
        return self.previous.get(digest(node)) if self.previous else None

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
            # that is str.split, which does not run the pattern over the whole file.
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
        return [(stmt.name, stmt.lineno) for stmt in body if isinstance(stmt, FunctionNode)]

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
        """Line before which a new import goes: after the leading import block (in a module with
        neither imports nor a docstring: its first statement, under the file's leading comments)."""
        end = self.import_block_end()
        if end == 0:
            return self.tree.body[0].lineno if self.tree.body else 1
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
    in one pass, without deepcopy's memo of every object it copied: a range
    check splices payload code into every file version it simulates an APPLY
    on.
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
