"""Result values: every patch evaluation ends as one frozen ``PatchResult``.

Statuses and reason codes form a closed, documented set (docs/statuses.md).
Operations never raise for a target that does not fit; they return a result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any


class Status(str, Enum):
    APPLY = "APPLY"  # applies here (or was applied by this run)
    SKIP = "SKIP"  # already in place: nothing to do
    WARN = "WARN"  # an optional patch (required = false) cannot apply; the rest still applies
    FAIL = "FAIL"  # a required patch cannot apply: the whole manifest is refused

    def __str__(self) -> str:
        return self.value


class Reason(str, Enum):
    # SKIP reasons
    ALREADY_APPLIED = "ALREADY_APPLIED"
    UPSTREAM_PROVIDES = "UPSTREAM_PROVIDES"
    # WARN / FAIL reasons
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    UNSUPPORTED_FILE = "UNSUPPORTED_FILE"
    PARSE_ERROR = "PARSE_ERROR"
    CLASS_NOT_FOUND = "CLASS_NOT_FOUND"
    FUNCTION_NOT_FOUND = "FUNCTION_NOT_FOUND"
    TARGET_NOT_FOUND = "TARGET_NOT_FOUND"
    UNSUPPORTED_TARGET = "UNSUPPORTED_TARGET"
    ANCHOR_NOT_FOUND = "ANCHOR_NOT_FOUND"
    ANCHOR_AMBIGUOUS = "ANCHOR_AMBIGUOUS"
    CONFLICT = "CONFLICT"
    DRIFT = "DRIFT"
    DEPENDENCY = "DEPENDENCY"
    # groups (variants of one change)
    OTHER_VARIANT = "OTHER_VARIANT"  # SKIP: another variant of the patch's group applies here
    NO_VARIANT = "NO_VARIANT"  # WARN / FAIL of a group: no member applies here
    INTERNAL = "INTERNAL"

    def __str__(self) -> str:
        return self.value


# One line each, used by docs tests and by `patchkit explain`.
REASON_MEANING: dict[Reason, str] = {
    Reason.ALREADY_APPLIED: "the patch's code is already in the file, exactly (ignoring formatting and comments)",
    Reason.UPSTREAM_PROVIDES: (
        "upstream has the change itself: it defines the names with other code and the patch says "
        'on_conflict = "keep-upstream", or a scoped hunk op\'s lines are in place and patchkit did not '
        "write them: the patch is redundant here"
    ),
    Reason.FILE_NOT_FOUND: "the target file does not exist at this commit / in this tree",
    Reason.UNSUPPORTED_FILE: "the target is a symlink, a directory or a submodule, or is not UTF-8 text",
    Reason.PARSE_ERROR: "the target file is not valid Python",
    Reason.CLASS_NOT_FOUND: "the class the patch targets is not defined in the file",
    Reason.FUNCTION_NOT_FOUND: "the function or method the patch targets is not defined",
    Reason.TARGET_NOT_FOUND: "the module-level assignment the patch targets is not defined",
    Reason.UNSUPPORTED_TARGET: (
        "the target exists but has a shape the operation cannot edit, "
        "or is bound in more than one branch of top-level if / try blocks"
    ),
    Reason.ANCHOR_NOT_FOUND: "no statement in the function matches the anchor",
    Reason.ANCHOR_AMBIGUOUS: "more than one statement in the function matches the anchor",
    Reason.CONFLICT: 'a definition of that name exists with different code and on_conflict = "fail"',
    Reason.DRIFT: "the definition to replace no longer matches the digest in `expect`",
    Reason.DEPENDENCY: "a patch listed in `requires` does not apply, so this one is held back",
    Reason.OTHER_VARIANT: (
        "the patch is a variant (member of a [[group]]) that does not fit here, or serves only such a variant, "
        "while another variant of the group applies: nothing to do"
    ),
    Reason.NO_VARIANT: "no member of a [[group]] applies or is in place here (the message lists every member's reason)",
    Reason.INTERNAL: "patchkit's own re-check of its output failed (a bug: please report it)",
}


@dataclass(frozen=True)
class PatchResult:
    """The verdict for one patch against one version of the tree.

    ``line`` is 1-based and always refers to the target file as it was read
    (before this run's edits).  ``hint`` carries tree-wide knowledge (where a
    missing class or file went); it is kept apart from ``message`` because the
    message depends only on the file's content, which lets range checks cache
    it per blob.

    ``replaces_previous``: an APPLY that replaces an older version of the
    patch's code which the work tree's record says patchkit wrote (the patch
    is "out of date").  Only a work tree has a record, so a range check (and
    its cache) never sees one; the JSON says it in status's ``out_of_date``
    and each result's ``state``, not in the result itself.
    """

    patch: str
    op: str
    status: Status
    reason: Reason | None
    required: bool
    file: str
    line: int | None
    message: str
    hint: str | None = None
    replaces_previous: bool = False

    @property
    def ok(self) -> bool:
        return self.status in (Status.APPLY, Status.SKIP)

    @property
    def in_effect(self) -> bool:
        """The patch's code applies or is in place: what ``requires`` and groups count (not OTHER_VARIANT)."""
        return self.ok and self.reason is not Reason.OTHER_VARIANT

    @property
    def changes(self) -> bool:
        return self.status is Status.APPLY

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def with_hint(self, hint: str | None) -> PatchResult:
        return replace(self, hint=hint)

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "op": self.op,
            "status": self.status.value,
            "reason": self.reason.value if self.reason else None,
            "required": self.required,
            "file": self.file,
            "line": self.line,
            "message": self.message,
            "hint": self.hint,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PatchResult:
        return cls(
            patch=data["patch"],
            op=data["op"],
            status=Status(data["status"]),
            reason=Reason(data["reason"]) if data["reason"] else None,
            required=data["required"],
            file=data["file"],
            line=data["line"],
            message=data["message"],
            hint=data.get("hint"),
        )


@dataclass(frozen=True)
class GroupResult:
    """The verdict for one ``[[group]]`` (variants of one change) against one version of the tree.

    Derived from the members' results (``engine/groups.py``): APPLY when a
    member applies, SKIP when members are in place and none has anything to do
    (or, with OTHER_VARIANT, when the group is itself an unused variant of an
    enclosing group), WARN/FAIL NO_VARIANT when no member applies.
    ``covered_by``: the members (patch or group ids) that apply or are in place.
    """

    group: str
    status: Status
    reason: Reason | None
    required: bool
    members: tuple[str, ...]
    covered_by: tuple[str, ...]
    message: str

    @property
    def ok(self) -> bool:
        return self.status in (Status.APPLY, Status.SKIP) and self.reason is not Reason.OTHER_VARIANT

    def to_json(self) -> dict[str, object]:
        return {
            "group": self.group,
            "status": self.status.value,
            "reason": self.reason.value if self.reason else None,
            "required": self.required,
            "members": list(self.members),
            "covered_by": list(self.covered_by),
            "message": self.message,
        }


def failed(*, required: bool) -> Status:
    """The status of a patch that cannot apply."""
    return Status.FAIL if required else Status.WARN
