"""edit-function: hunks of a unified diff, applied inside one function or method.

The commonest real change is an edit *inside* an existing function.  Carried
by ``replace-function`` it is a whole-function copy guarded by ``expect``: any
upstream edit anywhere in the function reads as DRIFT, even where the change
itself still applies cleanly.  Carried by ``diff`` it is opaque and located by
line number in the whole file.  This op keeps the diff's precision and gives
it a structural address:

* the function is found by qualified name (``Class.method``), wherever it now
  is in the file (the lookup every op uses: top-level ``if`` / ``try``
  branches included, a name bound in several branches is refused);
* the payload is a unified diff whose hunk line numbers count from the
  function's first line (its first decorator, or the ``def``) as line 1;
* each hunk must match **inside the function**, exactly (zero fuzz:
  whitespace and line endings included), at any offset within it, the nearest
  match winning, hunks in order and never overlapping: the ``diff`` op's
  matcher (``hunks.match_hunks``) on the function's lines only.

Verdicts:

* APPLY when every hunk matches forwards;
* SKIP when every hunk matches in reverse (the change is in the function):
  ``ALREADY_APPLIED`` where patchkit's record of this tree shows it wrote those
  lines (``own_code``: a digest of the hunks' new sides, kept in the record at
  every APPLY), else ``UPSTREAM_PROVIDES``: upstream has the change itself
  (always so at a commit a range check reads, which no record covers; the
  range then says which commit took it, see ``engine/upstreamed.py``);
* FAIL ``CONFLICT`` otherwise, naming the hunk, the file line, the expected
  and the found line;
* FAIL ``FUNCTION_NOT_FOUND`` / ``CLASS_NOT_FOUND`` with the usual
  suggestions.

The edit is made on text (the function's lines are replaced, every other byte
of the file is kept), so the round trip of a capture is exact by
construction.  ``simulate`` keeps ``CodeState.text`` and the ast's line
numbers in step with the edited text, so several ``edit-function`` patches
on one file (one per edited function) compose.
"""

from __future__ import annotations

import ast
import hashlib
import json
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Self

from patchkit.errors import InternalError
from patchkit.operations.base import (
    Anchor,
    LoadContext,
    Merge,
    Operation,
    Outcome,
    PortTraits,
    PythonOperation,
    missing_in,
)
from patchkit.operations.code import CodeState
from patchkit.operations.diff import read_diff_payload
from patchkit.operations.hunks import Hunk, Mismatch, function_lines, hunk_verdict, splice_hunks, split_lines
from patchkit.operations.replace_function import missing_function
from patchkit.results import Reason

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class Plan:
    """The text edit of a scoped-hunk op: its region's first and last lines in the file, and what those lines become."""

    first: int  # 1-based first line of the function in the file (its first decorator)
    last: int  # 1-based last line
    new_lines: tuple[str, ...]  # the function's lines after the edit, with their endings


def _shown(line: str | None, where: str) -> str:
    return where if line is None else repr(line.rstrip("\n"))


@dataclass(frozen=True)
class Region:
    """The lines a scoped-hunk op's hunks see, and what they are, for messages."""

    first: int  # 1-based, inclusive
    last: int
    label: str  # "Worker.verify (lines 5-16)"
    end_name: str  # how the message calls the region's end: "the end of the function"


