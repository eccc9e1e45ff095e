"""The demo's second pull: upstream moves a function our manifest replaces to a module of its own.

A renamed class is one way a pull breaks a manifest; a moved function is the
other one a line diff cannot follow.  ``MOVE`` is a commit the demo adds to
its SGLang-shaped upstream, on a side branch ``move-rope`` from the tip of
``rename-kimi``: ``apply_rope`` leaves models/kimi_k25.py for
layers/kimi_rope.py, and kimi_k25.py imports it from there.  It is not in
the commit table (``data/sglang/history.toml``): the tests that read that
history (its commit counts, its bisect) see the history as before.

``write_rope_manifest`` writes the demo's ``kimi-rope`` manifest: one
``replace-function`` of ``apply_rope`` (the rotation angles cast to
complex64, as a bf16 checkpoint needs), written against the function at the
tip of ``rename-kimi``.  ``port --to move-rope`` must follow it into the new
module: ``file`` changes, the rest stays.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from patchkit.demo.sglang import KIMI_K25, RENAME_BRANCH, DemoCommit, Edit, file_text
from patchkit.errors import InternalError
from patchkit.git import Repo
from patchkit.operations.replace_function import function_digest
from patchkit.port.follow import find_def, parse

MOVE_BRANCH = "move-rope"
RENAME_TIP = "rename-kimi-docs"  # the label of the tip of RENAME_BRANCH: where the pull starts
ROPE_MODULE = "python/sglang/srt/layers/kimi_rope.py"
FUNCTION = "apply_rope"
_IMPORT_AFTER = "from sglang.srt.models.kimi_vl_moonvit import MLP2\n"
_OURS = ("    turn = freqs_cis[..., None, :]\n", "    turn = freqs_cis[..., None, :].to(torch.complex64)\n")
_HEADER = '''\
"""Rotary position embedding of the Kimi-K2.5 vision tower (moved out of models/kimi_k25.py).

Synthetic file written for patchkit's demo: upstream's layout and names, not its code.
"""

from typing import Tuple

import torch


'''


def _moved() -> tuple[str, str]:
    """(apply_rope's text as kimi_k25.py has it, with the blank lines after it; the new module's text).  No
    commit of the table edits apply_rope, so the file as added has it as the branch's tip does (``Edit`` checks)."""
    text = file_text(KIMI_K25)
    found = find_def(KIMI_K25, text, FUNCTION)
    if found is None:
        raise InternalError(f"the demo's pull: {KIMI_K25} has no {FUNCTION} to move")
    lines = text.splitlines(keepends=True)
    end = found.last
    while end < len(lines) and not lines[end].strip():
        end += 1
    body = "".join(lines[found.first - 1 : found.last])
    return "".join(lines[found.first - 1 : end]), _HEADER + body


def move_commit() -> DemoCommit:
    """The commit on ``MOVE_BRANCH``, from the tip of ``rename-kimi``."""
    cut, module = _moved()
    return DemoCommit(
        label=MOVE_BRANCH,
        when=datetime(2026, 3, 5, 10, 30, tzinfo=UTC),
        author=("Lena Okafor", "lena@upstream.invalid"),
        subject="[Refactor] Move the Kimi-K2.5 vision RoPE helper to layers/kimi_rope.py",
        branch=MOVE_BRANCH,
        parent=RENAME_TIP,
        role="apply_rope moves to a new module (the demo's kimi-rope manifest: FILE_NOT_FOUND of the function)",
        texts={ROPE_MODULE: module},
        edits=(
            Edit(KIMI_K25, old=cut, new=""),
            Edit(
                KIMI_K25, old=_IMPORT_AFTER, new=_IMPORT_AFTER + "from sglang.srt.layers.kimi_rope import apply_rope\n"
            ),
        ),
    )


def write_rope_manifest(folder: Path, repo: Repo) -> Path:
    """``folder/manifests/kimi-rope.toml`` and its payload, written against ``apply_rope`` at the tip of
    ``rename-kimi`` (the branch, where the pull starts)."""
    text = repo.git("show", f"{RENAME_BRANCH}:{KIMI_K25}")
    state = parse(KIMI_K25, text)
    found = find_def(KIMI_K25, text, FUNCTION)
    digest = function_digest(state, FUNCTION) if state is not None else None
    if found is None or not isinstance(digest, tuple) or _OURS[0] not in found.text:
        raise InternalError(f"the demo's kimi-rope manifest: no {FUNCTION} to replace at {RENAME_BRANCH}")
    payload = "import torch\n\n\n" + found.text.replace(*_OURS)
    (folder / "patches").mkdir(parents=True, exist_ok=True)
    (folder / "patches" / "kimi_rope_complex64.py").write_text(payload, encoding="utf-8")
    manifest = folder / "manifests" / "kimi-rope.toml"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        "schema = 1\n"
        'name = "kimi-rope"\n'
        'summary = "Cast the Kimi-K2.5 vision RoPE angles to complex64 (a bf16 checkpoint hands complex32)."\n'
        "\n"
        "[[patch]]\n"
        'id = "rope-complex64"\n'
        'op = "replace-function"\n'
        f'file = "{KIMI_K25}"\n'
        f'function = "{FUNCTION}"\n'
        'source = "../patches/kimi_rope_complex64.py"\n'
        f'expect = "{digest[0]}"\n',
        encoding="utf-8",
    )
    return manifest
