"""Data files that change performance with no .py changed: spawn workers of the stand-in server read a fused-MoE
tuning config (JSON) from the tree, from an unowned copy in a real venv's site-packages, and a model directory's
config.json; the probe's audit hook records each, the accounting classifies it like a module, a STRAY config refuses
the run (allow_stray applies), `show` lists them, and `guard --site` finds the unowned copy."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, write_bench_kit
from helpers import run_cli
from proof_env import make_venv, site_packages, wheels

from patchkit.demo.history import HistoryBuilder

CONFIG = "python/sglang/srt/layers/moe/fused_moe_triton/configs/E=8,N=64,device_name=NVIDIA_H200.json"
CONFIG_TEXT = '{"1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "num_warps": 4}}\n'
STALE = CONFIG_TEXT.replace("16", "64")  # another tuning: the throughput changes, no .py does


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("data-venv") / "venv", wheels(tmp_path_factory.mktemp("wheels")))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory):
    b = HistoryBuilder(tmp_path_factory.mktemp("data") / "repo")
    files = {
        ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
        "python/sglang/__init__.py": "",
        "python/sglang/srt/__init__.py": "",
        MODEL: MODEL_TEXT,
        CONFIG: CONFIG_TEXT,
        "perf/throughput.txt": "100\n",
    }
    b.commit("base", "Initial import", files)
    return b.build()


def bench(capsys, history, venv: Path, root: Path, reads: list[str], **over):
    table = bench_table(python=str(venv), ready_timeout=180, repeat=1, **over)
    args = "--workers 0 --spawn-workers 2 " + " ".join(f"--read-file {r}" for r in reads)
    table["vars"] = {**table["vars"], "server_args": args}
    manifest = write_bench_kit(root / "kit", bench=table, profiles={})
    store = root / "bench.sqlite"
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, "--commit",
                     history["base"])  # fmt: skip
    assert "Traceback" not in result.err
    shown = run_cli(capsys, "show", "1", "--files", "--repo", history.path, "--store", store)
    doc = json.loads(run_cli(capsys, "show", "1", "--json", "--files", "--repo", history.path, "--store", store).out)
    return result, shown.out, doc


@pytest.mark.slow
def test_a_config_from_the_tree_is_accounted_as_the_commits_blob(capsys, history, venv, tmp_path) -> None:
    result, shown, doc = bench(capsys, history, venv, tmp_path, [CONFIG])
    assert result.code == 0, result.out + result.err
    assert doc["header"]["proof"]["state"] == "proven"
    [data] = doc["files"]["data"]
    assert data["path"].endswith(CONFIG) and data["category"] == "tree" and data["owner"] == history["base"]
    assert data["sha256"] == hashlib.sha256(CONFIG_TEXT.encode()).hexdigest()
    assert set(data["pids"]) == {p["pid"] for p in doc["record"]["proof"]["processes"] if p["init"]}  # both ranks
    assert doc["files"]["counts"]["tree"] >= 3  # the config among the tree's files
    line = next(x for x in shown.splitlines() if x.endswith(data["sha256"][:16]))
    assert CONFIG in line and "  tree  " in line


@pytest.mark.slow
def test_an_unowned_config_in_site_packages_refuses_the_run_unless_allowed(capsys, history, venv, tmp_path) -> None:
    copy = site_packages(venv) / "sglang_configs" / "E=8,N=64,device_name=NVIDIA_H200.json"
    copy.parent.mkdir()
    copy.write_text(STALE)
    try:
        refused, shown, doc = bench(capsys, history, venv, tmp_path / "a", [str(copy)])
        allowed, _shown, allowed_doc = bench(
            capsys, history, venv, tmp_path / "b", [str(copy)], allow_stray=[bench_table()["allow_stray"][0],
                                                                              f"{copy.parent}/*"]
        )  # fmt: skip
        site = run_cli(capsys, "guard", "--python", venv, "--site", "--json")
    finally:
        shutil.rmtree(copy.parent)
    assert refused.code == 1, refused.out
    line = next(x for x in refused.out.splitlines() if str(copy) in x)
    assert "in " in line and "but listed in no RECORD (owned by none)" in line
    [data] = doc["files"]["data"]
    assert data["category"] == "stray" and data["sha256"] is None
    assert any(x.startswith("STRAY  ") and str(copy) in x for x in shown.splitlines())
    assert allowed.code == 0, allowed.out
    [item] = allowed_doc["files"]["data"]
    assert item["category"] == "allowed" and item["sha256"] == hashlib.sha256(STALE.encode()).hexdigest()
    assert site.code == 1
    [finding] = site.json["findings"]
    assert finding["path"] == str(copy.resolve()) and finding["kind"] == "unowned"
    assert finding["detail"].startswith("data file (config, template): read at run time")


def test_a_model_directory_config_under_a_data_root_is_kept_with_its_digest(capsys, history, venv, tmp_path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"num_hidden_layers": 61}\n')
    (model / "weights.bin").write_bytes(b"\0" * 16)  # not a data suffix: never recorded
    env = {**bench_table()["env"], "PATCHKIT_PROBE_ROOTS": str(model)}
    result, shown, doc = bench(capsys, history, venv, tmp_path / "run", [str(model / "config.json")], env=env)
    assert result.code == 0, result.out + result.err
    assert doc["header"]["proof"]["state"] == "proven"
    [data] = doc["files"]["data"]
    assert data["path"] == str(model / "config.json") and data["category"] == "data"
    assert data["sha256"] == hashlib.sha256(b'{"num_hidden_layers": 61}\n').hexdigest()
    assert "data file read" in shown and "a data root (PATCHKIT_PROBE_ROOTS)" in shown
