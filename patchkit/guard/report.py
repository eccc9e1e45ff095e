"""The guard's verdict: a frozen ``GuardReport`` with every check, and its JSON (a person reads it through
``patchkit.views.guard``).

Exit codes follow from the report (``exit_code``):

* plain: 0 when every check passes, 1 otherwise;
* ``bisect=True`` (for ``git bisect run``): 0 good; 125 (skip) when this
  commit cannot be patched, i.e. a required patch FAILs when evaluated on the
  commit's own blobs (``commit_results``, read without a checkout); 128 (abort
  the bisect) for every other failure, since a wrong setup (unpatched but
  patchable, tampered, dirty, shadowed, an interrupted patchkit run, a patch
  holding an older payload version) must not be taken for a bad commit.  An
  interrupted run or an out-of-date payload is 128 even at a commit that
  cannot be patched: the tree must be recovered first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.engine.status import StatusReport
from patchkit.errors import ExitCode
from patchkit.git import Commit
from patchkit.guard.checks import Check
from patchkit.manifest import Manifest
from patchkit.results import PatchResult, Status

if TYPE_CHECKING:
    from patchkit.guard.probe import InterpreterFacts


@dataclass(frozen=True)
class GuardReport:
    """Everything the guard found, in the order it is shown: the checks, the per-patch table, the interpreter.

    ``exit_code`` maps it to the guard's documented exit codes (125 in bisect mode when the commit
    cannot be patched)."""

    manifest: Manifest
    target: str  # the work tree guarded
    commit: Commit | None
    branch: str | None  # None: detached HEAD (or no commit)
    checks: tuple[Check, ...]
    status: StatusReport  # the per-patch table, as `patchkit status` shows it
    interpreter: InterpreterFacts | None
    strict: bool
    allow_dirty: bool
    commit_results: tuple[PatchResult, ...] | None = None  # verdicts on HEAD's blobs (bisect mode, on failure)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.ok)

    @property
    def warnings(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.ok and c.severity == "warning")

    def check(self, name: str) -> Check:
        for item in self.checks:
            if item.check == name:
                return item
        raise KeyError(name)

    @property
    def patches_missing(self) -> bool:
        """A required patch (any patch with strict) is not in place."""
        return not self.check("patches").ok

    @property
    def unpatchable(self) -> bool:
        """This commit cannot be patched: a required patch (with strict: any) FAILs on its blobs."""
        if self.commit_results is None:
            return False
        bad = (Status.FAIL, Status.WARN) if self.strict else (Status.FAIL,)
        return any(r.status in bad for r in self.commit_results)

    def exit_code(self, *, bisect: bool = False) -> int:
        if self.ok:
            return int(ExitCode.OK)
        if not bisect:
            return int(ExitCode.REFUSED)
        if self.status.interrupted is not None or self.status.out_of_date:
            return int(ExitCode.BISECT_ABORT)  # a half-done run or stale payload is the setup, never the commit
        return int(ExitCode.BISECT_SKIP if self.unpatchable else ExitCode.BISECT_ABORT)

    def verdict(self, *, bisect: bool = False) -> str:
        code = self.exit_code(bisect=bisect)
        return {0: "good", 1: "refused", 125: "skip", 128: "abort"}[code]

    def to_json(self, *, bisect: bool = False) -> dict[str, object]:
        facts = self.interpreter
        return {
            "version": 1,
            "command": "guard",
            "manifest": self.manifest.to_json(),
            "target": self.target,
            "commit": self.commit.sha if self.commit else None,
            "subject": self.commit.subject if self.commit else None,
            "branch": self.branch,
            "detached": self.commit is not None and self.branch is None,
            "ok": self.ok,
            "strict": self.strict,
            "allow_dirty": self.allow_dirty,
            "bisect": bisect,
            "verdict": self.verdict(bisect=bisect),
            "exit_code": self.exit_code(bisect=bisect),
            "checks": [c.to_json() for c in self.checks],
            "results": [dict(r.to_json(), state=self.status.state_of(r)) for r in self.status.results],
            "commit_results": None if self.commit_results is None else [r.to_json() for r in self.commit_results],
            "interpreter": None
            if facts is None
            else {
                "python": facts.python,
                "executable": facts.executable,
                "version": facts.version,
                "prefix": facts.prefix,
                "packages": {p.name: p.to_json() for p in facts.packages},
                "torch": facts.torch,
            },
        }
