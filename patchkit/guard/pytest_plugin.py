"""The pytest plugin: no benchmark test runs on an untrusted tree.

Registered through the ``pytest11`` entry point ``patchkit`` (pyproject.toml),
so installing patchkit makes it available everywhere pytest runs; it is inert
unless ``--patchkit-manifest M`` is given.  Then it runs the guard once, at
session start (before collection), and on failure prints the guard's report
(to stderr) and stops the session (exit status 1) with one line that says
why, so no test, pytest-benchmark or not, runs.

Options: ``--patchkit-manifest M``, ``--patchkit-repo DIR`` (default: the
current directory), ``--patchkit-import PKG`` (repeatable: PKG must resolve
inside the tree for the interpreter running pytest, ``sys.executable``),
``--patchkit-allow-dirty``, ``--patchkit-strict``.  On success the report is
kept as ``config.stash[patchkit.guard.pytest_plugin.REPORT_KEY]`` and its
commit shows in pytest's header.

This module imports nothing of patchkit at import time: pytest loads it in
every session, and most sessions do not use it.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from patchkit.guard.report import GuardReport

REPORT_KEY: pytest.StashKey[GuardReport] = pytest.StashKey()
EXIT_STATUS = 1  # the guard's own "refused"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("patchkit", "patchkit pre-benchmark guard")
    group.addoption(
        "--patchkit-manifest",
        metavar="M",
        default=None,
        help="Run `patchkit guard -m M` at session start; stop the session if the tree cannot be trusted.",
    )
    group.addoption("--patchkit-repo", metavar="DIR", default=".", help="The checkout to guard (default: .).")
    group.addoption(
        "--patchkit-import",
        metavar="PKG",
        action="append",
        default=[],
        help="PKG must be imported from that checkout by this interpreter. Repeatable.",
    )
    group.addoption("--patchkit-allow-dirty", action="store_true", help="Other changes are a warning, not a failure.")
    group.addoption("--patchkit-strict", action="store_true", help="Optional patches not in place fail too.")


def _render(report: GuardReport) -> str:
    from patchkit.views.console import make_console
    from patchkit.views.guard import show

    buffer = io.StringIO()
    show(report, make_console(buffer))
    return buffer.getvalue()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    manifest = config.getoption("patchkit_manifest")
    if not manifest:
        return
    import sys

    from patchkit.errors import PatchkitError
    from patchkit.guard.api import evaluate_guard

    imports = config.getoption("patchkit_import")
    try:
        report = evaluate_guard(
            config.getoption("patchkit_repo"),
            manifest,
            python=sys.executable if imports else None,
            imports=imports,
            allow_dirty=config.getoption("patchkit_allow_dirty"),
            strict=config.getoption("patchkit_strict"),
        )
    except PatchkitError as exc:
        raise pytest.UsageError(f"patchkit: error: {exc.one_line()}") from None
    if not report.ok:
        # The report goes to stderr here, once; pytest.exit gets only the one line of why. pytest prints an
        # exit's message twice (its "Exit:" line, then its closing banner), so a report in it would be too.
        names = ", ".join(c.check for c in report.failed)
        sys.stderr.write(_render(report))
        sys.stderr.flush()
        pytest.exit(f"patchkit guard refused this tree ({names}); no test was run", returncode=EXIT_STATUS)
    config.stash[REPORT_KEY] = report


def pytest_report_header(config: pytest.Config) -> str | None:
    report = config.stash.get(REPORT_KEY, None)
    if report is None or report.commit is None:
        return None
    return f"patchkit guard: ok, manifest {report.manifest.name} at {report.commit.sha} ({report.target})"
