"""The contracts operations implement: ``PythonOperation`` and ``TextOperation``, over ``Operation``.

An operation is a frozen value built from one ``[[patch]]`` table.  It has
three steps, always run in this order by the engine:

``analyze(state)``
    Look at the file and return an ``Outcome``: apply, skip or fail, with a
    reason code, the line and a message.  It never raises for a target that
    does not fit.
``simulate(state, outcome, patch_id)``
    Only after an "apply" outcome: make the change on the state so the next
    patch on the same file sees it.
a write
    Only when writing: make the same change on what is written.  The engine
    re-analyses the result and requires this patch to read back as
    ALREADY_APPLIED, so the analysis and the write cannot silently diverge.

Two contracts, by what an op reads and writes; each is whole (no step of one
raises "not for this kind"):

``PythonOperation``
    ``state`` is a ``CodeState`` (an ast model, see ``code.py``); spliced
    nodes are marked with ``patch_id``; the write is ``transform(module,
    outcome)`` on a libcst module.
``TextOperation``
    ``state`` is a ``TextState`` (the file's path and a mutable ``text``); the
    write is ``transform_text(text, outcome)``.  Such an op reads its payload
    with ``LoadContext.raw_payload`` (bytes, not parsed), and its file may be
    any UTF-8 text file (``diff``).

The engine dispatches on the contract: a file whose patches are all text ops
is never parsed as Python.  The loader keeps the two kinds off one file
(``same_form``): a text edit would not update the syntax tree the others
edit.

The engine and the loader never read an op's fields: what they need to know
about a patch beyond its verdict is asked through methods here (``adds`` /
``edits`` and ``same_spot`` for the composition check, ``missing_target`` for
hints, ``target_span`` for ``explain``, ``identity`` for cache keys).

Nor does ``port`` know any op by name: each op declares its ``port_traits``
(``PortTraits``): what its patches are anchored to (``Anchor``: a function, a
class, the import block, a statement, lines of text, a place in the module)
and under which table key, which region its payload can be merged with three
ways when upstream edits it (``Merge``), and how its payload names the anchor.
What such a merge needs of the op beyond that is asked here too:
``upstream_digest`` (a replaced def's ``expect``), ``target_span`` and
``merge_name`` (the region a diff payload edits).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, TypeVar

from patchkit.errors import InternalError, ManifestError
from patchkit.operations.code import CodeState
from patchkit.operations.lookup import AmbiguousTarget
from patchkit.results import Reason

if TYPE_CHECKING:
    from pathlib import Path

    import libcst as cst

    from patchkit.operations.payload import Payload, PayloadCache


# How every op words an APPLY that replaces an older version of patchkit's own code (one such
# outcome also says so in ``Outcome.replaces_previous``, which status reads to say "out of date").
REPLACES_PREVIOUS = "replaces the previous version of"


class Kind(str, Enum):
    APPLY = "apply"
    SKIP = "skip"
    FAIL = "fail"


class OnConflict(str, Enum):
    FAIL = "fail"
    KEEP_UPSTREAM = "keep-upstream"
    REPLACE = "replace"


class Anchor(str, Enum):
    """What a patch of an op is anchored to in its file: what ``port`` follows when upstream moves it.

    Port follows a ``FUNCTION`` (to where its code went, in the files the commit changed; with its class
    when that is renamed) and a ``CLASS`` (to the new class with the most alike body); every anchor
    follows its file when git calls the file renamed."""

    FUNCTION = "function"  # a def or a method (``Class.method``), named by ``PortTraits.key``
    CLASS = "class"  # a class, named by ``PortTraits.key`` (an op whose key is optional: the module without it)
    IMPORTS = "imports"  # the module's import block
    STATEMENT = "statement"  # a module-level statement, named by ``PortTraits.key``
    TEXT = "text"  # lines of text, found by their context (a whole-file diff)
    MODULE = "module"  # a place in the module: its end, or next to a definition


class Merge(str, Enum):
    """Which region of upstream's file a patch's payload is merged with three ways (base: upstream's region
    where the patch last applied; ours: the payload; theirs: upstream's region now) when upstream edits it."""

    NONE = "none"  # no merge: upstream's edit of the target is a FAIL port reports
    DEF = "def"  # the anchor def, whose whole new version the payload holds; ``digest_key`` refreshed after
    DEF_LINES = "def-lines"  # the anchor def's lines, which the payload's diff edits: its hunks merged, rewritten
    REGION = "region"  # the op's own region (``target_span``, named by ``merge_name``), edited by a diff payload


@dataclass(frozen=True)
class PortTraits:
    """What ``port`` needs to know of an op to carry its patches forward (see ``Anchor`` and ``Merge``)."""

    anchor: Anchor = Anchor.MODULE
    key: str | None = None  # the table key that names the anchor ("function", "class", "statement", "target")
    # The table key where the payload's own name for the anchor is kept once port renames the anchor, when the
    # table does not say it already: the loader falls back to the anchor's name ("payload_function").
    payload_key: str | None = None
    renamed_with_class: tuple[str, ...] = ()  # keys that name a definition, renamed when it is a class port renames
    merge: Merge = Merge.NONE
    merge_on: Reason | None = None  # the FAIL reason that says upstream edited the region (DRIFT, CONFLICT)
    digest_key: str | None = None  # Merge.DEF: the key of upstream's def's digests (``upstream_digest``)
    merge_advice: str = ""  # Merge.DEF: said when the payload keeps most of upstream's lines (a narrower op fits)
    diff_payload: bool = False  # the payload is a unified diff whose header lines name the file (they follow it)

    @property
    def follows(self) -> bool:
        """Whether port follows the anchor itself when it moves (a function or a class), not only its file."""
        return self.anchor in (Anchor.FUNCTION, Anchor.CLASS)


Plan = TypeVar("Plan")


@dataclass(frozen=True)
class Outcome(Generic[Plan]):
    """An op's verdict on a file; an APPLY's ``plan`` is what its simulate and its write act on
    (its type is the op's: ``PythonOperation[DefPlan]`` plans with a ``DefPlan``)."""

    kind: Kind
    reason: Reason | None
    line: int | None
    message: str
    plan: Plan | None = None
    # An APPLY that replaces an older version of patchkit's own code, which the record says patchkit
    # wrote (``CodeState.previous``): the patch is in place, out of date.
    replaces_previous: bool = False

    @classmethod
    def apply(
        cls, line: int | None, message: str, plan: Plan | None = None, *, replaces_previous: bool = False
    ) -> Outcome[Plan]:
        return cls(Kind.APPLY, None, line, message, plan, replaces_previous)

    @classmethod
    def skip(cls, reason: Reason, line: int | None, message: str) -> Outcome[Plan]:
        return cls(Kind.SKIP, reason, line, message)

    @classmethod
    def fail(cls, reason: Reason, line: int | None, message: str) -> Outcome[Plan]:
        return cls(Kind.FAIL, reason, line, message)

    @property
    def planned(self) -> Plan:
        """The plan of an APPLY made with one (an op's simulate and write read it)."""
        if self.plan is None:
            raise InternalError(f"an outcome without a plan reached a step that needs one: {self.message}")
        return self.plan


@dataclass(frozen=True)
class LoadContext:
    """What ``from_table`` needs to read payloads and word manifest errors."""

    manifest_path: Path
    display: str  # the manifest path as shown to the user
    key: str  # e.g. "patch[2]"
    line_of: Callable[[str | None], int | None]  # a key of this table (None: the table) -> its TOML line
    payloads: PayloadCache

    def error(self, key: str | None, message: str, hint: str | None = None) -> NoReturn:
        path = self.key if key is None else f"{self.key}.{key}"
        raise ManifestError(message, file=self.display, key_path=path, line=self.line_of(key), hint=hint)

    def payload_path(self, table: Mapping[str, object], key: str) -> tuple[str, Path]:
        """A payload's path as written and as resolved; code written inline (a line break in the path) is an error
        that says so, rather than a file name with line breaks in it."""
        written = str(table[key])  # the schema has checked it is a string
        if "\n" in written or "\r" in written:
            self.error(
                key,
                f"{key} holds code with line breaks, not a payload file's path: {written.splitlines()[0]!r}...",
                hint="put the code in a .py file under patches/ and give its path, relative to the manifest file",
            )
        return written, self.manifest_path.parent / written

    def payload(self, table: Mapping[str, object], key: str = "source") -> Payload:
        written, path = self.payload_path(table, key)
        try:
            return self.payloads.load(path, written)
        except FileNotFoundError:
            self.error(
                key,
                f"payload file {written!r} does not exist (looked at {path})",
                hint="source paths are relative to the manifest file",
            )
        except (OSError, UnicodeDecodeError) as exc:
            self.error(key, f"payload file {written!r} cannot be read: {exc}")
        except SyntaxError as exc:
            self.error(key, f"payload file {written!r} is not valid Python: {exc.msg} at line {exc.lineno}")

    def raw_payload(self, table: Mapping[str, object], key: str = "source") -> bytes:
        """A payload's bytes, not parsed (it still counts in the manifest digest)."""
        written, path = self.payload_path(table, key)
        try:
            return self.payloads.load_raw(path)
        except FileNotFoundError:
            self.error(
                key,
                f"payload file {written!r} does not exist (looked at {path})",
                hint="source paths are relative to the manifest file",
            )
        except OSError as exc:
            self.error(key, f"payload file {written!r} cannot be read: {exc.strerror}")


def missing_in(dotted: str, reason: Reason, *, is_class: bool) -> tuple[str, str] | None:
    """The class or def a not-found ``reason`` names in ``dotted`` (a class, or a function/method)."""
    parts = dotted.split(".")
    if reason is Reason.CLASS_NOT_FOUND:
        owners = parts if is_class else parts[:-1]
        return ("class", owners[-1]) if owners else None
    if reason is Reason.FUNCTION_NOT_FOUND:
        return ("def", parts[-1])
    return None


@dataclass
class TextState:
    """A file as text: what a ``TextOperation`` analyses (the analogue of ``CodeState``)."""

    path: str
    text: str


State = TypeVar("State", CodeState, TextState)


class Operation(ABC, Generic[State, Plan]):
    """What every op is, whatever it reads: ``State`` is ``CodeState`` or ``TextState``; ``Plan`` is
    what an APPLY ``Outcome`` of this op carries to its simulate and its write."""

    op_name: ClassVar[str]
    port_traits: ClassVar[PortTraits] = PortTraits()  # how port carries its patches: anchored to the module

    @classmethod
    @abstractmethod
    def from_table(cls, table: Mapping[str, object], ctx: LoadContext) -> Operation[State, Plan]:
        """Build from a schema-valid table; raise ManifestError via ``ctx.error``."""

    @abstractmethod
    def analyze(self, state: State) -> Outcome[Plan]:
        """The verdict on the file as ``state`` holds it (never raises for a target that does not fit)."""

    def verdict(self, state: State) -> Outcome[Plan]:
        """``analyze``, as the engine asks for it."""
        return self.analyze(state)

    @abstractmethod
    def simulate(self, state: State, outcome: Outcome[Plan], patch_id: str) -> None:
        """Make an APPLY's change on ``state`` (the op's own step; the engine calls ``compose``)."""

    def compose(self, state: State, outcome: Outcome[Plan], patch_id: str) -> None:
        """After an APPLY: change ``state`` so that the next patch on the file sees the file as it will be."""
        self.simulate(state, outcome, patch_id)

    def same_form(self, other: Operation[Any, Any]) -> bool:
        """Whether ``other`` edits the file in the same form (Python or text): patches on one file must."""
        return isinstance(other, PythonOperation) is isinstance(self, PythonOperation)

    def own_code(self) -> tuple[str, ...]:
        """Digests of the code this op writes (kept in the record: patchkit's own code, any version)."""
        return ()

    @abstractmethod
    def identity(self) -> dict[str, object]:
        """Everything the verdict depends on besides the file (for cache keys)."""

    def adds(self) -> set[str]:
        """Qualified names whose whole definition this patch supplies."""
        return set()

    def edits(self) -> set[str]:
        """Qualified names whose code this patch changes in place."""
        return set()

    def missing_target(self, reason: Reason) -> tuple[str, str] | None:
        """("class" | "def", name) that a CLASS/FUNCTION_NOT_FOUND result of this op is about."""
        return None

    def warnings(self, target: State | None = None) -> list[tuple[int, str]]:
        """(payload line, message) for what `validate` should warn about (no verdict depends on it);
        ``target``: the target file, where `validate` has it (else what the payload alone says)."""
        return []

    def same_spot(self, other: Operation[Any, Any]) -> bool:
        """Whether ``other`` inserts at exactly the place this op does (the order would matter)."""
        return False

    def target_span(self, state: State) -> tuple[int, int] | None:
        """Lines of what the patch targets in this file (for `explain` to pick hunks)."""
        return None

    def span(self, state: State) -> tuple[int, int] | None:
        """``target_span``, as the engine asks for it."""
        return self.target_span(state)

    def upstream_digest(self, state: State) -> str | None:
        """``Merge.DEF``: the digest of the upstream code this patch replaces, as it is in ``state``, which port
        writes to ``PortTraits.digest_key`` after a merge (None: not there)."""
        return None

    @property
    def merge_name(self) -> str:
        """``Merge.REGION``: how port's notes and refusals call the region this patch's diff edits."""
        return self.op_name

    @cached_property
    def fingerprint(self) -> str:
        """Digest of ``identity()``; computed once per loaded patch."""
        blob = json.dumps({"op": self.op_name, **self.identity()}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class PythonOperation(Operation[CodeState, Plan]):
    """An op on a Python file: analysed on a ``CodeState``, written with libcst (``transform``)."""

    # True when simulate() edits statements that were already in the tree (not only splices new
    # ones into a block): then nothing computed from those statements' source text still holds
    # (CodeState._span).  tests/codestate_check.py checks every op against its flag at every
    # simulated APPLY (tests/test_codestate_invariant.py, or pytest --check-codestate).
    edits_in_place: ClassVar[bool] = False

    def verdict(self, state: CodeState) -> Outcome[Plan]:
        """``analyze``, with a target bound in several if / try branches reported, not guessed."""
        try:
            return self.analyze(state)
        except AmbiguousTarget as exc:
            return Outcome.fail(Reason.UNSUPPORTED_TARGET, exc.line, str(exc))

    def compose(self, state: CodeState, outcome: Outcome[Plan], patch_id: str) -> None:
        """``simulate``, then tell ``state`` what changed, so it forgets what no longer holds."""
        self.simulate(state, outcome, patch_id)
        state.changed(in_place=self.edits_in_place, names=self.edits())

    @abstractmethod
    def transform(self, module: cst.Module, outcome: Outcome[Plan]) -> cst.Module:
        """Make an APPLY's change on the libcst module of the file (the write)."""

    def span(self, state: CodeState) -> tuple[int, int] | None:
        """``target_span``, or None when the target is ambiguous."""
        try:
            return self.target_span(state)
        except AmbiguousTarget:
            return None


class TextOperation(Operation[TextState, Plan]):
    """An op on a text file: analysed on a ``TextState``, written on the text (``transform_text``)."""

    @abstractmethod
    def transform_text(self, text: str, outcome: Outcome[Plan]) -> str:
        """Make an APPLY's change on the file's text (the write)."""