@dataclass(frozen=True)
class ScopedHunks(PythonOperation[Plan]):
    """Hunks of a unified diff applied inside one region of the file (shared by the scoped ops).

    A subclass says where its region is (``region``) and how the ast takes the
    edited region's statements (``graft``); matching, verdicts, messages and the
    text edit are the same for all."""

    edits_in_place = True  # the region's own statements change (see PythonOperation)
    source: str  # as written in the manifest
    sha256: str
    hunks: tuple[Hunk, ...]

    @classmethod
    def read_hunks(cls, table: Mapping[str, object], ctx: LoadContext, what: str) -> tuple[str, str, tuple[Hunk, ...]]:
        written, sha, hunks = read_diff_payload(table, ctx, f"{cls.op_name} edits {what}")
        for hunk in hunks:
            if hunk.old_start < 1 or not hunk.old:
                ctx.error(
                    "source",
                    f"hunk {hunk.number} ({hunk.header}) of {written!r} has no line of {what} to anchor it",
                    hint=f"a {cls.op_name} hunk keeps at least one context or removed line of {what}",
                )
        return written, sha, hunks

    @property
    @abstractmethod
    def region_key(self) -> str:
        """Which region the hunks edit, as ``own_code`` keys it ("function=Worker.verify")."""

    @property
    def merge_name(self) -> str:
        """Port's name for the region, when it merges upstream's edit of it: the ``region_key``."""
        return self.region_key

    @cached_property
    def written(self) -> str:
        """The digest of what these hunks leave in their region (every hunk's new side, exactly):
        the code the record keeps as patchkit's own once this patch APPLYs."""
        blob = json.dumps({"op": self.op_name, "region": self.region_key, "new": [list(h.new) for h in self.hunks]})
        return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def own_code(self) -> tuple[str, ...]:
        return (self.written,)

    @abstractmethod
    def region(self, state: CodeState) -> Region | Outcome[Any]:
        """The lines the hunks apply to, or the FAIL that says the region is not there."""

    @abstractmethod
    def graft(self, state: CodeState, plan: Plan) -> tuple[list[ast.stmt], set[int]]:
        """Put the edited region's statements into ``state.tree``; (new statements, ids of their nodes)."""

    def _own_lines(self, state: CodeState, node: ast.stmt, name: str, needs: str) -> Outcome[object] | None:
        """The FAIL of a region that is not lines of the file as read: ``node`` (or code in it) was
        spliced in by an earlier patch, or the file ends a line with a bare '\\r'."""
        if any(id(sub) in state.added_by for sub in ast.walk(node)):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                node.lineno,
                f"{name} (line {node.lineno}) was rewritten by an earlier patch of this manifest; "
                f"{self.op_name} needs {needs} own lines: put this patch before that one",
            )
        return self._text_ok(state, node.lineno)

    def _text_ok(self, state: CodeState, line: int) -> Outcome[object] | None:
        if state.text.count("\r") != state.text.count("\r\n"):
            return Outcome.fail(
                Reason.UNSUPPORTED_TARGET,
                line,
                f"{state.path} ends lines with a bare '\\r' somewhere; {self.op_name} counts lines at '\\n'",
            )
        return None

    def analyze(self, state: CodeState) -> Outcome[Plan]:
        region = self.region(state)
        if isinstance(region, Outcome):
            return region
        first, last = region.first, region.last
        lines = state.derived("edit-function:lines", lambda s: split_lines(s.text))[first - 1 : last]
        verdict, forward, backward = hunk_verdict(lines, self.hunks)
        count = len(self.hunks)
        noun = "hunk" if count == 1 else "hunks"
        span = region.label
        if verdict == "apply":
            assert isinstance(forward, list)
            at = first + forward[0]
            moved = [s - h.start(False) for s, h in zip(forward, self.hunks, strict=True) if s != h.start(False)]
            offset = f", offset {moved[0]:+d} line(s) within it" if moved else ""
            new_lines = tuple(split_lines(splice_hunks(lines, self.hunks, forward, reverse=False)))
            return Outcome.apply(
                at,
                f"applies {count} {noun} from {self.source} inside {span}{offset}",
                plan=Plan(first, last, new_lines),
            )
        if verdict == "applied":
            assert isinstance(backward, list)
            already = f"the {count} {noun} of {self.source} {'is' if count == 1 else 'are'} already in {span}"
            if self.written in state.previous:
                return Outcome.skip(Reason.ALREADY_APPLIED, first + backward[0], already)
            # Lines patchkit never wrote here: upstream's own (at a commit, always: no record covers one).
            return Outcome.skip(
                Reason.UPSTREAM_PROVIDES,
                first + backward[0],
                f"{already}, and no record shows patchkit writing {'it' if count == 1 else 'them'} there: "
                "upstream has this change, so the patch is redundant here",
            )
        assert isinstance(forward, Mismatch)
        miss = forward
        return Outcome.fail(
            Reason.CONFLICT,
            first + miss.line - 1,
            f"hunk {miss.hunk.number} of {count} ({miss.hunk.header}) of {self.source} does not match inside "
            f"{span} at line {first + miss.line - 1}: expected {_shown(miss.expected, 'a line')}, found "
            f"{_shown(miss.found, region.end_name)} (zero fuzz: context and removed lines must match "
            "exactly); neither does its reverse, so the change is not in place either",
        )

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        region = self.region(state)
        return None if isinstance(region, Outcome) else (region.first, region.last)

    def simulate(self, state: CodeState, outcome: Outcome[Plan], patch_id: str) -> None:
        plan = outcome.planned
        lines = split_lines(state.text)
        delta = len(plan.new_lines) - (plan.last - plan.first + 1)
        _new, inside = self.graft(state, plan)
        for node in ast.walk(state.tree):
            if id(node) in inside or not hasattr(node, "lineno"):
                continue
            if node.lineno > plan.last:
                node.lineno += delta
            end = getattr(node, "end_lineno", None)
            if end is not None and end >= plan.last:
                setattr(node, "end_lineno", end + delta)  # noqa: B010 (any node kind)
        state.replace_text("".join([*lines[: plan.first - 1], *plan.new_lines, *lines[plan.last :]]))

    def transform(self, module: cst.Module, outcome: Outcome[Plan]) -> cst.Module:
        import libcst

        text = module.code
        state = CodeState.parse("<render>", text)
        again = self.analyze(state)
        if again.plan is None:
            raise InternalError(f"{self.source} no longer applies to {self.op_name}'s region as the analysis saw it")
        plan = again.planned
        lines = split_lines(text)
        new = "".join([*lines[: plan.first - 1], *plan.new_lines, *lines[plan.last :]])
        return libcst.parse_module(new.encode(module.encoding))


