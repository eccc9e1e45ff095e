"""What the verbs share: opening their inputs."""

from __future__ import annotations

from pathlib import Path

from patchkit.git import Repo
from patchkit.manifest import Manifest, load_manifest


def open_inputs(manifest: str, repo: str) -> tuple[Manifest, Repo]:
    # The manifest first: a bad manifest is reported the same way whatever the repo.
    loaded = load_manifest(manifest)
    return loaded, Repo.discover(Path(repo))
