"""benchmarks/gpu_proof_check.py's CPU part (two gloo ranks) where there is no GPU: it runs, says what it skipped,
and writes its folder in the shape tests/fixtures/ takes (the GPU part has not been run yet)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from patchkit.proof.nccllog import parse_nccl_log

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_proof_check.py"


def test_the_gloo_part_runs_without_a_gpu_and_says_what_it_skipped(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    checks = {c["check"]: c["ok"] for c in summary["checks"]}
    assert all(checks.values()) and {"driver", "probe at init, gloo_rank0", "probe at init, gloo_rank1"} <= set(checks)
    if not summary["torch"].get("cuda"):  # where torch has a GPU, the NCCL rank ran instead
        assert any("the NCCL rank" in line and "no CUDA device" in line for line in summary["skipped"])
        assert "skipped: the NCCL rank" in proc.stdout
    assert summary["ranks"]["gloo_rank1"]["init"][0]["env"]["NCCL_MIN_NCHANNELS"] == "8"
    assert list((out / "probe").glob("probe-*.jsonl")) and (out / "README.md").is_file()
    if not summary["torch"].get("cuda"):
        assert parse_nccl_log((out / "nccl" / "gpu_nccl_info.log").read_text().splitlines()) == {}  # gloo only
