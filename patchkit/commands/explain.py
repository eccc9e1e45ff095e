"""`patchkit explain`: the upstream commit that made a patch stop applying."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.engine.explain import explain as run_explain
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.results import Reason, Status
from patchkit.views.console import print_json, write_pieces
from patchkit.views.patches import STATUS_STYLE

if TYPE_CHECKING:
    from patchkit.views.console import Console


def explain(*, manifest: str, patch_id: str, repo: str, commit: str, json_out: bool, console: Console) -> int:
    loaded = load_manifest(manifest)
    with Repo.discover(Path(repo)) as git_repo:
        report = run_explain(loaded, git_repo, patch_id, commit)
        if json_out:
            print_json(report.to_json())
            return int(ExitCode.OK)
        r = report.result
        write_pieces(
            console,
            [
                ("patchkit explain", "bold"),
                (f'  {report.patch.id} ({report.patch.op_name})  at {report.commit.sha} "{report.commit.subject}"', ""),
            ],
        )
        write_pieces(
            console,
            [
                ("  ", ""),
                (r.status.value, STATUS_STYLE[r.status]),
                (f" {r.reason.value if r.reason else ''}  {r.where()}  {r.message}", ""),
            ],
        )
        if r.hint:
            write_pieces(console, [(f"  hint: {r.hint}", "dim")])
        if not report.failing:
            if r.status is Status.APPLY:
                state = "applies"
            elif r.reason is Reason.OTHER_VARIANT:
                state = "is an unused variant"
            elif r.reason is Reason.UPSTREAM_PROVIDES:
                state = "is not needed (upstream provides it)"
            else:
                state = "is already in place"
            console.print(f"{report.patch.id} {state} at {report.commit.short}: there is no failure to explain.")
            return int(ExitCode.OK)
        for intro in report.introduced:
            c = intro.commit
            write_pieces(
                console,
                [("introduced by ", "bold"), (f"{c.sha}", "bold"), (f' "{c.subject}"  {c.author}, {c.date}', "")],
            )
            if intro.result_before is not None and intro.parent is not None:
                before = intro.result_before
                console.print(
                    f"  at its parent {intro.parent.short}: {before.status.value}"
                    f"{' ' + before.reason.value if before.reason else ''}; "
                    f"here: {intro.result_after.status.value} "
                    f"{intro.result_after.reason.value if intro.result_after.reason else ''}"
                )
            if intro.renamed_to:
                console.print(f"  {report.patch.file} was renamed to {intro.renamed_to} in this commit")
            if intro.diff:
                write_pieces(console, [(_indent(intro.diff), "dim")])
        for changed_at, was, now in report.reason_changes:
            console.print(
                f"then {now.value if now else '-'} (was {was.value if was else '-'}) from "
                f'{changed_at.short} "{changed_at.subject}" ({changed_at.date[:10]})'
            )
        if report.never_applied:
            console.print(
                f"on at least one line of history {report.patch.id} fails back to the first commit: "
                f"it never applied there ({report.checked:,} ancestors checked)."
            )
        if not report.introduced and not report.never_applied:
            console.print("no introducing commit found among the ancestors.")
        return int(ExitCode.OK)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
