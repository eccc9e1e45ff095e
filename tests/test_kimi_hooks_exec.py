"""Run the code the Kimi-K2.5 manifests put into SGLang-shaped files.

The patched modules are executed for real, with stand-ins for torch, numpy,
transformers and every ``sglang.*`` module they import (installed in
``sys.modules`` with monkeypatch, so they disappear after each test).  No real
torch is needed.
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

from patchkit.demo.sglang import EAGLE_WORKER, KIMI_K25, build_sglang_history
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


def patched_file(tmp_path: Path, label: str, manifest_path: Path, target: str) -> str:
    """``target`` after applying the manifest to a checkout of the commit labelled ``label``.

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
    assert list(report.written) == [target]
    return (history.path / target).read_text(encoding="utf-8")


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
