"""GPU hygiene on the real H200 capture (tests/fixtures/gpu/) and variants made from it: the parser and the
judgement, then bench and compare with an nvidia-smi on PATH that answers from those files (another process on
the GPU, a lower power limit, locked application clocks on one side), and "no GPU facts" once without one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from bench_helpers import build_history, write_bench_kit
from helpers import run_cli

from patchkit.bench.records.hygiene import differences, problems, snapshot_from
from patchkit.bench.records.provenance import parse_query_csv

GPU = Path(__file__).resolve().parent / "fixtures" / "gpu"
BASE = (GPU / "nvsmi_query.csv").read_text()
EXTRA = (GPU / "constructed" / "hygiene_query.csv").read_text()
NO_APPS = (GPU / "constructed" / "compute_apps_none.csv").read_text()
UUID = "GPU-d1e5bc8d-dcc1-1ad1-414b-2a458150ae7a"
BUSY = NO_APPS + f"{UUID}, 812, python3, 14336 MiB\n"
LOWER_POWER = BASE.replace("700.00 W", "500.00 W")
LOCKED = EXTRA.replace("0, 3201 MHz, 1980 MHz, 1980 MHz", "0, 3201 MHz, 1410 MHz, 1980 MHz")
ECC = EXTRA.replace("1980 MHz, 0, 0", "1980 MHz, 3, 2")
NO_PERSISTENCE = BASE.replace("Enabled, Enabled", "Disabled, Enabled")


def snap(base: str = BASE, extra: str | None = EXTRA, apps: str | None = NO_APPS) -> dict:
    return snapshot_from(parse_query_csv(base), extra, apps)


def test_the_h200_capture_reads_as_a_clean_gpu() -> None:
    clean = snap()
    [gpu] = clean["gpus"]
    assert (gpu["sm_clock_mhz"], gpu["max_sm_clock_mhz"], gpu["mem_clock_mhz"], gpu["max_mem_clock_mhz"]) == (
        345, 1980, 3201, 3201,
    )  # fmt: skip
    assert gpu["app_clocks_locked"] is False and gpu["power_limit_w"] == 700.0
    assert (gpu["persistence_mode"], gpu["ecc_mode"], gpu["ecc_uncorrected"], gpu["temperature_c"]) == (
        "Enabled", "Enabled", 0, 36,
    )  # fmt: skip
    assert clean["apps"] == [] and clean["apps_known"]
    assert problems({"start": clean, "end": clean}, 1) == []
    assert differences({"start": clean}, {"start": clean}) == []


def test_variants_name_a_dirty_gpu_and_what_differs() -> None:
    clean = snap()
    assert problems({"start": snap(apps=BUSY), "end": clean}, 2) == [
        "GPU 0 had another process, pid 812 (python3), 14.0 GiB, at the start of launch 2"
    ]
    assert problems({"start": snap(base=NO_PERSISTENCE, extra=ECC), "end": snap(extra=ECC)}, 1) == [
        "GPU 0 had 2 uncorrected ECC errors (volatile) at the start of launch 1",
        "GPU 0 ran with persistence mode off in launch 1",
    ]
    assert problems({"start": clean, "end": snap(extra=ECC)}, 3) == [
        "GPU 0 counted 2 new uncorrected ECC errors during launch 3"
    ]
    assert differences({"start": clean}, {"start": snap(base=LOWER_POWER, extra=LOCKED)}) == [
        "GPU 0 application clocks locked: A no, B yes",
        "GPU 0 application SM clock (MHz): A 1980, B 1410",
        "GPU 0 power limit (W): A 700.0, B 500.0",
    ]
    # what a query did not answer is unknown, never a difference or a problem
    unknown = snap(extra=None, apps=None)
    assert unknown["gpus"][0]["app_clocks_locked"] is None and not unknown["apps_known"]
    assert differences({"start": unknown}, {"start": snap(extra=LOCKED)}) == []
    assert problems({"start": unknown, "end": unknown}, 1) == []
    # an answer to another query (a wrapper that prints the base query's CSV whatever it is asked) is no process
    other = snap(apps=BASE)
    assert other["apps"] == [] and not other["apps_known"] and problems({"start": other, "end": other}, 1) == []


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory):
    return build_history(tmp_path_factory.mktemp("hygiene") / "repo")


def fake_smi(where: Path, sides: dict[str, tuple[str, str, str]], launches: str) -> Path:
    """An nvidia-smi that answers, as the real one prints them, the files above of the side ``launches`` names for
    each launch in turn ("ab": a for the first, b for the second and every later one).  A launch is counted by
    the compute-process queries answered (two per launch: at its start and at its end), so a query outside a
    launch (bisect's check of the noise prior's GPUs) answers the next launch's side and moves nothing."""
    for side, (base, extra, apps) in sides.items():
        (where / side).mkdir(parents=True)
        (where / side / "base.csv").write_text(base)
        (where / side / "extra.csv").write_text(extra)
        (where / side / "apps.csv").write_text(apps)
    script = where / "bin" / "nvidia-smi"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        f"calls='{where}/calls'\n"
        'case "$1" in --query-compute-apps*) echo apps >> "$calls" ;; *) echo query >> "$calls" ;; esac\n'
        'n=$(grep -c apps "$calls")\n'
        'case "$1" in --query-compute-apps*) launch=$(( (n - 1) / 2 + 1 )) ;; *) launch=$(( n / 2 + 1 )) ;; esac\n'
        f"sides='{launches}'\n"
        'side=$(printf %s "$sides" | cut -c "$launch")\n'
        '[ -n "$side" ] || side=$(printf %s "$sides" | tail -c 1)\n'
        'case "$1" in\n'
        f"  --query-gpu=index,clocks.max.memory*) cat '{where}'/$side/extra.csv ;;\n"
        f"  --query-compute-apps*) cat '{where}'/$side/apps.csv ;;\n"
        f"  *) cat '{where}'/$side/base.csv ;;\n"
        "esac\n"
    )
    script.chmod(0o755)
    return script.parent


