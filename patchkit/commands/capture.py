"""`patchkit capture`: write a manifest and payloads that reproduce an edited work tree."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.capture.core import CaptureReport, summarize
from patchkit.capture.core import capture as run_capture
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.views.console import emit, print_json
from patchkit.views.grid import Grid
from patchkit.wording import plural
from patchkit.written import Written

if TYPE_CHECKING:
    from patchkit.views.console import Console


def capture(
    *,
    repo: str,
    name: str,
    base: str | None,
    out: str | None,
    force: bool,
    json_out: bool,
    console: Console,
    written: Written | None = None,
) -> int:
    """``written``: the CLI's sink for what was published whole (its words for an interrupt)."""
    with Repo.discover(Path(repo)) as git_repo:
        report = run_capture(git_repo, name=name, base=base, out=Path(out or "."), force=force, written=written)
        show(report, json_out=json_out, console=console, verb="capture")
        return int(ExitCode.OK)


def show(report: CaptureReport, *, json_out: bool, console: Console, verb: str) -> None:
    """The summary table (file, change, chosen op, why), or the JSON object."""
    if json_out:
        print_json({**report.to_json(), "command": verb})
        return
    console.print(f"patchkit {verb}  {report.name}  against {report.base.sha} {report.base.subject!r}", markup=False)
    table = Grid()
    for column in ("file", "change", "chosen op", "why"):
        table.add_column(column, whole=column == "chosen op", prose=column == "why")
    for row in summarize(report.patches):
        table.add_row(*row)
    emit(console, table)
    files = len({p.file for p in report.patches})
    console.print(
        f"CAPTURED: {plural(len(report.patches), 'patch', 'patches')} on {plural(files, 'file')} -> {report.manifest} "
        f"(payloads in {report.payload_dir})",
        markup=False,
    )
    if report.untracked:
        more = len(report.untracked) - 5
        shown = ", ".join(report.untracked[:5]) + (f" and {more} more" if more > 0 else "")
        console.print(
            f"note: {plural(len(report.untracked), 'untracked file')} "
            + ("is" if len(report.untracked) == 1 else "are")
            + f" not part of the capture: {shown} "
            "(add them to the base commit if the patches need them)",
            markup=False,
        )
