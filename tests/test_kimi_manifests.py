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

from patchkit.demo.sglang import (
    EAGLE_WORKER,
    EAGLE_WORKER_COMMON,
    EAGLE_WORKER_V2,
    KIMI_K25,
    build_sglang_history,
)
from patchkit.engine.apply import apply_worktree
from patchkit.engine.evaluate import evaluate
from patchkit.engine.groups import group_results
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
    # The verify refactors touch only speculative/: kimi_k25.py stays as at kimi-pcg.
    "spec-v2-overlap": K_UPSTREAM,
    "remove-mwb-indirection": K_UPSTREAM,
    "v2-verify-init-order": K_UPSTREAM,
    "v2-attn-plan-marker": K_UPSTREAM,
    "deprecate-spec-v1": K_UPSTREAM,
    "common-draft-helpers": K_UPSTREAM,
    "consolidate-verify": K_UPSTREAM,
    "rename-kimi": K_RENAMED,
    "rename-kimi-docs": K_RENAMED,
}

# -- eagle3-verify-timing (every patch optional) -----------------------------------------
#
# Written per file, from what each commit's role says about it: eagle_worker.py (v1),
# eagle_worker_v2.py (v2) and eagle_worker_common.py.  A commit's expected verdicts are
# the union of its three files' blocks and the verdicts of the three groups
# ("group ID": "STATUS [REASON] by COVERED_BY").

V1_IDS = ["import-os", "import-sys", "import-time", "import-optional", "timing-helpers"]
V1_MWB_IDS = ["verify-timer-start", "verify-timer-stop"]
V1_BATCH_IDS = ["v1-batch-timer-start", "v1-batch-timer-stop"]
V2_IDS = ["v2-import-os", "v2-import-sys", "v2-import-time", "v2-import-optional", "v2-timing-helpers"]
V2_SHAPES = {
    "mwb": ["v2-timer-start", "v2-timer-stop"],
    "batch": ["v2-batch-timer-start", "v2-batch-timer-stop"],
    "cg": ["v2-cg-timer-start", "v2-cg-timer-stop"],
    "plain": ["v2-plain-timer-start", "v2-plain-timer-stop"],
}
V2_ALL = V2_IDS + [p for pair in V2_SHAPES.values() for p in pair]
COMMON_IDS = [
    "common-import-os",
    "common-import-sys",
    "common-import-time",
    "common-import-optional",
    "common-timing-helpers",
    "common-timer-start",
    "common-timer-stop",
]
ALL_V1 = V1_IDS + V1_MWB_IDS + V1_BATCH_IDS

# eagle_worker.py imports time and Optional, not os or sys.
V1_HELPERS = {
    "import-os": "APPLY",
    "import-sys": "APPLY",
    "import-time": "SKIP ALREADY_APPLIED",
    "import-optional": "SKIP ALREADY_APPLIED",
    "timing-helpers": "APPLY",
}
V1_MWB = {  # add-eagle .. v2-spec-overlap: forward_batch_generation(model_worker_batch, ...)
    **V1_HELPERS,
    **dict.fromkeys(V1_MWB_IDS, "APPLY"),
    **dict.fromkeys(V1_BATCH_IDS, "SKIP OTHER_VARIANT"),
}
V1_BATCH = {  # from #25516: forward_batch_generation(batch, ...)
    **V1_HELPERS,
    **dict.fromkeys(V1_MWB_IDS, "SKIP OTHER_VARIANT"),
    **dict.fromkeys(V1_BATCH_IDS, "APPLY"),
}
# No eagle_worker.py while another variant applies (before add-eagle, none does: T_NOTHING).
V1_GONE = dict.fromkeys(ALL_V1, "SKIP OTHER_VARIANT")


def v2_block(shape: str | None) -> dict[str, str]:
    """eagle_worker_v2.py (it imports Optional, not os, sys or time) with its forward in ``shape`` (None: none)."""
    if shape is None:  # no file (or, at the tip, a verify that only hands over): an unused variant
        return dict.fromkeys(V2_ALL, "SKIP OTHER_VARIANT")
    block = {
        "v2-import-os": "APPLY",
        "v2-import-sys": "APPLY",
        "v2-import-time": "APPLY",
        "v2-import-optional": "SKIP ALREADY_APPLIED",
        "v2-timing-helpers": "APPLY",
    }
    for name, pair in V2_SHAPES.items():
        block.update(dict.fromkeys(pair, "APPLY" if name == shape else "SKIP OTHER_VARIANT"))
    return block


