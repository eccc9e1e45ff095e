"""The working copy of a manifest that ``port`` edits: the TOML and its payloads, in a temporary directory.

Every edit is made on this copy (the TOML through ``ManifestText``, which keeps comments and line
endings; a payload as bytes) and the copy is loaded again after each change with the ordinary loader,
so a ported manifest is checked exactly as any manifest is.  ``changes()`` is what the plan offers:
each file whose bytes port changed, old and new.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from patchkit.manifest import Manifest, load_manifest
from patchkit.manifest.edit import ManifestText
from patchkit.port.result import FileChange


class Workspace:
    """The manifest and its payloads, copied into a temporary directory (the same layout relative to
    each other), where port edits them and loads them again with the ordinary loader."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.path = manifest.path
        raw = self.path.read_bytes()
        self.original: dict[Path, bytes] = {self.path: raw}
        self.toml = ManifestText(raw.decode("utf-8"))
        for table in self.toml.data["patch"]:
            if "source" in table:
                payload = (self.path.parent / table["source"]).resolve()
                if payload not in self.original:
                    self.original[payload] = payload.read_bytes()
        self.current: dict[Path, bytes] = dict(self.original)
        self.root = Path(os.path.commonpath([str(p.parent) for p in self.original]))
        self.tmp = Path(tempfile.mkdtemp(prefix="patchkit-port-"))

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _mirror(self, path: Path) -> Path:
        return self.tmp / path.relative_to(self.root)

    def load(self) -> Manifest:
        self.current[self.path] = self.toml.text.encode("utf-8")
        for path, data in self.current.items():
            target = self._mirror(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return load_manifest(self._mirror(self.path))

    def table(self, patch_id: str) -> tuple[int, dict[str, object]]:
        for index, table in enumerate(self.toml.data["patch"], start=1):
            if table["id"] == patch_id:
                return index, table
        raise KeyError(patch_id)

    def set(self, patch_id: str, key: str, value: object) -> None:
        index, _table = self.table(patch_id)
        self.toml.set(index, key, value)

    def payload_path(self, table: Mapping[str, object]) -> Path:
        return (self.path.parent / str(table["source"])).resolve()

    def changes(self) -> list[FileChange]:
        self.current[self.path] = self.toml.text.encode("utf-8")
        out = []
        for path, before in self.original.items():
            after = self.current[path]
            if after != before:
                out.append(FileChange(path, _display(path), before, after))
        return out


def _display(path: Path) -> str:
    """A file port writes, as its lines name it: relative when it lies below the working directory, else
    absolute (``wrote ../../../tmp/demo/...`` after a command line that named it absolute reads as elsewhere)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative == ".." or relative.startswith(f"..{os.sep}") else relative