@dataclass(frozen=True)
class NamedHunks(ScopedHunks):
    """A scoped-hunk op whose region one table key names: ``function = "Worker.verify"``, ``statement = "X"``."""

    key: ClassVar[str]  # the table key (and the key of identity())
    what: ClassVar[str]  # how a payload error calls the region: "the function"
    target: str = ""  # the key's value

    @classmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> Self:
        written, sha, hunks = cls.read_hunks(table, ctx, cls.what)
        return cls(target=str(table[cls.key]), source=written, sha256=sha, hunks=hunks)  # a string: the schema

    def identity(self) -> dict[str, object]:
        return {self.key: self.target, "diff": self.sha256}

    @property
    def region_key(self) -> str:
        return f"{self.key}={self.target}"

    def edits(self) -> set[str]:
        return {self.target}

    def same_spot(self, other: Operation[Any, Any]) -> bool:
        return isinstance(other, type(self)) and other.target == self.target


@dataclass(frozen=True)
class EditFunction(NamedHunks):
    """edit-function: applies the hunks of a unified diff payload inside one function or method of the target file.

    Reads ``function`` (``Class.method``) and ``source``, a diff whose line numbers count from the function's top.
    """

    op_name = "edit-function"
    port_traits = PortTraits(
        Anchor.FUNCTION, key="function", merge=Merge.DEF_LINES, merge_on=Reason.CONFLICT, diff_payload=True
    )
    key = "function"
    what = "the function"

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        return missing_in(self.target, reason, is_class=False)

    def region(self, state: CodeState) -> Region | Outcome[object]:
        fn, _owner, missing_class = state.find_function(self.target)
        if fn is None:
            return missing_function(state, self.target, missing_class)
        bad = self._own_lines(state, fn, self.target, "the function's")
        if bad is not None:
            return bad
        first, last = function_lines(fn, state.lines)
        return Region(first, last, f"{self.target} (lines {first}-{last})", "the end of the function")

    def graft(self, state: CodeState, plan: Plan) -> tuple[list[ast.stmt], set[int]]:
        fn, _owner, _missing = state.find_function(self.target)
        assert fn is not None
        new_node = _parse_function(plan.new_lines, plan.first)
        _replace_in_parent(state.tree, fn, new_node)
        return [new_node], {id(n) for n in ast.walk(new_node)}


def _parse_function(lines: Sequence[str], first: int) -> ast.stmt:
    """The def in ``lines`` (at their own indentation), numbered as from line ``first`` of the file."""
    text = "".join(lines)
    def_line = next(line for line in lines if not line.lstrip(" \t").startswith("#"))
    indented = def_line[:1] in (" ", "\t")
    tree = ast.parse("if 1:\n" + text if indented else text)
    node = tree.body[0].body[0] if indented else tree.body[0]  # type: ignore[attr-defined]
    ast.increment_lineno(node, first - (2 if indented else 1))
    return node


def _replace_in_parent(tree: ast.AST, old: ast.stmt, new: ast.stmt) -> None:
    for parent in ast.walk(tree):
        for _name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is old:
                        value[index] = new
                        return
    raise AssertionError("the function is not in the tree it was found in")
