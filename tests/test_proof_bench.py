"""The probe in `patchkit bench`: a stand-in server spawning its schedulers (multiprocessing spawn) from a venv
that holds the stand-in torch as a real wheel; refusals, the record's proof, and compare's proof differences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, write_bench_kit
from helpers import run_cli
from proof_env import TORCH_VERSION, make_venv, site_packages, wheels, write_source

from patchkit.demo.history import HistoryBuilder

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

ENGINE = "python/sglang/srt/entrypoints/engine.py"
ENGINE_TEXT = 'import os\n\n\ndef _set_envs_and_config():\n    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "{n}"\n'


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("bench-venv") / "venv", wheels(tmp_path_factory.mktemp("wheels")))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory):
    b = HistoryBuilder(tmp_path_factory.mktemp("proof-bench") / "repo")
    files = {
        ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
        "python/sglang/__init__.py": "",
        "python/sglang/srt/__init__.py": "",
        "python/sglang/srt/entrypoints/__init__.py": "",
        ENGINE: ENGINE_TEXT.format(n=4),
        MODEL: MODEL_TEXT,
        "perf/throughput.txt": "100\n",
    }
    b.commit("base", "Initial import", files)
    b.tag("v0.5.8", "base")
    b.commit("envs8", "engine: CUDA_DEVICE_MAX_CONNECTIONS=8", {ENGINE: ENGINE_TEXT.format(n=8)})
    return b.build()


def kit(root: Path, venv: Path, server_args: str, **over) -> Path:
    table = bench_table(python=str(venv), ready_timeout=180, repeat=1, **over)
    table["vars"] = {**table["vars"], "server_args": f"--workers 0 --spawn-workers 2 --tree-envs {server_args}"}
    return write_bench_kit(root, bench=table, profiles={})


def bench(capsys, history, manifest, store, *args):
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, *args)
    assert "Traceback" not in result.err
    return result


def test_a_worker_that_sets_its_own_nccl_variable_is_refused(capsys, history, venv, tmp_path) -> None:
    manifest = kit(tmp_path / "kit", venv, "--worker-env 1:NCCL_MIN_NCHANNELS=8")
    store = tmp_path / "bench.sqlite"
    result = bench(capsys, history, manifest, store, "--commit", history["base"])
    assert result.code == 1, result.err
    with capsys.disabled():
        print(result.out)
    [record] = json.loads(run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--json").out)["runs"]
    assert record["outcome"] == "refused" and "before measurement" in record["reason"]
    assert "scheduler_TP1, rank 1): NCCL_MIN_NCHANNELS at init_process_group: expected '4', found '8'" in result.out
    assert "(it started with '4')" in result.out  # what psutil saw, and passed


def test_an_edited_site_packages_file_refuses_the_run_naming_its_distribution(capsys, history, venv, tmp_path) -> None:
    manifest = kit(tmp_path / "kit", venv, "")
    store = tmp_path / "bench.sqlite"
    nccl = site_packages(venv) / "torch" / "cuda" / "nccl.py"
    original = nccl.read_text()
    write_source(nccl, original.replace("(2, 27, 5)", "(2, 27, 3)"))
    try:
        result = bench(capsys, history, manifest, store, "--commit", history["base"])
    finally:
        write_source(nccl, original)
    with capsys.disabled():
        print(result.out)
    assert result.code == 1
    line = next(x for x in result.out.splitlines() if str(nccl) in x)
    assert f"[torch {TORCH_VERSION}]" in line and "edited: its sha256 differs from the RECORD" in line
    assert "loaded by pid" in line and "scheduler_TP" in line


def test_probe_off_is_not_proven_and_compare_shows_the_effective_env_change(capsys, history, venv, tmp_path) -> None:
    store = tmp_path / "bench.sqlite"
    off = kit(tmp_path / "off", venv, "", probe=False)
    result = bench(capsys, history, off, store, "--commit", history["base"], "--json")
    assert result.code == 0, result.err
    assert result.json["runs"][0]["proof"] == {"state": "not proven", "reason": "[bench].probe = false"}

    manifest = kit(tmp_path / "on", venv, "")
    result = bench(
        capsys, history, manifest, store, "--commit", history["base"], "--commit", history["envs8"], "--json"
    )
    assert result.code == 0, result.err
    a, b = result.json["runs"]
    proof = a["proof"]
    assert proof["state"] == "proven" and proof["reasons"] == []
    counts = proof["accounting"]["healthy"]["counts"]
    assert counts["tree"] >= 2 and counts["dist"] >= 5 and counts["probe"] == 1 and counts["stray"] == 0
    assert counts["allowed"] >= 1  # the stand-in server, let through by allow_stray (and listed)
    assert {d["name"]: d["version"] for d in proof["distributions"]}["torch"] == TORCH_VERSION
    ranks = {p["label"]: p for p in proof["processes"] if p["init"]}
    assert sorted(ranks) == ["scheduler_TP0", "scheduler_TP1"]
    assert ranks["scheduler_TP0"]["init"][0]["env"]["CUDA_DEVICE_MAX_CONNECTIONS"] == "4"
    assert ranks["scheduler_TP0"]["init"][0]["nccl"] == "2.27.5"
    cmp = run_cli(capsys, "compare", str(a["run"]), str(b["run"]), "--repo", history.path, "--store", store, "--json")
    assert cmp.code == 0, cmp.err
    rows = {d["key"]: (d["a"], d["b"]) for d in cmp.json["provenance"]["proof"]}
    assert rows == {"effective env CUDA_DEVICE_MAX_CONNECTIONS in scheduler_TP0..1": ("4", "8")}
    people = run_cli(capsys, "compare", str(a["run"]), str(b["run"]), "--repo", history.path, "--store", store)
    with capsys.disabled():
        print(people.out)
    assert "  effective env CUDA_DEVICE_MAX_CONNECTIONS in scheduler_TP0..1: '4' -> '8'" in people.out


SECRET = "hf_bench_env_secret_5151"
OTHER = "hf_other_value_6262"


def _leaks(store: Path, run_dir: Path, *texts: str) -> list[str]:
    """Where any of ``texts`` appears: the store's bytes, or any file of the run's directory (logs, probe files)."""
    found = []
    for path in [store, *(p for p in run_dir.rglob("*") if p.is_file())]:
        data = path.read_bytes()
        found += [f"{path}: {t}" for t in texts if t.encode() in data]
    return found


def test_a_secret_in_bench_env_is_checked_at_init_without_its_value_being_stored(
    capsys, history, venv, tmp_path
) -> None:
    """HF_TOKEN in [bench].env: the probe compares it inside each process; equal passes, another value refuses,
    and neither value reaches the terminal, the store, or the run's files."""
    env = {"PATCHKIT_EAGLE3_VERIFY_TIMING": "1", "NCCL_MIN_NCHANNELS": "4", "HF_TOKEN": SECRET}
    store = tmp_path / "bench.sqlite"
    ok = bench(capsys, history, kit(tmp_path / "ok", venv, "", env=env), store, "--commit", history["base"], "--json")
    assert ok.code == 0, ok.out + ok.err
    [run] = ok.json["runs"]
    assert run["outcome"] == "ok" and run["proof"]["state"] == "proven", run["proof"]["reasons"]
    inits = [i for p in run["proof"]["processes"] for i in p["init"]]
    assert len(inits) == 2 and all(i["secrets"] == {"HF_TOKEN": "equal"} for i in inits)
    assert all(i["env"]["HF_TOKEN"] == "<redacted>" for i in inits)

    changed = kit(tmp_path / "changed", venv, f"--worker-env 1:HF_TOKEN={OTHER}", env=env)
    refused = bench(capsys, history, changed, store, "--commit", history["base"], "--json")
    assert refused.code == 1, refused.out + refused.err
    [bad] = refused.json["runs"]
    reason = (
        "(scheduler_TP1, rank 1): HF_TOKEN at init_process_group: expected the value it was given, "
        "found another value (a secret: no value is shown)"
    )
    assert bad["outcome"] == "refused" and bad["proof"]["state"] == "refused"
    assert len(bad["details"]) == 1 and reason in bad["details"][0]
    for text in (ok.out, ok.err, refused.out, refused.err):
        assert SECRET not in text
    for record in (run, bad):
        assert not _leaks(store, Path(record["logs"]["run_dir"]), SECRET), record["run"]


