"""patchkit bench --executor slurm on the real test Slurm (tests/slurm_cluster.py), with the stand-in server and client.

A 2 x 2 matrix as one job array; a commit the guard refuses never reaches
Slurm; ``scancel`` of a running job is stored as ``interrupted`` with the Slurm
state; the submitter killed with SIGKILL and the same command run again
collects the jobs it had submitted instead of submitting new ones, and
``--fresh`` cancels them and submits every launch again.  The
local executor's path stays in test_bench_runs.py, which runs without Slurm.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import build_history as build_bench_history
from bench_helpers import write_bench_kit
from helpers import patchkit_script, run_cli
from slurm_cluster import SlurmCluster

from patchkit.demo.history import History

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_bench_history(tmp_path_factory.mktemp("bench") / "repo")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bench_kit(tmp_path_factory.mktemp("kit"))


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    path = tmp_path / "shared"
    path.mkdir()
    return path


def argv(history: History, manifest: Path, store: Path, shared: Path, *extra: str) -> list[str]:
    return [
        "bench", "-m", str(manifest), "--repo", str(history.path), "--store", str(store),
        "--executor", "slurm", "--shared-dir", str(shared), "--timeout-min", "5", *extra,
    ]  # fmt: skip


def submissions(store: Path) -> list[dict[str, Any]]:
    if not store.exists():
        return []
    try:
        with sqlite3.connect(store) as db:
            rows = db.execute("SELECT job_id, label, state FROM submissions ORDER BY job_id").fetchall()
    except sqlite3.Error:
        return []
    return [{"job_id": j, "label": json.loads(label), "state": s} for j, label, s in rows]


def squeue_all() -> set[str]:
    out = subprocess.run(["squeue", "-h", "-t", "all", "-r", "-o", "%i"], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_a_2x2_matrix_is_one_job_array_and_runs_shows_the_job_ids(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    result = run_cli(
        capsys, *argv(history, manifest, store, shared, "--slots", "2", "--commit", history["base"],
                      "--commit", history["slow"], "--json"),
    )  # fmt: skip
    assert result.code == 0, result.err
    runs = result.json["runs"]
    assert [(r["commit"]["sha"], r["profile"], r["outcome"]) for r in runs] == [
        (history["base"], "eagle3", "ok"),
        (history["base"], "baseline", "ok"),
        (history["slow"], "eagle3", "ok"),
        (history["slow"], "baseline", "ok"),
    ]
    jobs = [r["executor"] for r in runs]
    assert len({j["array_job_id"] for j in jobs}) == 1  # one array
    assert sorted(j["array_index"] for j in jobs) == [0, 1, 2, 3]
    script = shared / "submitit" / jobs[0]["array_job_id"] / f"{jobs[0]['array_job_id']}_submission.sh"
    assert "#SBATCH --array=0-3%2\n" in script.read_text(encoding="utf-8")  # --slots 2: two at once
    for run, job in zip(runs, jobs, strict=True):
        assert job["name"] == "slurm" and job["state"] == "COMPLETED" and job["node"] == slurm.node
        assert job["job_id"] == f"{job['array_job_id']}_{job['array_index']}"
        assert Path(job["logs"]["stdout"]).is_relative_to(shared / "submitit")
        assert Path(run["logs"]["server"]).is_relative_to(shared / "bench-runs")  # the run dir, on the shared dir
        assert run["host"]["hostname"]  # the job's own provenance came back
    # The slow commit is slower: the numbers were measured inside the jobs.
    medians = {(r["commit"]["sha"], r["profile"]): r["stats"]["output_tok_s"]["median"] for r in runs}
    assert medians[(history["slow"], "baseline")] < medians[(history["base"], "baseline")]
    listed = run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--json")
    by_run = {r["run"]: r["executor"]["job_id"] for r in listed.json["runs"]}  # stored as the jobs finished
    assert by_run == {r["run"]: r["executor"]["job_id"] for r in runs}
    table = run_cli(capsys, "runs", "--repo", history.path, "--store", store)
    for job in jobs:
        assert job["job_id"] in table.out
    assert [s["state"] for s in submissions(store)] == ["collected"] * 4


def test_a_refused_commit_is_never_submitted(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    before = squeue_all()
    result = run_cli(
        capsys, *argv(history, manifest, store, shared, "--commit", history["break-model"], "--commit",
                      history["base"], "--profile", "baseline", "--json"),
    )  # fmt: skip
    assert result.code == 1, result.err
    runs = result.json["runs"]
    assert [(r["commit"]["sha"], r["outcome"]) for r in runs] == [
        (history["break-model"], "refused"),
        (history["base"], "ok"),
    ]
    assert runs[0]["executor"] is None
    assert [s["label"]["commit"] for s in submissions(store)] == [history["base"]]
    assert len(squeue_all() - before) == 1  # one job reached Slurm: the base commit's


def test_scancel_of_a_running_job_is_stored_interrupted(
    slurm: SlurmCluster, history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    command = argv(
        history, manifest, store, shared, "--commit", history["base"], "--profile", "baseline",
        "--set", "server_args=--workers 1 --delay 15", "--json",
    )  # fmt: skip
    proc = subprocess.Popen(
        [patchkit_script(), *command[0:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    job_id = wait_for_running(store, proc)
    subprocess.run(["scancel", job_id], check=True)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    (run,) = json.loads(out)["runs"]
    assert run["outcome"] == "interrupted"
    assert run["executor"]["state"] == "CANCELLED"
    assert run["executor"]["job_id"] == job_id
    # Cancelled at RUNNING: the job's Python may not have begun the launch yet (no result), or just has (it
    # stops like an interrupt, with nothing measured yet); which one is a race with Slurm, and both are right.
    # The cancel in the middle of a measurement is test_scancel_during_the_measurement_... below.
    assert run["reason"] in (
        f"the Slurm job {job_id} ended CANCELLED without a result",
        f"the Slurm job {job_id} ended CANCELLED during the launch; the samples so far are kept",
    )


def hanging_launch(shared: Path) -> tuple[str, ...]:
    """--set options for a launch whose server is healthy and whose 3rd client run (the 2nd measured) hangs,
    counted in ``shared/marker``, so that Slurm ends it in the middle of its measurement."""
    return (
        "--set", f"marker={shared / 'marker'}", "--set", "server_args=--workers 1",
        "--set", "client_args=--spelling token --hang-at 3",
    )  # fmt: skip


def wait_for_client(shared: Path, proc: subprocess.Popen[str], runs: int) -> None:
    deadline = time.monotonic() + 90
    marker = shared / "marker"
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if marker.exists() and marker.read_text(encoding="utf-8").split().count("client") >= runs:
            return
        time.sleep(0.2)
    raise AssertionError(f"client run {runs} never started")


def test_scancel_during_the_measurement_is_interrupted_with_slurms_state(
    slurm: SlurmCluster, history: History, manifest: Path, shared: Path
) -> None:
    """submitit ignores SIGTERM inside the job: without patchkit's own handler the server died under a launch
    that went on, and the run was stored server-failed with state COMPLETED."""
    store = shared.parent / "bench.sqlite"
    command = argv(
        history, manifest, store, shared, "--commit", history["base"], "--profile", "baseline",
        *hanging_launch(shared), "--json",
    )  # fmt: skip
    proc = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_client(shared, proc, 3)  # healthy, one measured run done, the next one hanging
    (row,) = submissions(store)
    subprocess.run(["scancel", row["job_id"]], check=True)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    (run,) = json.loads(out)["runs"]
    assert run["outcome"] == "interrupted", run["reason"]
    assert run["executor"]["state"] == "CANCELLED"
    assert run["reason"] == (
        f"the Slurm job {row['job_id']} ended CANCELLED during the launch; the samples so far are kept"
    )
    assert run["samples"]["output_tok_s"][0] is not None  # the measured run is kept
    assert run["server_info"] is not None  # it came from inside the job, not from a lost one


def wait_for_running(store: Path, proc: subprocess.Popen[str], count: int = 1) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        rows = submissions(store)
        if len(rows) >= count:
            state = subprocess.run(
                ["squeue", "-h", "-r", "-j", rows[0]["job_id"].split("_")[0], "-o", "%i %T"],
                capture_output=True,
                text=True,
            ).stdout.split()
            if "RUNNING" in state:
                return str(rows[0]["job_id"])
        time.sleep(0.3)
    raise AssertionError("the job never ran")


def test_the_submitter_killed_and_the_command_rerun_collects_instead_of_resubmitting(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    command = argv(history, manifest, store, shared, "--slots", "2", "--commit", history["base"])
    first = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90
    while len(submissions(store)) < 2 and time.monotonic() < deadline:
        assert first.poll() is None, first.communicate()
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    submitted = [s["job_id"] for s in submissions(store)]
    assert len(submitted) == 2
    pending = run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--pending", "--json")
    assert [p["job_id"] for p in pending.json["pending"]] == submitted
    assert {p["slurm_state"] for p in pending.json["pending"]} <= {"PENDING", "RUNNING", "COMPLETING", "COMPLETED"}
    queued = squeue_all()
    again = run_cli(capsys, *command, "--json")
    assert again.code == 0, again.err
    assert sorted(r["executor"]["job_id"] for r in again.json["runs"]) == sorted(submitted)
    assert all(r["outcome"] == "ok" for r in again.json["runs"])
    assert squeue_all() == queued  # nothing new reached Slurm
    # every launch reattached, none read back: none had been collected
    assert {k: again.json["batch"][k] for k in ("executor", "resumed", "fresh", "read_back", "cancelled")} == {
        "executor": "slurm", "resumed": True, "fresh": False, "read_back": [], "cancelled": [],
    }  # fmt: skip
    assert "0 collected, 2 submitted earlier, not collected; --fresh starts a new batch instead" in again.err
    assert [s["job_id"] for s in submissions(store)] == submitted
    assert (
        run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--pending", "--json").json["pending"] == []
    )
    # The batch is complete: the same command now benchmarks anew.
    fresh = run_cli(capsys, *command, "--json")
    assert fresh.code == 0, fresh.err
    assert not {r["executor"]["job_id"] for r in fresh.json["runs"]} & set(submitted)
    assert fresh.json["batch"]["resumed"] is False and fresh.json["batch"]["id"] != again.json["batch"]["id"]


def test_a_rerun_while_the_jobs_still_run_leaves_their_trees_alone(
    slurm: SlurmCluster,
    capsys: pytest.CaptureFixture[str],
    history: History,
    manifest: Path,
    shared: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With 10-30 minute launches the re-run after a lost submitter meets jobs still running: it must not
    prepare their worktrees again (the probe inside each job refuses a loaded file changed since)."""
    import patchkit.bench.execution.session as session_module

    store = shared.parent / "bench.sqlite"
    command = argv(
        history, manifest, store, shared, "--slots", "2", "--profile", "baseline", "--commit", history["base"],
        "--commit", history["slow"], "--set", "server_args=--workers 1 --delay 12",
    )  # fmt: skip
    first = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90
    logs: list[Path] = []
    while time.monotonic() < deadline:  # both servers up: each has loaded its tree's _version.py
        assert first.poll() is None, first.communicate()
        logs = sorted((shared / "bench-runs").glob("*/server.log")) if (shared / "bench-runs").is_dir() else []
        if len(logs) == 2 and all("listening" in log.read_text(encoding="utf-8") for log in logs):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the servers never started")
    first.send_signal(signal.SIGKILL)
    first.communicate()
    submitted = [s["job_id"] for s in submissions(store)]
    running = subprocess.run(
        ["squeue", "-h", "-r", "-t", "all", "-o", "%i %T"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert {f"{job} RUNNING" for job in submitted} <= {line.strip() for line in running}  # still running
    prepared: list[str] = []
    real = session_module.prepare_commit

    def counting(repo: Any, manifests: Any, commit: Any, *args: Any, **kwargs: Any) -> Any:
        prepared.append(commit.sha)
        return real(repo, manifests, commit, *args, **kwargs)

    monkeypatch.setattr(session_module, "prepare_commit", counting)
    again = run_cli(capsys, *command, "--json")
    assert again.code == 0, again.out + again.err
    assert prepared == []  # every launch was submitted: no tree prepared again
    assert [r["outcome"] for r in again.json["runs"]] == ["ok", "ok"]
    assert sorted(r["executor"]["job_id"] for r in again.json["runs"]) == sorted(submitted)
    assert [s["job_id"] for s in submissions(store)] == submitted  # nothing submitted again


def test_fresh_cancels_the_jobs_of_the_batch_it_sets_aside_and_submits_every_launch_again(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    """The submitter stopped with one job running and one queued; the same command with --fresh cancels both
    (nothing would ever collect them, and they would share the node with the new launches) and submits every
    launch again, in a new batch; ``runs --pending`` lists none of the cancelled jobs."""
    store = shared.parent / "bench.sqlite"
    command = argv(
        history, manifest, store, shared, "--profile", "baseline", "--commit", history["base"], "--commit",
        history["slow"], "--set", "server_args=--workers 1 --delay 6",
    )  # fmt: skip
    first = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_running(store, first, count=2)  # the first job runs, the second waits behind --slots 1
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    old = [s["job_id"] for s in submissions(store)]
    fresh = run_cli(capsys, *command, "--fresh", "--json")
    assert fresh.code == 0, fresh.err
    runs = fresh.json["runs"]
    assert [(r["commit"]["sha"], r["outcome"]) for r in runs] == [(history["base"], "ok"), (history["slow"], "ok")]
    assert not {r["executor"]["job_id"] for r in runs} & set(old)  # submitted again, none collected
    batch = fresh.json["batch"]
    assert (batch["executor"], batch["fresh"], batch["resumed"], batch["read_back"]) == ("slurm", True, False, [])
    assert sorted(batch["cancelled"]) == sorted(old) and len(batch["abandoned"]) == 1
    assert f"--fresh: set aside the unfinished batch {batch['abandoned'][0]}: 0 launches stored" in fresh.err
    listed = subprocess.run(
        ["squeue", "-h", "-r", "-t", "all", "-o", "%i %T"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    states = dict(line.split() for line in listed if line.strip())
    assert {states[job] for job in old} == {"CANCELLED"}
    assert {s["job_id"]: s["state"] for s in submissions(store)} == {
        **dict.fromkeys(old, "abandoned"), **{r["executor"]["job_id"]: "collected" for r in runs},
    }  # fmt: skip
    pending = run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--pending", "--json")
    assert pending.json["pending"] == []


def test_a_job_cancelled_while_its_submitter_was_dead_is_stored_from_the_spec_it_was_sent(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    """The re-run does not prepare a submitted launch's tree, so a job that sends nothing back is stored from
    the spec submitit kept (its manifests and guard report), not from a tree prepared again."""
    store = shared.parent / "bench.sqlite"
    command = argv(
        history, manifest, store, shared, "--profile", "baseline", "--commit", history["base"], "--commit",
        history["slow"], "--set", "server_args=--workers 1 --delay 4",
    )  # fmt: skip
    first = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_running(store, first, count=2)  # the first job runs, the second waits behind --slots 1
    first.send_signal(signal.SIGKILL)
    first.communicate()
    waiting = submissions(store)[1]["job_id"]
    subprocess.run(["scancel", waiting], check=True)
    again = run_cli(capsys, *command, "--json")
    assert again.code == 1, again.err
    by_job = {r["executor"]["job_id"]: r for r in again.json["runs"]}
    lost = by_job[waiting]
    assert lost["outcome"] == "interrupted" and lost["executor"]["state"] == "CANCELLED"
    assert lost["commit"]["sha"] == history["slow"]
    assert [m["name"] for m in lost["manifests"]] == ["standin"] and lost["guard"]["ok"] is True
    assert lost["logs"]["run_dir"] == submissions(store)[1]["label"]["run_dir"]


def test_a_bisect_with_2_slots_needs_fewer_rounds_than_with_1(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], tmp_path: Path, history: History
) -> None:
    """patchkit bisect --executor slurm over base..tip (the unpatchable commit skipped, never submitted):
    each round of the noise-aware search is one Slurm array of up to --slots jobs."""
    from bench_helpers import bench_table

    kit = write_bench_kit(tmp_path / "kit", bench=bench_table(warmup=0, repeat=1))
    found = {}
    for slots in ("1", "2"):
        shared = tmp_path / f"shared-{slots}"
        shared.mkdir()
        store = tmp_path / f"k{slots}.sqlite"
        result = run_cli(
            capsys, "bisect", "-m", kit, "--repo", history.path, "--store", store, "--good", history["base"],
            "--bad", history["tip"], "--metric", "output_tok_s", "--profile", "baseline", "--max-launches", "4",
            "--executor", "slurm", "--shared-dir", shared, "--timeout-min", "5", "--slots", slots, "--json",
        )  # fmt: skip
        assert result.code == 0, result.err
        assert result.json["first_bad"]["commit"] == history["slow"]
        found[slots] = result.json["search"]["rounds"]
        with sqlite3.connect(store) as db:
            rows = db.execute("SELECT batch, job_id, label FROM submissions").fetchall()
            arrays = {(batch, job_id.split("_")[0]) for batch, job_id, _ in rows}
        assert history["break-model"] not in {json.loads(label)["commit"] for _, _, label in rows}
        assert len(arrays) == len({batch for batch, _ in arrays})  # one Slurm array per round
    print(f"rounds: --slots 1 -> {found['1']}, --slots 2 -> {found['2']}")
    assert found["2"] < found["1"]


def test_a_killed_bisect_rerun_reads_its_rounds_back(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], tmp_path: Path, history: History
) -> None:
    from bench_helpers import bench_table

    kit = write_bench_kit(tmp_path / "kit", bench=bench_table(warmup=0, repeat=1))
    shared = tmp_path / "shared"
    shared.mkdir()
    store = tmp_path / "bench.sqlite"
    command = [
        "bisect", "-m", str(kit), "--repo", str(history.path), "--store", str(store), "--good", history["base"],
        "--bad", history["tip"], "--metric", "output_tok_s", "--profile", "baseline", "--max-launches", "4",
        "--executor", "slurm", "--shared-dir", str(shared), "--timeout-min", "5", "--slots", "2", "--json",
    ]  # fmt: skip
    first = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while len({r["job_id"].split("_")[0] for r in submissions(store)}) < 3 and time.monotonic() < deadline:
        assert first.poll() is None, first.communicate()
        time.sleep(0.3)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    before = {r["job_id"] for r in submissions(store)}
    again = run_cli(capsys, *command)
    assert again.code == 0, again.err
    assert again.json["first_bad"]["commit"] == history["slow"]
    after = submissions(store)
    assert before <= {r["job_id"] for r in after}  # the killed run's jobs were collected, none submitted again
    with sqlite3.connect(store) as db:
        twice = db.execute(
            "SELECT json_extract(record, '$.executor.job_id') AS job, count(*) FROM runs "
            "WHERE job IS NOT NULL GROUP BY job HAVING count(*) > 1"
        )
        assert twice.fetchall() == []  # no job's run stored twice
        batches = [b for (b,) in db.execute("SELECT batch FROM batches WHERE batch NOT LIKE '%/%'")]
    assert len(batches) == 1  # the re-run resumed the killed bisect's batch


def test_gpus_the_cluster_does_not_have_are_one_line_exit_2(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    before = squeue_all()
    result = run_cli(
        capsys, *argv(history, manifest, store, shared, "--commit", history["base"], "--profile", "baseline",
                      "--gpus-per-job", "1"),
    )  # fmt: skip
    assert result.code == 2
    assert result.err.splitlines() == [
        "patchkit: error: Slurm refused the submission: sbatch: error: Invalid generic resource (gres) specification; "
        "check --slurm-partition, --gpus-per-job and --slurm-extra against `sinfo`"
    ]
    assert submissions(store) == [] and squeue_all() == before


def test_sigterm_to_the_submitter_leaves_the_jobs_running_for_the_rerun(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    command = argv(history, manifest, store, shared, "--commit", history["tip"], "--profile", "eagle3")
    first = subprocess.Popen([patchkit_script(), *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job_id = wait_for_running(store, first)
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    assert "the submitted jobs keep running; run the same command again to collect them" in out
    again = run_cli(capsys, *command, "--json")
    assert again.code == 0, again.err
    assert [r["executor"]["job_id"] for r in again.json["runs"]] == [job_id]


def test_noise_on_slurm_runs_its_launches_as_one_array(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    result = run_cli(
        capsys, "noise", "-m", manifest, "--repo", history.path, "--store", store, "--commit", history["base"],
        "--profile", "baseline", "--launches", "3", "--executor", "slurm", "--shared-dir", shared, "--slots", "2",
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    jobs = [r["job_id"] for r in submissions(store)]
    assert len(jobs) == 3 and len({j.split("_")[0] for j in jobs}) == 1
    (profile,) = result.json["profiles"]
    assert {row["launches"] for row in profile["metrics"]} == {3}


def test_the_time_limit_stops_the_launch_as_timeout_and_keeps_its_samples(
    slurm: SlurmCluster, history: History, manifest: Path, shared: Path
) -> None:
    """--timeout-min 2: submitit's signal comes 90 s before the limit (30 s in); the launch stops then, and
    the run says TIMEOUT, not FAILED with a log path for a reason."""
    store = shared.parent / "bench.sqlite"
    command = argv(history, manifest, store, shared, "--commit", history["base"], "--profile", "baseline",
                   *hanging_launch(shared), "--json")  # fmt: skip
    command[command.index("--timeout-min") + 1] = "2"
    result = subprocess.run([patchkit_script(), *command], capture_output=True, text=True, timeout=150)
    assert result.returncode == 1, result.stderr
    (run,) = json.loads(result.stdout)["runs"]
    assert run["outcome"] == "interrupted"
    assert run["executor"]["state"] == "TIMEOUT"
    assert run["reason"] == (
        f"the Slurm job {run['executor']['job_id']} reached its time limit: stopped 90 s before it; "
        "the samples so far are kept"
    )
    assert run["samples"]["output_tok_s"][0] is not None


def test_a_time_limit_within_submitits_signal_delay_is_refused(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], history: History, manifest: Path, shared: Path
) -> None:
    store = shared.parent / "bench.sqlite"
    command = argv(history, manifest, store, shared, "--commit", history["base"])
    command[command.index("--timeout-min") + 1] = "1"
    result = run_cli(capsys, *command)
    assert result.code == 2
    assert result.err.splitlines() == [
        "patchkit: error: --timeout-min 1: submitit signals a job 90 s before its time limit and the launch stops "
        "then, so a job of 1 minute would stop as it starts; give 2 minutes or more: start-up, health wait and "
        "client runs must fit in the limit less 90 s"
    ]
    assert submissions(store) == []


def test_the_noise_prior_of_slurm_launches_is_kept_for_the_partition_and_found_by_bisect(
    slurm: SlurmCluster,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    history: History,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a cluster the submitter (a login node) and the nodes the jobs land on have other names: the prior
    was stored under the first job's node and looked up under the submitter's, so bisect never found it."""
    import socket

    from bench_helpers import bench_table

    monkeypatch.setattr(socket, "gethostname", lambda: "login-1")  # this process: the submitter; jobs say `vm`
    kit = write_bench_kit(tmp_path / "kit", bench=bench_table(warmup=0, repeat=1))
    shared = tmp_path / "shared"
    shared.mkdir()
    store = tmp_path / "bench.sqlite"
    common = ["-m", kit, "--repo", history.path, "--store", store, "--profile", "baseline", "--executor", "slurm",
              "--shared-dir", shared, "--timeout-min", "5"]  # fmt: skip
    noise = run_cli(capsys, "noise", *common, "--commit", history["base"], "--launches", "3", "--slots", "3", "--json")
    assert noise.code == 0, noise.err
    assert noise.json["profiles"][0]["host"] == "slurm:default"  # no --slurm-partition: Slurm's default one
    with sqlite3.connect(store) as db:
        assert {host for (host,) in db.execute("SELECT host FROM noise")} == {"slurm:default"}
    text = run_cli(capsys, "noise", *common, "--commit", history["base"], "--launches", "3", "--slots", "3")
    assert "Slurm partition default: compare and bisect use these spreads as the prior" in text.out
    found = run_cli(
        capsys, "bisect", *common, "--good", history["base"], "--bad", history["tip"], "--metric", "output_tok_s",
        "--max-launches", "2", "--slots", "2", "--json",
    )  # fmt: skip
    prior = found.json["criterion"]["noise"]
    assert {k: prior[k] for k in ("sigma", "df", "place", "launches")} == {
        "sigma": 0.0, "df": 2, "place": "slurm:default", "launches": 3,
    }  # fmt: skip
    assert prior["measured_at"] and prior["gpu"] is None  # the stand-in jobs have no GPUs


def test_bisect_takes_its_slots_from_the_bench_slurm_table(
    slurm: SlurmCluster, capsys: pytest.CaptureFixture[str], tmp_path: Path, history: History
) -> None:
    from bench_helpers import bench_table

    shared = tmp_path / "shared"
    shared.mkdir()
    table = {"shared_dir": str(shared), "slots": 2, "timeout_min": 5}
    kit = write_bench_kit(tmp_path / "kit", bench=bench_table(warmup=0, repeat=1, slurm=table))
    store = tmp_path / "bench.sqlite"
    result = run_cli(
        capsys, "bisect", "-m", kit, "--repo", history.path, "--store", store, "--good", history["base"],
        "--bad", history["tip"], "--metric", "output_tok_s", "--profile", "baseline", "--max-launches", "4",
        "--executor", "slurm", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.json["search"]["slots"] == 2
    with sqlite3.connect(store) as db:
        per_round = db.execute("SELECT batch, count(*) FROM submissions GROUP BY batch").fetchall()
    assert max(n for _, n in per_round) == 2  # a round of two launches: one array, two at once
