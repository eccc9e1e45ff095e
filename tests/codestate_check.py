"""The ``CodeState`` invariant the fast path rests on, installed into the ops' analysis.

Two checks, wrapped around ``CodeState``'s public methods:

* at every simulated APPLY, an op that says it only splices new statements in
  (``PythonOperation.edits_in_place`` False) must have left every simple statement of
  the tree as it was before it ran: ``CodeState`` keeps sharing what was
  computed from their source text;
* wherever ``CodeState.def_text`` gives a text, the def must be, node for node,
  the one those lines parse to (what depends on a def's body is keyed by it).

Both re-walk and re-parse whole files, so they do not run on every test: one
dedicated test (``test_codestate_invariant.py``) runs them over both demo
manifests at every demo commit, and ``pytest --check-codestate`` runs them
under every test of the suite.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

import pytest

from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon
from patchkit.operations.lookup import DEF_KINDS

# Statements that hold blocks (defs and compound statements): what a splice may extend.
# Derived from the grammar, not copied: a simple statement has neither a body nor match cases.
COMPOUND = tuple(k for k in ast.stmt.__subclasses__() if {"body", "cases"} & set(k._fields))


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrap ``CodeState.parse``, ``changed`` and ``def_text`` with the two checks until the test ends."""
    parse = CodeState.parse.__func__  # type: ignore[attr-defined]
    changed = CodeState.changed
    def_text = CodeState.def_text

    def snapshot(state: CodeState) -> None:
        nodes = [n for n in ast.walk(state.tree) if isinstance(n, ast.stmt) and not isinstance(n, COMPOUND)]
        state.__dict__["_before_op"] = [(node, canon(node)) for node in nodes]

    def checked_parse(cls: type[CodeState], path: str, text: str) -> CodeState:
        state = parse(cls, path, text)
        snapshot(state)
        return state

    def checked_changed(self: CodeState, *, in_place: bool = True, names: Iterable[str] = ()) -> None:
        if not in_place:
            for node, text in self.__dict__.get("_before_op", ()):
                assert canon(node) == text, f"an op that only splices edited {self.path}:{node.lineno}"
        changed(self, in_place=in_place, names=names)
        snapshot(self)

    def checked_def_text(self: CodeState, node: ast.AST, name: str) -> str | None:
        text = def_text(self, node, name)
        if text is not None:
            where = (getattr(node, "lineno", None), getattr(node, "col_offset", None))
            tree = ast.parse(self.text)
            parsed = [n for n in ast.walk(tree) if isinstance(n, DEF_KINDS) and (n.lineno, n.col_offset) == where]
            assert len(parsed) == 1 and ast.dump(parsed[0]) == ast.dump(node), (
                f"def_text of {name} in {self.path} is stale"
            )
        return text

    monkeypatch.setattr(CodeState, "parse", classmethod(checked_parse))
    monkeypatch.setattr(CodeState, "changed", checked_changed)
    monkeypatch.setattr(CodeState, "def_text", checked_def_text)