COMMON_UNUSED = dict.fromkeys(COMMON_IDS, "SKIP OTHER_VARIANT")  # no file, or no run_eagle_verify yet
COMMON_APPLIES = {  # eagle_worker_common.py imports Optional (from #31380), not os, sys or time
    "common-import-os": "APPLY",
    "common-import-sys": "APPLY",
    "common-import-time": "APPLY",
    "common-import-optional": "SKIP ALREADY_APPLIED",
    "common-timing-helpers": "APPLY",
    "common-timer-start": "APPLY",
    "common-timer-stop": "APPLY",
}


def groups(top: str, v1: str, v2: str) -> dict[str, str]:
    return {"group verify-timing": top, "group v1-verify": v1, "group v2-verify": v2}


UNUSED_GROUP = "SKIP OTHER_VARIANT by -"

T_NOTHING = {  # root: no speculative/ directory yet
    # These have `requires` and are held back too, but a held-back patch
    # that would fail on its own keeps its own reason (docs/manifest.md).
    # No variant applies, so none is an unused variant: each keeps its reason.
    **dict.fromkeys(ALL_V1 + V2_ALL + COMMON_IDS, "WARN FILE_NOT_FOUND"),
    **groups("WARN NO_VARIANT by -", "WARN NO_VARIANT by -", "WARN NO_VARIANT by -"),
}
T_V1 = {  # add-eagle .. kimi-pcg, and the rename branch: v1 only
    **V1_MWB,
    **v2_block(None),
    **COMMON_UNUSED,
    **groups("APPLY by v1-verify", "APPLY by verify-timer-start", UNUSED_GROUP),
}

TIMING_EXPECTED = {
    **{label: (T_NOTHING if label == "root" else T_V1) for label in KIMI_EXPECTED},
    # v1 and v2 coexist: both are timed.
    "spec-v2-overlap": {
        **V1_MWB,
        **v2_block("mwb"),
        **COMMON_UNUSED,
        **groups("APPLY by v1-verify, v2-verify", "APPLY by verify-timer-start", "APPLY by v2-timer-start"),
    },
    "remove-mwb-indirection": {
        **V1_BATCH,
        **v2_block("batch"),
        **COMMON_UNUSED,
        **groups("APPLY by v1-verify, v2-verify", "APPLY by v1-batch-timer-start", "APPLY by v2-batch-timer-start"),
    },
    "v2-verify-init-order": {
        **V1_BATCH,
        **v2_block("cg"),
        **COMMON_UNUSED,
        **groups("APPLY by v1-verify, v2-verify", "APPLY by v1-batch-timer-start", "APPLY by v2-cg-timer-start"),
    },
    "v2-attn-plan-marker": {
        **V1_BATCH,
        **v2_block("plain"),
        **COMMON_UNUSED,
        **groups("APPLY by v1-verify, v2-verify", "APPLY by v1-batch-timer-start", "APPLY by v2-plain-timer-start"),
    },
    # v1 is gone: v2 alone (eagle_worker_common.py has no run_eagle_verify before #31380).
    **{
        label: {
            **V1_GONE,
            **v2_block("plain"),
            **COMMON_UNUSED,
            **groups("APPLY by v2-verify", UNUSED_GROUP, "APPLY by v2-plain-timer-start"),
        }
        for label in ("deprecate-spec-v1", "common-draft-helpers")
    },
    # The forward moved into run_eagle_verify; EAGLEWorkerV2.verify only calls it.  Its
    # Optional import is in place anyway, so it reads ALREADY_APPLIED, not OTHER_VARIANT.
    "consolidate-verify": {
        **V1_GONE,
        **v2_block(None),
        "v2-import-optional": "SKIP ALREADY_APPLIED",
        **COMMON_APPLIES,
        **groups("APPLY by common-timer-start", UNUSED_GROUP, UNUSED_GROUP),
    },
}

