"""The Kimi-K2.5 EAGLE-3 manifests against every commit of the SGLang-shaped history.

The expected verdicts are written out per commit label below, from what each
commit does to the target files (see ``patchkit.demo.sglang.LABELS``); they are
not computed from the code under test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import git

from patchkit.demo.sglang import EAGLE_WORKER, KIMI_K25, build_sglang_history
from patchkit.engine.apply import apply_worktree
from patchkit.engine.evaluate import evaluate
from patchkit.git import Repo
from patchkit.manifest.loader import load_manifest
from patchkit.results import Status
from patchkit.sources import CommitSource

ROOT = Path(__file__).resolve().parents[1]
KIMI_MANIFEST = ROOT / "manifests" / "kimi-k25-eagle3.toml"
TIMING_MANIFEST = ROOT / "manifests" / "eagle3-verify-timing.toml"

# -- kimi-k25-eagle3: patch id -> "STATUS REASON" ------------------------------------

K_NO_FILE = {  # kimi_k25.py does not exist yet
    "typing-imports": "FAIL FILE_NOT_FOUND",
    "eagle3-hooks": "FAIL FILE_NOT_FOUND",
}
K_NEEDED = {  # the file imports List, Optional and Tuple; no hooks
    "typing-imports": "SKIP ALREADY_APPLIED",
    "eagle3-hooks": "APPLY",
}
K_NEEDED_NO_LIST = {  # kimi-builtin-generics dropped List from the typing import
    "typing-imports": "APPLY",
    "eagle3-hooks": "APPLY",
}
K_UPSTREAM = {  # hooks-upstream: upstream's own hooks, and List imported again
    "typing-imports": "SKIP ALREADY_APPLIED",
    "eagle3-hooks": "SKIP UPSTREAM_PROVIDES",
}
K_RENAMED = {  # rename-kimi branch (from kimi-npu, so List is still missing)
    "typing-imports": "APPLY",
    "eagle3-hooks": "FAIL CLASS_NOT_FOUND",
}

KIMI_EXPECTED = {
    "root": K_NO_FILE,
    "add-eagle": K_NO_FILE,
    "docs-install": K_NO_FILE,
    "release-0.5.8": K_NO_FILE,
    "dsv2-router-fp32": K_NO_FILE,
    "add-kimi": K_NEEDED,
    "kimi-dp-reduce": K_NEEDED,
    "pynccl-group-calls": K_NEEDED,
    "verify-nvtx": K_NEEDED,
    "kimi-nvfp4": K_NEEDED,
    "kimi-quant-config": K_NEEDED,
    "kimi-builtin-generics": K_NEEDED_NO_LIST,
    "runner-eagle3-layers": K_NEEDED_NO_LIST,
    "kimi-dp-vit": K_NEEDED_NO_LIST,
    "fix-pcg-moe": K_NEEDED_NO_LIST,
    "eagle-draft-extend": K_NEEDED_NO_LIST,
    "llama-eagle3-head": K_NEEDED_NO_LIST,
    "kimi-pp": K_NEEDED_NO_LIST,
    "kimi-npu": K_NEEDED_NO_LIST,
    "dsv2-weight-mixin": K_NEEDED_NO_LIST,
    "hooks-upstream": K_UPSTREAM,
    "docs-0.5.9": K_UPSTREAM,
    "kimi-pp-range": K_UPSTREAM,
    "kimi-conv-layers": K_UPSTREAM,
    "kimi-pcg": K_UPSTREAM,
    "rename-kimi": K_RENAMED,
    "rename-kimi-docs": K_RENAMED,
}

# -- eagle3-verify-timing (every patch optional) -----------------------------------------

# The variants this history never has: spec v1 called with the ScheduleBatch,
# the spec v2 worker (four call shapes) and run_eagle_verify in
# eagle_worker_common.py.
OTHER_VARIANTS = [
    "v1-batch-timer-start",
    "v1-batch-timer-stop",
    "v2-import-os",
    "v2-import-sys",
    "v2-import-time",
    "v2-import-optional",
    "v2-timing-helpers",
    "v2-timer-start",
    "v2-timer-stop",
    "v2-batch-timer-start",
    "v2-batch-timer-stop",
    "v2-cg-timer-start",
    "v2-cg-timer-stop",
    "v2-plain-timer-start",
    "v2-plain-timer-stop",
    "common-import-os",
    "common-import-sys",
    "common-import-time",
    "common-import-optional",
    "common-timing-helpers",
    "common-timer-start",
    "common-timer-stop",
]
T_NO_FILE = {  # root: no speculative/ directory yet
    "import-os": "WARN FILE_NOT_FOUND",
    "import-sys": "WARN FILE_NOT_FOUND",
    "import-time": "WARN FILE_NOT_FOUND",
    "import-optional": "WARN FILE_NOT_FOUND",
    # These have `requires` and are held back too, but a held-back patch
    # that would fail on its own keeps its own reason (docs/manifest.md).
    "timing-helpers": "WARN FILE_NOT_FOUND",
    "verify-timer-start": "WARN FILE_NOT_FOUND",
    "verify-timer-stop": "WARN FILE_NOT_FOUND",
    # No variant applies, so none is an unused variant: each keeps its reason.
    **dict.fromkeys(OTHER_VARIANTS, "WARN FILE_NOT_FOUND"),
}
T_APPLIES = {  # eagle_worker.py imports time and Optional, not os or sys
    "import-os": "APPLY",
    "import-sys": "APPLY",
    "import-time": "SKIP ALREADY_APPLIED",
    "import-optional": "SKIP ALREADY_APPLIED",
    "timing-helpers": "APPLY",
    "verify-timer-start": "APPLY",
    "verify-timer-stop": "APPLY",
    # The v1 variant applies: every other variant is not needed here.
    **dict.fromkeys(OTHER_VARIANTS, "SKIP OTHER_VARIANT"),
}
TIMING_EXPECTED = {label: (T_NO_FILE if label == "root" else T_APPLIES) for label in KIMI_EXPECTED}

# Where the anchor `batch_result = self.target_worker.forward_batch_generation(...)`
# stands: verify-nvtx is the one commit that moves it.
BEFORE_VERIFY_MOVE = [
    "add-eagle",
    "docs-install",
    "release-0.5.8",
    "dsv2-router-fp32",
    "add-kimi",
    "kimi-dp-reduce",
    "pynccl-group-calls",
]


@pytest.fixture(scope="module")
def history(sglang_history):
    return sglang_history


@pytest.fixture(scope="module")
def repo(sglang_repo) -> Repo:
    return sglang_repo


@pytest.fixture(scope="module")
def kimi():
    return load_manifest(KIMI_MANIFEST)


@pytest.fixture(scope="module")
def timing():
    return load_manifest(TIMING_MANIFEST)


def _verdicts(evaluation) -> dict[str, str]:
    return {r.patch: f"{r.status.value} {r.reason.value}" if r.reason else r.status.value for r in evaluation.results}


def _all_commits(repo: Repo):
    """Every commit of main and the rename branch, parents first."""
    return repo.rev_list(["main", "rename-kimi"])


def _at(repo: Repo, history, label: str, manifest, *, hints: bool = False):
    return evaluate(manifest, CommitSource(repo, repo.commit(history[label])), hints=hints)


def test_the_tables_cover_every_commit(history, repo: Repo) -> None:
    labels = [history.label_of(c.sha) for c in _all_commits(repo)]
    assert sorted(labels) == sorted(KIMI_EXPECTED) == sorted(history.order)
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("which", ["kimi", "timing"])
def test_full_matrix(which: str, history, repo: Repo, kimi, timing) -> None:
    manifest, expected = (kimi, KIMI_EXPECTED) if which == "kimi" else (timing, TIMING_EXPECTED)
    got = {}
    for commit in _all_commits(repo):
        label = history.label_of(commit.sha)
        got[label] = _verdicts(evaluate(manifest, CommitSource(repo, commit), hints=False))
    mismatches = {label: (got[label], expected[label]) for label in expected if got[label] != expected[label]}
    assert not mismatches


def test_before_kimi_exists_the_message_points_at_pr_17789(history, repo: Repo, kimi) -> None:
    evaluation = _at(repo, history, "release-0.5.8", kimi, hints=True)
    for result in evaluation.results:
        assert result.status is Status.FAIL
        assert f"{KIMI_K25} does not exist" in result.message
        assert result.hint is not None
        # The manifest's own hint ...
        assert "PR #17789 (2026-01-27)" in result.hint
        # ... and patchkit's, from the rest of the history.
        assert "model: support Kimi-K2.5 (#17789)" in result.hint
        assert "not in this commit's history" in result.hint
    assert evaluation.refused()


def test_from_pr_19689_upstream_provides_the_hooks(history, repo: Repo, kimi) -> None:
    evaluation = _at(repo, history, "hooks-upstream", kimi, hints=True)
    hooks = next(r for r in evaluation.results if r.patch == "eagle3-hooks")
    assert (hooks.status, hooks.reason.value) == (Status.SKIP, "UPSTREAM_PROVIDES")
    for name in ("set_eagle3_layers_to_capture", "get_embed_and_head", "set_embed_and_head"):
        assert name in hooks.message
    assert hooks.hint is not None and "PR #19689 (2026-03-03)" in hooks.hint and "redundant" in hooks.hint
    assert not evaluation.refused()
    # Before it, the patch adds all three.
    before = next(r for r in _at(repo, history, "dsv2-weight-mixin", kimi).results if r.patch == "eagle3-hooks")
    assert before.status is Status.APPLY
    assert "adds set_eagle3_layers_to_capture, get_embed_and_head, set_embed_and_head" in before.message


def test_typing_import_adds_only_what_is_missing(history, repo: Repo, kimi) -> None:
    result = next(r for r in _at(repo, history, "kimi-builtin-generics", kimi).results if r.patch == "typing-imports")
    assert result.status is Status.APPLY
    assert "`from typing import List`" in result.message
    assert "Optional, Tuple already imported" in result.message


def test_renamed_class_names_the_closest_class(history, repo: Repo, kimi) -> None:
    for label in ("rename-kimi", "rename-kimi-docs"):
        evaluation = _at(repo, history, label, kimi, hints=True)
        hooks = next(r for r in evaluation.results if r.patch == "eagle3-hooks")
        assert (hooks.status, hooks.reason.value) == (Status.FAIL, "CLASS_NOT_FOUND")
        assert "class KimiK25ForConditionalGeneration is not defined" in hooks.message
        assert "closest classes in this file: KimiK25VLForConditionalGeneration (line " in hooks.message
        assert hooks.hint is not None and "point `class` at the new name" in hooks.hint
        assert evaluation.refused()


def test_missing_eagle_worker_reasons(history, repo: Repo, timing) -> None:
    evaluation = _at(repo, history, "root", timing)
    by_id = {r.patch: r for r in evaluation.results}
    # Every patch says its file is missing: held-back patches that would fail
    # anyway keep their own reason rather than DEPENDENCY.
    for patch_id, result in by_id.items():
        assert f"{result.file} does not exist" in result.message, patch_id
    assert by_id["verify-timer-start"].file == EAGLE_WORKER
    assert all(not r.required for r in evaluation.results)
    assert not evaluation.refused()
    assert evaluation.refused(strict=True)


def test_insert_anchor_line_moves_exactly_at_verify_nvtx(history, repo: Repo, timing) -> None:
    lines: dict[str, set[int | None]] = {}
    for label in KIMI_EXPECTED:
        if label == "root":
            continue
        results = {r.patch: r for r in _at(repo, history, label, timing).results}
        start, stop = results["verify-timer-start"], results["verify-timer-stop"]
        assert start.line == stop.line, label
        lines[label] = {start.line}
        # The reported line is the anchor's line in the file at that commit.
        text = _read(repo, history[label], EAGLE_WORKER)
        assert (
            text.splitlines()[start.line - 1].strip() == "batch_result = self.target_worker.forward_batch_generation("
        ), label
    before = set().union(*(lines[label] for label in BEFORE_VERIFY_MOVE))
    after = set().union(*(lines[label] for label in lines if label not in BEFORE_VERIFY_MOVE))
    assert len(before) == 1 and len(after) == 1
    assert before != after
    assert lines["pynccl-group-calls"] != lines["verify-nvtx"]
    # After the move the anchor sits inside the `with` block, one level deeper.
    moved = _read(repo, history["verify-nvtx"], EAGLE_WORKER).splitlines()[next(iter(after)) - 1]
    assert moved.startswith(" " * 12 + "batch_result")


def _read(repo: Repo, sha: str, path: str) -> str:
    entry = repo.ls_tree(sha, [path])[path]
    return repo.read_blob(entry.oid).decode("utf-8")


# -- applying for real ----------------------------------------------------------------


def _checkout(path: Path, sha: str) -> None:
    git(path, "checkout", "-q", "--detach", sha)


def _status(path: Path) -> str:
    return git(path, "status", "--porcelain", "--untracked-files=no")


APPLY_CASES = [
    # (manifest, label, files written on the first run, refused)
    ("kimi", "add-kimi", [KIMI_K25], False),
    ("kimi", "kimi-builtin-generics", [KIMI_K25], False),
    ("kimi", "hooks-upstream", [], False),
    ("kimi", "rename-kimi", [], True),
    ("kimi", "dsv2-router-fp32", [], True),
    ("timing", "add-eagle", [EAGLE_WORKER], False),
    ("timing", "verify-nvtx", [EAGLE_WORKER], False),
    ("timing", "root", [], False),
]


@pytest.mark.parametrize(
    ("which", "label", "written", "refused"), APPLY_CASES, ids=[f"{c[0]}@{c[1]}" for c in APPLY_CASES]
)
def test_apply_on_a_checkout_then_again(
    tmp_path: Path, which: str, label: str, written: list[str], refused: bool
) -> None:
    history = build_sglang_history(tmp_path / "sglang")
    _checkout(history.path, history[label])
    manifest = load_manifest(KIMI_MANIFEST if which == "kimi" else TIMING_MANIFEST)
    expected = (KIMI_EXPECTED if which == "kimi" else TIMING_EXPECTED)[label]
    repo = Repo.discover(history.path)
    try:
        first = apply_worktree(manifest, repo)
        assert _verdicts_of(first.results) == expected
        assert first.refused is refused
        assert list(first.written) == written
        if not written:
            assert _status(history.path) == ""
            return
        for path in written:
            ast.parse((history.path / path).read_text(encoding="utf-8"), filename=path)
        # Every APPLY of the first run now reads back as ALREADY_APPLIED;
        # what was SKIP stays as it was.
        second = apply_worktree(manifest, repo)
        assert not second.refused
        assert second.written == ()
        for result in second.results:
            if expected[result.patch] == "APPLY":
                assert (result.status.value, result.reason.value) == ("SKIP", "ALREADY_APPLIED"), result.patch
            else:
                assert _verdict(result) == expected[result.patch], result.patch
        assert _status(history.path).split() == ["M", *written]
    finally:
        repo.close()


def _verdict(result) -> str:
    return f"{result.status.value} {result.reason.value}" if result.reason else result.status.value


def _verdicts_of(results) -> dict[str, str]:
    return {r.patch: _verdict(r) for r in results}


def test_both_manifests_on_one_tree(tmp_path: Path) -> None:
    """Different files, so they compose: apply both, the tree parses, and both read back as applied."""
    history = build_sglang_history(tmp_path / "sglang")
    _checkout(history.path, history["kimi-npu"])
    repo = Repo.discover(history.path)
    try:
        for manifest_path in (KIMI_MANIFEST, TIMING_MANIFEST):
            report = apply_worktree(load_manifest(manifest_path), repo)
            assert not report.refused and report.written
        for manifest_path in (KIMI_MANIFEST, TIMING_MANIFEST):
            again = apply_worktree(load_manifest(manifest_path), repo)
            assert again.written == ()
            # (the timing manifest's variants for spec v2 and eagle_worker_common
            # are not needed on this tree)
            assert {(r.status.value, r.reason.value if r.reason else None) for r in again.results} == (
                {("SKIP", "ALREADY_APPLIED")}
                if manifest_path == KIMI_MANIFEST
                else {("SKIP", "ALREADY_APPLIED"), ("SKIP", "OTHER_VARIANT")}
            )
        for path in (KIMI_K25, EAGLE_WORKER):
            ast.parse((history.path / path).read_text(encoding="utf-8"))
    finally:
        repo.close()
