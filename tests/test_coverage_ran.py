"""What the launches of a hunt ran, end to end: `patchkit bench` with the stand-in server (a real process tree that
imports the tree's modules and calls their functions) on a real git history, the coverage stored beside each run,
read back as one `Ran` (`bench/records/coverage.py`) and shown by `show --code`: function granularity from a venv
of Python 3.12+, file granularity from one of the default Python, and a worker started with `python -I` named
as what the probe cannot vouch for."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, write_bench_kit
from helpers import run_cli
from proof_env import make_venv, make_venv_of, monitoring_python, wheels

from patchkit.bench.records.coverage import ran_of
from patchkit.bench.records.store import Store
from patchkit.demo.history import HistoryBuilder

pytestmark = pytest.mark.slow  # every test here starts servers: left out of `pytest -m "not slow"`

PY312 = monitoring_python()
ENGINE = "python/sglang/srt/entrypoints/engine.py"
ENGINE_TEXT = (
    "import os\n\n\ndef _set_envs_and_config():\n"
    '    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "{n}"\n\n\n'
    "def _unused_launcher():\n    return 'never called'\n"
)
TUNING = "perf/tuning.cfg"  # a file the spawned schedulers read: not Python, not a data suffix


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory):
    b = HistoryBuilder(tmp_path_factory.mktemp("coverage") / "repo")
    files = {
        ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
        "python/sglang/__init__.py": "",
        "python/sglang/srt/__init__.py": "",
        "python/sglang/srt/entrypoints/__init__.py": "",
        ENGINE: ENGINE_TEXT.format(n=4),
        MODEL: MODEL_TEXT,
        "perf/throughput.txt": "100\n",
        TUNING: '{"BLOCK_SIZE_M": 64}\n',
        "docs/notes.md": "never read\n",
    }
    b.commit("base", "Initial import", files)
    b.commit("next", "engine: CUDA_DEVICE_MAX_CONNECTIONS=8", {ENGINE: ENGINE_TEXT.format(n=8)})
    return b.build()


def bench_runs(capsys, history, tmp_path: Path, python: Path, server_args: str, *commits: str) -> Path:
    table = bench_table(python=str(python), ready_timeout=180, repeat=1)
    args = f"--workers 0 --spawn-workers 2 --tree-envs --read-file {TUNING} {server_args}"
    table["vars"] = {**table["vars"], "server_args": args}
    manifest = write_bench_kit(tmp_path / "kit", bench=table, profiles={})
    store = tmp_path / "bench.sqlite"
    extra = [a for c in commits for a in ("--commit", history[c])]
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, *extra)
    assert result.code == 0 and "Traceback" not in result.err, result.out + result.err
    return store


@pytest.mark.skipif(PY312 is None, reason="needs Python 3.12+ (sys.monitoring): none found on PATH or pyenv")
def test_the_functions_a_hunts_launches_ran_are_read_back_as_one_ran(capsys, history, tmp_path) -> None:
    assert PY312 is not None
    venv = make_venv_of(PY312, tmp_path / "venv", wheels(tmp_path / "wheels"))
    store = bench_runs(capsys, history, tmp_path, venv, "", "base", "next")
    with Store(store, create=False) as opened:
        runs = opened.runs()
        assert len(runs) == 2 and all(r.proof_state == "proven" for r in runs)
        ran = ran_of(opened, runs)
    assert ran.granularity == "function" and ran.blind == ()
    assert (ENGINE, "_set_envs_and_config") in ran.functions  # the stand-in calls it in its main process
    assert (ENGINE, "_unused_launcher") not in ran.functions  # defined, never called
    assert (ENGINE, "<module>") in ran.functions and ENGINE in ran.modules
    assert all(not path.startswith("/") for path, _name in ran.functions)  # repository-relative, tree only
    assert "perf/tuning.cfg" in ran.data_files and "docs/notes.md" not in ran.data_files
    assert not any(path.endswith(".py") for path in ran.data_files)

    shown = run_cli(capsys, "show", "1", "--code", "--repo", history.path, "--store", store)
    assert shown.code == 0, shown.err
    with capsys.disabled():
        print(shown.out)
    row = next(line for line in shown.out.splitlines() if line.startswith(ENGINE))
    assert "_set_envs_and_config" in row and "_unused_launcher" not in row
    assert "code that ran, in 4 processes: " in shown.out  # the server, its two schedulers, their resource tracker
    scheduler = next(line for line in shown.out.splitlines() if line.endswith(" scheduler_TP1"))
    assert "sysmon (functions)" in scheduler
    data = json.loads(run_cli(capsys, "show", "1", "--code", "--json", "--repo", history.path, "--store", store).out)
    code = data["code"]
    assert code["granularity"] == "function" and code["blind"] == [] and TUNING in code["reads"]
    [engine] = [item for item in code["tree"] if item["path"] == ENGINE]
    assert {"name": "_set_envs_and_config", "line": 4} in engine["functions"] and engine["module"]
    default = run_cli(capsys, "show", "1", "--json", "--repo", history.path, "--store", store)
    assert "code" not in json.loads(default.out)  # asked for by name only


def test_on_the_default_python_the_modules_are_read_back_at_file_granularity(capsys, history, tmp_path) -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("the default interpreter has sys.monitoring: the 3.12+ test covers it")
    venv = make_venv(tmp_path / "venv", wheels(tmp_path / "wheels"))
    store = bench_runs(capsys, history, tmp_path, venv, "", "base")
    with Store(store, create=False) as opened:
        ran = ran_of(opened, opened.runs())
    assert ran.granularity == "file" and ran.functions == frozenset() and ran.blind == ()
    assert ENGINE in ran.modules and "perf/tuning.cfg" in ran.data_files
    shown = run_cli(capsys, "show", "1", "--code", "--repo", history.path, "--store", store).out
    assert "module files only" in shown and "functions not recorded: Python 3.11 has no sys.monitoring (3.12+)" in shown


def test_a_worker_started_with_python_i_makes_the_ran_blind(capsys, history, tmp_path) -> None:
    venv = make_venv(tmp_path / "venv", wheels(tmp_path / "wheels"))
    store = bench_runs(capsys, history, tmp_path, venv, "--workers 1 --worker-flag=-I", "base")
    with Store(store, create=False) as opened:
        [run] = opened.runs()
        ran = ran_of(opened, [run])
        # a launch stored without coverage (the probe off, an older patchkit) is blind as well
        stored_without = ran_of(opened, [run.with_run_id(999)])
    [item] = (run.proof or {})["unaccounted"]
    [line] = ran.blind
    assert line.startswith(f"run 1 (launch 1 of {history['base'][:12]}): pid {item['pid']} (")
    assert f") ran without the probe: {item['why']}" in line and item["why"].startswith("started with -I (isolated")
    assert ENGINE in ran.modules  # what the probed processes ran is still there
    [none] = stored_without.blind
    assert none.startswith("run 999 (launch 1 of ") and "has no stored coverage" in none