# The commits where EAGLEWorker.verify calls the target with a ModelWorkerBatch.
V1_MWB_LABELS = [label for label, expected in TIMING_EXPECTED.items() if expected["verify-timer-start"] == "APPLY"]

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
    return _verdicts_of(evaluation.manifest, evaluation.results)


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


TIMING_FILES = {  # file -> (its imports and helpers, its start/stop inserts)
    EAGLE_WORKER: (V1_IDS, V1_MWB_IDS + V1_BATCH_IDS),
    EAGLE_WORKER_V2: (V2_IDS, [p for pair in V2_SHAPES.values() for p in pair]),
    EAGLE_WORKER_COMMON: (COMMON_IDS[:5], COMMON_IDS[5:]),
}


def test_timing_at_every_commit_and_never_helpers_without_a_caller(history, repo: Repo, timing) -> None:
    """From add-eagle on, some variant times the verify forward; no file gets helpers or imports without its pair."""
    assert {p.id for p in timing.patches} == {p for ids, inserts in TIMING_FILES.values() for p in ids + inserts}
    ever_applied: set[str] = set()
    for commit in _all_commits(repo):
        label = history.label_of(commit.sha)
        evaluation = evaluate(timing, CommitSource(repo, commit), hints=False)
        status = {r.patch: r.status for r in evaluation.results}
        top = next(g for g in group_results(timing, evaluation.results) if g.group == "verify-timing")
        if label == "root":
            assert top.status is Status.WARN and not any(s is Status.APPLY for s in status.values())
            continue
        assert top.status is Status.APPLY and top.covered_by, label
        for path, (support, inserts) in TIMING_FILES.items():
            applied_inserts = [p for p in inserts if status[p] is Status.APPLY]
            # A start and its stop, or nothing: one call shape per file.
            assert len(applied_inserts) in (0, 2), (label, path, applied_inserts)
            if not applied_inserts:
                assert not any(status[p] is Status.APPLY for p in support), (label, path)
            else:
                helpers = support[-1]
                assert status[helpers] is Status.APPLY, (label, path)
        ever_applied.update(p for p, st in status.items() if st is Status.APPLY)
    # Every insert of every call shape applies somewhere in the history (only the imports
    # that every file already has never do).
    never = {p.id for p in timing.patches} - ever_applied
    assert never == {"import-time", "import-optional", "v2-import-optional", "common-import-optional"}


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
    # (on main, until #25516 changes the call; rename-kimi branches off before that)
    assert V1_MWB_LABELS[0] == "add-eagle" and V1_MWB_LABELS[-3:] == [
        "spec-v2-overlap",
        "rename-kimi",
        "rename-kimi-docs",
    ]
    for label in V1_MWB_LABELS:
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
    # The verify refactors: both workers while they coexist, then v2 alone, then run_eagle_verify.
    ("timing", "spec-v2-overlap", [EAGLE_WORKER, EAGLE_WORKER_V2], False),
    ("timing", "remove-mwb-indirection", [EAGLE_WORKER, EAGLE_WORKER_V2], False),
    ("timing", "v2-verify-init-order", [EAGLE_WORKER, EAGLE_WORKER_V2], False),
    ("timing", "v2-attn-plan-marker", [EAGLE_WORKER, EAGLE_WORKER_V2], False),
    ("timing", "deprecate-spec-v1", [EAGLE_WORKER_V2], False),
    ("timing", "common-draft-helpers", [EAGLE_WORKER_V2], False),
    ("timing", "consolidate-verify", [EAGLE_WORKER_COMMON], False),
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
        assert _verdicts_of(manifest, first.results) == expected
        assert first.refused is refused
        assert sorted(first.written) == sorted(written)  # (files in the engine's order, not the manifest's)
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
        assert sorted(_status(history.path).splitlines()) == sorted(f" M {path}" for path in written)
    finally:
        repo.close()


def _verdict(result) -> str:
    return f"{result.status.value} {result.reason.value}" if result.reason else result.status.value


def _verdicts_of(manifest, results) -> dict[str, str]:
    """Every patch's verdict, and every group's with the members that cover it."""
    verdicts = {r.patch: _verdict(r) for r in results}
    for g in group_results(manifest, results):
        verdicts[f"group {g.group}"] = f"{_verdict(g)} by {', '.join(g.covered_by) or '-'}"
    return verdicts


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
