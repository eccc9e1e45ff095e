"""A local batch resumed: ``bench`` interrupted, or its patchkit killed, then the same command run again.

End to end with the stand-in server and client on 127.0.0.1 (tests/standin/): the re-run reads back the
launch the store holds, in its place, and launches only the one that was interrupted.  The executor on
its own, in a process killed with SIGKILL mid-task: the ledger says which launch was started, and the
re-run runs it again, not the one collected.  ``runs --pending`` lists no local launch (nothing of one
waits anywhere) and the local executor's cancel stops nothing and leaves the ledger as it is.

``--fresh`` (bench and noise): the interrupted batch set aside, every launch started again in a new batch,
and the plain command after it does not resume the set-aside one; a bisect's batch set aside with its rounds.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench_helpers import build_history, write_bench_kit
from helpers import patchkit_script

from patchkit.bench.execution.executor import Task
from patchkit.bench.execution.ledger import begin_batch
from patchkit.bench.execution.local import LocalExecutor
from patchkit.bench.records.store import Store
from patchkit.commands.runs import pending_rows


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("bench") / "repo")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return write_bench_kit(tmp_path_factory.mktemp("kit"))


def _wait_for(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _finished(proc: subprocess.Popen[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``proc`` to its end; one that runs past ``timeout`` (a re-run that launched everything again reaches
    the client that hangs) is stopped as Ctrl-C stops bench, so its server is stopped too, and fails."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"still running after {timeout} s: {err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
def test_a_local_bench_interrupted_then_run_again_launches_only_what_is_not_stored(history, manifest, tmp_path):
    """Two launches; Ctrl-C in the second's last client run.  The same command again: launch 1 is read back
    (its run id, not a new server), launch 2 runs, and the batch is finished."""
    marker, store, pid_file = tmp_path / "marker", tmp_path / "s.sqlite", tmp_path / "pids"
    command = [
        patchkit_script(), "bench", "-m", str(manifest), "--repo", str(history.path), "--store", str(store),
        "--commit", history["tip"], "--profile", "eagle3", "--launches", "2", "--json",
        "--set", f"marker={marker}", "--set", f"server_args=--workers 1 --pid-file {pid_file}",
        "--set", "client_args=--hang-at 6",  # warmup 1 + repeat 2 a launch: the second launch's last client
    ]  # fmt: skip
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    _wait_for(lambda: marker.exists() and marker.read_text().split().count("client") == 6)
    time.sleep(0.3)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 130, err.decode()
    before = json.loads(out)["runs"]
    assert [(r["launch"], r["outcome"]) for r in before] == [(1, "ok"), (2, "interrupted")]
    begun = json.loads(out)["batch"]
    assert {k: begun[k] for k in ("executor", "resumed", "fresh", "read_back", "abandoned")} == {
        "executor": "local", "resumed": False, "fresh": False, "read_back": [], "abandoned": [],
    }  # fmt: skip

    marker.write_text("")  # count the re-run's servers and clients alone (and let its clients finish)
    again = _finished(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       stdin=subprocess.DEVNULL))  # fmt: skip
    assert again.returncode == 0, again.stderr
    after = json.loads(again.stdout)["runs"]
    assert json.loads(again.stdout)["batch"] == {
        **begun, "resumed": True, "read_back": [before[0]["run"]],  # the same batch, taken up
    }  # fmt: skip
    assert [(r["run"], r["launch"], r["outcome"]) for r in after] == [
        (before[0]["run"], 1, "ok"),  # read back from the store
        (before[1]["run"] + 1, 2, "ok"),  # launched now
    ]
    assert after[0]["series"] == before[0]["series"] != after[1]["series"]
    assert marker.read_text().split() == ["server", "client", "client", "client"]  # one launch, not two
    notes = [line.split(" bench local: ", 1)[1] for line in again.stderr.splitlines() if " bench local: " in line]
    assert notes[0] == (
        f"resuming batch {begun['id']}: 1 launch stored earlier, read back; 1 to run; --fresh starts a new batch "
        "instead"
    )
    assert notes[1] == "running again 1 launch an earlier run of this batch did not settle (1 interrupted)"

    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (3,)  # the interrupted run is kept
        assert db.execute("SELECT finished_at IS NOT NULL FROM batches").fetchall() == [(1,)]
        rows = db.execute("SELECT executor, state, run_id FROM submissions ORDER BY run_id").fetchall()
    assert rows == [("local", "collected", before[0]["run"]), ("local", "collected", after[1]["run"])]
    pending = subprocess.run(
        [patchkit_script(), "runs", "--pending", "--json", "--repo", str(history.path), "--store", str(store)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(pending.stdout)["pending"] == []


KILLED = """
import sys, time
from pathlib import Path
from patchkit.bench.execution.executor import Task
from patchkit.bench.execution.local import LocalExecutor

