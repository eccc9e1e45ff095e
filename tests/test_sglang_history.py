"""The SGLang-shaped demo history: deterministic, valid Python everywhere, dated as documented."""

from __future__ import annotations

import ast
import itertools
import re
import time
from pathlib import Path

import pytest
from helpers import git

from patchkit.demo import sglang
from patchkit.demo.sglang import (
    EAGLE_WORKER,
    EAGLE_WORKER_COMMON,
    EAGLE_WORKER_V2,
    KIMI_K25,
    LABELS,
    TIMELINE,
    build_sglang_history,
)
from patchkit.git import Repo

HOOKS = ("set_eagle3_layers_to_capture", "get_embed_and_head", "set_embed_and_head")


@pytest.fixture(scope="module")
def history(sglang_history):
    return sglang_history


@pytest.fixture(scope="module")
def repo(sglang_repo) -> Repo:
    return sglang_repo


def _show(repo: Repo, sha: str, path: str) -> str | None:
    entry = repo.ls_tree(sha, [path]).get(path)
    return None if entry is None else repo.read_blob(entry.oid).decode("utf-8")


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def test_builds_deterministically_and_fast(tmp_path: Path, history) -> None:
    started = time.perf_counter()
    again = build_sglang_history(tmp_path / "again")
    elapsed = time.perf_counter() - started
    assert again.shas == history.shas
    assert again.order == history.order
    assert 25 <= len(history.order) <= 40
    assert elapsed < 5.0  # about 0.05 s in practice; the bound only catches a pathological slowdown


def test_labels_dates_subjects_and_branches(history, repo: Repo) -> None:
    # The commit table (patchkit/demo/data/sglang/history.toml) is the timeline; the
    # built repository must say what it says, commit by commit.
    assert history.order == [c.label for c in TIMELINE]
    on_main = set(git(history.path, "rev-list", "main").split())
    on_branch = set(git(history.path, "rev-list", "rename-kimi").split())
    for row in TIMELINE:
        commit = repo.commit(history[row.label])
        assert commit.date == row.when.strftime("%Y-%m-%dT%H:%M:%S+00:00"), row.label
        assert commit.subject == row.subject, row.label
        assert commit.author == "{} <{}>".format(*row.author), row.label
        if row.branch == "main":
            assert commit.sha in on_main, row.label
        else:
            assert commit.sha in on_branch and commit.sha not in on_main, row.label
        # LABELS documents every label with its date.
        line = next(line for line in LABELS.splitlines() if line.startswith(f"{row.label} "))
        assert f"{row.when:%Y-%m-%d}" in line and row.subject in line, row.label
    # A few facts of the real timeline, pinned by hand so that an edit of the table shows up here.
    subjects = {c.label: (f"{c.when:%Y-%m-%d}", c.subject) for c in TIMELINE}
    assert subjects["add-kimi"] == ("2026-01-27", "model: support Kimi-K2.5 (#17789)")
    assert subjects["fix-pcg-moe"] == ("2026-02-19", "Fix PCG MoE Error (#17739)")
    assert subjects["hooks-upstream"] == ("2026-03-03", "feat: support Kimi K2.5 for Eagle3 (#19689)")
    # The verify refactors, in upstream's order with upstream's dates (UTC) and subjects; the
    # v2 worker (#11398, upstream 2025-10-12) comes after the Kimi commits here (see its role).
    assert subjects["spec-v2-overlap"] == ("2026-03-20", "Beta spec-overlap for EAGLE (#11398)")
    assert subjects["remove-mwb-indirection"] == (
        "2026-05-18",
        "refactor: remove ModelWorkerBatch indirection (#25516)",
    )
    assert subjects["v2-verify-init-order"] == (
        "2026-05-25",
        "[Spec] fix EAGLE v2 verify metadata init order on non-cuda-graph path (#26244)",
    )
    assert subjects["v2-attn-plan-marker"] == (
        "2026-06-05",
        "Replace skip_attn_backend_init with a batch-carried attention plan marker (+ staleness re-plan) (#27193)",
    )
    assert subjects["deprecate-spec-v1"] == ("2026-06-08", "[Spec] Deprecate Spec V1 (#25464)")
    assert subjects["common-draft-helpers"] == (
        "2026-07-15",
        "[Spec] Extract stateless draft prepare helpers into eagle_worker_common (#31257)",
    )
    assert subjects["consolidate-verify"] == (
        "2026-07-16",
        "[Spec] Consolidate the verify step into eagle_worker_common.run_eagle_verify (#31380)",
    )
    assert len(TIMELINE) == 34
    on_main_in_order = [c for c in TIMELINE if c.branch == "main"]
    assert [c.when for c in on_main_in_order] == sorted(c.when for c in on_main_in_order)
    assert git(history.path, "rev-parse", "main").strip() == history["consolidate-verify"]
    assert git(history.path, "rev-parse", "rename-kimi").strip() == history["rename-kimi-docs"]
    assert git(history.path, "rev-parse", "HEAD").strip() == history["consolidate-verify"]
    assert git(history.path, "symbolic-ref", "--short", "HEAD").strip() == "main"
    # The side branch starts between add-kimi and hooks-upstream and is not merged.
    assert repo.commit(history["rename-kimi"]).parents == (history["kimi-npu"],)
    assert git(history.path, "merge-base", "main", "rename-kimi").strip() == history["kimi-npu"]
    # Tags.
    assert git(history.path, "rev-parse", "v0.5.8^{commit}").strip() == history["release-0.5.8"]
    assert git(history.path, "rev-parse", "v0.5.9^{commit}").strip() == history["docs-0.5.9"]
    assert sglang.TAGS == {"v0.5.8": "release-0.5.8", "v0.5.9": "docs-0.5.9"}


