"""remove-definitions: delete module-level definitions, or members of a class.

A deletion is as much a change as an addition, and as likely to meet a
moving upstream: the function may have been changed since, moved, or deleted
upstream too.  So every removed definition is checked against the base it
was written for: ``expect`` holds one digest per name (``patchkit digest
FILE NAME``, the formatting-blind digest ``replace-function`` uses).

* APPLY when each name is either bound with the expected code (removed) or
  already gone, and at least one is there;
* SKIP ``ALREADY_APPLIED`` when none of the names is bound any more;
* FAIL ``CONFLICT`` when a name is bound with other code: upstream changed
  it since, and deleting it would drop upstream's change;
* FAIL ``CLASS_NOT_FOUND`` for a missing ``class``; ``UNSUPPORTED_TARGET``
  for a module-level name bound only inside a top-level ``if`` / ``try``.

The statement goes with the blank lines and comments above it (libcst's
leading lines of the statement), which is how a definition is deleted by
hand.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchkit.operations import edit_lazy
from patchkit.operations.add_methods import member_index
from patchkit.operations.base import Anchor, LoadContext, Outcome, PortTraits, PythonOperation, missing_in
from patchkit.operations.code import CodeState
from patchkit.operations.digests import digest, short_digest
from patchkit.operations.lookup import bound_names
from patchkit.operations.replace_function import DIGEST_RE
from patchkit.operations.wording import what_is_there
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class RemoveDefinitions(PythonOperation[tuple[str, ...]]):
    """remove-definitions: deletes module-level definitions, or members of a class, each guarded by a digest.

    Reads ``names``, ``expect`` (the digest each name's code was written against, in order) and ``class``.
    """

    op_name = "remove-definitions"
    port_traits = PortTraits(Anchor.CLASS, key="class")
    edits_in_place = True  # statements that were there go away (see PythonOperation)
    names: tuple[str, ...]
    expect: tuple[str, ...]
    class_name: str | None = None

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> RemoveDefinitions:
        # The schema has checked each value's type (names, expect: lists of strings): the conversions only narrow.
        listed, digests = table["names"], table["expect"]
        names = tuple(str(name) for name in listed) if isinstance(listed, list) else ()
        expect = tuple(str(digest) for digest in digests) if isinstance(digests, list) else ()
        if len(expect) != len(names):
            ctx.error("expect", f"gives {len(expect)} digest(s) for {len(names)} name(s): one per name, in order")
        for index, value in enumerate(expect):
            if not DIGEST_RE.match(value):
                ctx.error(f"expect[{index + 1}]", f"{value!r} is not a digest", hint="run `patchkit digest FILE NAME`")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            ctx.error("names", f"lists {', '.join(dupes)} more than once")
        class_name = table.get("class")
        return cls(names=names, expect=expect, class_name=None if class_name is None else str(class_name))

    def identity(self) -> dict[str, object]:
        return {"names": list(self.names), "expect": list(self.expect), "class": self.class_name}

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        return missing_in(self.class_name, reason, is_class=True) if self.class_name else None

    def edits(self) -> set[str]:
        return {self.class_name} if self.class_name else {*self.names}

    def _where(self, state: CodeState) -> tuple[list[ast.stmt], str] | Outcome[Any]:
        if self.class_name is None:
            return state.tree.body, "the module"
        target = state.find_class(self.class_name)
        if target is None:
            return Outcome.fail(
                Reason.CLASS_NOT_FOUND,
                None,
                f"class {self.class_name} is not defined in {state.path}"
                + what_is_there("classes", self.class_name, state.all_classes()),
            )
        return target.body, f"class {self.class_name} (line {target.lineno})"

    def _index(self, body: list[ast.stmt], name: str) -> int | None:
        if self.class_name is not None:
            return member_index(body, name)
        found = None
        for index, stmt in enumerate(body):
            if name in bound_names(stmt):
                found = index
        return found

    def analyze(self, state: CodeState) -> Outcome[tuple[str, ...]]:
        where = self._where(state)
        if isinstance(where, Outcome):
            return where
        body, label = where
        present: list[tuple[str, ast.stmt]] = []
        for name, expected in zip(self.names, self.expect, strict=True):
            index = self._index(body, name)
            if index is None:
                if self.class_name is None and state.module_binding(name) is not None:
                    line = state.module_binding(name).lineno  # type: ignore[union-attr]
                    return Outcome.fail(
                        Reason.UNSUPPORTED_TARGET,
                        line,
                        f"{name} is bound at line {line} inside a top-level if / try block; "
                        "remove-definitions removes statements of the module body only",
                    )
                continue
            stmt = body[index]
            found = digest(stmt)
            if found != expected:
                return Outcome.fail(
                    Reason.CONFLICT,
                    stmt.lineno,
                    f"{name} (line {stmt.lineno}) in {label} changed upstream since its removal was written: "
                    f"expect {short_digest(expected)}…, found {short_digest(found)}…. Removing it would drop "
                    "upstream's change: review it, then update expect (`patchkit digest`)",
                )
            present.append((name, stmt))
        if self.class_name is not None and present and len(present) == len(body):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                present[0][1].lineno,
                f"removing {', '.join(n for n, _ in present)} would leave {label} with an empty body",
            )
        if not present:
            return Outcome.skip(Reason.ALREADY_APPLIED, None, f"{', '.join(self.names)} no longer defined in {label}")
        gone = [n for n in self.names if n not in {p for p, _ in present}]
        message = f"removes {', '.join(f'{n} (line {s.lineno})' for n, s in present)} from {label}"
        if gone:
            message += f" ({', '.join(gone)} already gone)"
        return Outcome.apply(present[0][1].lineno, message, plan=tuple(n for n, _ in present))

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        where = self._where(state)
        if isinstance(where, Outcome):
            return None
        body, _label = where
        found = [body[i] for i in (self._index(body, n) for n in self.names) if i is not None]
        lines = [(s.lineno, s.end_lineno or s.lineno) for s in found]
        return (min(a for a, _ in lines), max(b for _, b in lines)) if lines else None

    def simulate(self, state: CodeState, outcome: Outcome[tuple[str, ...]], patch_id: str) -> None:
        where = self._where(state)
        assert not isinstance(where, Outcome)
        body, _label = where
        for name in outcome.planned:
            index = self._index(body, name)
            assert index is not None
            del body[index]

    def transform(self, module: cst.Module, outcome: Outcome[tuple[str, ...]]) -> cst.Module:
        edit = edit_lazy()

        def without(body: list[object]) -> list[object]:
            out = list(body)
            for name in outcome.planned:
                index = max(i for i, stmt in enumerate(out) if edit.binds(name)(stmt))
                del out[index]
            return out

        if self.class_name is None:
            return module.with_changes(body=without(list(module.body)))
        return edit.update_class(
            module, self.class_name, lambda node: edit.with_block_body(node, without(edit.block_body(node)))
        )
