"""eagle3-verify-timing in every place SGLang has had the verify target forward.

Each case is a file laid out like one SGLang version: only the names, the
layout (class, method or module function) and the exact anchor statement of
that version, never upstream code.  The real manifest is applied to it, the
variant for that shape must be the one that applies (the others SKIP
OTHER_VARIANT, nothing of theirs written), and the patched function is run:
every variant prints the same ``[patchkit] eagle3 verify_ms=...`` line.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers import d, make_repo, run_cli

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "manifests" / "eagle3-verify-timing.toml"
SPEC = "python/sglang/srt/speculative/"
V1, V2, COMMON = SPEC + "eagle_worker.py", SPEC + "eagle_worker_v2.py", SPEC + "eagle_worker_common.py"
TIMING_LINE = re.compile(r"^\[patchkit\] eagle3 verify_ms=\d+\.\d$")


def method_file(cls: str, prepare: str, call: str) -> str:
    return d(f"""
        import logging
        from typing import List, Optional


        class {cls}:
            def verify(self, batch):
                {prepare}
                {call}
                return result_holder(locals())


        def result_holder(names):
            return names
    """)


COMMON_TEXT = d("""
    from typing import TYPE_CHECKING, Any, Optional


    def run_eagle_verify(target_worker, verify_forward_batch):
        forward_batch_output = target_worker.forward_batch_generation(
            batch=None, forward_batch=verify_forward_batch, is_verify=True
        )
        return forward_batch_output
