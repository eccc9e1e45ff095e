"""The fast path (verdicts on the ast, earlier patches simulated) agrees with the
libcst path (each patch judged on the file as libcst actually rewrote it).

Verdicts are computed once on the stdlib ast for speed; patches on one file
compose by splicing the payload into that ast.  Here every patch is instead
judged on real libcst output, one patch at a time, over every commit of the
SGLang-shaped history and the model history, and the two must agree.
"""

from __future__ import annotations

from pathlib import Path

import libcst
import pytest
from histories import build_model_history, write_manifest

from patchkit.demo.sglang import build_sglang_history
from patchkit.engine.check import check_range
from patchkit.engine.evaluate import decode, evaluate
from patchkit.git import Repo
from patchkit.manifest import Manifest, load_manifest
from patchkit.operations.base import Kind
from patchkit.operations.code import CodeState
from patchkit.results import Reason, Status, failed
from patchkit.sources import CommitSource

PROJECT = Path(__file__).resolve().parents[1]


def libcst_path(manifest: Manifest, source: CommitSource) -> list[tuple[Status, Reason | None]]:
    """Each patch analysed on the text libcst produced for the patches before it."""
    verdicts: dict[str, tuple[Status, Reason | None]] = {}
    for path in manifest.files():
        read = source.read(path)
        text, problem = decode(read)
        for patch in [p for p in manifest.patches if p.file == path]:
            if problem is not None:
                verdicts[patch.id] = (failed(required=patch.required), problem[0])
                continue
            try:
                state = CodeState.parse(path, text)
            except SyntaxError:
                verdicts[patch.id] = (failed(required=patch.required), Reason.PARSE_ERROR)
                continue
            outcome = patch.op.analyze(state)
            if outcome.kind is Kind.APPLY:
                module = patch.op.transform(libcst.parse_module(text), outcome)
                text = module.code
                verdicts[patch.id] = (Status.APPLY, None)
            elif outcome.kind is Kind.SKIP:
                verdicts[patch.id] = (Status.SKIP, outcome.reason)
            else:
                verdicts[patch.id] = (failed(required=patch.required), outcome.reason)
    return [verdicts[p.id] for p in manifest.patches]


def by_blobs(manifest: Manifest, repo: Repo, report) -> list[tuple[str, list, list]]:
    """(label, fast, slow) once per distinct set of target blobs (the slow path is slow)."""
    seen: dict[tuple, list] = {}
    out = []
    for row in report.commits:
        source = CommitSource(repo, row.commit)
        key = tuple(source.read(path).oid for path in manifest.files())
        if key not in seen:
            # A variant not used here ([[group]]) is resolved across files, like
            # `requires`; for it, compare the file's own verdict.
            files = evaluate(manifest, source, hints=False).files.values() if manifest.groups else ()
            own = {r.patch: (r.status, r.reason) for fe in files for r in fe.results}
            seen[key] = (libcst_path(manifest, source), own)
        slow, own = seen[key]
        fast = [own[r.patch] if r.reason is Reason.OTHER_VARIANT else (r.status, r.reason) for r in row.results]
        out.append((row.commit.sha, fast, slow))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kimi-k25-eagle3", "eagle3-verify-timing"])
def test_sglang_history_every_commit(tmp_path: Path, name: str, open_repo) -> None:
    history = build_sglang_history(tmp_path / "sglang")
    manifest = load_manifest(PROJECT / "manifests" / f"{name}.toml")
    repo = open_repo(history.path)
    report = check_range(manifest, repo, ranges=["main", "rename-kimi"], use_cache=False, hints=False)
    assert len(report.commits) == len(history.order)
    compared = 0
    for sha, fast, slow in by_blobs(manifest, repo, report):
        for patch, f, s in zip(manifest.patches, fast, slow, strict=False):
            if f[1] is Reason.DEPENDENCY:
                continue  # held back by `requires`, which only the engine resolves across files
            assert f == s, (history.label_of(sha), patch.id)
            compared += 1
    assert compared >= len(report.commits) * len(manifest.patches) * 0.8


def test_model_history_every_commit(tmp_path: Path, open_repo) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    repo = open_repo(history.path)
    report = check_range(manifest, repo, ranges=["main"], use_cache=False, hints=False)
    for sha, fast, slow in by_blobs(manifest, repo, report):
        assert fast == slow, history.label_of(sha)
