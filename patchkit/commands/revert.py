"""`patchkit revert`: put back the files patchkit wrote for a manifest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.engine.record import load_record
from patchkit.engine.revert import revert_worktree
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.views.console import print_json
from patchkit.wording import plural
from patchkit.written import Written

if TYPE_CHECKING:
    from patchkit.views.console import Console


def manifest_name(manifest: str, git_repo: Repo) -> str:
    """The manifest's name; a broken or deleted manifest can still be reverted by name."""

    try:
        return load_manifest(manifest).name
    except UsageError:
        if load_record(git_repo, manifest) is not None:
            return manifest
        raise


def revert(
    *,
    manifest: str,
    repo: str,
    force: bool,
    json_out: bool,
    wait: float,
    console: Console,
    written: Written | None = None,
) -> int:
    """``written``: the CLI's sink for the paths restored whole (its words for an interrupt)."""
    with Repo.discover(Path(repo)) as git_repo:
        name = manifest_name(manifest, git_repo)
        report = revert_worktree(name, git_repo, force=force, wait=wait, written=written)
        if json_out:
            print_json(report.to_json())
            return int(ExitCode.OK)
        for note in report.recovered:
            console.print(f"note: {note}", style="yellow", markup=False)
        if report.nothing_recorded:
            if report.recovered:
                console.print(
                    f"OK: rolled back the interrupted run above; patchkit has no other record of applying {name} "
                    f"in {report.target}.",
                    markup=False,
                )
            else:
                console.print(f"OK: nothing to revert; patchkit has no record of applying {name} in {report.target}.")
            return int(ExitCode.OK)
        for path, origin in report.restored:
            source = "HEAD" if origin == "HEAD" else "its content before patchkit wrote it"
            console.print(f"  restored {path} from {source}")
        if report.forced:
            console.print(
                f"  (--force) discarded edits made after patching in: {', '.join(report.forced)}", style="yellow"
            )
        console.print(f"REVERTED: {plural(len(report.restored), 'file')} for manifest {name}.", style="bold green")
        return int(ExitCode.OK)
