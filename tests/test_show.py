"""`patchkit show RUN` on real stored runs: the stand-in server spawning two ranks (multiprocessing spawn) from a venv
holding the stand-in torch as a real wheel, NCCL_DEBUG=INFO lines, a libnccl mapped through ctypes, GPU facts from an
nvidia-smi that prints the real H200 output of tests/fixtures/gpu/; piped, on an 80-column terminal, and --json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, write_bench_kit
from helpers import run_cli
from proof_env import make_venv, wheels
from test_bench_output import on_pty

import patchkit
from patchkit.demo.history import HistoryBuilder

TREE = Path(patchkit.__file__).resolve().parents[1]  # the patchkit these tests import: the one the CLI must run
GPU_CSV = Path(__file__).resolve().parent / "fixtures" / "gpu" / "nvsmi_query.csv"
ENGINE = "python/sglang/srt/entrypoints/engine.py"
ENGINE_TEXT = 'import os\n\n\ndef _set_envs_and_config():\n    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "8"\n'


def patchkit_cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**(env or os.environ), "PYTHONPATH": str(TREE)}
    return subprocess.run(
        [sys.executable, "-m", "patchkit", *map(str, args)], capture_output=True, text=True, env=full, check=False
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory):
    """A store with three runs: 1 ok (two ranks, rank 1 sets NCCL_P2P_LEVEL itself), 2 refused (rank 1 changes
    [bench].env's NCCL_MIN_NCHANNELS), 3 ok with the probe off."""
    base = tmp_path_factory.mktemp("show")
    venv = make_venv(base / "venv", wheels(tmp_path_factory.mktemp("wheels")))
    b = HistoryBuilder(base / "repo")
    files = {
        ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
        "python/sglang/__init__.py": "",
        "python/sglang/srt/__init__.py": "",
        "python/sglang/srt/entrypoints/__init__.py": "",
        ENGINE: ENGINE_TEXT,
        MODEL: MODEL_TEXT,
        "perf/throughput.txt": "100\n",
    }
    b.commit("base", "[engine] Initial import", files)
    history = b.build()
    libnccl = base / "nccl" / "libnccl.so.2"  # a real shared object under libnccl's name, loaded through ctypes
    libnccl.parent.mkdir()
    shutil.copy(next(p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1")
                     if os.path.exists(p)), libnccl)  # fmt: skip
    smi = base / "bin" / "nvidia-smi"  # prints what nvidia-smi printed on an H200 for bench's query
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\ncat '{GPU_CSV}'\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}"}
    store = base / "bench.sqlite"

    def kit(name: str, server_args: str, **over) -> Path:
        table = bench_table(python=str(venv), ready_timeout=180, repeat=2, warmup=1, **over)
        table["env"] = {**table["env"], "NCCL_DEBUG": "INFO"}
        args = f"--workers 0 --spawn-workers 2 --tree-envs --backend nccl --load-so {libnccl} {server_args}"
        table["vars"] = {**table["vars"], "server_args": args}
        return write_bench_kit(base / name, bench=table, profiles={})

    for name, args, over, code in (
        ("ok", "--worker-env 1:NCCL_P2P_LEVEL=NVL", {}, 0),
        ("refused", "--worker-env 1:NCCL_MIN_NCHANNELS=8", {}, 1),
        ("off", "", {"probe": False}, 0),
    ):
        manifest = kit(name, args, **over)
        done = patchkit_cli("bench", "-m", manifest, "--repo", history.path, "--store", store, env=env)
        assert done.returncode == code, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
    return history, store, done


def show(capsys, stored, *args: str):
    history, store, _ = stored
    result = run_cli(capsys, "show", *args, "--repo", history.path, "--store", store)
    assert "Traceback" not in result.err
    return result


@pytest.mark.slow
def test_bench_and_runs_point_at_show(capsys, stored) -> None:
    history, store, last_bench = stored
    assert "one run whole: patchkit show 3" in last_bench.stdout
    listed = run_cli(capsys, "runs", "--repo", history.path, "--store", store)
    assert "one run whole: patchkit show RUN (e.g. patchkit show 3)" in listed.out


