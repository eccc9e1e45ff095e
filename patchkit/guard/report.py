"""The guard's verdict: a frozen ``GuardReport`` with every check, and its JSON.

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
from patchkit.render import Grid, emit, header, results_table
from patchkit.results import PatchResult, Status
from patchkit.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

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


_MARK = {"ok": ("PASS", "green"), "warning": ("WARN", "yellow"), "error": ("FAIL", "bold red")}


def checks_table(report: GuardReport) -> Grid:
    table = Grid()
    table.add_column("check", whole=True)
    table.add_column("result", whole=True)
    table.add_column("message")
    for item in report.checks:
        table.add_row(item.check, _MARK[item.severity], item.message)
    return table


def show(report: GuardReport, console: Console, *, bisect: bool = False, final: bool = True) -> None:
    """The report as a person reads it; ``final=False`` leaves out the verdict line (a combined guard prints
    one verdict of its own)."""
    header(console, "guard", report.manifest, f"work tree {report.target}", report.commit)
    emit(
        console,
        results_table(
            report.status.results, extra={"state": [report.status.state_of(r) for r in report.status.results]}
        ),
    )
    console.print()
    emit(console, checks_table(report))
    facts = report.interpreter
    if facts is not None:
        versions = ", ".join(f"{p.name} {p.version or '(no distribution)'}" for p in facts.packages)
        console.print(
            f"interpreter: {facts.python} -> {facts.executable} (Python {facts.version}); "
            f"{versions + '; ' if versions else ''}torch {facts.torch or '(not installed)'}",
            markup=False,
        )
    if final:
        line, style = verdict(report, bisect=bisect)
        console.print(line, style=style, markup=False)


def verdict(report: GuardReport, *, bisect: bool = False) -> tuple[str, str]:
    code = report.exit_code(bisect=bisect)
    warned = f" ({plural(len(report.warnings), 'warning')}: {', '.join(c.check for c in report.warnings)})"
    if report.ok:
        return f"GUARD OK: this tree may be benchmarked{warned if report.warnings else ''}.", "bold green"
    names = ", ".join(c.check for c in report.failed)
    return f"GUARD FAILED: {plural(len(report.failed), 'check')} failed ({names}){bisect_tail(code)}.", "bold red"


def bisect_tail(code: int) -> str:
    """What a 125 or 128 means to `git bisect run`, after a failed verdict (nothing for another code)."""
    if code == 125:
        return "; exit 125: a required patch cannot apply at this commit, git bisect skips it"
    if code == 128:
        return "; exit 128: the setup is wrong (not a verdict on this commit), git bisect stops"
    return ""
