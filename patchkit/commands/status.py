"""`patchkit status`: what of a manifest is in the work tree now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.commands._common import open_inputs
from patchkit.engine.groups import group_results
from patchkit.engine.status import status_worktree
from patchkit.errors import ExitCode
from patchkit.guard.checks import stale_phrase
from patchkit.manifest import manifest_arg
from patchkit.results import Status
from patchkit.views.console import emit, print_json
from patchkit.views.patches import groups_table, header, results_table
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def status(*, manifest: str, repo: str, json_out: bool, console: Console) -> int:
    loaded, git_repo = open_inputs(manifest, repo)
    with git_repo:
        report = status_worktree(loaded, git_repo)
        code = int(ExitCode.OK if report.complete else ExitCode.REFUSED)
        if json_out:
            print_json(report.to_json())
            return code
        header(console, "status", loaded, f"work tree {report.target}", report.commit)
        emit(console, results_table(report.results, extra={"state": [report.state_of(r) for r in report.results]}))
        if report.manifest.groups:
            emit(console, groups_table(group_results(report.manifest, report.results)))
        if report.record is not None:
            base = report.record.base_commit[:10] if report.record.base_commit else "no commit"
            console.print(
                f"record: applied {report.record.applied_at} at {base}; files: "
                f"{', '.join(f.path for f in report.record.files)}",
                markup=False,
            )
            if report.record.manifest_digest != loaded.digest:
                console.print("note: the manifest changed since it was applied", style="yellow", markup=False)
        for phrase in report.layering():
            console.print(f"layered: {phrase}", markup=False)
        if report.edited:
            console.print(f"edited after patchkit wrote them: {', '.join(report.edited)}", style="yellow", markup=False)
        if report.interrupted is not None:
            console.print(f"INTERRUPTED: {report.interrupted.message}.", style="bold red", markup=False)
        elif report.out_of_date:
            console.print(
                f"OUT OF DATE: {stale_phrase(report.out_of_date)}; run "
                f"`patchkit apply -m {manifest_arg(loaded.name, loaded.path)}` to update "
                + ("it." if len(report.out_of_date) == 1 else "them."),
                style="bold red",
                markup=False,
            )
        elif report.complete:
            left_out = [r for r in report.results if not r.required and r.status is not Status.SKIP]
            if not left_out:
                console.print("COMPLETE: every required patch is in place.", style="bold green")
            else:
                listed = ", ".join(f"{r.patch} ({report.state_of(r)})" for r in left_out)
                required = sum(r.required for r in report.results)
                first = "every required patch is in place" if required else "the manifest has no required patches"
                console.print(
                    f"COMPLETE: {first}; {len(left_out)} of "
                    f"{plural(sum(not r.required for r in report.results), 'optional patch', 'optional patches')} "
                    f"not in place: {listed}.",
                    style="bold green",
                )
        else:
            pending = [r.patch for r in report.results if r.required and r.status is not Status.SKIP]
            console.print(f"INCOMPLETE: required patches not in place: {', '.join(pending)}.", style="bold red")
        return code