def test_show_prints_one_run_whole_for_a_person(capsys, stored) -> None:
    result = show(capsys, stored, "1")
    assert result.code == 0, result.err
    with capsys.disabled():
        print(result.out)
    lines = result.out.splitlines()
    assert lines[0].startswith("run 1  ") and lines[0].endswith("[engine] Initial import")  # a subject, not markup
    assert "  profile default, launch 1: ok  " in result.out
    assert "  patches: standin (sha256:" in result.out and "): 2 applied" in result.out
    assert "  proof: proven" in lines
    # every process the probe saw, with its host, role, rank and start
    procs = [line.split() for line in lines if line.split()[:1] and line.split()[0].isdigit() and " ok " in line]
    roles = {row[3]: row for row in procs}
    assert {"server", "scheduler_TP0", "scheduler_TP1"} <= set(roles)
    assert roles["scheduler_TP0"][4] == "0/2" and roles["scheduler_TP1"][4] == "1/2"
    assert roles["server"][2] == os.uname().nodename
    # the files by class, and the allowed stand-in server by path
    files = next(line for line in lines if line.startswith("files that ran (stop): "))
    assert " tree, " in files and " dist, " in files and "; 0 STRAY, 1 allowed by allow_stray" in files
    assert any(line.startswith("allowed  ") and "tests/standin/server.py" in line for line in lines)
    # the effective env per rank: what rank 1 set itself, what the tree's code set, what the launch passed
    row = lines.index(next(line for line in lines if line.startswith("NCCL_P2P_LEVEL ")))
    assert lines[row].split() == ["NCCL_P2P_LEVEL", "(unset)", "rank", "0:", "(unset)", "ranks,", "launch"]
    assert lines[row + 1].split() == ["rank", "1:", "NVL"]
    assert next(x for x in lines if x.startswith("CUDA_DEVICE_MAX_CONNECTIONS ")).split() == [
        "CUDA_DEVICE_MAX_CONNECTIONS", "(unset)", "8", "(all)", "launch",
    ]  # fmt: skip
    assert next(x for x in lines if x.startswith("NCCL_MIN_NCHANNELS ")).split() == [
        "NCCL_MIN_NCHANNELS", "4", "4", "(all)", "-",
    ]  # fmt: skip
    assert next(x for x in lines if x.startswith("PYTHONPATH ")).split()[-1] == "-"  # the probe's own entry left out
    # NCCL's own lines, the libnccl each rank mapped, the GPU facts, the client runs
    assert "NCCL: its own lines from 2 processes" in result.out
    assert any("libnccl.so.2" in line and "scheduler_TP1" in line for line in lines)
    gpu = next(line.split() for line in lines if line.split()[:3] == ["0", "NVIDIA", "H200"])
    assert gpu[3:7] == ["P0", "345/1980", "3201", "0/143771"]  # the SM clock against its maximum
    assert "client runs: 1 warm-up, 2 measured" in result.out
    assert [line.split()[:3] for line in lines if line.split()[1:2] == ["run"]] == [
        ["2", "run", "1"],
        ["3", "run", "2"],
    ]


def test_show_names_what_refused_a_run_and_what_a_run_without_the_probe_lacks(capsys, stored) -> None:
    refused = show(capsys, stored, "2")
    assert refused.code == 0, refused.err
    assert "  proof: refused" in refused.out.splitlines()
    assert "NCCL_MIN_NCHANNELS at init_process_group: expected '4', found '8'" in refused.out
    row = next(x for x in refused.out.splitlines() if x.startswith("NCCL_MIN_NCHANNELS "))
    assert row.split()[-2:] == ["ranks,", "launch"]
    off = show(capsys, stored, "last")
    assert off.code == 0, off.err
    assert off.out.startswith("run 3  ")
    assert "  proof: not proven ([bench].probe = false)" in off.out.splitlines()
    assert "processes: not recorded (the probe was off, or no server ran)" in off.out
    assert "environment: not recorded" in off.out
    assert "client runs: 1 warm-up, 2 measured" in off.out  # what it does have