def test_bench_and_compare_warn_of_a_dirty_gpu_and_differing_sides(capsys, history, tmp_path, monkeypatch) -> None:
    path = fake_smi(tmp_path / "smi", {"a": (BASE, EXTRA, NO_APPS), "b": (LOWER_POWER, LOCKED, BUSY)}, "ab")
    monkeypatch.setenv("PATH", f"{path}:{os.environ['PATH']}")
    manifest = write_bench_kit(tmp_path / "kit", profiles={})
    store = tmp_path / "bench.sqlite"
    args = ["bench", "-m", manifest, "--repo", history.path, "--store", store, "--no-interleave"]
    result = run_cli(capsys, *args, "--commit", history["restore-model"], "--commit", history["slow"])
    assert result.code == 0, result.out + result.err
    warnings = [line for line in result.out.splitlines() if line.startswith("warning: ")]
    a, b = history["restore-model"][:10], history["slow"][:10]
    assert warnings == [
        "warning: run 2: GPU 0 had another process, pid 812 (python3), 14.0 GiB, at the start of launch 1",
        "warning: run 2: GPU 0 had another process, pid 812 (python3), 14.0 GiB, at the end of launch 1",
        f"warning: {a} (A) vs {b} (B): GPU 0 application clocks locked: A no, B yes",
        f"warning: {a} (A) vs {b} (B): GPU 0 application SM clock (MHz): A 1980, B 1410",
        f"warning: {a} (A) vs {b} (B): GPU 0 power limit (W): A 700.0, B 500.0",
    ]
    assert "no GPU facts" not in result.out
    compared = run_cli(capsys, "compare", "1", "2", "--repo", history.path, "--store", store)
    lines = [line for line in compared.out.splitlines() if line.startswith("warning: ")]
    assert lines == [*warnings[:2], *(w.replace(f"{a} (A) vs {b} (B): ", "") for w in warnings[2:])]
    data = run_cli(capsys, "compare", "1", "2", "--repo", history.path, "--store", store, "--json").json
    assert data["gpu_hygiene"]["facts"] and len(data["gpu_hygiene"]["differences"]) == 3
    shown = run_cli(capsys, "show", "2", "--gpus", "--repo", history.path, "--store", store).out
    assert "GPU hygiene at the launch's start and end" in shown
    assert any(x.split()[:2] == ["0", "start"] and "pid 812 (python3) 14336 MiB" in x for x in shown.splitlines())
    assert "locked 1410" in shown


