"""`patchkit validate`: load a manifest (schema and payloads) and list its patches."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.engine.evaluate import payload_warnings
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.sources import WorktreeSource
from patchkit.views.console import emit, print_json
from patchkit.views.grid import Grid
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def validate(*, manifest: str, repo: str | None, json_out: bool, console: Console) -> int:
    loaded = load_manifest(manifest)
    source = None
    if repo is not None:
        git_repo = Repo.discover(Path(repo))
        source = WorktreeSource(git_repo, git_repo.require_worktree("validate --repo"))
    warnings = payload_warnings(loaded, source)
    if json_out:
        print_json(
            {
                "version": 1,
                "command": "validate",
                "manifest": loaded.to_json(),
                "patches": [
                    {
                        "patch": p.id,
                        "op": p.op_name,
                        "file": p.file,
                        "required": p.required,
                        "requires": list(p.requires),
                    }
                    for p in loaded.patches
                ],
                "groups": [
                    {
                        "group": g.id,
                        "members": list(g.members),
                        "required": g.required,
                        "parent": g.parent,
                        "description": g.description,
                    }
                    for g in loaded.groups
                ],
                "warnings": [{"patch": pid, "line": line, "message": message} for pid, line, message in warnings],
            }
        )
        return int(ExitCode.OK)
    table = Grid()
    for column in ("#", "patch", "op", "file", "required", "requires"):
        table.add_column(column, whole=True)
    for p in loaded.patches:
        table.add_row(
            str(p.index), p.id, p.op_name, p.file, "yes" if p.required else "no", ", ".join(p.requires) or "-"
        )
    console.print(f"manifest {loaded.name} ({loaded.display}, {loaded.digest})", markup=False)
    emit(console, table)
    for g in loaded.groups:
        within = f" (a variant in {g.parent})" if g.parent else ""
        optional = "" if g.required else ", optional"
        console.print(f"group {g.id}{within}: variants {', '.join(g.members)}{optional}", markup=False)
    for pid, _line, message in warnings:
        console.print(f"warning: patch {pid}: {message}", style="yellow", markup=False)
    groups = f", {plural(len(loaded.groups), 'group')}" if loaded.groups else ""
    console.print(f"VALID: {plural(len(loaded.patches), 'patch', 'patches')}{groups}.", style="bold green")
    return int(ExitCode.OK)
