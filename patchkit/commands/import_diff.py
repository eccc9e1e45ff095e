"""`patchkit import-diff FILE.patch`: capture an existing patch file as a manifest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.capture.import_diff import import_diff as run_import
from patchkit.commands.capture import show
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.written import Written

if TYPE_CHECKING:
    from patchkit.views.console import Console


def import_diff(
    *,
    patch_file: str,
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
        report = run_import(
            git_repo, Path(patch_file), name=name, base=base, out=Path(out or "."), force=force, written=written
        )
        show(report, json_out=json_out, console=console, verb="import-diff")
        return int(ExitCode.OK)