from patchkit.bench.records.store import Store

with Store(Path(sys.argv[1])) as store:
    tasks = [Task("a", 0.0, {"commit": "a"}), Task("b", 600.0, {"commit": "b"}), Task("c", 0.0, {"commit": "c"})]
    for finished in LocalExecutor().map(time.sleep, tasks, batch="b#1", ledger=store):
        store.set_submission_state("b#1", finished.key, "collected")
        print(finished.key, flush=True)
"""


def test_a_killed_local_batch_runs_again_what_it_started_and_not_what_it_collected(tmp_path: Path) -> None:
    path = tmp_path / "bench.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), *sys.path])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == "a\n"

    def started_b() -> bool:
        with Store(path) as store:
            return "b" in {row.key for row in store.submissions("b#1")}

    _wait_for(started_b)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with Store(path) as store:
        rows = {row.key: row for row in store.submissions("b#1")}
        assert {key: row.state for key, row in rows.items()} == {"a": "collected", "b": "submitted"}  # c never began
        assert {row.job_id for row in rows.values()} == {f"pid {proc.pid}"} and rows["b"].executor == "local"
        assert pending_rows(store.submissions(pending=True), (), ()) == []  # nothing of it waits anywhere
        assert LocalExecutor().cancel("b#1", store) == []  # nothing to stop; the ledger as it was
        assert {key: row.state for key, row in rows.items()} == {r.key: r.state for r in store.submissions("b#1")}

        ran: list[str] = []
        notes: list[str] = []
        tasks = [Task("a", "a", {}), Task("b", "b", {}), Task("c", "c", {})]
        done = list(LocalExecutor().map(ran.append, tasks, batch="b#1", ledger=store, note=notes.append))
        assert [f.key for f in done] == ["b", "c"] and ran == ["b", "c"]
        assert notes == [
            "running again 1 launch an earlier run of this batch did not settle "
            "(1 started by a patchkit that was killed or still runs)"
        ]
        now = {row.key: row for row in store.submissions("b#1")}
        assert now["c"].job_id == f"pid {os.getpid()}" and now["b"].job_id == f"pid {proc.pid}"  # who began each


def _notes(stderr: str, verb: str) -> list[str]:
    """The executor's notes of a run off a terminal: ``<stamp> <verb> local: <note>`` on stderr."""
    return [line.split(f" {verb} local: ", 1)[1] for line in stderr.splitlines() if f" {verb} local: " in line]


def _interrupted(command: list[str], marker: Path, clients: int) -> dict:
    """``command`` run until its ``clients``-th client run (counted in ``marker``) hangs, then Ctrl-C: exit 130."""
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    _wait_for(lambda: marker.read_text().split().count("client") == clients)
    time.sleep(0.3)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 130, err.decode()
    return json.loads(out)