def test_every_python_file_parses_at_every_commit(history, repo: Repo) -> None:
    checked: dict[str, str] = {}  # blob id -> where it was first seen; each blob is parsed once
    pairs = 0
    for label in history.order:
        sha = history[label]
        paths = [p for p in repo.list_files(sha) if p.endswith(".py")]
        for path, entry in repo.ls_tree(sha, paths).items():
            pairs += 1
            if entry.oid in checked:
                continue
            text = repo.read_blob(entry.oid).decode("utf-8")
            assert text.startswith("# Synthetic SGLang-shaped fixture"), (label, path)
            try:
                ast.parse(text, filename=f"{label}:{path}")
            except SyntaxError as exc:  # pragma: no cover - the message is the point
                pytest.fail(f"{path} does not parse at {label}: {exc}")
            checked[entry.oid] = f"{label}:{path}"
    assert pairs > 200 and len(checked) > 30


def test_expected_files_exist_at_the_tip(history, repo: Repo) -> None:
    files = set(repo.list_files(history["kimi-pcg"]))
    for path in (
        "README.md",
        "python/sglang/srt/models/deepseek_v2.py",
        "python/sglang/srt/models/llama_eagle3.py",
        "python/sglang/srt/models/kimi_k25.py",
        "python/sglang/srt/speculative/eagle_worker.py",
        "python/sglang/srt/model_executor/model_runner.py",
        "python/sglang/srt/distributed/parallel_state.py",
        "python/sglang/srt/distributed/device_communicators/pynccl.py",
    ):
        assert path in files, path


def test_kimi_file_timeline(history, repo: Repo) -> None:
    order = history.order
    first = order.index("add-kimi")
    for label in order[:first]:
        assert _show(repo, history[label], KIMI_K25) is None, label

    text = _show(repo, history["add-kimi"], KIMI_K25)
    assert text is not None
    assert 25_000 <= len(text.encode()) <= 30_000
    tree = ast.parse(text)
    cls = _class(tree, "KimiK25ForConditionalGeneration")
    assert cls is not None
    assert [ast.unparse(b) for b in cls.bases] == ["nn.Module"]
    assert "self.language_model = DeepseekV3ForCausalLM(" in text
    assert {"__init__", "get_image_feature", "pad_input_ids", "forward", "load_weights"} <= {
        n.name for n in cls.body if isinstance(n, ast.FunctionDef)
    }
    assert not any(_method(cls, hook) for hook in HOOKS)
    assert text.rstrip().endswith("EntryClass = [KimiK25ForConditionalGeneration]")
    for helper in ("apply_rope", "tpool_patch_merger", "get_1d_sincos_pos_embed", "vision_tower_forward_auto"):
        assert any(isinstance(n, ast.FunctionDef) and n.name == helper for n in tree.body), helper
    for vision in ("MoonViT3dPretrainedModel", "K2VLMultiModalProjector", "Rope2DPosEmbRepeated"):
        assert _class(tree, vision) is not None, vision

    # Hooks: absent before hooks-upstream on main, present (upstream's own code) from it on.
    hooks_at = order.index("hooks-upstream")
    for label in order:
        if label.startswith("rename-kimi") or label in order[:first]:
            continue
        cls = _class(ast.parse(_show(repo, history[label], KIMI_K25) or ""), "KimiK25ForConditionalGeneration")
        assert cls is not None, label
        present = [hook for hook in HOOKS if _method(cls, hook) is not None]
        assert present == (list(HOOKS) if order.index(label) >= hooks_at else []), label
    upstream = _show(repo, history["hooks-upstream"], KIMI_K25) or ""
    assert 'if not hasattr(self.language_model, "set_eagle3_layers_to_capture"):' in upstream

    # The rename branch: the class is gone under its old name, EntryClass follows.
    for label in ("rename-kimi", "rename-kimi-docs"):
        text = _show(repo, history[label], KIMI_K25) or ""
        tree = ast.parse(text)
        assert _class(tree, "KimiK25ForConditionalGeneration") is None
        assert _class(tree, "KimiK25VLForConditionalGeneration") is not None
        assert "EntryClass = [KimiK25VLForConditionalGeneration]" in text

    # Churn: kimi_k25.py changes at several commits other than the two above.
    changed = [
        label
        for prev, label in itertools.pairwise(order)
        if not label.startswith("rename-kimi")
        and _show(repo, history[prev], KIMI_K25) != _show(repo, history[label], KIMI_K25)
    ]
    assert len(changed) >= 8
    assert "add-kimi" in changed and "hooks-upstream" in changed


