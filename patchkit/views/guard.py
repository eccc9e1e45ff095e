"""The guard's report as a person reads it: the per-patch table as ``status`` shows it, every check with its
mark, the interpreter, and the one verdict line (with what exit 125 or 128 means to ``git bisect run``).

The report itself (``GuardReport``: the checks, the exit codes, the JSON) is ``patchkit.guard.report``;
the CLI and the pytest plugin print it through here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.views.console import emit
from patchkit.views.grid import Grid
from patchkit.views.patches import header, results_table
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.guard.combined import TreeAndSite
    from patchkit.guard.report import GuardReport
    from patchkit.views.console import Console

_MARK = {"ok": ("PASS", "green"), "warning": ("WARN", "yellow"), "error": ("FAIL", "bold red")}


def checks_table(report: GuardReport) -> Grid:
    table = Grid()
    table.add_column("check", whole=True)
    table.add_column("result", whole=True)
    table.add_column("message", prose=True)
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


def tree_and_site_verdict(both: TreeAndSite) -> tuple[str, str]:
    """The one line that ends ``guard -m M --python PY --site``'s report, and its style."""
    code = both.exit_code()
    if code == 0:
        return (
            "GUARD OK: this tree may be benchmarked, and every file of PY's site directories is accounted for.",
            ("bold green"),
        )
    failed = [c.check for c in both.tree.failed]
    if not both.site.ok:
        failed.append(f"site: {plural(len(both.site.findings), 'file')} not accounted for")
    return f"GUARD FAILED: {', '.join(failed)}{bisect_tail(code)}.", "bold red"


def bisect_tail(code: int) -> str:
    """What a 125 or 128 means to `git bisect run`, after a failed verdict (nothing for another code)."""
    if code == 125:
        return "; exit 125: a required patch cannot apply at this commit, git bisect skips it"
    if code == 128:
        return "; exit 128: the setup is wrong (not a verdict on this commit), git bisect stops"
    return ""