@pytest.mark.slow
def test_fresh_runs_every_launch_again_and_no_later_run_resumes_the_batch_it_set_aside(history, manifest, tmp_path):
    """Ctrl-C in launch 2 of 2; the same command with --fresh starts both servers again (launch 1 is not read
    back) in a new batch; the plain command after that starts both again too: the batch --fresh set aside is
    finished for good, or that run would have read its launch 1 back and run only launch 2."""
    marker, store = tmp_path / "marker", tmp_path / "s.sqlite"
    command = [
        patchkit_script(), "bench", "-m", str(manifest), "--repo", str(history.path), "--store", str(store),
        "--commit", history["tip"], "--profile", "eagle3", "--launches", "2", "--json",
        "--set", f"marker={marker}", "--set", "server_args=--workers 1", "--set", "client_args=--hang-at 7",
    ]  # fmt: skip
    marker.write_text("client\n")  # one counted already: the first run's 6th client run (its last) is the 7th
    before = _interrupted(command, marker, 7)
    assert [(r["launch"], r["outcome"]) for r in before["runs"]] == [(1, "ok"), (2, "interrupted")]
    old = before["batch"]["id"]
    top = before["runs"][1]["run"]

    marker.write_text("")  # from here on a run's 6 client runs never reach the 7th: none hangs
    fresh = _finished(subprocess.Popen([*command, "--fresh"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, stdin=subprocess.DEVNULL))  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    doc = json.loads(fresh.stdout)
    assert [(r["run"], r["launch"], r["outcome"]) for r in doc["runs"]] == [(top + 1, 1, "ok"), (top + 2, 2, "ok")]
    assert marker.read_text().split() == ["server", "client", "client", "client"] * 2  # a server for each launch
    assert doc["batch"] == {
        "id": doc["batch"]["id"], "executor": "local", "resumed": False, "fresh": True, "read_back": [],
        "abandoned": [old], "cancelled": [],
    }  # fmt: skip
    assert doc["batch"]["id"] == old.replace("#1", "#2")
    assert _notes(fresh.stderr, "bench") == [
        f"--fresh: set aside the unfinished batch {old}: 1 launch stored (its runs stay in the store), 1 abandoned"
    ]

    marker.write_text("")
    plain = _finished(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       stdin=subprocess.DEVNULL))  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    again = json.loads(plain.stdout)
    assert [(r["run"], r["launch"], r["outcome"]) for r in again["runs"]] == [(top + 3, 1, "ok"), (top + 4, 2, "ok")]
    assert marker.read_text().split() == ["server", "client", "client", "client"] * 2
    assert again["batch"]["resumed"] is False and again["batch"]["read_back"] == []
    assert again["batch"]["id"] == old.replace("#1", "#3") and again["batch"]["abandoned"] == []
    assert _notes(plain.stderr, "bench") == []  # nothing resumed, nothing set aside

    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (6,)  # the set-aside batch's runs are kept
        assert db.execute("SELECT count(*) FROM batches WHERE finished_at IS NULL").fetchone() == (0,)
        rows = db.execute("SELECT batch, state, run_id FROM submissions ORDER BY batch, run_id").fetchall()
    assert [(batch[-2:], state, run) for batch, state, run in rows] == [
        ("#1", "abandoned", None), ("#1", "collected", before["runs"][0]["run"]),  # launch 2 never to run again
        ("#2", "collected", top + 1), ("#2", "collected", top + 2), ("#3", "collected", top + 3),
        ("#3", "collected", top + 4),
    ]  # fmt: skip
    pending = subprocess.run(
        [patchkit_script(), "runs", "--pending", "--json", "--repo", str(history.path), "--store", str(store)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(pending.stdout)["pending"] == []


@pytest.mark.slow
def test_noise_fresh_launches_every_launch_of_an_interrupted_run_again(history, manifest, tmp_path):
    """noise takes --fresh the same way: its interrupted A/A run set aside, its 3 launches all run again."""
    marker, store = tmp_path / "marker", tmp_path / "s.sqlite"
    command = [
        patchkit_script(), "noise", "-m", str(manifest), "--repo", str(history.path), "--store", str(store),
        "--commit", history["tip"], "--profile", "eagle3", "--launches", "3", "--json",
        "--set", f"marker={marker}", "--set", "server_args=--workers 1", "--set", "client_args=--hang-at 10",
    ]  # fmt: skip
    marker.write_text("client\n")  # the first run's 9th client run (launch 3's last) is the 10th: it hangs
    before = _interrupted(command, marker, 10)
    assert len(before["runs"]) == 3 and before["batch"]["fresh"] is False
    marker.write_text("")
    fresh = _finished(subprocess.Popen([*command, "--fresh"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, stdin=subprocess.DEVNULL))  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    doc = json.loads(fresh.stdout)
    assert doc["runs"] == [max(before["runs"]) + i for i in (1, 2, 3)]  # none read back
    assert marker.read_text().split() == ["server", "client", "client", "client"] * 3
    assert doc["batch"]["fresh"] is True and doc["batch"]["resumed"] is False
    assert doc["batch"]["abandoned"] == [before["batch"]["id"]] and doc["batch"]["read_back"] == []
    assert _notes(fresh.stderr, "noise") == [
        f"--fresh: set aside the unfinished batch {before['batch']['id']}: 2 launches stored (its runs stay in the "
        "store), 1 abandoned"
    ]


def test_fresh_sets_a_batch_aside_with_its_rounds_and_runs_pending_lists_none_of_its_launches(tmp_path: Path) -> None:
    """A bisect's batch holds its launches in rounds (``<batch>/round-I``): --fresh sets them aside with it, and
    touches no other batch."""

    def row(key: str, job: str) -> dict[str, object]:
        return {"key": key, "executor": "slurm", "job_id": job, "folder": "/shared/submitit", "label": {}}

    with Store(tmp_path / "bench.sqlite") as store:
        batch, _ = store.open_batch("bisect-k", "bisect")
        for i, rows in ((1, [row("a", "7_0"), row("b", "7_1")]), (2, [row("c", "8_0")])):
            store.use_batch(f"{batch}/round-{i}", "bisect")
            store.add_submissions(f"{batch}/round-{i}", rows)
        store.set_submission_state(f"{batch}/round-1", "a", "collected")
        other, _ = store.open_batch("bisect-other", "bisect")
        store.add_submissions(other, [row("d", "9_0")])

        notes: list[str] = []
        begun = begin_batch(store, "bisect-k", "bisect", LocalExecutor(), fresh=True, note=notes.append)
        assert (begun.batch, begun.resumed, begun.fresh, begun.abandoned) == ("bisect-k#2", False, True, (batch,))
        assert notes == [f"--fresh: set aside the unfinished batch {batch}: 1 launch stored (its runs stay in the "
                         "store), 2 abandoned"]  # fmt: skip
        assert {r.key: r.state for r in store.submissions()} == {
            "a": "collected", "b": "abandoned", "c": "abandoned", "d": "submitted",
        }  # fmt: skip
        assert [r.key for r in store.submissions(pending=True)] == ["d"]  # what runs --pending reads
        unfinished = store.db.execute("SELECT batch FROM batches WHERE finished_at IS NULL ORDER BY batch")
        assert [b for (b,) in unfinished] == ["bisect-k#2", other]

        plain = begin_batch(store, "bisect-k", "bisect", LocalExecutor(), fresh=False, note=notes.append)
        assert (plain.batch, plain.resumed, plain.abandoned) == ("bisect-k#2", False, ())  # launched nothing yet


@pytest.mark.slow
def test_bench_without_fresh_runs_both_sides_again(history, manifest, tmp_path):
    """``bench --without`` is a batch of two sessions' launches, resumed the same way: --fresh sets its interrupted
    batch aside and launches both sides again, the side that was stored included."""
    marker, store = tmp_path / "marker", tmp_path / "s.sqlite"
    command = [
        patchkit_script(), "bench", "-m", str(manifest), "--repo", str(history.path), "--store", str(store),
        "--commit", history["tip"], "--profile", "eagle3", "--without", "hooks", "--json",
        "--set", f"marker={marker}", "--set", "server_args=--workers 1", "--set", "client_args=--hang-at 7",
    ]  # fmt: skip
    marker.write_text("client\n")  # the without side's last client run is the 7th: it hangs
    before = _interrupted(command, marker, 7)
    assert [(r["without"] is None, r["outcome"]) for r in before["runs"]] == [(True, "ok"), (False, "interrupted")]
    marker.write_text("")
    fresh = _finished(subprocess.Popen([*command, "--fresh"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, stdin=subprocess.DEVNULL))  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    doc = json.loads(fresh.stdout)
    top = before["runs"][1]["run"]
    assert [(r["run"], r["without"] is None, r["outcome"]) for r in doc["runs"]] == [
        (top + 1, True, "ok"), (top + 2, False, "ok"),
    ]  # fmt: skip
    assert marker.read_text().split() == ["server", "client", "client", "client"] * 2  # the with side again too
    assert doc["batch"]["abandoned"] == [before["batch"]["id"]] and doc["batch"]["read_back"] == []
    (item,) = doc["evidence"]
    assert item["launches"] == {"with": [top + 1], "without": [top + 2]}  # judged on the new launches alone
