"""Run the code the Kimi-K2.5 manifests put into SGLang-shaped files.

The patched modules are executed for real, with stand-ins for torch, numpy,
transformers and every ``sglang.*`` module they import (installed in
``sys.modules`` with monkeypatch, so they disappear after each test).  No real
torch is needed.  The verify timing runs in every call shape the demo history
has: EAGLEWorker.verify (two), EAGLEWorkerV2.verify (four) and run_eagle_verify.
"""

from __future__ import annotations

import ast
import re
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from helpers import git

from patchkit.demo.sglang import EAGLE_WORKER, EAGLE_WORKER_COMMON, EAGLE_WORKER_V2, KIMI_K25, build_sglang_history
from patchkit.engine.apply import apply_worktree
from patchkit.git import Repo
from patchkit.manifest.loader import load_manifest

ROOT = Path(__file__).resolve().parents[1]
KIMI_MANIFEST = ROOT / "manifests" / "kimi-k25-eagle3.toml"
TIMING_MANIFEST = ROOT / "manifests" / "eagle3-verify-timing.toml"
STUBBED_ROOTS = {"torch", "numpy", "transformers", "sglang"}
TIMING_LINE = re.compile(r"^\[patchkit\] eagle3 verify_ms=\d+\.\d$")


# -- stand-in modules ---------------------------------------------------------------


def _accept(self: Any, *args: Any, **kwargs: Any) -> None:
    pass


class _StandInMeta(type):
    """Classes that answer any class attribute (``ForwardMode.TARGET_VERIFY``)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return mock.MagicMock(name=f"{cls.__name__}.{name}")


class _StandInModule(types.ModuleType):
    """A module whose every missing attribute is a fresh stand-in class."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _StandInMeta(name, (), {"__init__": _accept, "__module__": self.__name__})
        setattr(self, name, value)
        return value


class _Module:
    """torch.nn.Module without any magic: a missing attribute stays missing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def _decorator_factory(*args: Any, **kwargs: Any) -> Any:
    """torch.compile(...) / torch.inference_mode(): returns the function unchanged."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def _imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return {name for name in names if name.split(".")[0] in STUBBED_ROOTS}


def install_stand_ins(monkeypatch: pytest.MonkeyPatch, source: str, *, cuda: bool = True) -> SimpleNamespace:
    """Put stand-ins for every torch/numpy/transformers/sglang module ``source`` imports into sys.modules."""
    wanted = _imported_modules(source) | {"torch", "torch.nn"}
    full: set[str] = set()
    for name in wanted:
        parts = name.split(".")
        full.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    modules = {name: _StandInModule(name) for name in sorted(full)}
    for name, module in modules.items():
        if "." in name:
            parent, _, child = name.rpartition(".")
            setattr(modules[parent], child, module)
    torch = modules["torch"]
    torch.nn.Module = _Module
    torch.compile = _decorator_factory
    torch.inference_mode = _decorator_factory
    torch.no_grad = _decorator_factory
    syncs: list[str] = []
    torch.cuda = SimpleNamespace(
        is_available=lambda: cuda,
        synchronize=lambda: syncs.append("sync"),
        nvtx=SimpleNamespace(range=lambda name: mock.MagicMock()),
    )
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return SimpleNamespace(modules=modules, syncs=syncs)