""")

V2_CALL = "forward_batch_output = self.target_worker.forward_batch_generation("
CASES = {
    # variant start patch -> (file, text, how to call the patched function)
    "verify-timer-start": (
        V1,
        method_file(
            "EAGLEWorker",
            "model_worker_batch = batch",
            "batch_result = self.target_worker.forward_batch_generation(model_worker_batch, is_verify=True)",
        ),
        "EAGLEWorker",
    ),
    "v1-batch-timer-start": (
        V1,
        method_file(
            "EAGLEWorker",
            "batch.prepare()",
            "batch_result = self.target_worker.forward_batch_generation(batch, is_verify=True)",
        ),
        "EAGLEWorker",
    ),
    "v2-timer-start": (
        V2,
        method_file(
            "EAGLEWorkerV2",
            "verify_forward_batch = batch",
            V2_CALL + "model_worker_batch=None, forward_batch=verify_forward_batch, is_verify=True, "
            "skip_attn_backend_init=True)",
        ),
        "EAGLEWorkerV2",
    ),
    "v2-batch-timer-start": (
        V2,
        method_file(
            "EAGLEWorkerV2",
            "verify_forward_batch = batch",
            V2_CALL + "batch=None, forward_batch=verify_forward_batch, is_verify=True, skip_attn_backend_init=True)",
        ),
        "EAGLEWorkerV2",
    ),
    "v2-cg-timer-start": (
        V2,
        method_file(
            "EAGLEWorkerV2",
            "verify_forward_batch, can_run_cuda_graph = batch, True",
            V2_CALL + "batch=None, forward_batch=verify_forward_batch, is_verify=True, "
            "skip_attn_backend_init=can_run_cuda_graph)",
        ),
        "EAGLEWorkerV2",
    ),
    "v2-plain-timer-start": (
        V2,
        method_file(
            "EAGLEWorkerV2",
            "verify_forward_batch = batch",
            V2_CALL + "batch=None, forward_batch=verify_forward_batch, is_verify=True)",
        ),
        "EAGLEWorkerV2",
    ),
    "common-timer-start": (COMMON, COMMON_TEXT, "run_eagle_verify"),
}


class _Target:
    def __init__(self) -> None:
        self.calls = 0

    def forward_batch_generation(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        return "output"


def _run(text: str, entry: str, monkeypatch: pytest.MonkeyPatch) -> tuple[_Target, list[str]]:
    """Import the patched text as a module (timing on, a stand-in torch with CUDA) and call it twice."""
    syncs: list[str] = []
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: True, synchronize=lambda: syncs.append("sync"))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setenv("PATCHKIT_EAGLE3_VERIFY_TIMING", "1")
    namespace: dict[str, Any] = {"__name__": "patched"}
    exec(compile(text, "patched.py", "exec"), namespace)
    target = _Target()
    for _ in range(2):
        if entry == "run_eagle_verify":
            assert namespace[entry](target, "fb") == "output"
        else:
            worker = namespace[entry].__new__(namespace[entry])
            worker.target_worker = target
            namespace[entry].verify(worker, types.SimpleNamespace(prepare=lambda: None))
    return target, syncs


@pytest.mark.parametrize("variant", list(CASES))
def test_each_call_shape_is_timed_by_its_own_variant(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, text, entry = CASES[variant]
    repo = make_repo(tmp_path / "sglang", {path: text})
    r = run_cli(capsys, "apply", "-m", MANIFEST, "--repo", repo, "--json")
    assert r.code == 0, r.err
    assert r.json["written"] == [path]
    statuses = {x["patch"]: x["status"] for x in r.json["results"]}
    stop = variant.replace("-start", "-stop")
    applied = {p for p, s in statuses.items() if s == "APPLY"}
    assert {variant, stop} <= applied
    # Only this file's own helpers and imports come with it.
    assert {x["file"] for x in r.json["results"] if x["status"] == "APPLY"} == {path}
    other = {p for p, s in statuses.items() if s == "SKIP"} - applied
    assert all(x["reason"] in ("OTHER_VARIANT", "ALREADY_APPLIED") for x in r.json["results"] if x["patch"] in other)
    top = next(g for g in r.json["groups"] if g["group"] == "verify-timing")
    assert top["status"] == "APPLY"

    patched = (repo / path).read_text(encoding="utf-8")
    assert patched.count("_pk_t0 = _patchkit_verify_timer_start() if _PATCHKIT_VERIFY_TIMING else None") == 1
    capsys.readouterr()
    target, syncs = _run(patched, entry, monkeypatch)
    err = capsys.readouterr().err.splitlines()
    assert target.calls == 2
    assert len(err) == 2 and all(TIMING_LINE.match(line) for line in err), err
    assert syncs == ["sync"] * 4  # before and after each target forward


def test_coexisting_workers_are_both_timed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """v1 and v2 coexist in many versions and either may run: both get timing."""
    v1_path, v1_text, _ = CASES["v1-batch-timer-start"]
    v2_path, v2_text, _ = CASES["v2-plain-timer-start"]
    repo = make_repo(tmp_path / "sglang", {v1_path: v1_text, v2_path: v2_text})
    r = run_cli(capsys, "apply", "-m", MANIFEST, "--repo", repo, "--json")
    assert r.code == 0 and sorted(r.json["written"]) == sorted([v1_path, v2_path])
    groups = {g["group"]: g["covered_by"] for g in r.json["groups"]}
    assert groups == {
        "verify-timing": ["v1-verify", "v2-verify"],
        "v1-verify": ["v1-batch-timer-start"],
        "v2-verify": ["v2-plain-timer-start"],
    }


def test_an_unknown_call_shape_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Where no variant fits, the group WARNs and no helper or import is written without its caller."""
    text = method_file("EAGLEWorker", "batch.prepare()", "batch_result = self.target_worker.verify_forward(batch)")
    repo = make_repo(tmp_path / "sglang", {V1: text})
    r = run_cli(capsys, "apply", "-m", MANIFEST, "--repo", repo, "--json")
    assert r.code == 0 and r.json["written"] == [] and r.json["refused"] is False
    verdicts = {x["patch"]: (x["status"], x["reason"]) for x in r.json["results"] if x["file"] == V1}
    assert verdicts["verify-timer-start"] == ("WARN", "ANCHOR_NOT_FOUND")
    assert verdicts["v1-batch-timer-start"] == ("WARN", "ANCHOR_NOT_FOUND")
    assert verdicts["timing-helpers"] == ("WARN", "DEPENDENCY")
    assert verdicts["import-os"] == ("WARN", "DEPENDENCY")
    top = next(g for g in r.json["groups"] if g["group"] == "verify-timing")
    assert (top["status"], top["reason"]) == ("WARN", "NO_VARIANT")
    assert (repo / V1).read_text(encoding="utf-8") == text
    strict = run_cli(capsys, "apply", "-m", MANIFEST, "--repo", repo, "--strict", "--json")
    assert strict.code == 1
