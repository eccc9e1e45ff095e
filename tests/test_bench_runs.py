"""patchkit bench / runs / compare / bisect with real processes on loopback (tests/standin/).

Every case a bench must handle: the happy path over two commits and two
profiles; refusal on partial application (a marker file proves that neither
server nor client ran); a server that never becomes healthy; one that exits
during start-up; one that dies mid-run; a port already in use; a worker
lacking an env variable; a version mismatch; a missing metric; Ctrl-C; compare
naming the planted commit; bisect finding it across an unpatchable commit.
After each run no process of the server's tree is left and the port is free.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import venv
from pathlib import Path

import psutil
import pytest
from bench_helpers import SLOW_SUBJECT, bench_table, build_history, write_bench_kit
from helpers import patchkit_script, run_cli

from patchkit.bench.execution.job import port_is_free

RUN_KEYS = {
    "run", "commit", "profile", "outcome", "reason", "details", "started_at", "finished_at", "vars", "commands",
    "env", "manifests", "guard", "host", "interpreter", "torch", "gpus", "server_info", "samples", "stats",
    "missing", "metrics", "logs", "allow_dirty", "launch", "series", "proof", "executor", "gpu_hygiene", "without",
}  # fmt: skip


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("bench") / "repo")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return write_bench_kit(tmp_path_factory.mktemp("kit"))


@pytest.fixture
def store(tmp_path):
    return tmp_path / "bench.sqlite"


def bench(capsys, history, manifest, store, *args):
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, "--json", *args)
    assert "Traceback" not in result.err
    return result


def assert_nothing_left(pid_file: Path, port: str | int | None = None) -> None:
    pids = [int(p) for p in pid_file.read_text().split()]
    assert pids, "the stand-in server wrote no pids"
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    if port is not None:
        assert port_is_free(int(port))


@pytest.mark.slow
def test_happy_path_two_commits_two_profiles(capsys, history, manifest, store, tmp_path):
    marker = tmp_path / "marker"
    result = bench(
        capsys, history, manifest, store, "--commit", history["base"], "--commit", history["tip"],
        "--set", f"marker={marker}",
    )  # fmt: skip
    assert result.code == 0, result.err
    data = result.json
    assert set(data) == {"version", "command", "store", "runs", "table", "gpu_hygiene", "without", "evidence", "batch"}
    assert {k: data["batch"][k] for k in ("executor", "resumed", "fresh", "read_back", "abandoned")} == {
        "executor": "local", "resumed": False, "fresh": False, "read_back": [], "abandoned": [],
    }  # fmt: skip
    assert data["without"] is None and data["evidence"] == []
    assert [(r["commit"]["sha"], r["profile"], r["outcome"]) for r in data["runs"]] == [
        (history["base"], "eagle3", "ok"),
        (history["base"], "baseline", "ok"),
        (history["tip"], "eagle3", "ok"),
        (history["tip"], "baseline", "ok"),
    ]
    assert set(data["runs"][0]) == RUN_KEYS
    assert data["runs"][0]["executor"] is None  # the local executor: in this process, as before
    assert set(data["table"][0]) == {
        "run", "commit", "subject", "profile", "outcome", "without", "launch", "metric", "median", "min", "max", "n",
        "missing", "ratio", "proof",
    }  # fmt: skip
    rows = {(r["commit"], r["profile"], r["metric"]): r for r in data["table"]}
    assert rows[(history["tip"], "eagle3", "output_tok_s")]["ratio"] == pytest.approx(0.65)
    assert rows[(history["tip"], "baseline", "output_tok_s_printed")]["median"] == 65.0  # the (token/s) spelling
    assert rows[(history["tip"], "eagle3", "verify_ms")]["ratio"] == pytest.approx(1.6, rel=0.01)
    assert rows[(history["base"], "baseline", "output_tok_s")]["n"] == 2
    run = data["runs"][2]
    # The server ran the tree: its version names the commit, as setuptools-scm would write it.
    assert run["server_info"]["version"].startswith("0.5.9.dev6+g")
    assert history["tip"].startswith(run["server_info"]["version"].split("+g")[1])
    assert run["env"]["PATCHKIT_EAGLE3_VERIFY_TIMING"] == "1"
    assert run["env"]["PYTHONPATH"].endswith("/python")
    assert len(run["logs"]["env_checked_pids"]) == 3  # server + 2 workers
    assert run["manifests"][0]["name"] == "standin"
    assert {r["status"] for r in run["manifests"][0]["results"]} == {"APPLY"}
    assert run["guard"]["ok"] is True
    # The guard step is patchkit guard itself: its report, with the import check run in the server's env.
    (report,) = run["guard"]["reports"]
    assert report["command"] == "guard" and report["commit"] == history["tip"] and report["verdict"] == "good"
    assert [c["check"] for c in report["checks"]] == ["commit", "patches", "record", "clean", "import:sglang"]
    assert report["checks"][-1]["details"]["in_tree"] == "python/sglang"  # via [bench].pythonpath
    assert run["interpreter"]["packages"].keys() >= {"sglang", "torch", "sgl-kernel", "transformers"}
    assert Path(run["logs"]["server"]).is_file()
    # --store moves the store, not the logs: they stay in the git dir.
    assert Path(run["logs"]["run_dir"]).parent == history.path / ".git" / "patchkit" / "bench-runs"
    assert marker.read_text().split() == (["server"] + ["client"] * 3) * 4
    # The table for people.
    people = run_cli(capsys, "runs", "--repo", history.path, "--store", store)
    assert people.code == 0
    assert any(line.split()[-2:] == ["output_tok_s", "65.00"] for line in people.out.splitlines()), people.out


def test_refused_commit_starts_nothing(capsys, history, manifest, store, tmp_path):
    marker = tmp_path / "marker"
    result = bench(capsys, history, manifest, store, "--commit", history["break-model"], "--set", f"marker={marker}")
    assert result.code == 1
    runs = result.json["runs"]
    assert [r["outcome"] for r in runs] == ["refused", "refused"]
    assert "nothing was started" in runs[0]["reason"]
    assert any("standin:hooks FAIL CLASS_NOT_FOUND" in d for d in runs[0]["details"])
    assert runs[0]["samples"] == {} and runs[0]["commands"] == {}
    assert not marker.exists()  # neither server nor client ran
    people = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store,
                     "--commit", history["break-model"], "--profile", "eagle3")  # fmt: skip
    assert people.code == 1
    assert "refused" in people.out and "standin:hooks FAIL CLASS_NOT_FOUND" in people.out


def one(capsys, history, manifest, store, tmp_path, server_args, *extra, profile="eagle3"):
    pid_file = tmp_path / "pids"
    result = bench(
        capsys, history, manifest, store, "--commit", history["tip"], "--profile", profile,
        "--set", f"server_args=--workers 2 --pid-file {pid_file} {server_args}", *extra,
    )  # fmt: skip
    return result, result.json["runs"][0], pid_file


@pytest.mark.slow
def test_never_healthy_times_out_and_kills_the_group(capsys, history, tmp_path, store):
    manifest = write_bench_kit(tmp_path / "kit", bench=bench_table(ready_timeout=1.5))
    started = time.monotonic()
    result, run, pids = one(capsys, history, manifest, store, tmp_path, "--never-healthy")
    assert result.code == 1
    assert run["outcome"] == "server-failed"
    assert "did not answer 200 within 1.5s" in run["reason"]
    assert time.monotonic() - started < 15
    assert_nothing_left(pids, run["vars"]["port"])


def test_server_exiting_during_startup_stops_at_once(capsys, history, manifest, store, tmp_path):
    started = time.monotonic()
    _result, run, pids = one(capsys, history, manifest, store, tmp_path, "--exit-during-startup 3")
    assert run["outcome"] == "server-failed"
    assert "exited with code 3 before it was healthy" in run["reason"]
    assert any("CUDA out of memory" in line for line in run["details"])  # the log's last lines
    assert time.monotonic() - started < 10  # not the 20 s ready_timeout
    assert_nothing_left(pids, run["vars"]["port"])


def test_server_dying_mid_run(capsys, history, manifest, store, tmp_path):
    # warmup makes 2 requests; the third (first measured run) kills the server, its workers stay orphaned.
    _result, run, pids = one(capsys, history, manifest, store, tmp_path, "--die-after 2")
    assert run["outcome"] == "server-failed"
    assert "during client run 1/2" in run["reason"]
    assert any("fatal error in the scheduler" in line for line in run["details"])
    assert_nothing_left(pids, run["vars"]["port"])


def test_port_already_in_use(capsys, history, manifest, store, tmp_path):
    marker = tmp_path / "marker"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = bench(capsys, history, manifest, store, "--commit", history["tip"], "--profile", "eagle3",
                       "--set", f"port={port}", "--set", f"marker={marker}")  # fmt: skip
    run = result.json["runs"][0]
    assert run["outcome"] == "refused"
    assert f"port {port} on 127.0.0.1 is already in use" in run["reason"]
    assert not marker.exists()


def test_worker_lacking_an_env_variable(capsys, history, manifest, store, tmp_path):
    result, run, pids = one(capsys, history, manifest, store, tmp_path, "--drop-env NCCL_MIN_NCHANNELS")
    assert [(r["metric"], r["outcome"]) for r in result.json["table"]] == [(None, "refused")]  # one row, no numbers
    assert run["outcome"] == "refused"
    assert "start environment" in run["reason"]
    worker_pid = int(pids.read_text().split()[-1])
    assert run["details"] == [f"pid {worker_pid} ({run['details'][0].split('(', 1)[1]}"]
    assert "--worker" in run["details"][0] and run["details"][0].endswith("lacks NCCL_MIN_NCHANNELS")
    assert run["samples"]["output_tok_s"] == []  # no client ran
    assert_nothing_left(pids, run["vars"]["port"])


def test_an_offending_pid_is_one_line_with_its_command_line_quoted(capsys, history, manifest, store, tmp_path):
    server_args = "--drop-env NCCL_MIN_NCHANNELS --drop-env PATCHKIT_EAGLE3_VERIFY_TIMING --worker-title 'two\nlines'"
    _result, run, pids = one(capsys, history, manifest, store, tmp_path, server_args)
    assert run["outcome"] == "refused"
    (detail,) = run["details"]  # one pid, one line, however many variables it lacks
    assert "\n" not in detail and "--rank=1 $'two\\nlines')" in detail
    assert detail.endswith("lacks PATCHKIT_EAGLE3_VERIFY_TIMING; lacks NCCL_MIN_NCHANNELS") or detail.endswith(
        "lacks NCCL_MIN_NCHANNELS; lacks PATCHKIT_EAGLE3_VERIFY_TIMING"
    )
    people = run_cli(capsys, "runs", "--repo", history.path, "--store", store)
    assert "two\nlines" not in people.out
    assert_nothing_left(pids, run["vars"]["port"])


@pytest.mark.parametrize(
    ("reported", "words"),
    [("0.5.9.dev3+gdeadbee", "(+gdeadbee, another commit)"), ("0.5.7", "reports version 0.5.7, not 0.5.9.dev6+g")],
)
def test_version_mismatch_refuses(capsys, history, manifest, store, tmp_path, reported, words):
    _result, run, pids = one(capsys, history, manifest, store, tmp_path, f"--report-version {reported}")
    assert run["outcome"] == "refused"
    assert words in run["reason"] and "not running this tree" in run["reason"]
    assert_nothing_left(pids, run["vars"]["port"])


def test_missing_metric_is_missing_not_zero(capsys, history, manifest, store, tmp_path):
    result = bench(capsys, history, manifest, store, "--commit", history["tip"], "--profile", "baseline",
                   "--set", "client_args=--no-output --spelling token")  # fmt: skip
    run = result.json["runs"][0]
    assert result.code == 1
    assert run["outcome"] == "metric-missing"
    assert run["samples"]["output_tok_s"] == [None, None]
    assert run["samples"]["output_tok_s_printed"] == [65.0, 65.0]
    assert run["stats"]["output_tok_s"] == {"median": None, "min": None, "max": None, "n": 0, "missing": 2}
    assert [m["log"].rsplit("/", 1)[1] for m in run["missing"]] == ["output-2.jsonl", "output-3.jsonl"]
    stored = run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--json").json["runs"][0]
    assert stored["stats"]["output_tok_s"]["median"] is None


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_is_stored_with_what_it_measured(history, manifest, tmp_path, sig):
    """Ctrl-C (or SIGTERM) in the second measured client run: the server group is stopped, the run is
    stored as interrupted with the first run's samples and its logs; runs lists it, compare skips it."""
    pid_file, marker, store = tmp_path / "pids", tmp_path / "marker", tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        [patchkit_script(), "bench", "-m", str(manifest), "--repo", str(history.path), "--store", str(store),
         "--commit", history["tip"], "--profile", "eagle3", "--set", f"marker={marker}",
         "--set", f"server_args=--workers 2 --pid-file {pid_file}", "--set", "client_args=--hang-at 3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text().split().count("client") == 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    assert_nothing_left(pid_file)
    assert b"interrupted" in out  # the table shows the run
    runs = subprocess.run(
        [patchkit_script(), "runs", "--repo", str(history.path), "--store", str(store), "--json"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    (run,) = json.loads(runs)["runs"]
    assert run["outcome"] == "interrupted"
    assert run["stats"]["output_tok_s"]["n"] == 1  # the first measured run, kept
    cmp = subprocess.run(
        [patchkit_script(), "compare", "--commit", history["tip"], "--commit", history["tip"], "--repo",
         str(history.path), "--store", str(store)],
        capture_output=True, check=False,
    )  # fmt: skip
    assert cmp.returncode == 2 and b"has ok runs of both commits" in cmp.stderr and b"interrupted" in cmp.stderr


@pytest.mark.slow
def test_compare_names_the_planted_commit(capsys, history, manifest, store):
    result = bench(capsys, history, manifest, store, "--commit", history["restore-model"], "--commit",
                   history["docs-2"], "--profile", "eagle3")  # fmt: skip
    assert result.code == 0, result.err
    a, b = (r["run"] for r in result.json["runs"])
    cmp = run_cli(capsys, "compare", str(a), str(b), "--repo", history.path, "--store", store, "--json")
    assert cmp.code == 0, cmp.err
    data = cmp.json
    assert set(data) == {
        "version", "command", "threshold", "confidence", "a", "b", "launches", "no_data", "metrics", "provenance",
        "gpu_hygiene",
    }  # fmt: skip
    assert set(data["provenance"]) == {"between", "patches", "env", "vars", "versions", "gpus", "host", "proof"}
    subjects = [c["subject"] for c in data["provenance"]["between"]["commits"]]
    assert subjects == ["docs: more notes", SLOW_SUBJECT]
    rows = {r["metric"]: r for r in data["metrics"]}
    assert rows["output_tok_s"]["ratio"] < 0.9 and rows["verify_ms"]["ratio"] > 1.1  # the planted slowdown
    assert "significant" not in rows["output_tok_s"]  # one verdict: over the launches (version 2)
    assert data["version"] == 2
    assert data["provenance"]["env"] == []  # same env, once the per-commit tree path is factored out
    versions = {d["key"] for d in data["provenance"]["versions"]}
    assert versions == {"server_info.version"}
    people = run_cli(capsys, "compare", "--commit", history["restore-model"], "--commit", history["docs-2"],
                     "--profile", "eagle3", "--repo", history.path, "--store", store)  # fmt: skip
    assert SLOW_SUBJECT in people.out and "significant" not in people.out


@pytest.mark.slow
def test_compare_within_threshold_is_never_different(capsys, history, manifest, store):
    result = bench(capsys, history, manifest, store, "--commit", history["base"], "--commit", history["docs"],
                   "--profile", "baseline")  # fmt: skip
    a, b = (r["run"] for r in result.json["runs"])
    rows = run_cli(capsys, "compare", str(a), str(b), "--repo", history.path, "--store", store, "--json").json
    calls = {r["metric"]: r["verdict"]["verdict"] for r in rows["metrics"]}
    assert set(calls) == {"output_tok_s", "output_tok_s_printed", "verify_ms"}
    assert "different" not in calls.values()


@pytest.mark.slow
def test_bisect_finds_the_planted_commit_skipping_the_unpatchable_one(capsys, history, manifest, store):
    result = run_cli(
        capsys, "bisect", "-m", manifest, "--repo", history.path, "--store", store, "--good", history["base"],
        "--bad", history["tip"], "--metric", "output_tok_s", "--ratio", "0.9", "--profile", "eagle3", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    data = result.json
    assert set(data) == {
        "version", "command", "metric", "profile", "criterion", "good", "bad", "skipped", "steps", "first_bad",
        "last_good", "maybe", "error", "allow_dirty", "search", "gpu_hygiene", "pruning", "suspects",
    }  # fmt: skip
    assert data["first_bad"]["subject"] == SLOW_SUBJECT
    assert data["first_bad"]["commit"] == history["slow"]
    assert [s["commit"] for s in data["skipped"]] == [history["break-model"]]
    benchmarked = {s["commit"] for s in data["steps"]}
    assert history["break-model"] not in benchmarked
    assert {s["verdict"] for s in data["steps"]} == {"good", "bad"}
    stored = run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--json").json["runs"]
    assert [r["run"] for r in stored] == [s["run"] for s in data["steps"]]  # every step is stored
    assert history["break-model"] not in {r["commit"] for r in stored}


@pytest.mark.slow
def test_bisect_with_absolute_threshold_on_a_lower_is_better_metric(capsys, history, manifest, store):
    result = run_cli(
        capsys, "bisect", "-m", manifest, "--repo", history.path, "--store", store, "--good", history["docs"],
        "--bad", history["docs-2"], "--metric", "verify_ms", "--max", "25", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.json["profile"] == "eagle3"  # the first profile
    assert result.json["first_bad"]["commit"] == history["slow"]


def test_bench_usage_errors(capsys, history, manifest, store):
    def cli(verb, *args):
        result = run_cli(capsys, verb, "-m", manifest, "--repo", history.path, "--store", store, *args)
        assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err
        return result.err

    assert "--set markr=...: 'markr' is not a variable" in cli("bench", "--set", "markr=1")
    assert "no profile 'eagle'; did you mean 'eagle3'?" in cli("bench", "--profile", "eagle")
    base, tip, broken = history["base"], history["tip"], history["break-model"]
    err = cli("bisect", "--good", base, "--bad", tip, "--metric", "output_tok_s", "--min", "1", "--max", "2")
    assert "at most one of --min X, --max X, --ratio R" in err
    err = cli("bisect", "--good", base, "--bad", tip, "--metric", "output_tok_s", "--slots", "4")
    assert "the local executor runs one launch at a time (1 slot)" in err
    err = cli("bisect", "--good", broken, "--bad", tip, "--metric", "output_tok_s", "--min", "1")
    assert "cannot apply at --good" in err and "CLASS_NOT_FOUND" in err
    err = cli("bisect", "--good", tip, "--bad", base, "--metric", "output_tok_s", "--min", "1")
    assert "is not a first-parent descendant" in err
    assert "no metric 'tok_s'" in cli("bisect", "--good", base, "--bad", tip, "--metric", "tok_s", "--min", "1")


def test_bisect_refuses_a_criterion_that_cannot_hold_before_any_launch(capsys, history, manifest, store):
    """#47 item 6: `--ratio -0.5` was accepted; the hunt spent launches, then said BAD is not bad by it."""
    base, tip = history["base"], history["tip"]
    cases = {
        ("output_tok_s", "--ratio", "-0.5"): "--ratio -0.5: BAD/GOOD of a metric is never negative",
        ("output_tok_s", "--ratio", "0"): "--ratio 0: BAD/GOOD of a metric is never zero",
        ("output_tok_s", "--ratio", "nan"): "--ratio nan: not a finite number",
        ("output_tok_s", "--ratio", "1.2"): "GOOD against itself is 1, below 1.2 too, so GOOD would be bad",
        ("verify_ms", "--ratio", "0.9"): "verify_ms is better lower, so BAD is bad when BAD/GOOD is above R",
        ("output_tok_s", "--max", "80"): "--max X calls a launch above X bad, but output_tok_s is better higher",
        ("verify_ms", "--min", "20"): "--min X calls a launch below X bad, but verify_ms is better lower",
    }
    for (metric, option, value), said in cases.items():
        r = run_cli(capsys, "bisect", "-m", manifest, "--repo", history.path, "--store", store, "--good", base,
                    "--bad", tip, "--metric", metric, option, value, "--profile", "eagle3")  # fmt: skip
        assert r.code == 2 and r.err.count("\n") == 1 and said in r.err, (option, value, r.err)
    stored = run_cli(capsys, "runs", "--repo", history.path, "--store", store, "--json").json["runs"]
    assert stored == []  # nothing was launched


@pytest.mark.slow
def test_sigterm_ignored_gets_sigkill(capsys, history, tmp_path, store):
    manifest = write_bench_kit(tmp_path / "kit", bench=bench_table(stop_grace=0.5, repeat=1))
    result, run, pids = one(capsys, history, manifest, store, tmp_path, "--ignore-sigterm")
    assert result.code == 0, run
    assert run["outcome"] == "ok"
    assert_nothing_left(pids, run["vars"]["port"])


def test_progress_phases_default_store_and_worktree_root(history, manifest, tmp_path):
    from patchkit.bench.execution.session import Session
    from patchkit.git import Repo
    from patchkit.manifest import load_manifest

    repo = Repo.discover(history.path)
    seen: list[tuple[str, str]] = []
    session = Session.open(
        repo, [load_manifest(manifest)], store=None, worktree_root_dir=str(tmp_path / "wts"), sets={}, repeat=2
    )
    session.progress = lambda commit, profile, phase, detail: seen.append((phase, detail))
    with session.store:
        record = session.run(repo.commit(history["docs"]), "baseline")
    assert record.outcome == "ok"
    phases = list(dict.fromkeys(p for p, _ in seen))
    assert phases == [
        "preparing worktree", "applying", "guard", "reading provenance", "starting server", "waiting for health",
        "checking worker environments", "accounting for every file that ran", "client", "stopping server",
    ]  # fmt: skip
    assert [d for p, d in seen if p == "client"] == ["warmup 1/1", "run 1/2", "run 2/2"]
    assert all(d.endswith("of 20s") for p, d in seen if p == "waiting for health")
    assert (tmp_path / "wts" / history["docs"][:12]).is_dir()
    # The default store is in the common git dir: a linked worktree sees the same runs.
    assert session.store.path == history.path / ".git" / "patchkit" / "bench.sqlite"
    linked = Repo.discover(tmp_path / "wts" / history["docs"][:12])
    assert linked.common_dir == (history.path / ".git").resolve()


@pytest.mark.slow
def test_hand_edited_worktree_is_refused_and_the_next_commit_still_runs(
    capsys, history, manifest, store, tmp_path, monkeypatch
):
    # An HTTP proxy in patchkit's environment must not answer the loopback health checks.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    root = tmp_path / "wts"
    first = bench(capsys, history, manifest, store, "--commit", history["tip"], "--profile", "baseline",
                  "--worktree-root", root)  # fmt: skip
    assert first.json["runs"][0]["outcome"] == "ok", first.json["runs"][0]["reason"]
    model = root / history["tip"][:12] / "python/sglang/srt/model.py"
    model.write_text(model.read_text() + "# my experiment\n")
    result = bench(capsys, history, manifest, store, "--commit", history["tip"], "--commit", history["docs"],
                   "--profile", "baseline", "--worktree-root", root)  # fmt: skip
    assert result.code == 1
    refused, ok = result.json["runs"]
    assert refused["outcome"] == "refused"
    assert any("not patchkit's own" in d for d in refused["details"])
    assert any("python/sglang/srt/model.py" in d for d in refused["details"])
    assert ok["outcome"] == "ok" and ok["commit"]["sha"] == history["docs"]
    assert model.read_text().endswith("# my experiment\n")  # nothing the user had is lost
    rows = [r for r in result.json["table"] if r["metric"] == "output_tok_s"]
    assert rows[0]["ratio"] == 1.0  # the first commit with a value is the base


def test_unknown_placeholder_stops_before_anything(capsys, history, tmp_path):
    manifest = write_bench_kit(tmp_path / "kit", bench=bench_table(client="{python} client.py --port {prot}"))
    root = tmp_path / "wts"
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", tmp_path / "s.sqlite",
                     "--worktree-root", root)  # fmt: skip
    assert result.code == 2
    assert "bench.client: unknown placeholder {prot}; did you mean {port}?" in result.err
    assert not root.exists() and not (tmp_path / "s.sqlite").exists()


@pytest.mark.slow
def test_bench_refuses_exactly_when_the_guard_does(capsys, history, manifest, store, tmp_path, monkeypatch):
    """An untracked file in a reused worktree: apply keeps it, the guard's clean check refuses it."""
    root = tmp_path / "wts"
    marker = tmp_path / "marker"
    args = ("--commit", history["docs"], "--profile", "baseline", "--worktree-root", root, "--set", f"marker={marker}")
    assert bench(capsys, history, manifest, store, *args).json["runs"][0]["outcome"] == "ok"
    tree = root / history["docs"][:12]
    (tree / "notes.txt").write_text("my notes\n")
    marker.unlink()
    result = bench(capsys, history, manifest, store, *args)
    assert result.code == 1
    (run,) = result.json["runs"]
    assert run["outcome"] == "refused" and not marker.exists()  # nothing started
    assert run["reason"].startswith("the guard refused the patched tree (standin:clean;")
    assert any(d.startswith("standin: [clean] 1 change outside patchkit's edits: notes.txt (untracked)")
               for d in run["details"])  # fmt: skip
    (stored,) = run["guard"]["reports"]
    monkeypatch.setenv("PYTHONPATH", str(tree / "python"))  # the server's, as [bench].pythonpath gives it
    guard = run_cli(capsys, "guard", "-m", manifest, "--repo", tree, "--python", sys.executable, "--import", "sglang",
                    "--json")  # fmt: skip
    assert guard.code == 1
    assert [c["check"] for c in guard.json["checks"] if not c["ok"]] == ["clean"]
    assert [(c["check"], c["ok"]) for c in stored["checks"]] == [(c["check"], c["ok"]) for c in guard.json["checks"]]
    # Bench's own files (the scm version file, ignored) do not count; removing the stray file lets it run.
    (tree / "notes.txt").unlink()
    assert bench(capsys, history, manifest, store, *args).json["runs"][0]["outcome"] == "ok"


def test_import_check_runs_in_the_servers_environment(capsys, history, store, tmp_path):
    """Without [bench].pythonpath the server would not import the tree's sglang: the guard refuses."""
    kit = write_bench_kit(tmp_path / "kit", bench=bench_table(pythonpath=[]))
    marker = tmp_path / "marker"
    result = bench(capsys, history, kit, store, "--commit", history["docs"], "--profile", "baseline",
                   "--worktree-root", tmp_path / "wts", "--set", f"marker={marker}")  # fmt: skip
    (run,) = result.json["runs"]
    assert run["outcome"] == "refused" and not marker.exists()
    assert "standin:import:sglang" in run["reason"]
    assert any("[import:sglang] sglang is not importable by" in d for d in run["details"])


def test_a_reused_worktree_from_another_manifest_version_is_reapplied(capsys, history, store, tmp_path):
    """The guard refuses a record of another manifest version; bench owns its worktrees and re-applies."""
    root = tmp_path / "wts"
    args = ("--commit", history["docs"], "--profile", "baseline", "--worktree-root", root)
    first = write_bench_kit(tmp_path / "kit")
    assert bench(capsys, history, first, store, *args).json["runs"][0]["outcome"] == "ok"
    changed = write_bench_kit(tmp_path / "kit", bench=bench_table(repeat=1))  # same kit, new digest
    (run,) = bench(capsys, history, changed, store, *args).json["runs"]
    assert run["outcome"] == "ok", run["details"]
    record = run["guard"]["reports"][0]["checks"][2]
    assert record["check"] == "record" and record["details"]["manifest_digest"] == run["manifests"][0]["digest"]


def test_an_unowned_pth_in_the_servers_interpreter_refuses_and_bisect_names_it(capsys, history, tmp_path):
    """A ``.pth`` file that runs code at every start, owned by no distribution (CI's machine has one in its
    interpreter): the probe refuses the run before measurement, and bisect prints which file, not only why."""
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env)
    [site] = (env / "lib").glob("python3.*/site-packages")
    pth = site / "zz_unowned.pth"
    pth.write_text("import os\n")
    manifest = write_bench_kit(tmp_path / "kit", bench=bench_table(python=str(env / "bin" / "python")))
    store = tmp_path / "bench.sqlite"
    refused = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, "--commit",
                      history["base"], "--profile", "baseline")  # fmt: skip
    assert refused.code == 1
    assert "the probe found 1 problem before measurement" in refused.out
    assert "accept one you know about with [bench].allow_stray = [GLOB]" in refused.out
    assert f"STRAY {pth}: " in refused.out and "owned by none" in refused.out
    found = run_cli(
        capsys, "bisect", "-m", manifest, "--repo", history.path, "--store", store, "--good", history["base"],
        "--bad", history["tip"], "--metric", "output_tok_s", "--ratio", "0.9", "--profile", "baseline",
    )  # fmt: skip
    assert found.code == 1
    assert "NO RESULT: --good" in found.out
    assert [line for line in found.out.splitlines() if line.startswith(f"    STRAY {pth}: ")]