@pytest.mark.parametrize("point", ["init", "import"])
def test_a_probe_that_failed_leaves_the_run_not_proven_with_its_errors(capsys, history, venv, tmp_path, point) -> None:
    """TP1 sets NCCL_MIN_NCHANNELS=8 itself, but the probe failed: what it did not see cannot pass as proven."""
    env = {"PATCHKIT_EAGLE3_VERIFY_TIMING": "1", "NCCL_MIN_NCHANNELS": "4", "PATCHKIT_PROBE_FAULT": point}
    manifest = kit(tmp_path / "kit", venv, "--worker-env 1:NCCL_MIN_NCHANNELS=8", env=env)
    result = bench(capsys, history, manifest, tmp_path / "bench.sqlite", "--commit", history["base"], "--json")
    assert result.code == 0, result.out + result.err
    [run] = result.json["runs"]
    proof = run["proof"]
    assert run["outcome"] == "ok" and proof["state"] == "not proven", proof["reasons"]
    failed = [p for p in proof["processes"] if p["errors"]]
    assert proof["reason"] == f"the probe failed in {len(failed)} processes: what it saw is incomplete"
    assert len(failed) >= 2 and len(proof["reasons"]) == len(failed)
    for line in proof["reasons"]:
        assert line.startswith("probe failed in pid ") and f"ProbeFault: injected fault at {point}" in line
    if point == "init":  # both schedulers, once each
        assert sorted(p["label"] for p in failed) == ["scheduler_TP0", "scheduler_TP1"]
        assert all(not p["init"] for p in failed)