V1_MWB = "batch_result = self.target_worker.forward_batch_generation(model_worker_batch, is_verify=True)"
V1_BATCH = "batch_result = self.target_worker.forward_batch_generation(batch, is_verify=True)"
V2_CALL = "forward_batch_output = self.target_worker.forward_batch_generation("
V2_MWB = (
    V2_CALL
    + "model_worker_batch=None, forward_batch=verify_forward_batch, is_verify=True, skip_attn_backend_init=True)"
)
V2_BATCH = V2_CALL + "batch=None, forward_batch=verify_forward_batch, is_verify=True, skip_attn_backend_init=True)"
V2_CG = (
    V2_CALL
    + "batch=None, forward_batch=verify_forward_batch, is_verify=True, skip_attn_backend_init=can_run_cuda_graph)"
)
V2_PLAIN = V2_CALL + "batch=None, forward_batch=verify_forward_batch, is_verify=True)"
COMMON = (
    "forward_batch_output = target_worker.forward_batch_generation("
    "batch=None, forward_batch=verify_forward_batch, is_verify=True)"
)
NO_FUNCTION = "(file without the function)"

_MAIN = [c.label for c in TIMELINE if c.branch == "main"]
# Per commit on main: the target-forward statements of EAGLEWorker.verify, EAGLEWorkerV2.verify
# and run_eagle_verify (None: no such file), from what each commit's role says.
VERIFY_FORWARD: dict[str, tuple[object, object, object]] = {
    "root": (None, None, None),
    **dict.fromkeys(_MAIN[_MAIN.index("add-eagle") : _MAIN.index("kimi-pcg") + 1], ([V1_MWB], None, None)),
    "spec-v2-overlap": ([V1_MWB], [V2_MWB], None),
    "remove-mwb-indirection": ([V1_BATCH], [V2_BATCH], None),
    "v2-verify-init-order": ([V1_BATCH], [V2_CG], None),
    "v2-attn-plan-marker": ([V1_BATCH], [V2_PLAIN], None),
    "deprecate-spec-v1": (None, [V2_PLAIN], None),
    "common-draft-helpers": (None, [V2_PLAIN], NO_FUNCTION),
    "consolidate-verify": (None, [], [COMMON]),
}


def _forward_statements(function: ast.FunctionDef) -> list[str]:
    return [
        ast.unparse(n)
        for n in ast.walk(function)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute)
        and n.value.func.attr == "forward_batch_generation"
    ]