def exec_module(source: str, name: str, filename: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": name, "__file__": filename}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


# -- building and patching --------------------------------------------------------------


def patched_tree(tmp_path: Path, label: str, manifest_path: Path) -> tuple[Path, tuple[str, ...]]:
    """A checkout of the commit labelled ``label`` with the manifest applied, and the files it wrote.

    Used by module-scoped fixtures; conftest's session-wide isolation covers them.
    """
    history = build_sglang_history(tmp_path / "sglang")
    git(history.path, "checkout", "-q", "--detach", history[label])
    repo = Repo.discover(history.path)
    try:
        report = apply_worktree(load_manifest(manifest_path), repo)
    finally:
        repo.close()
    assert not report.refused
    return history.path, report.written


def patched_file(tmp_path: Path, label: str, manifest_path: Path, target: str) -> str:
    """``target`` after applying the manifest to a checkout of the commit labelled ``label``."""
    tree, written = patched_tree(tmp_path, label, manifest_path)
    assert list(written) == [target]
    return (tree / target).read_text(encoding="utf-8")


# -- the Kimi-K2.5 hooks ------------------------------------------------------------------


class Recorder:
    """A language model that records what the hooks forward to it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.embed_and_head = (object(), object())

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.calls.append(("set_eagle3_layers_to_capture", (layer_ids,)))
        return "ignored"  # the hook is declared -> None and must not leak this

    def get_embed_and_head(self):
        self.calls.append(("get_embed_and_head", ()))
        return self.embed_and_head

    def set_embed_and_head(self, embed, head):
        self.calls.append(("set_embed_and_head", (embed, head)))
        return "ignored"


@pytest.fixture(scope="module", params=["add-kimi", "kimi-builtin-generics"])
def kimi_source(request, tmp_path_factory: pytest.TempPathFactory) -> str:
    """kimi_k25.py with the hooks (at add-kimi; and where the List import had to be added too)."""
    return patched_file(tmp_path_factory.mktemp("kimi"), request.param, KIMI_MANIFEST, KIMI_K25)


@pytest.fixture
def kimi_class(kimi_source: str, monkeypatch: pytest.MonkeyPatch):
    """KimiK25ForConditionalGeneration, executed from the patched file."""
    source = kimi_source
    install_stand_ins(monkeypatch, source)
    namespace = exec_module(source, "sglang.srt.models.kimi_k25", KIMI_K25)
    cls = namespace["KimiK25ForConditionalGeneration"]
    assert namespace["EntryClass"] == [cls]
    return cls


def _instance(cls, **attrs: Any):
    obj = cls.__new__(cls)  # skip the heavy __init__ (vision tower, DeepSeek-V3)
    for key, value in attrs.items():
        setattr(obj, key, value)
    return obj


def test_hooks_delegate_to_the_language_model(kimi_class) -> None:
    recorder = Recorder()
    model = _instance(kimi_class, language_model=recorder)

    assert model.set_eagle3_layers_to_capture([1, 29, 57]) is None
    assert model.set_eagle3_layers_to_capture() is None
    assert model.get_embed_and_head() is recorder.embed_and_head
    embed, head = object(), object()
    assert model.set_embed_and_head(embed, head) is None

    assert recorder.calls == [
        ("set_eagle3_layers_to_capture", ([1, 29, 57],)),
        ("set_eagle3_layers_to_capture", (None,)),
        ("get_embed_and_head", ()),
        ("set_embed_and_head", (embed, head)),
    ]


CALLS = {
    "set_eagle3_layers_to_capture": ([2, 30],),
    "get_embed_and_head": (),
    "set_embed_and_head": (object(), object()),
}


@pytest.mark.parametrize("method", sorted(CALLS))
@pytest.mark.parametrize("state", ["absent", "none"])
def test_no_language_model_is_a_clear_attribute_error(kimi_class, method: str, state: str) -> None:
    model = _instance(kimi_class) if state == "absent" else _instance(kimi_class, language_model=None)
    with pytest.raises(AttributeError) as info:
        getattr(model, method)(*CALLS[method])
    message = str(info.value)
    assert message.startswith(f"KimiK25ForConditionalGeneration.{method}: ")
    assert "self.language_model is missing or None" in message


@pytest.mark.parametrize("method", sorted(CALLS))
def test_language_model_without_the_method_is_a_clear_attribute_error(kimi_class, method: str) -> None:
    class TextOnlyModel:
        pass

    model = _instance(kimi_class, language_model=TextOnlyModel())
    with pytest.raises(AttributeError) as info:
        getattr(model, method)(*CALLS[method])
    message = str(info.value)
    assert message.startswith(f"KimiK25ForConditionalGeneration.{method}: ")
    assert f"the language model (TextOnlyModel) has no {method} method" in message


def test_stand_ins_live_only_inside_their_monkeypatch(kimi_source: str) -> None:
    # Self-contained (it installs what it checks), so it means the same alone, first, last or in any order.
    before = {name: module for name, module in sys.modules.items() if name.split(".")[0] in STUBBED_ROOTS}
    with pytest.MonkeyPatch.context() as monkeypatch:
        stand_ins = install_stand_ins(monkeypatch, kimi_source)
        assert "sglang.srt.models.deepseek_v2" in stand_ins.modules
        for name, module in stand_ins.modules.items():
            assert sys.modules[name] is module, name
        namespace = exec_module(kimi_source, "sglang.srt.models.kimi_k25", KIMI_K25)
        assert "KimiK25ForConditionalGeneration" in namespace
    # Undone on exit: what was there before is back, and no stand-in is left anywhere in sys.modules.
    assert {name: module for name, module in sys.modules.items() if name.split(".")[0] in STUBBED_ROOTS} == before
    assert not any(isinstance(module, _StandInModule) for module in list(sys.modules.values()))


# -- the verify timing -----------------------------------------------------------------------


@pytest.fixture(scope="module", params=["add-eagle", "verify-nvtx"])
def eagle_source(request, tmp_path_factory: pytest.TempPathFactory) -> str:
    """eagle_worker.py with the timing patch, before and after verify-nvtx moved the anchor."""
    return patched_file(tmp_path_factory.mktemp("eagle"), request.param, TIMING_MANIFEST, EAGLE_WORKER)


def _load_worker(source: str, monkeypatch: pytest.MonkeyPatch, env: str | None, *, cuda: bool = True):
    if env is None:
        monkeypatch.delenv("PATCHKIT_EAGLE3_VERIFY_TIMING", raising=False)
    else:
        monkeypatch.setenv("PATCHKIT_EAGLE3_VERIFY_TIMING", env)
    stand_ins = install_stand_ins(monkeypatch, source, cuda=cuda)
    namespace = exec_module(source, "sglang.srt.speculative.eagle_worker", EAGLE_WORKER)
    return namespace, stand_ins


def _run_verify(namespace: dict[str, Any]):
    """Call the patched EAGLEWorker.verify with mock worker, batch and draft input."""
    worker = mock.MagicMock(name="worker")
    worker.speculative_num_steps = 3
    worker.enable_nan_detection = False
    worker.trace_verify = False
    batch = mock.MagicMock(name="batch")
    batch.has_grammar = False
    batch.return_logprob = False
    spec_info = mock.MagicMock(name="spec_info")
    model_worker_batch = batch.get_model_worker_batch.return_value
    model_worker_batch.capture_hidden_mode = spec_info.capture_hidden_mode
    result = namespace["EAGLEWorker"].verify(worker, batch, spec_info)
    worker.target_worker.forward_batch_generation.assert_called_once_with(model_worker_batch, is_verify=True)
    target = worker.target_worker.forward_batch_generation.return_value
    assert result[0] is target.logits_output and result[3] is target.can_run_cuda_graph
    return result


def test_timing_off_prints_nothing_and_costs_a_flag_check(
    eagle_source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace, stand_ins = _load_worker(eagle_source, monkeypatch, env=None)
    assert namespace["_PATCHKIT_VERIFY_TIMING"] is False
    assert namespace["_patchkit_verify_timer_start"]() is None
    assert namespace["_patchkit_verify_timer_stop"](None) is None

    # In verify, the flag is checked before anything is called: make any call fail.
    def must_not_run(*args: Any) -> None:
        raise AssertionError("timer helper called while timing is off")

    namespace["_patchkit_verify_timer_start"] = must_not_run
    namespace["_patchkit_verify_timer_stop"] = must_not_run
    _run_verify(namespace)
    _run_verify(namespace)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    assert stand_ins.syncs == []


@pytest.mark.parametrize("value", ["1", "true", "ON"])
def test_timing_on_prints_one_line_per_verify(
    eagle_source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    namespace, stand_ins = _load_worker(eagle_source, monkeypatch, env=value)
    assert namespace["_PATCHKIT_VERIFY_TIMING"] is True
    _run_verify(namespace)
    _run_verify(namespace)
    _run_verify(namespace)
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 3
    assert all(TIMING_LINE.match(line) for line in lines), lines
    assert len(stand_ins.syncs) == 6  # before and after each target forward


def test_timing_reads_the_flag_once_at_import(
    eagle_source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace, _ = _load_worker(eagle_source, monkeypatch, env=None)
    monkeypatch.setenv("PATCHKIT_EAGLE3_VERIFY_TIMING", "1")  # too late: the module is loaded
    _run_verify(namespace)
    assert capsys.readouterr().err == ""


def test_timing_line_format_and_sync(
    eagle_source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace, stand_ins = _load_worker(eagle_source, monkeypatch, env="1")
    clock = iter([100.0, 100.0291])
    namespace["time"] = SimpleNamespace(perf_counter=lambda: next(clock))
    t0 = namespace["_patchkit_verify_timer_start"]()
    assert t0 == 100.0 and stand_ins.syncs == ["sync"]
    assert namespace["_patchkit_verify_timer_stop"](t0) is None
    assert stand_ins.syncs == ["sync", "sync"]
    assert capsys.readouterr().err == "[patchkit] eagle3 verify_ms=29.1\n"


def test_timing_without_cuda_does_not_synchronize(
    eagle_source: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace, stand_ins = _load_worker(eagle_source, monkeypatch, env="1", cuda=False)
    _run_verify(namespace)
    assert stand_ins.syncs == []
    assert TIMING_LINE.match(capsys.readouterr().err.strip())


# -- the verify timing in every call shape of the demo history --------------------------------

# Each call shape of the verify target forward, at the first commit that has it: the file,
# what its patched verify is called with, and what the target worker must receive.
SHAPES = {
    "v1-model-worker-batch": ("spec-v2-overlap", EAGLE_WORKER),
    "v1-batch": ("remove-mwb-indirection", EAGLE_WORKER),
    "v2-model-worker-batch": ("spec-v2-overlap", EAGLE_WORKER_V2),
    "v2-batch": ("remove-mwb-indirection", EAGLE_WORKER_V2),
    "v2-cuda-graph": ("v2-verify-init-order", EAGLE_WORKER_V2),
    "v2-plain": ("v2-attn-plan-marker", EAGLE_WORKER_V2),
    "common": ("consolidate-verify", EAGLE_WORKER_COMMON),
}
WRITTEN = {  # what the timing manifest writes at those commits
    "spec-v2-overlap": {EAGLE_WORKER, EAGLE_WORKER_V2},
    "remove-mwb-indirection": {EAGLE_WORKER, EAGLE_WORKER_V2},
    "v2-verify-init-order": {EAGLE_WORKER, EAGLE_WORKER_V2},
    "v2-attn-plan-marker": {EAGLE_WORKER, EAGLE_WORKER_V2},
    "consolidate-verify": {EAGLE_WORKER_COMMON},
}


@pytest.fixture(scope="module")
def timing_trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per commit label of SHAPES: a checkout with eagle3-verify-timing applied."""
    trees = {}
    for label, expected in WRITTEN.items():
        tree, written = patched_tree(tmp_path_factory.mktemp(label), label, TIMING_MANIFEST)
        assert set(written) == expected, label
        trees[label] = tree
    return trees


def _module_name(path: str) -> str:
    return path.removeprefix("python/").removesuffix(".py").replace("/", ".")


def _load(source: str, path: str, monkeypatch: pytest.MonkeyPatch, *, timing: bool) -> tuple[dict, SimpleNamespace]:
    """Execute a patched file with stand-ins, and the CUDA streams and events verify uses."""
    if timing:
        monkeypatch.setenv("PATCHKIT_EAGLE3_VERIFY_TIMING", "1")
    else:
        monkeypatch.delenv("PATCHKIT_EAGLE3_VERIFY_TIMING", raising=False)
    stand_ins = install_stand_ins(monkeypatch, source)
    cuda = stand_ins.modules["torch"].cuda
    cuda.Stream = mock.MagicMock(name="Stream")
    cuda.stream = mock.MagicMock(name="stream")
    cuda.current_stream = mock.MagicMock(name="current_stream")
    cuda.Event = mock.MagicMock(name="Event")
    return exec_module(source, _module_name(path), path), stand_ins


def _v2_batch(can_run_cuda_graph: bool = True) -> tuple[mock.MagicMock, mock.MagicMock]:
    """A batch whose verify input plans ``verify_forward_batch`` and samples three tensors."""
    batch = mock.MagicMock(name="batch")
    verify_forward_batch = mock.MagicMock(name="verify_forward_batch")
    batch.spec_info.prepare_for_v2_verify.return_value = (verify_forward_batch, can_run_cuda_graph)
    batch.spec_info.sample.return_value = (mock.MagicMock(), mock.MagicMock(), mock.MagicMock())
    return batch, verify_forward_batch


def _call_verify(shape: str, namespace: dict[str, Any]) -> None:
    """Call the patched verify of ``shape`` once and check what the target worker received."""
    if shape.startswith("v1-"):
        worker = mock.MagicMock(name="worker")
        worker.enable_nan_detection = worker.trace_verify = False
        batch = mock.MagicMock(name="batch")
        batch.has_grammar = batch.return_logprob = False
        namespace["EAGLEWorker"].verify(worker, batch, mock.MagicMock(name="spec_info"))
        first = batch.get_model_worker_batch.return_value if shape == "v1-model-worker-batch" else batch
        worker.target_worker.forward_batch_generation.assert_called_once_with(first, is_verify=True)
        return
    batch, fb = _v2_batch()
    if shape == "common":
        target = mock.MagicMock(name="target_worker")
        namespace["run_eagle_verify"](
            batch,
            target_worker=target,
            req_to_token_pool=mock.MagicMock(),
            token_to_kv_pool_allocator=mock.MagicMock(),
            plan_stream=mock.MagicMock(),
            plan_stream_ctx=mock.MagicMock(),
            num_draft_tokens=4,
            pre_draft_allocate_lens=mock.MagicMock(),
        )
        target.forward_batch_generation.assert_called_once_with(batch=None, forward_batch=fb, is_verify=True)
        return
    worker = mock.MagicMock(name="worker")
    worker.enable_nan_detection = False
    namespace["EAGLEWorkerV2"].verify(worker, batch, mock.MagicMock(name="allocate_lens"))
    expected: dict[str, Any] = {
        "v2-model-worker-batch": {"model_worker_batch": None, "skip_attn_backend_init": True},
        "v2-batch": {"batch": None, "skip_attn_backend_init": True},
        "v2-cuda-graph": {"batch": None, "skip_attn_backend_init": True},  # can_run_cuda_graph is True here
        "v2-plain": {"batch": None},
    }[shape]
    worker.target_worker.forward_batch_generation.assert_called_once_with(forward_batch=fb, is_verify=True, **expected)


@pytest.mark.parametrize("timing", [True, False], ids=["timing-on", "timing-off"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_verify_shape_of_the_demo_prints_the_timing_line(
    shape: str,
    timing: bool,
    timing_trees: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    label, path = SHAPES[shape]
    source = (timing_trees[label] / path).read_text(encoding="utf-8")
    assert source.count("_pk_t0 = _patchkit_verify_timer_start() if _PATCHKIT_VERIFY_TIMING else None") == 1
    namespace, stand_ins = _load(source, path, monkeypatch, timing=timing)
    capsys.readouterr()
    _call_verify(shape, namespace)
    _call_verify(shape, namespace)
    captured = capsys.readouterr()
    assert captured.out == ""
    if timing:
        lines = captured.err.splitlines()
        assert len(lines) == 2 and all(TIMING_LINE.match(line) for line in lines), lines
        assert stand_ins.syncs == ["sync"] * 4  # before and after each target forward
    else:
        assert captured.err == "" and stand_ins.syncs == []


def test_the_cuda_graph_shape_passes_the_plan_through(
    timing_trees: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#26244's call: the patched verify still hands can_run_cuda_graph to the target unchanged."""
    source = (timing_trees["v2-verify-init-order"] / EAGLE_WORKER_V2).read_text(encoding="utf-8")
    namespace, _ = _load(source, EAGLE_WORKER_V2, monkeypatch, timing=True)
    worker = mock.MagicMock(name="worker")
    worker.enable_nan_detection = False
    batch, fb = _v2_batch(can_run_cuda_graph=False)
    namespace["EAGLEWorkerV2"].verify(worker, batch, mock.MagicMock())
    worker.target_worker.forward_batch_generation.assert_called_once_with(
        batch=None, forward_batch=fb, is_verify=True, skip_attn_backend_init=False
    )
    assert TIMING_LINE.match(capsys.readouterr().err.strip())


def test_at_the_tip_the_v2_worker_is_timed_through_run_eagle_verify(
    timing_trees: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After #31380 only eagle_worker_common.py is patched, and EAGLEWorkerV2.verify (untouched) prints the line."""
    tree = timing_trees["consolidate-verify"]
    common = (tree / EAGLE_WORKER_COMMON).read_text(encoding="utf-8")
    v2 = (tree / EAGLE_WORKER_V2).read_text(encoding="utf-8")
    assert "_patchkit" not in v2
    common_ns, _ = _load(common, EAGLE_WORKER_COMMON, monkeypatch, timing=True)
    install_stand_ins(monkeypatch, v2)  # (v2's torch is a fresh stand-in; the timer syncs through common's)
    patched_common = types.ModuleType(_module_name(EAGLE_WORKER_COMMON))
    patched_common.__dict__.update(common_ns)
    monkeypatch.setitem(sys.modules, patched_common.__name__, patched_common)
    v2_ns = exec_module(v2, _module_name(EAGLE_WORKER_V2), EAGLE_WORKER_V2)
    assert v2_ns["run_eagle_verify"] is common_ns["run_eagle_verify"]

    worker = mock.MagicMock(name="worker")
    batch, fb = _v2_batch()
    capsys.readouterr()
    v2_ns["EAGLEWorkerV2"].verify(worker, batch, mock.MagicMock())
    worker.target_worker.forward_batch_generation.assert_called_once_with(batch=None, forward_batch=fb, is_verify=True)
    assert TIMING_LINE.match(capsys.readouterr().err.strip())
