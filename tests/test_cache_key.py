"""The verdict cache's key (``engine/cache.py``'s ``file_key``) is the documented array, byte for byte.

``file_key`` assembles the JSON itself, with each patch's part encoded once
(``PATCH_PARTS``); a key must still equal the sha256 of ``json.dumps`` of the
whole array, or every verdict stored by an earlier patchkit would miss.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

import patchkit
from patchkit.engine import cache
from patchkit.engine.cache import CACHE_FORMAT, PATCH_PARTS, file_key, quoted
from patchkit.manifest import load_manifest


def documented_key(path, entry, patches, held) -> str:
    parts = [[p.id, p.required, p.op.fingerprint, quoted(p.op)] for p in patches]
    array = [CACHE_FORMAT, patchkit.__version__, path, entry, parts, sorted(held.items())]
    material = json.dumps(array, separators=(",", ":"))
    return hashlib.sha256(material.encode()).hexdigest()


@pytest.mark.parametrize("name", ["kimi-k25-eagle3", "eagle3-verify-timing"])
def test_the_key_is_the_sha256_of_the_documented_array(name):
    patches = load_manifest(name).patches
    for path in ("python/sglang/srt/models/kimi_k25.py", 'dir/é \u2603 "q".py'):
        for entry in (None, ("100644", "a" * 40), ("120000", "é\u2603")):
            for held in ({}, {"b": "reason", "a": "ü"}):
                for chosen in (patches, patches[:1], patches[::-1], ()):
                    assert file_key(path, entry, chosen, held) == documented_key(path, entry, chosen, held)


def test_a_patch_part_is_encoded_once_and_never_served_to_another_patch():
    PATCH_PARTS.clear()
    patch = load_manifest("kimi-k25-eagle3").patches[0]
    key = file_key("a.py", None, [patch], {})
    assert len(PATCH_PARTS) == 1
    assert file_key("b.py", None, [patch], {}) != key and len(PATCH_PARTS) == 1
    # Another Patch (a new manifest load, or another required) gets its own part, never the first one's.
    other = replace(patch, required=not patch.required)
    assert file_key("a.py", None, [other], {}) == documented_key("a.py", None, [other], {}) != key
    PATCH_PARTS.clear()


def test_the_memo_is_the_bounded_kind():
    assert isinstance(cache.PATCH_PARTS, dict) and cache.PATCH_PARTS.bound >= 2
