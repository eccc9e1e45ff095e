"""The ``CodeState`` invariant (``tests/codestate_check.py``), once, over the demo's histories.

Every commit of the SGLang-shaped demo history is evaluated and rendered in
this process under both bundled manifests, with the checks installed: each
simulated APPLY, each re-evaluation of a rendered file and each def text the
analysis reuses is checked.  Commits whose target files are the same blobs as
an earlier commit's give the same texts, so each distinct set is evaluated
once.  ``pytest --check-codestate`` runs the same checks under every test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from codestate_check import install

from patchkit.engine.evaluate import evaluate, render
from patchkit.manifest import load_manifest
from patchkit.operations.code import CodeState
from patchkit.sources import CommitSource

PROJECT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kimi-k25-eagle3", "eagle3-verify-timing"])
def test_every_demo_commit_keeps_the_invariant(
    name: str, sglang_history, sglang_repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(monkeypatch)
    manifest = load_manifest(PROJECT / "manifests" / f"{name}.toml")
    seen: set[tuple[str | None, ...]] = set()
    applied = 0
    for label in sglang_history.order:
        source = CommitSource(sglang_repo, sglang_repo.commit(sglang_history[label]))
        key = tuple(source.read(path).oid for path in manifest.files())
        if key in seen:
            continue
        seen.add(key)
        evaluation = evaluate(manifest, source, hints=False)
        rendered, checked = render(evaluation)
        assert checked.results == evaluation.results, label  # every rendered file read back as it should
        applied += len(rendered)
    assert len(seen) > 5 and applied > 0  # the history exercised the ops, not only their SKIPs


def test_the_check_sees_a_spliced_statement_edited(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch)
    state = CodeState.parse("m.py", "x = 1\ny = 2\n")
    assign = state.tree.body[1]
    assert isinstance(assign, ast.Assign)
    assign.value = ast.Constant(3)  # what an op that says it only splices must never do
    with pytest.raises(AssertionError, match=r"an op that only splices edited m\.py:2"):
        state.changed(in_place=False)
