"""Server-log metrics of short client runs: a server that logs late is not a missing metric.

The stand-in server's ``--log-every SECONDS`` prints ``stand-in stats: served=N`` on a timer, only after
/generate requests came (N: how many since its last line), as a server that reports its numbers on a
schedule does: the line about a client run that takes a few milliseconds comes well after its last
response.  A run's lines are those from its start to the next run's start (the last run's: to the
server's stop), and the next run waits for that line ([bench].log_wait), so every measured run has its
own line, and only its own: served equals the requests of one client run.
"""

from __future__ import annotations

import time

from bench_helpers import bench_table, build_history, write_bench_kit
from helpers import run_cli

PROMPTS = 3  # /generate requests of one client run: each run's own line says served=3
LATE = {"name": "served", "source": "server-log", "regex": [r"stand-in stats: served=(\d+)"], "aggregate": "sum"}


def late_kit(root, *, every: float, log_wait: float | None = None):
    table = bench_table(warmup=1, repeat=3, log_wait=log_wait)  # None: the default (1 s)
    table["client"] = table["client"].replace("--num-prompts 2", f"--num-prompts {PROMPTS}")
    table["vars"] = {**table["vars"], "server_args": f"--workers 1 --log-every {every}"}
    return write_bench_kit(root, bench=table, profiles={"late": {}}, metrics=[{**LATE, "better": "higher"}])


def test_a_server_that_logs_after_each_short_run_gives_every_run_its_own_line(capsys, tmp_path):
    history = build_history(tmp_path / "repo")
    kit = late_kit(tmp_path / "kit", every=0.4)
    r = run_cli(
        capsys, "bench", "-m", kit, "--repo", history.path, "--store", tmp_path / "s.sqlite",
        "--commit", history["tip"], "--json",
    )  # fmt: skip
    run = r.json["runs"][0]
    assert run["outcome"] == "ok", (run["outcome"], run["reason"], run["missing"])
    # Each run's own line, whole: not lost between runs, not taken for the next one.
    assert run["samples"]["served"] == [float(PROMPTS)] * 3, run["samples"]
    assert r.code == 0


def test_log_wait_bounds_the_wait_and_a_line_that_never_comes_is_missing(capsys, tmp_path):
    """With a timer slower than log_wait, the line does not come in time: the run is metric-missing (never 0),
    after waiting about log_wait per run, not for ever."""
    history = build_history(tmp_path / "repo")
    kit = late_kit(tmp_path / "kit", every=30, log_wait=0.3)
    started = time.monotonic()
    r = run_cli(
        capsys, "bench", "-m", kit, "--repo", history.path, "--store", tmp_path / "s.sqlite",
        "--commit", history["tip"], "--json",
    )  # fmt: skip
    took = time.monotonic() - started
    run = r.json["runs"][0]
    assert run["outcome"] == "metric-missing" and run["samples"]["served"] == [None, None, None]
    assert r.code == 1 and took < 25, took
