"""Operation tests as before/after source text, in memory (as libcst tests its codemods).

``assert_op(table, before, after, status, reason, line)`` loads a one-patch
manifest through the real loader (its payload files written to a temporary
kit, since payloads are files), evaluates it on ``before`` with the engine's
own ``evaluate`` and ``render`` (libcst, and the re-evaluation that verifies
every rendered file), and checks the single verdict and the text it leaves.
No git repository, no CLI, no JSON round trip: those paths are covered by the
CLI end-to-end tests in ``test_ops.py`` and the rest of the suite.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers import TARGET, Kit

from patchkit.engine.evaluate import evaluate, render
from patchkit.git import Commit
from patchkit.manifest import Manifest, load_manifest
from patchkit.sources import FileRead, FileState, Source


class TextSource(Source):
    """Target files as bytes in memory: what a work tree would hold."""

    def __init__(self, files: Mapping[str, str | bytes]) -> None:
        self.texts = {path: v.encode("utf-8") if isinstance(v, str) else v for path, v in files.items()}

    @property
    def label(self) -> str:
        return "memory"

    @property
    def commit(self) -> Commit | None:
        return None

    def read(self, path: str) -> FileRead:
        data = self.texts.get(path)
        return FileRead(path, FileState.MISSING) if data is None else FileRead(path, FileState.OK, data)

    def grep(self, pattern: str) -> list[tuple[str, int, str]]:
        raise AssertionError("hints read the tree: test them through the CLI")

    def files(self) -> list[str]:
        return sorted(self.texts)


def load_one(table: Mapping[str, Any], payloads: Mapping[str, str] | None = None) -> Manifest:
    """A manifest of one patch ``p`` on ``TARGET`` (unless the table names another file)."""
    with tempfile.TemporaryDirectory() as root:
        kit = Kit(Path(root))
        kit.write([{"id": "p", "file": TARGET, **table}], payloads)
        return load_manifest(kit.manifest)


def run_op(
    table: Mapping[str, Any],
    before: str,
    *,
    payloads: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """(every result as its JSON, the target's text afterwards), as ``apply`` would leave them."""
    manifest = load_one(table, payloads)
    path = manifest.patches[0].file
    source = TextSource({path: before, **(files or {})})
    evaluation = evaluate(manifest, source, hints=False)
    text = before
    if not evaluation.refused():
        rendered, evaluation = render(evaluation)
        for written in rendered:
            if written.path == path:
                text = written.after.decode("utf-8")
    return [r.to_json() for r in evaluation.results], text


def assert_op(
    table: Mapping[str, Any],
    before: str,
    after: str,
    status: str,
    reason: str | None,
    line: int | None,
    *,
    payloads: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    reapply: bool = False,
) -> dict[str, Any]:
    """Check the one verdict and the text left; return the result's JSON.

    ``reapply``: the patched text must then read as SKIP ALREADY_APPLIED and change nothing.
    """
    results, text = run_op(table, before, payloads=payloads, files=files)
    (result,) = results
    assert (result["status"], result["reason"], result["line"]) == (status, reason, line), result
    assert text == after
    if status != "APPLY":
        assert text == before
    if reapply:
        again, same = run_op(table, text, payloads=payloads, files=files)
        assert [(r["status"], r["reason"]) for r in again] == [("SKIP", "ALREADY_APPLIED")]
        assert same == text
    return result


def digest(text: str, qualname: str) -> str:
    """What ``patchkit digest`` prints for ``qualname`` in ``text`` (the value ``expect`` compares against)."""
    from patchkit.operations.code import CodeState
    from patchkit.operations.replace_function import function_digest

    found = function_digest(CodeState.parse(TARGET, text), qualname)
    assert isinstance(found, tuple), found
    value, _line = found
    assert value.startswith("sha256:") and len(value) == len("sha256:") + 64
    return value