def test_without_nvidia_smi_bench_says_no_gpu_facts_once(capsys, history, tmp_path, monkeypatch) -> None:
    if shutil.which("nvidia-smi") is not None:
        pytest.skip("this machine has an nvidia-smi")
    manifest = write_bench_kit(tmp_path / "kit", profiles={})
    store = tmp_path / "bench.sqlite"
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store,
                     "--commit", history["restore-model"], "--commit", history["slow"])  # fmt: skip
    assert result.code == 0, result.out + result.err
    assert result.out.count("no GPU facts") == 1
    assert [x for x in result.out.splitlines() if x.startswith("warning: ")] == []
    doc = run_cli(capsys, "show", "1", "--json", "--gpus", "--repo", history.path, "--store", store).json
    assert doc["gpus"]["gpus"] is None and doc["gpus"]["hygiene"] is None


def test_bisect_warns_of_dirty_gpus_and_of_launches_on_gpus_unlike_goods(
    capsys, history, tmp_path, monkeypatch
) -> None:
    """GOOD's first launch on the clean H200, the next two launches on the variant (another process, a lower power
    limit, locked clocks), every later launch clean again: the warnings name each dirty launch, and each difference
    from GOOD's first launch once, with the runs that show it."""
    path = fake_smi(tmp_path / "smi", {"a": (BASE, EXTRA, NO_APPS), "b": (LOWER_POWER, LOCKED, BUSY)}, "abba")
    monkeypatch.setenv("PATH", f"{path}:{os.environ['PATH']}")
    manifest = write_bench_kit(tmp_path / "kit", profiles={})
    args = ["bisect", "-m", manifest, "--repo", history.path, "--good", history["restore-model"], "--bad",
            history["slow"], "--metric", "output_tok_s", "--ratio", "0.9"]  # fmt: skip
    result = run_cli(capsys, *args, "--store", tmp_path / "bench.sqlite")
    assert result.code == 0, result.out + result.err
    steps = [line.split() for line in result.out.splitlines() if line.startswith("  run ")]
    good, bad = history["restore-model"][:10], history["slow"][:10]
    assert [s[:3] for s in steps[:2]] == [["run", "1", good], ["run", "2", bad]] and len(steps) >= 4
    third = f"launch {steps[2][4]}"  # the hunt's third launch: GOOD's or BAD's second
    busy = "GPU 0 had another process, pid 812 (python3), 14.0 GiB"
    warnings = [line for line in result.out.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: run 2: {busy}, at the start of launch 1",
        f"warning: run 2: {busy}, at the end of launch 1",
        f"warning: run 3: {busy}, at the start of {third}",
        f"warning: run 3: {busy}, at the end of {third}",
        f"warning: GOOD {good} run 1 (A) vs runs 2, 3 (B): GPU 0 application clocks locked: A no, B yes",
        f"warning: GOOD {good} run 1 (A) vs runs 2, 3 (B): GPU 0 application SM clock (MHz): A 1980, B 1410",
        f"warning: GOOD {good} run 1 (A) vs runs 2, 3 (B): GPU 0 power limit (W): A 700.0, B 500.0",
    ]
    assert "no GPU facts" not in result.out
    data = run_cli(capsys, *args, "--store", tmp_path / "again.sqlite", "--json").json  # every launch on a now
    assert data["gpu_hygiene"] == {"facts": True, "problems": [], "differences": []}


def test_without_nvidia_smi_bisect_says_no_gpu_facts_once(capsys, history, tmp_path) -> None:
    if shutil.which("nvidia-smi") is not None:
        pytest.skip("this machine has an nvidia-smi")
    manifest = write_bench_kit(tmp_path / "kit", profiles={})
    args = ["bisect", "-m", manifest, "--repo", history.path, "--store", tmp_path / "bench.sqlite",
            "--good", history["restore-model"], "--bad", history["slow"], "--metric", "output_tok_s",
            "--ratio", "0.9"]  # fmt: skip
    result = run_cli(capsys, *args)
    assert result.code == 0, result.out + result.err
    assert result.out.count("no GPU facts") == 1
    assert [x for x in result.out.splitlines() if x.startswith("warning: ")] == []
    data = run_cli(capsys, *args, "--json").json
    assert data["gpu_hygiene"] == {"facts": False, "problems": [], "differences": []}
