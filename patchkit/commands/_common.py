"""Small pieces the verbs share: opening inputs and the report header."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, load_manifest


def open_inputs(manifest: str, repo: str) -> tuple[Manifest, Repo]:
    # The manifest first: a bad manifest is reported the same way whatever the repo.
    loaded = load_manifest(manifest)
    return loaded, Repo.discover(Path(repo))


def header(console: Console, verb: str, manifest: Manifest, where: str, commit: Commit | None) -> None:
    line = Text.assemble(
        (f"patchkit {verb}", "bold"),
        f"  manifest {manifest.name} ({manifest.digest[:19]}…)  {where}",
    )
    if commit is not None:
        line.append(f"  at {commit.sha} {commit.subject!r}")
    console.print(line)