def test_section_flags_choose_sections_and_json_has_the_same_data(capsys, stored) -> None:
    only = show(capsys, stored, "1", "--env", "--gpus")
    assert only.code == 0
    assert "environment: 2 ranks at init_process_group" in only.out and "GPUs: 1" in only.out
    assert "processes:" not in only.out and "client runs" not in only.out and "files that ran" not in only.out
    data = show(capsys, stored, "1", "--json").out
    doc = json.loads(data)
    assert doc["version"] == 1 and doc["command"] == "show" and doc["run"] == 1
    assert set(doc) == {"version", "command", "store", "run", "header", "record",
                        "processes", "files", "env", "nccl", "gpus", "clients"}  # fmt: skip
    assert doc["header"]["proof"]["state"] == "proven" and doc["record"]["run"] == 1
    ranks = {c["rank"]: c for c in doc["env"]["columns"]}
    rows = {r["name"]: r for r in doc["env"]["rows"]}
    assert sorted(ranks) == [0, 1] and doc["env"]["source"] == "init_process_group"
    p2p = rows["NCCL_P2P_LEVEL"]
    assert p2p["launch"] is None and p2p["between_ranks"] and p2p["from_launch"]
    assert p2p["values"][[c["rank"] for c in doc["env"]["columns"]].index(1)] == "NVL"
    assert not rows["NCCL_MIN_NCHANNELS"]["between_ranks"] and not rows["NCCL_MIN_NCHANNELS"]["from_launch"]
    for proc in doc["processes"]["probed"]:
        assert proc["host"] == os.uname().nodename and proc["started_at"] and proc["probe"] == "ok"
    assert {lib["role"] for lib in doc["nccl"]["libraries"] if lib["path"].endswith("libnccl.so.2")} == {
        "scheduler_TP0", "scheduler_TP1",
    }  # fmt: skip
    assert doc["gpus"]["gpus"][0]["max_sm_clock_mhz"] == 1980
    measured = [r for r in doc["clients"]["runs"] if r["kind"] == "measured"]
    assert [r["run"] for r in measured] == [1, 2] and all(r["values"]["output_tok_s"] for r in measured)
    picked = json.loads(show(capsys, stored, "1", "--json", "--files").out)
    assert set(picked) == {"version", "command", "store", "run", "header", "record", "files"}


def test_at_80_columns_on_a_terminal_nothing_is_cut(stored) -> None:
    history, store, _ = stored
    env_cmd = [sys.executable, "-m", "patchkit", "show", "1", "--repo", str(history.path), "--store", str(store)]
    code, screen = on_pty(["env", f"PYTHONPATH={TREE}", *env_cmd], 80)
    assert code == 0
    assert screen and max(len(line) for line in screen) <= 80
    text = "\n".join(screen)
    assert "…" not in text
    assert "run 1  " in text and "proof: proven" in text
    assert "scheduler_TP1" in text and "NVIDIA H200" in text
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in text and "PATCHKIT_EAGLE3_VERIFY_TIMING" in text  # names stay whole


def test_bad_run_numbers_are_one_line_with_exit_2(capsys, stored, tmp_path) -> None:
    missing = show(capsys, stored, "99")
    assert (
        missing.code == 2 and "no run 99 in the bench store" in missing.err and "runs are numbered 1..3" in missing.err
    )
    word = show(capsys, stored, "latest")
    assert word.code == 2 and "RUN must be a run number or 'last', not 'latest'" in word.err
    history, _, _ = stored
    empty = run_cli(capsys, "show", "last", "--repo", history.path, "--store", tmp_path / "none.sqlite")
    assert empty.code == 2 and f"no bench store at {tmp_path / 'none.sqlite'}: nothing was benchmarked" in empty.err
    assert not (tmp_path / "none.sqlite").exists()  # reading made no store