def _verify_forward(text: str | None, cls: str | None, name: str) -> object:
    if text is None:
        return None
    tree = ast.parse(text)
    owner = tree if cls is None else _class(tree, cls)
    assert owner is not None
    function = next((n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    return NO_FUNCTION if function is None else _forward_statements(function)


def test_the_verify_target_forward_across_the_refactors(history, repo: Repo) -> None:
    """Where the verify step's target forward is, per commit: v1, then v2 beside it, then run_eagle_verify."""
    main = [label for label in history.order if not label.startswith("rename-kimi")]
    assert main == list(VERIFY_FORWARD)
    for label in main:
        sha = history[label]
        got = (
            _verify_forward(_show(repo, sha, EAGLE_WORKER), "EAGLEWorker", "verify"),
            _verify_forward(_show(repo, sha, EAGLE_WORKER_V2), "EAGLEWorkerV2", "verify"),
            _verify_forward(_show(repo, sha, EAGLE_WORKER_COMMON), None, "run_eagle_verify"),
        )
        assert got == VERIFY_FORWARD[label], label
    # At the tip EAGLEWorkerV2.verify hands over to run_eagle_verify.
    tip = ast.parse(_show(repo, history["consolidate-verify"], EAGLE_WORKER_V2) or "")
    cls = _class(tip, "EAGLEWorkerV2")
    assert cls is not None
    verify = _method(cls, "verify")
    assert verify is not None and "return run_eagle_verify(" in ast.unparse(verify)


def test_eagle_worker_verify_changes_only_where_its_role_says(history, repo: Repo) -> None:
    dumps = {}
    for label in history.order:
        text = _show(repo, history[label], EAGLE_WORKER)
        if text is None:
            continue
        cls = _class(ast.parse(text), "EAGLEWorker")
        assert cls is not None, label
        verify = _method(cls, "verify")
        assert verify is not None, label
        dumps[label] = ast.dump(verify, include_attributes=False)
    main = [label for label in history.order if not label.startswith("rename-kimi") and label in dumps]
    changes = [label for prev, label in itertools.pairwise(main) if dumps[prev] != dumps[label]]
    # verify-nvtx moves the call into a `with` block; #25516 passes the ScheduleBatch instead.
    assert changes == ["verify-nvtx", "remove-mwb-indirection"]
    assert main[-1] == "v2-attn-plan-marker"  # #25464 deletes the file
    assert dumps["rename-kimi"] == dumps["kimi-npu"]


def test_model_runner_and_deepseek_shapes(history, repo: Repo) -> None:
    runner = _show(repo, history["root"], "python/sglang/srt/model_executor/model_runner.py") or ""
    assert "self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)" in runner
    deepseek = ast.parse(_show(repo, history["kimi-pcg"], "python/sglang/srt/models/deepseek_v2.py") or "")
    base = _class(deepseek, "DeepseekV2ForCausalLM")
    assert base is not None
    assert all(_method(base, hook) is not None for hook in HOOKS)
    v3 = _class(deepseek, "DeepseekV3ForCausalLM")
    assert v3 is not None and [ast.unparse(b) for b in v3.bases] == ["DeepseekV2ForCausalLM"]
    llama = ast.parse(_show(repo, history["add-eagle"], "python/sglang/srt/models/llama_eagle3.py") or "")
    assert _class(llama, "LlamaForCausalLMEagle3") is not None


def test_fix_pcg_moe_touches_the_communicators(history) -> None:
    names = git(history.path, "diff-tree", "--no-commit-id", "--name-only", "-r", history["fix-pcg-moe"]).split()
    assert "python/sglang/srt/distributed/device_communicators/pynccl.py" in names
    assert "python/sglang/srt/distributed/parallel_state.py" in names
    assert KIMI_K25 not in names


def test_the_data_ships_whole_and_every_file_says_it_is_synthetic() -> None:
    files = sglang.DATA / "files"
    on_disk: set[str] = set()
    stack = [("", files)]
    while stack:
        prefix, folder = stack.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                stack.append((f"{prefix}{entry.name}/", entry))
            else:
                on_disk.add(f"{prefix}{entry.name}".removesuffix(".txt"))
    added = {path for row in TIMELINE for path in row.add}
    assert on_disk == added  # no file without a commit that adds it, and none missing
    for path in added:
        if path.endswith(".py"):
            header = sglang.file_text(path).splitlines()[:4]
            assert header[0].startswith("# Synthetic SGLang-shaped fixture"), path
            assert any("our own code" in line for line in header), path


def test_an_edit_that_does_not_match_its_file_is_an_internal_error() -> None:
    from patchkit.errors import InternalError

    text = "a = 1\nb = 1\n"
    assert sglang.Edit("f.py", old="a = 1\n", new="a = 2\n").to(text, "here") == "a = 2\nb = 1\n"
    assert sglang.Edit("f.py", old=" = 1", new=" = 3", every=True).to(text, "here") == "a = 3\nb = 3\n"
    assert sglang.Edit("f.py", append="c = 1\n").to(text, "here") == text + "c = 1\n"
    with pytest.raises(InternalError, match=re.escape("here expects one ' = 1' in f.py, found 2")):
        sglang.Edit("f.py", old=" = 1", new=" = 2").to(text, "here")
    with pytest.raises(InternalError, match="found 0"):
        sglang.Edit("f.py", old="zzz", new="").to(text, "here")


def test_a_commit_that_deletes_or_edits_a_missing_file_is_an_internal_error() -> None:
    from datetime import UTC, datetime

    from patchkit.errors import InternalError

    row = sglang.DemoCommit(
        label="drop",
        when=datetime(2026, 6, 8, tzinfo=UTC),
        author=("A", "a@example.invalid"),
        subject="drop a file",
        delete=("gone.py",),
    )
    assert row.changes({"gone.py": "x = 1\n", "kept.py": "y = 1\n"}) == {"gone.py": None}
    with pytest.raises(InternalError, match=re.escape("drop deletes gone.py, which it does not have")):
        row.changes({"kept.py": "y = 1\n"})
    edit = sglang.DemoCommit(
        label="touch",
        when=datetime(2026, 6, 8, tzinfo=UTC),
        author=("A", "a@example.invalid"),
        subject="edit a deleted file",
        delete=("gone.py",),
        edits=(sglang.Edit("gone.py", old="x", new="z"),),
    )
    with pytest.raises(InternalError, match=re.escape("touch edits gone.py, which it does not have")):
        edit.changes({"gone.py": "x = 1\n"})
