"""`patchkit guard --python PY --site`: the site directories of PY, file by file, against their RECORDs.

The report: the interpreter and its site directories, how many files were
verified (from the stat cache / hashed), every finding (edited, missing,
owned by none, uncommitted in an editable checkout, stale bytecode) with its distribution or
"owned by none", the owned ``.pth`` files that run code, and every editable
install with its checkout's state.  Exit 0 when there is no finding, else 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.errors import ExitCode, UsageError
from patchkit.proof.sitecheck import SiteReport, check_site
from patchkit.views.console import emit, print_json
from patchkit.views.grid import Grid
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


_KIND = {
    "edited": ("EDITED", "bold red"),
    "missing": ("MISSING", "bold red"),
    "unowned": ("UNOWNED", "bold red"),
    "editable-dirty": ("DIRTY", "bold red"),
    "stale-bytecode": ("STALE", "bold red"),
    "pth": ("RUNS CODE", "yellow"),
}


def guard_site(*, python: str | None, no_cache: bool, json_out: bool, console: Console) -> int:
    if python is None:
        raise UsageError("--site needs --python PY", hint="name the interpreter the server runs with")
    report = check_site(python, use_cache=not no_cache)
    if json_out:
        print_json(report.to_json())
    else:
        show_site(report, console)
    return int(ExitCode.OK if report.ok else ExitCode.REFUSED)


def findings_table(report: SiteReport) -> Grid:
    table = Grid()
    table.add_column("finding", whole=True)
    table.add_column("file")
    table.add_column("owner")
    table.add_column("detail", prose=True)
    for item in (*report.findings, *report.notes):
        table.add_row(_KIND[item.kind], item.path, item.owner or "owned by none", item.detail)
    return table


def show_site(report: SiteReport, console: Console, *, final: bool = True) -> None:
    console.print(
        f"patchkit guard --site: {report.python} -> {report.executable} (Python {report.version}); "
        f"site directories: {', '.join(report.site_dirs) or '(none)'}",
        markup=False,
    )
    console.print(
        f"{plural(len(report.distributions), 'distribution')}, {plural(report.files, 'file')} walked, "
        f"{report.verified} RECORD digests checked ({report.from_cache} from the stat cache, {report.hashed} hashed)",
        markup=False,
    )
    if report.findings or report.notes:
        emit(console, findings_table(report))
    for item in report.editables:
        state = "not a git checkout" if item.commit is None else f"git checkout at {item.commit[:12]}"
        dirty = f", {plural(len(item.dirty), 'uncommitted file')}" if item.dirty else ", clean"
        tail = dirty if item.commit is not None else ""
        console.print(f"editable {item.name} {item.version} from {item.directory}: {state}{tail}", markup=False)
    if not final:
        return
    if report.ok:
        console.print("GUARD --site OK: every file is accounted for.", style="bold green", markup=False)
    else:
        console.print(
            f"GUARD --site FAILED: {plural(len(report.findings), 'file')} not accounted for.",
            style="bold red",
            markup=False,
        )
