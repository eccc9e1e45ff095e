"""The transform contract every operation implements.

An operation is a frozen value built from one ``[[patch]]`` table.  It has
three steps, always run in this order by the engine:

``analyze(state)``
    Look at the file (an ast model, see ``code.py``) and return an
    ``Outcome``: apply, skip or fail, with a reason code, the line and a
    message.  It never raises for a target that does not fit.
``simulate(state, outcome, patch_id)``
    Only after an "apply" outcome: splice the change into the ast model so
    the next patch on the same file sees it (spliced nodes are marked with
    ``patch_id``).
``transform(module, outcome)``
    Only when writing: make the same change on a libcst module.  The engine
    re-analyses the result and requires this patch to read back as
    ALREADY_APPLIED, so ``analyze`` and ``transform`` cannot silently diverge.

An op that edits text rather than Python (``diff``) sets ``needs_python =
False``: for a file whose patches are all such ops, the engine does not parse
Python; ``analyze``/``simulate`` get a ``TextState`` (``path`` and a mutable
``text``) and the engine writes with ``transform_text(text, outcome)``
instead of ``transform``.  Such an op reads its payload with
``LoadContext.raw_payload`` (bytes, not parsed).

The engine and the loader never read an op's fields: what they need to know
about a patch beyond its verdict is asked through methods here (``adds`` /
``edits`` and ``same_spot`` for the composition check, ``missing_target`` for
hints, ``target_span`` for ``explain``, ``identity`` for cache keys).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from patchkit.errors import ManifestError
from patchkit.results import Reason

if TYPE_CHECKING:
    from pathlib import Path

    import libcst as cst

    from patchkit.operations.code import CodeState
    from patchkit.operations.payload import Payload, PayloadCache


# How every op words an APPLY that replaces an older version of patchkit's own code
# (status reads it to say "out of date").
REPLACES_PREVIOUS = "replaces the previous version of"


class Kind(str, Enum):
    APPLY = "apply"
    SKIP = "skip"
    FAIL = "fail"


class OnConflict(str, Enum):
    FAIL = "fail"
    KEEP_UPSTREAM = "keep-upstream"
    REPLACE = "replace"


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    reason: Reason | None
    line: int | None
    message: str
    plan: Any = None  # op-specific: what simulate/transform must do

    @classmethod
    def apply(cls, line: int | None, message: str, plan: Any = None) -> Outcome:
        return cls(Kind.APPLY, None, line, message, plan)

    @classmethod
    def skip(cls, reason: Reason, line: int | None, message: str) -> Outcome:
        return cls(Kind.SKIP, reason, line, message)

    @classmethod
    def fail(cls, reason: Reason, line: int | None, message: str) -> Outcome:
        return cls(Kind.FAIL, reason, line, message)


@dataclass(frozen=True)
class LoadContext:
    """What ``from_table`` needs to read payloads and word manifest errors."""

    manifest_path: Path
    display: str  # the manifest path as shown to the user
    key: str  # e.g. "patch[2]"
    line_of: Any  # callable(key_name | None) -> int | None
    payloads: PayloadCache

    def error(self, key: str | None, message: str, hint: str | None = None) -> NoReturn:
        path = self.key if key is None else f"{self.key}.{key}"
        raise ManifestError(message, file=self.display, key_path=path, line=self.line_of(key), hint=hint)

    def payload(self, table: Mapping[str, Any], key: str = "source") -> Payload:
        written = table[key]
        path = self.manifest_path.parent / written
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

    def raw_payload(self, table: Mapping[str, Any], key: str = "source") -> bytes:
        """A payload's bytes, not parsed (it still counts in the manifest digest)."""
        written = table[key]
        path = self.manifest_path.parent / written
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


class Operation(ABC):
    op_name: ClassVar[str]
    needs_python: ClassVar[bool] = True  # False: a text op (see the module docstring)
    # True when simulate() edits statements that were already in the tree (not only splices new
    # ones into a block): then nothing computed from those statements' source text still holds
    # (CodeState._span).  tests/conftest.py checks every op against its flag at every simulated APPLY.
    edits_in_place: ClassVar[bool] = False

    @classmethod
    @abstractmethod
    def from_table(cls, table: Mapping[str, Any], ctx: LoadContext) -> Operation:
        """Build from a schema-valid table; raise ManifestError via ``ctx.error``."""

    @abstractmethod
    def analyze(self, state: CodeState) -> Outcome: ...

    def verdict(self, state: CodeState) -> Outcome:
        """``analyze``, with a target bound in several if / try branches reported, not guessed."""
        from patchkit.operations.lookup import AmbiguousTarget

        try:
            return self.analyze(state)
        except AmbiguousTarget as exc:
            return Outcome.fail(Reason.UNSUPPORTED_TARGET, exc.line, str(exc))

    @abstractmethod
    def simulate(self, state: CodeState, outcome: Outcome, patch_id: str) -> None: ...

    @abstractmethod
    def transform(self, module: cst.Module, outcome: Outcome) -> cst.Module: ...

    def own_code(self) -> tuple[str, ...]:
        """Digests of the code this op writes (kept in the record: patchkit's own code, any version)."""
        return ()

    @abstractmethod
    def identity(self) -> dict[str, Any]:
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

    def warnings(self) -> list[tuple[int, str]]:
        """(payload line, message) for what `validate` should warn about (no verdict depends on it)."""
        return []

    def same_spot(self, other: Operation) -> bool:
        """Whether ``other`` inserts at exactly the place this op does (the order would matter)."""
        return False

    def transform_text(self, text: str, outcome: Outcome) -> str:
        """The edit on plain text, for ops with ``needs_python = False``."""
        raise NotImplementedError(f"{self.op_name} edits Python; it has no text transform")

    def target_span(self, state: CodeState) -> tuple[int, int] | None:
        """Lines of what the patch targets in this file (for `explain` to pick hunks)."""
        return None

    def span(self, state: CodeState) -> tuple[int, int] | None:
        """``target_span``, or None when the target is ambiguous."""
        from patchkit.operations.lookup import AmbiguousTarget

        try:
            return self.target_span(state)
        except AmbiguousTarget:
            return None

    @cached_property
    def fingerprint(self) -> str:
        """Digest of ``identity()``; computed once per loaded patch."""
        blob = json.dumps({"op": self.op_name, **self.identity()}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()
