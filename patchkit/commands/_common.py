"""Small pieces the verbs share: opening inputs and the report header."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, load_manifest
from patchkit.render import Piece, write_pieces

if TYPE_CHECKING:
    from rich.console import Console


def open_inputs(manifest: str, repo: str) -> tuple[Manifest, Repo]:
    # The manifest first: a bad manifest is reported the same way whatever the repo.
    loaded = load_manifest(manifest)
    return loaded, Repo.discover(Path(repo))


def header(console: Console, verb: str, manifest: Manifest, where: str, commit: Commit | None) -> None:
    line: list[Piece] = [
        (f"patchkit {verb}", "bold"),
        (f"  manifest {manifest.name} ({manifest.digest[:19]}…)  {where}", ""),
    ]
    if commit is not None:
        line.append((f"  at {commit.sha} {commit.subject!r}", ""))
    write_pieces(console, line)
