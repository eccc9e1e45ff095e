"""Manifests: TOML files describing patches, validated on every load."""

from __future__ import annotations

from patchkit.manifest.loader import bad_manifest_first, load_manifest
from patchkit.manifest.model import Manifest, Patch
from patchkit.manifest.resolve import manifest_arg, resolve_manifest

__all__ = ["Manifest", "Patch", "bad_manifest_first", "load_manifest", "manifest_arg", "resolve_manifest"]