def test_a_run_that_is_not_proven_says_so_in_bench_runs_and_compare(capsys, history, venv, tmp_path) -> None:
    """Probe off on A, on for B (whose engine sets CUDA_DEVICE_MAX_CONNECTIONS=8): compare must not say
    "proof differences: none", and the text of bench and runs names the run that is not proven."""
    store = tmp_path / "bench.sqlite"
    off = bench(capsys, history, kit(tmp_path / "off", venv, "", probe=False), store, "--commit", history["base"])
    assert off.code == 0, off.out + off.err
    rows = [x for x in off.out.splitlines() if x.split()[:1] == ["1"]]
    assert rows and all(x.split()[-3:] == ["ok,", "not", "proven"] for x in rows), off.out  # the outcome column
    assert f"{history['base'][:10]} default not proven: [bench].probe = false" in off.out
    on = bench(capsys, history, kit(tmp_path / "on", venv, ""), store, "--commit", history["envs8"], "--json")
    assert on.code == 0 and on.json["runs"][0]["proof"]["state"] == "proven", on.out
    assert on.json["table"][0]["proof"] == "proven"

    args = ("--repo", history.path, "--store", store)
    cmp = run_cli(capsys, "compare", "1", "2", *args, "--json")
    assert cmp.code == 0, cmp.err
    assert cmp.json["provenance"]["proof"] == [
        {"key": "proof", "a": "not proven ([bench].probe = false)", "b": "proven"}
    ]
    people = run_cli(capsys, "compare", "1", "2", *args).out
    assert "proof differences (the probe: effective env, libraries, distributions, STRAYs): 1" in people
    assert "  proof: 'not proven ([bench].probe = false)' -> 'proven'" in people
    listed = run_cli(capsys, "runs", *args)
    lines = {x.split()[0]: x for x in listed.out.splitlines() if x.split()[:1] in (["1"], ["2"])}
    assert "ok, not proven" in lines["1"] and "not proven" not in lines["2"], listed.out
    assert [r["proof"] for r in json.loads(run_cli(capsys, "runs", *args, "--json").out)["runs"]] == [
        "not proven",
        "proven",
    ]
