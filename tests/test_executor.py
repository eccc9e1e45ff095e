"""The executors (execution/local.py, slurm.py) with trivial picklable functions: in-process, and on the real Slurm.

The Slurm tests use functions of the standard library (``subprocess.getoutput``,
``time.sleep``) and ``slurm.job_facts``, so what they prove is the
executor's own work: one array per call, the ledger written before waiting,
reattaching instead of resubmitting, a cancelled job finishing with its state.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster

from patchkit.bench.execution.executor import Task
from patchkit.bench.execution.local import LocalExecutor
from patchkit.bench.execution.slurm import (
    SlurmExecutor,
    SlurmOptions,
    check_shared_dir,
    job_facts,
    scancel,
    slurm_states,
)
from patchkit.bench.records.store import Store, Submission
from patchkit.errors import UsageError


def test_local_executor_runs_in_process_in_order() -> None:
    seen: list[int] = []

    def fn(x: int) -> int:
        seen.append(os.getpid())
        return x * 10

    done = list(LocalExecutor().map(fn, [Task("a", 1), Task("b", 2)]))
    assert [(f.key, f.value, f.state) for f in done] == [("a", 10, "LOCAL"), ("b", 20, "LOCAL")]
    assert seen == [os.getpid(), os.getpid()]


def test_both_executors_answer_the_protocol_place_and_cancel(tmp_path: Path, monkeypatch) -> None:
    """The verbs hold an ``Executor``: where its launches run (the prior's key), and cancel, for both kinds."""
    import patchkit.bench.execution.slurm as executor_module
    from patchkit.bench.execution.launches import LOCAL, scheduled_executor
    from patchkit.bench.records.provenance import host_facts

    local = LocalExecutor()
    assert (local.name, local.slots, local.remote) == ("local", 1, False)
    assert local.place == host_facts()["hostname"]
    assert local.cancel("batch", None) == []  # type: ignore[arg-type]

    class Ledger:
        def submissions(self, batch: str) -> list[Submission]:
            return [
                Submission(batch, "a", "slurm", "7_0", "/f", {}, "t", "submitted", None),
                Submission(batch, "b", "slurm", "7_1", "/f", {}, "t", "collected", 3),
            ]

    stopped: list[list[str]] = []
    monkeypatch.setattr(executor_module, "scancel", stopped.append)
    slurm = object.__new__(SlurmExecutor)
    slurm.options = SlurmOptions(shared_dir=tmp_path, partition="gpu")
    assert slurm.remote and slurm.place == "slurm:gpu"
    assert slurm.cancel("b", Ledger()) == ["7_0"] and stopped == [["7_0"]]

    class Session:  # the local default needs nothing of the session
        config = None

    monkeypatch.setattr("patchkit.bench.execution.launches.slurm_options", lambda *a, **k: None)
    assert isinstance(scheduled_executor(Session(), LOCAL, worktree_root=None), LocalExecutor)  # type: ignore[arg-type]


def test_shared_dir_must_be_a_writable_directory(tmp_path: Path) -> None:
    assert check_shared_dir(tmp_path) == tmp_path
    assert list(tmp_path.iterdir()) == []  # the probe is gone
    with pytest.raises(UsageError, match="is not a directory"):
        check_shared_dir(tmp_path / "nope")
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a directory"):
        check_shared_dir(tmp_path / "file")


def test_job_facts_reads_slurms_environment() -> None:
    env = {"SLURM_JOB_ID": "12", "SLURM_ARRAY_JOB_ID": "10", "SLURM_ARRAY_TASK_ID": "2", "SLURMD_NODENAME": "n1"}
    assert job_facts({**env, "SLURM_JOB_GPUS": "0,3"}) == {
        "job_id": "12",
        "array_job_id": "10",
        "array_index": 2,
        "node": "n1",
        "gpu_ids": ["0", "3"],
    }
    assert job_facts({})["gpu_ids"] == []


@pytest.mark.slow
def test_slurm_array_writes_the_ledger_and_returns_each_result(slurm: SlurmCluster, tmp_path: Path) -> None:
    executor = SlurmExecutor(SlurmOptions(shared_dir=tmp_path, slots=2, timeout_min=5), poll_s=0.5)
    with Store(tmp_path / "bench.sqlite") as store:
        tasks = [Task(f"k{i}", None, {"n": i}) for i in range(3)]
        done = {f.key: f for f in executor.map(job_facts, tasks, batch="b1", ledger=store)}
        rows = store.submissions("b1")
    assert sorted(done) == ["k0", "k1", "k2"]
    arrays = {row.job_id.split("_")[0] for row in rows}
    assert len(arrays) == 1 and len(rows) == 3  # one job array, every task in the ledger
    for row in rows:
        finished = done[row.key]
        assert finished.state == "COMPLETED"
        assert finished.value["node"] == slurm.node
        assert f"{finished.value['array_job_id']}_{finished.value['array_index']}" == row.job_id
        assert finished.slurm is not None and finished.slurm["job_id"] == row.job_id
        assert Path(finished.slurm["logs"]["stdout"]).is_file()
        assert finished.label == row.label


@pytest.mark.slow
def test_scancel_finishes_with_the_slurm_state_and_no_value(slurm: SlurmCluster, tmp_path: Path) -> None:
    executor = SlurmExecutor(SlurmOptions(shared_dir=tmp_path, timeout_min=5), poll_s=0.5)
    with Store(tmp_path / "bench.sqlite") as store:
        results = executor.map(time.sleep, [Task("sleep", 300)], batch="b", ledger=store)
        # The generator submits on the first next(); a second process cancels the job once it runs.
        canceller = subprocess.Popen(
            [sys.executable, "-c", CANCEL_WHEN_RUNNING, str(tmp_path / "bench.sqlite")], env=slurm.env()
        )
        finished = next(results)
        canceller.wait(60)
        job_id = store.submissions("b")[0].job_id
    assert canceller.returncode == 0
    assert finished.value is None
    assert finished.state == "CANCELLED"
    assert finished.reason == f"the Slurm job {job_id} ended CANCELLED without a result"


CANCEL_WHEN_RUNNING = """
import sqlite3, subprocess, sys, time
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        row = sqlite3.connect(sys.argv[1]).execute("SELECT job_id FROM submissions").fetchone()
    except sqlite3.Error:
        row = None
    if row:
        state = subprocess.run(["squeue", "-h", "-j", row[0].split("_")[0], "-o", "%T"],
                               capture_output=True, text=True).stdout.strip()
        if state == "RUNNING":
            subprocess.run(["scancel", row[0]], check=True)
            sys.exit(0)
    time.sleep(0.3)
sys.exit(1)
"""

SUBMITTER = """
import subprocess, sys
from pathlib import Path
from patchkit.bench.execution.executor import Task
from patchkit.bench.execution.slurm import SlurmExecutor, SlurmOptions
from patchkit.bench.records.store import Store, Submission
shared = Path(sys.argv[1])
with Store(shared / "bench.sqlite") as store:
    executor = SlurmExecutor(SlurmOptions(shared_dir=shared, slots=2, timeout_min=5), poll_s=0.5)
    tasks = [Task(f"k{i}", f'sleep {sys.argv[2]}; echo "$SLURM_ARRAY_JOB_ID"_"$SLURM_ARRAY_TASK_ID"') for i in range(2)]
    for done in executor.map(subprocess.getoutput, tasks, batch="resume", ledger=store):
        print(done.key, done.slurm["job_id"], done.value, flush=True)
"""


@pytest.mark.slow
def test_a_killed_submitter_rerun_collects_instead_of_resubmitting(slurm: SlurmCluster, tmp_path: Path) -> None:
    first = subprocess.Popen([sys.executable, "-c", SUBMITTER, str(tmp_path), "6"], env=slurm.env())
    db = tmp_path / "bench.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _rows(db) and first.poll() is None:
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    submitted = _rows(db)
    assert len(submitted) == 2
    assert set(slurm_states([jid for _, jid in submitted])) == {jid for _, jid in submitted}
    queued_before = _queue()
    again = subprocess.run(
        [sys.executable, "-c", SUBMITTER, str(tmp_path), "6"], env=slurm.env(), capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    # Each job's own output names it: the results are those of the jobs the killed submitter left.
    assert sorted(again.stdout.splitlines()) == sorted(f"{key} {jid} {jid}" for key, jid in submitted)
    assert _rows(db) == submitted
    assert _queue() == queued_before  # nothing new reached Slurm


def _queue() -> set[str]:
    return set(
        subprocess.run(["squeue", "-h", "-t", "all", "-r", "-o", "%i"], capture_output=True, text=True).stdout.split()
    )


def _rows(db: Path) -> list[tuple[str, str]]:
    import sqlite3

    if not db.exists():
        return []
    try:
        with sqlite3.connect(db) as conn:
            return [(r[0], r[1]) for r in conn.execute("SELECT key, job_id FROM submissions ORDER BY key")]
    except sqlite3.Error:
        return []


def test_scancel_helper_is_quiet_without_ids() -> None:
    scancel([])


# -- options: the command line over [bench.slurm]; no Slurm needed ------------------------------------


def slurm_kit(tmp_path: Path, slurm: dict[str, object] | None) -> Path:
    from bench_helpers import bench_table, write_bench_kit

    return write_bench_kit(tmp_path / "kit", bench=bench_table(slurm=slurm))


def test_bench_slurm_table_gives_defaults_and_the_command_line_wins(tmp_path: Path) -> None:
    from patchkit.bench.execution.slurm import gpus_for, slurm_options
    from patchkit.manifest import load_manifest

    shared = tmp_path / "shared"
    shared.mkdir()
    table = {"shared_dir": str(shared), "partition": "gpu", "slots": 3, "extra": {"account": "perf", "qos": "low"}}
    config = load_manifest(str(slurm_kit(tmp_path, table))).bench
    assert config is not None
    common = {"partition": None, "gpus_per_job": None, "timeout_min": None, "slots": None, "extra": ()}
    options = slurm_options(config, executor="slurm", shared_dir=None, **common)  # type: ignore[arg-type]
    assert options is not None
    assert (options.shared_dir, options.partition, options.slots, options.timeout_min) == (shared, "gpu", 3, 60)
    assert options.extra == {"account": "perf", "qos": "low"}
    over = {**common, "slots": 2, "extra": ["qos=high", "--constraint=h100"], "gpus_per_job": 0}
    options = slurm_options(config, executor="slurm", shared_dir=None, **over)  # type: ignore[arg-type]
    assert options is not None
    assert options.slots == 2 and options.extra == {"account": "perf", "qos": "high", "constraint": "h100"}
    assert gpus_for(options, {"tp": "8"}) is None  # --gpus-per-job 0: none, whatever tp says
    default = slurm_options(config, executor="slurm", shared_dir=None, **common)  # type: ignore[arg-type]
    assert default is not None
    assert gpus_for(default, {"tp": "8"}) == 8 and gpus_for(default, {"tp": "auto"}) is None
    assert slurm_options(config, executor="local", shared_dir=None, **common) is None  # type: ignore[arg-type]


def test_slurm_only_options_with_the_local_executor_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench_helpers import build_history
    from helpers import run_cli

    history = build_history(tmp_path / "repo")
    kit = slurm_kit(tmp_path, None)
    base = ["bench", "-m", kit, "--repo", history.path, "--store", tmp_path / "s.sqlite"]
    local = run_cli(capsys, *base, "--shared-dir", tmp_path, "--slurm-partition", "gpu")
    assert local.code == 2
    assert "--shared-dir, --slurm-partition only apply with --executor slurm; add --executor slurm, or drop them" in (
        local.err
    )
    alone = run_cli(capsys, *base, "--shared-dir", tmp_path)
    assert "--shared-dir only applies with --executor slurm; add --executor slurm, or drop it" in alone.err
    missing = run_cli(capsys, *base, "--executor", "slurm")
    assert missing.code == 2 and "--executor slurm needs --shared-dir DIR" in missing.err
    gone = run_cli(capsys, *base, "--executor", "slurm", "--shared-dir", tmp_path / "nowhere")
    assert gone.code == 2 and f"--shared-dir {tmp_path / 'nowhere'} is not a directory" in gone.err
    for result in (local, missing, gone):
        assert "Traceback" not in result.err
    assert list((history.path / ".git" / "patchkit").glob("worktrees/*")) == []  # stopped before any tree


@pytest.mark.parametrize(
    ("table", "key_path"),
    [({"slots": 0}, "bench.slurm.slots"), ({"partiton": "gpu"}, "bench.slurm.partiton"),
     ({"extra": {"account": 3}}, "bench.slurm.extra.account")],
)  # fmt: skip
def test_a_bad_bench_slurm_table_names_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: dict[str, object], key_path: str
) -> None:
    from helpers import run_cli

    result = run_cli(capsys, "validate", "-m", slurm_kit(tmp_path, table))
    assert result.code == 2
    assert key_path in result.err and "Traceback" not in result.err


def test_a_job_slurm_has_forgotten_without_a_result_finishes_unknown(slurm: SlurmCluster, tmp_path: Path) -> None:
    """A submission whose job Slurm no longer knows (purged after MinJobAge, no accounting) and that left
    no result pickle: the wait ends with state UNKNOWN instead of hanging."""
    executor = SlurmExecutor(SlurmOptions(shared_dir=tmp_path), poll_s=0.2, grace_s=1.0)
    with Store(tmp_path / "bench.sqlite") as store:
        store.add_submissions("b", [{"key": "k", "job_id": "987654_0", "folder": str(tmp_path), "label": {}}])
        (finished,) = executor.map(job_facts, [Task("k", None)], batch="b", ledger=store)
    assert (finished.value, finished.state) == (None, "UNKNOWN")
    assert finished.reason == "the Slurm job 987654_0 is no longer known to Slurm and ended without a result"


def test_a_submitted_launch_without_its_pickle_is_known_from_its_submission_row(tmp_path: Path) -> None:
    """A re-run does not prepare a submitted launch's tree; when submitit's pickle of its spec is gone too,
    what the submission row kept (values, run directory) is what a lost job's record is made of."""
    from types import SimpleNamespace

    from patchkit.bench.execution.scheduled import submitted_launch
    from patchkit.git import Commit

    commit = Commit(sha="a" * 40, parents=(), author="a", date="2026-01-01T00:00:00+00:00", subject="s")
    session: object = SimpleNamespace(config=object(), sets={}, allow_dirty=True)
    label = {"vars": {"tp": "8"}, "run_dir": "/r/1"}
    row = Submission("b", "k", "slurm", "7_1", str(tmp_path / "gone"), label, "2026-01-01T00:00:00", "submitted", None)
    launch = submitted_launch(session, commit, "eagle3", row)  # type: ignore[arg-type]
    assert (launch.commit, launch.profile, dict(launch.vars), launch.run_dir) == (commit, "eagle3", {"tp": "8"}, "/r/1")
    assert launch.allow_dirty is True and launch.manifests == () and dict(launch.guard) == {}


def test_a_failed_jobs_reason_is_what_it_raised_not_where_its_logs_are() -> None:
    from patchkit.bench.execution.slurm import raised_reason

    text = (
        "Job (task=0) failed during processing with trace:\n----------------------\nTraceback (most recent call "
        'last):\n  File "x.py", line 1, in f\n    time.sleep(delay)\nsubmitit.core.utils.UncompletedJobError: Job '
        "not requeued because: timed-out and not checkpointable.\n\n----------------------\nYou can check full logs "
        "with 'job.stderr(0)' and 'job.stdout(0)'or at paths:\n  - /s/45_0_log.err\n  - /s/45_0_log.out"
    )
    assert raised_reason(text) == (
        "submitit.core.utils.UncompletedJobError: Job not requeued because: timed-out and not checkpointable."
    )
    assert raised_reason("Job not requeued because: timed-out and not checkpointable.") == (
        "Job not requeued because: timed-out and not checkpointable."
    )


def test_only_the_slurm_modules_import_submitit() -> None:
    """The layering check names the Slurm executor and the scheduled launches as submitit's only importers
    (at call time, under ``--executor slurm``): the same import anywhere else, the local executor included,
    is a violation it reports."""
    import importlib.util

    tool_path = Path(__file__).resolve().parents[1] / "tools" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", tool_path)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for module in ("patchkit.bench.execution.slurm", "patchkit.bench.execution.scheduled"):
        assert tool.boundary(module, "submitit") is not None
    for module in ("patchkit.bench.execution.local", "patchkit.bench.execution.executor", "patchkit.commands.runs"):
        assert tool.boundary(module, "submitit") is None
