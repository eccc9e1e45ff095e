"""Provenance parsers on real output (tests/fixtures/gpu/, captured on an H200; see its README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from patchkit.bench.records.provenance import QUERY_FIELDS, parse_query_csv, torch_facts

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gpu"


def test_query_csv_fixture_parses_every_field():
    gpus = parse_query_csv((FIXTURES / "nvsmi_query.csv").read_text(encoding="utf-8"))
    assert gpus == [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "uuid": "GPU-d1e5bc8d-dcc1-1ad1-414b-2a458150ae7a",
            "driver_version": "580.159.04",
            "pstate": "P0",
            "sm_clock_mhz": 345,
            "mem_clock_mhz": 3201,
            "max_sm_clock_mhz": 1980,
            "pcie_gen": 5,
            "pcie_gen_max": 5,
            "pcie_width": 16,
            "pcie_width_max": 16,
            "memory_total_mib": 143771,
            "memory_used_mib": 0,
            "persistence_mode": "Enabled",
            "ecc_mode": "Enabled",
            "power_limit_w": 700.0,
            "temperature_c": 36,
            "compute_mode": "Default",
        }
    ]


def test_query_fields_are_the_ones_the_fixture_was_captured_with():
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert f"--query-gpu={','.join(QUERY_FIELDS)} --format=csv" in readme


def test_multi_gpu_rows_and_not_available_cells():
    lines = (FIXTURES / "nvsmi_query.csv").read_text(encoding="utf-8").splitlines()
    second = lines[1].replace("0, NVIDIA", "1, NVIDIA").replace("5, 5, 16, 16", "4, 5, 8, 16").replace("36", "[N/A]")
    gpus = parse_query_csv("\n".join([lines[0], lines[1], second]) + "\n")
    assert [g["index"] for g in gpus] == [0, 1]
    assert (gpus[1]["pcie_gen"], gpus[1]["pcie_width"], gpus[1]["temperature_c"]) == (4, 8, None)


def test_torch_probe_keys_match_the_fixture_shape(tmp_path):
    # A fake torch package, importable by the probe, shaped like the real report in torch_versions.json.
    real = json.loads((FIXTURES / "torch_versions.json").read_text(encoding="utf-8"))
    pkg = tmp_path / "torch"
    (pkg / "backends").mkdir(parents=True)
    (pkg / "cuda").mkdir()
    (pkg / "__init__.py").write_text(
        f"__version__ = {real['torch']!r}\nfrom torch import version, backends, cuda\n", encoding="utf-8"
    )
    (pkg / "version.py").write_text(f"cuda = {real['cuda']!r}\n", encoding="utf-8")
    (pkg / "backends" / "__init__.py").write_text("from torch.backends import cudnn\n", encoding="utf-8")
    (pkg / "backends" / "cudnn.py").write_text(f"def version():\n    return {real['cudnn']!r}\n", encoding="utf-8")
    nccl = tuple(int(x) for x in real["nccl"].split("."))
    (pkg / "cuda" / "__init__.py").write_text("from torch.cuda import nccl\n", encoding="utf-8")
    (pkg / "cuda" / "nccl.py").write_text(f"def version():\n    return {nccl!r}\n", encoding="utf-8")
    facts = torch_facts(sys.executable, {"PYTHONPATH": str(tmp_path)}, str(tmp_path))
    assert facts == {k: real[k] for k in ("torch", "cuda", "cudnn", "nccl")}


def test_torch_probe_is_none_without_torch(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, check=False)
    if proc.returncode == 0:  # pragma: no cover - a machine with torch installed
        return
    assert torch_facts(sys.executable, {}, str(tmp_path)) is None
