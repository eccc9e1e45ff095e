"""replace-function: swap a function or method for the payload's version.

Guarded by ``expect``: the digest(s) of the upstream definition the
replacement was written against.  If upstream changed the function since,
the patch reports DRIFT instead of silently discarding upstream's change.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchkit.operations import edit_lazy
from patchkit.operations.base import (
    REPLACES_PREVIOUS,
    Anchor,
    LoadContext,
    Merge,
    Outcome,
    PortTraits,
    PythonOperation,
    missing_in,
)
from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon, digest, digest_of_canon, payload_canon, short_digest
from patchkit.operations.lookup import FunctionNode, not_found_class, replace_statement
from patchkit.operations.payload import Placement
from patchkit.operations.wording import what_is_there
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst

    from patchkit.operations.payload import Payload

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


def missing_function(state: CodeState, qualname: str, missing_class: str | None) -> Outcome[Any]:
    """The CLASS_NOT_FOUND / FUNCTION_NOT_FOUND outcome, with suggestions."""
    if missing_class is not None:
        return Outcome.fail(
            Reason.CLASS_NOT_FOUND,
            None,
            f"class {missing_class} (for {qualname}) is not defined in {state.path}"
            + not_found_class(state, missing_class, {qualname.rsplit(".", 1)[-1]}),
        )
    *owners, name = qualname.split(".")
    owner = state.find_class(".".join(owners)) if owners else None
    where = f"class {'.'.join(owners)} (line {owner.lineno})" if owner else state.path
    kind = "methods" if owner else "functions"
    return Outcome.fail(
        Reason.FUNCTION_NOT_FOUND,
        owner.lineno if owner else None,
        f"{'method' if owner else 'function'} {name} is not defined in {where}"
        + what_is_there(
            kind, name, state.functions_in(owner), f"in class {'.'.join(owners)}" if owner else "in this file"
        ),
    )


@dataclass(frozen=True)
class ReplaceFunction(PythonOperation[None]):
    """replace-function: swaps a function or method of the target file for the payload's version of it.

    Reads ``function``, ``source``, ``payload_function`` and ``expect``: the digest(s) of the upstream code it replaces,
    so that an upstream change since reads as DRIFT, not lost.
    """

    op_name = "replace-function"
    port_traits = PortTraits(
        Anchor.FUNCTION,
        key="function",
        payload_key="payload_function",
        merge=Merge.DEF,
        merge_on=Reason.DRIFT,
        digest_key="expect",
        merge_advice="as an edit-function (a diff of the lines it changes) it would keep applying through upstream "
        "edits elsewhere in the function",
    )
    function: str
    payload: Payload
    payload_function: str
    node: FunctionNode
    expect: tuple[str, ...]

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> ReplaceFunction:
        # The schema has checked each value's type (expect: a string or a list of strings): the conversions narrow.
        payload = ctx.payload(table)
        function = str(table["function"])
        payload_function = str(table.get("payload_function", function))
        node = payload.find_function(payload_function)
        if node is None and "." in payload_function and "payload_function" not in table:
            # A payload may hold just the function at module level.
            node = payload.find_function(payload_function.rsplit(".", 1)[1])
            payload_function = payload_function.rsplit(".", 1)[1]
        if node is None:
            key = "payload_function" if "payload_function" in table else "function"
            ctx.error(key, f"payload {payload.display} defines no function {payload_function!r}")
        if node.name != function.rsplit(".", 1)[-1]:
            ctx.error(
                "payload_function",
                f"the payload's function is named {node.name!r} but the target is {function!r}",
                hint="a replacement keeps the target's name",
            )
        raw = table["expect"]
        expect = (raw,) if isinstance(raw, str) else tuple(str(d) for d in raw) if isinstance(raw, list) else ()
        for index, value in enumerate(expect):
            if not DIGEST_RE.match(value):
                key = "expect" if isinstance(raw, str) else f"expect[{index + 1}]"
                ctx.error(
                    key,
                    f"{value!r} is not a digest",
                    hint=f"run `patchkit digest {table['file']} {function}` on the upstream file",
                )
        return cls(function=function, payload=payload, payload_function=payload_function, node=node, expect=expect)

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        return missing_in(self.function, reason, is_class=False)

    def warnings(self, target: CodeState | None = None) -> list[tuple[int, str]]:
        def column() -> int | None:  # the replacement stands where the function does
            found = target.find_function(self.function)[0] if target is not None else None
            return None if found is None else found.col_offset

        place = Placement.of(self.payload, len(self.function.split(".")) - 1, target, column)
        return self.payload.string_warnings(self.node, place, f"function {self.function}")

    def identity(self) -> dict[str, object]:
        return {"function": self.function, "node": canon(self.node), "expect": list(self.expect)}

    def own_code(self) -> tuple[str, ...]:
        return (digest(self.node),)

    def adds(self) -> set[str]:
        return {self.function}

    def edits(self) -> set[str]:
        return {self.function}

    def upstream_digest(self, state: CodeState) -> str | None:
        """The digest ``expect`` holds of the function, as it is in ``state`` (port refreshes it after a merge)."""
        found = function_digest(state, self.function)
        return found[0] if isinstance(found, tuple) else None

    def analyze(self, state: CodeState) -> Outcome[None]:
        current, _owner, missing_class = state.find_function(self.function)
        if current is None:
            return missing_function(state, self.function, missing_class)
        there = state.def_canon(current, self.function)
        if there == payload_canon(self.node):
            return Outcome.skip(
                Reason.ALREADY_APPLIED,
                current.lineno,
                f"{self.function} (line {current.lineno}) is already the replacement from {self.payload.display}",
            )
        found = digest_of_canon(there)
        if found in state.previous:
            return Outcome.apply(
                current.lineno,
                f"{REPLACES_PREVIOUS} {self.function} (line {current.lineno}), which patchkit wrote "
                f"{state.previous[found]}, with the new code from {self.payload.display}",
                replaces_previous=True,
            )
        if found in self.expect:
            return Outcome.apply(
                current.lineno,
                f"replaces {self.function} (line {current.lineno}; upstream matches expect {short_digest(found)}…)",
            )
        expected = ", ".join(short_digest(e) + "…" for e in self.expect)
        return Outcome.fail(
            Reason.DRIFT,
            current.lineno,
            f"{self.function} (line {current.lineno}) changed upstream since the replacement was written: "
            f"expect {expected}, found {found}. Review upstream's change against {self.payload.display}, "
            f"update the payload, then set expect to the new digest",
        )

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        return state.function_span(self.function)

    def simulate(self, state: CodeState, outcome: Outcome[None], patch_id: str) -> None:
        current, owner, _ = state.find_function(self.function)
        assert current is not None
        body = owner.body if owner is not None else state.tree.body
        replace_statement(body, current, state.splice([self.node], line=current.lineno, patch_id=patch_id)[0])

    def transform(self, module: cst.Module, outcome: Outcome[None]) -> cst.Module:
        edit = edit_lazy()
        new = edit.find_definition(self.payload.cst_module(), self.payload_function, edit.cst.FunctionDef, scoped=False)
        return edit.update_function(
            module, self.function, lambda old: new.with_changes(leading_lines=old.leading_lines)
        )


def function_digest(state: CodeState, qualname: str) -> tuple[str, int] | Outcome[object]:
    """For `patchkit digest`: the digest and line, or the not-found outcome."""
    node, _owner, missing_class = state.find_function(qualname)
    if node is None:
        cls_node = state.find_class(qualname) if missing_class is None else None
        if isinstance(cls_node, ast.ClassDef):
            return digest(cls_node), cls_node.lineno
        return missing_function(state, qualname, missing_class)
    return digest(node), node.lineno
