"""`patchkit guard`: may a benchmark number be produced from this tree?

A thin verb over ``patchkit.guard.evaluate_guard``: it prints the report
(the per-patch table as ``status`` shows it, then every check) or its JSON,
and returns the report's exit code (0/1; with ``--bisect`` 0/125/128).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from patchkit.commands._common import header
from patchkit.errors import BisectAbortError, PatchkitError, UsageError
from patchkit.guard.report import GuardReport
from patchkit.render import Grid, emit, plural, print_json, results_table

if TYPE_CHECKING:
    from rich.console import Console

_MARK = {"ok": ("PASS", "green"), "warning": ("WARN", "yellow"), "error": ("FAIL", "bold red")}


def guard(
    *,
    manifest: str,
    repo: str,
    python: str | None,
    imports: Sequence[str],
    allow_dirty: bool,
    strict: bool,
    bisect: bool,
    json_out: bool,
    console: Console,
) -> int:
    with bisect_errors(bisect):
        if imports and python is None:
            raise UsageError(
                f"--import {imports[0]} needs --python PY",
                hint="name the interpreter the server runs with, e.g. --python /venv/bin/python",
            )
        from patchkit.guard.api import evaluate_guard

        report = evaluate_guard(
            repo, manifest, python=python, imports=imports, allow_dirty=allow_dirty, strict=strict, bisect=bisect
        )
    if json_out:
        print_json(report.to_json(bisect=bisect))
    else:
        show(report, console, bisect=bisect)
    return report.exit_code(bisect=bisect)


@contextmanager
def bisect_errors(bisect: bool) -> Iterator[None]:
    """Under --bisect, turn any patchkit error into exit 128 (stop the bisect)."""
    try:
        yield
    except BisectAbortError:
        raise
    except PatchkitError as exc:
        if not bisect:
            raise
        raise BisectAbortError.wrap(exc) from None


def checks_table(report: GuardReport) -> Grid:
    table = Grid()
    table.add_column("check", whole=True)
    table.add_column("result", whole=True)
    table.add_column("message")
    for item in report.checks:
        table.add_row(item.check, _MARK[item.severity], item.message)
    return table


def show(report: GuardReport, console: Console, *, bisect: bool = False) -> None:
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
    line, style = verdict(report, bisect=bisect)
    console.print(line, style=style, markup=False)


def verdict(report: GuardReport, *, bisect: bool = False) -> tuple[str, str]:
    code = report.exit_code(bisect=bisect)
    warned = f" ({plural(len(report.warnings), 'warning')}: {', '.join(c.check for c in report.warnings)})"
    if report.ok:
        return f"GUARD OK: this tree may be benchmarked{warned if report.warnings else ''}.", "bold green"
    names = ", ".join(c.check for c in report.failed)
    line = f"GUARD FAILED: {plural(len(report.failed), 'check')} failed ({names})"
    if code == 125:
        line += "; exit 125: a required patch cannot apply at this commit, git bisect skips it"
    elif code == 128:
        line += "; exit 128: the setup is wrong (not a verdict on this commit), git bisect stops"
    return line + ".", "bold red"
