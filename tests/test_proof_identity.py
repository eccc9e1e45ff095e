"""Process identity and accounting that can fail, with real processes: a stand-in server whose workers exec another
Python, pids reused and shared by two "hosts" (real UTS and pid namespaces, unshare) writing one probe directory, and
Python workers the probe never sees (-I, -S, -E, env={}) making a bench run "not proven", each named with why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench_helpers import bench_table, build_history, standin_python, write_bench_kit
from helpers import run_cli
from proof_env import SERVER, free_port, wait_healthy
from test_proof_probe import stop

from patchkit.proof import probe_env
from patchkit.proof.account import account
from patchkit.proof.check import env_reasons, stray_reasons
from patchkit.proof.digests import DigestCache
from patchkit.proof.records import local_key, read_probe_dir
from patchkit.proof.unprobed import live_processes, unprobed

TORCH_STANDIN = Path(__file__).resolve().parent / "standin" / "torch_standin"


def start(out: Path, *extra: str) -> subprocess.Popen[str]:
    port = free_port()
    env = probe_env({k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}, out)
    proc = subprocess.Popen(
        [standin_python(), str(SERVER), f"--port={port}", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    wait_healthy(port, proc)
    return proc


def until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_worker_that_execs_is_one_process_with_a_chain_of_two_images(tmp_path: Path) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    proc = start(out, "--workers=2", "--worker-exec")
    try:
        until(lambda: sum(1 for p in read_probe_dir(out) if p.exec_index == 1) == 2)
    finally:
        stop(proc)
    processes = read_probe_dir(out)
    workers = [p for p in processes if p.ppid == proc.pid]
    assert len(workers) == 4  # two processes, two images each
    by_pid: dict[int, list] = {}
    for p in workers:
        by_pid.setdefault(p.pid, []).append(p)
    for pid, images in by_pid.items():
        first, second = images
        assert (first.exec_index, second.exec_index) == (0, 1)
        assert first.ident == second.ident and first.start_ticks == second.start_ticks is not None
        assert "--worker-exec" in first.argv and "--worker-exec" not in second.argv  # what each image ran
        names = sorted(n for n in os.listdir(out) if n.startswith(f"probe-{pid}-"))
        assert len(names) == 2 and names[0].endswith(".1.jsonl") != names[1].endswith(".1.jsonl")
        host = os.uname().nodename
        assert all(f"-{host}-" in n for n in names)


def unshared(out: Path, hostname: str, args: str = "") -> subprocess.CompletedProcess[str]:
    """A probed Python as pid 1 of a fresh pid namespace, on a host named ``hostname`` (its own UTS namespace);
    ``args``: what it runs (default: a -c that prints its pid and host)."""
    env = probe_env({k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}, out)
    args = args or "-c 'import os; print(os.getpid(), os.uname().nodename)'"
    script = f"hostname {hostname} && exec {standin_python()} {args}"
    return subprocess.run(
        ["unshare", "--uts", "--pid", "--fork", "sh", "-c", script], env=env, capture_output=True, text=True
    )


def test_two_hosts_and_a_reused_pid_write_one_shared_probe_directory_apart(tmp_path: Path) -> None:
    out = tmp_path / "shared"
    out.mkdir()
    first = unshared(out, "node-a")
    if first.returncode != 0:
        pytest.skip(f"no namespaces here (unshare: {first.stderr.strip()})")
    second = unshared(out, "node-b")
    again = unshared(out, "node-a")  # node-a's pid 1 again: a reused pid, a later process
    assert [r.stdout.split() for r in (first, second, again)] == [["1", "node-a"], ["1", "node-b"], ["1", "node-a"]]
    processes = read_probe_dir(out)
    assert [(p.pid, p.host) for p in processes] == [(1, "node-a"), (1, "node-a"), (1, "node-b")]
    assert len({p.ident for p in processes}) == 3 and len(os.listdir(out)) == 3
    a1, a2 = (p for p in processes if p.host == "node-a")
    assert a1.start_ticks != a2.start_ticks and a1.exec_index == a2.exec_index == 0


def test_the_accounting_keeps_two_hosts_and_a_reused_pid_apart(tmp_path: Path) -> None:
    """Three processes, all pid 1 (node-a, node-b, node-a again), load one STRAY module from one shared probe
    directory: the accounting names three loaders, each with its host (and start, for node-a's reused pid).  Keyed
    by pid alone they were one "pid 1", with one process's name; and no table made from this machine's own
    processes (the libraries each mapped) may take them for its own pid 1."""
    out, code = tmp_path / "shared", tmp_path / "code"
    out.mkdir()
    code.mkdir()
    (code / "shared_mod.py").write_text("VALUE = 1\n")
    (code / "loader.py").write_text(  # loads the module, then joins a (one-rank, gloo) process group
        f"import sys\nimport shared_mod\nsys.path.insert(0, {str(TORCH_STANDIN)!r})\n"
        "import torch.distributed as dist\ndist.init_process_group('gloo', rank=0, world_size=1)\n"
    )
    runs = [unshared(out, host, f"{code / 'loader.py'} {host}") for host in ("node-a", "node-b", "node-a")]
    if runs[0].returncode != 0:
        pytest.skip(f"no namespaces here (unshare: {runs[0].stderr.strip()})")
    assert [r.returncode for r in runs] == [0, 0, 0], [r.stderr for r in runs]
    processes = read_probe_dir(out)
    assert [(p.pid, p.host) for p in processes] == [(1, "node-a"), (1, "node-a"), (1, "node-b")]
    accounting = account(processes, tree=None, cache=DigestCache(None))
    [stray] = [v for v in accounting.strays if v.path == str(code / "shared_mod.py")]
    assert stray.pids == (1,) and len(stray.processes) == 3 == len({p.ident for p in processes})
    assert stray.to_json()["processes"] == sorted(p.ident for p in processes)
    [line] = [r for r in stray_reasons(accounting, processes) if str(code / "shared_mod.py") in r]
    loaders = line.split("; loaded by ", 1)[1].split("), ")
    assert len(loaders) == 3, line
    assert sum(x.startswith(f"pid 1 on node-a ({code / 'loader.py'} node-a, started ") for x in loaders) == 2
    assert sum(x.startswith(f"pid 1 on node-b ({code / 'loader.py'} node-b") for x in loaders) == 1
    assert [local_key(p) for p in processes] == [None, None, None]  # not this machine's pid 1
    # a worker's missing variable at init_process_group names it the same way
    reasons = env_reasons(processes, {"NCCL_MIN_NCHANNELS": "4"})
    assert len(reasons) == 3
    assert sum(r.startswith(f"pid 1 on node-a ({code / 'loader.py'} node-a, rank 0, started ") for r in reasons) == 2
    assert sum(r.startswith(f"pid 1 on node-b ({code / 'loader.py'} node-b, rank 0): NCCL_MIN") for r in reasons) == 1


REUSED_PID = """
import json, os, subprocess, sys
from pathlib import Path
from patchkit.proof import probe_env
from patchkit.proof.records import local_key, read_probe_dir
from patchkit.proof.runproof import prove
from patchkit.proof.unprobed import live_processes

out, python = Path(sys.argv[1]), sys.argv[2]
env = probe_env({k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}, out)
subprocess.run(["unshare", "--pid", "--fork", python, "-c", "pass"], env=env, check=True)
[facts] = read_probe_dir(out)
live = [p for p in live_processes(1) if p.pid == 1]
proof = prove(out, live=live, tree=None, allow_stray=(), expected={}, when="healthy")
print(json.dumps({"file": [facts.pid, facts.start_ticks], "local": local_key(facts), "me": os.getpid(),
                  "live": [[p.pid, p.start_ticks] for p in live], "unprobed": list(proof.unprobed),
                  "libraries": len(proof.libraries)}))
"""


def test_a_probe_file_of_an_earlier_process_of_the_pid_proves_no_live_one(tmp_path: Path) -> None:
    """In a pid namespace of its own (so that its pid 1, a shell, can be read), a Python runs a probed Python as
    pid 1 of a nested namespace, then accounts for the live pid 1, the shell, against that file: same host, boot
    and pid, another start time.  Matched by pid alone, the file proved the shell: it was left out of the server's
    processes without a probe, and its libraries were given to the file's process."""
    out = tmp_path / "probe"
    out.mkdir()
    script = tmp_path / "reused.py"
    script.write_text(REUSED_PID)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}
    ran = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", 'python="$1"; shift; "$python" "$@"; exit $?',
         "sh", sys.executable, str(script), str(out), standin_python()],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if ran.returncode != 0 and "unshare" in ran.stderr and "Traceback" not in ran.stderr:
        pytest.skip(f"no namespaces here (unshare: {ran.stderr.strip()})")
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen["me"] != 1 and seen["file"][0] == 1 and seen["local"] == seen["file"]  # this host's pid 1, by file
    [[pid, ticks]] = seen["live"]
    assert pid == 1 and ticks != seen["file"][1]  # the live pid 1 is another process
    assert [line for line in seen["unprobed"] if line.startswith("pid 1 (sh -c ")], seen["unprobed"]
    assert seen["libraries"] == 0


def test_python_workers_the_probe_never_sees_are_named_with_why(tmp_path: Path) -> None:
    """The library behind bench's accounting: psutil's tree against the probe's files (-E and env={})."""
    found = {}
    for flags in (["--worker-flag=-E"], ["--worker-empty-env"], []):
        out = tmp_path / f"probe{len(found)}"
        out.mkdir()
        proc = start(out, "--workers=2", *flags)
        try:
            live = live_processes(proc.pid)
            wanted = 2 if flags else 3  # the server and its probed workers
            until(lambda out=out, wanted=wanted: len(read_probe_dir(out)) == wanted)
            probed: dict[int, set[int | None]] = {}
            for p in read_probe_dir(out):
                probed.setdefault(p.pid, set()).add(p.start_ticks)
            found[tuple(flags)] = unprobed(live, probed)
        finally:
            stop(proc)
    [e] = found[("--worker-flag=-E",)]
    assert "-E" in e.argv and e.why.startswith("started with -E")
    [empty] = found[("--worker-empty-env",)]
    assert empty.why.startswith("started with an empty environment")
    assert found[()] == []  # every Python process probed: nothing to name


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory):
    return build_history(tmp_path_factory.mktemp("identity") / "repo")


@pytest.mark.parametrize(
    ("flag", "why"),
    [("-I", "started with -I (isolated"), ("-S", "started with -S (no site module")],
)
def test_a_bench_run_with_an_unprobed_python_worker_is_not_proven(capsys, history, tmp_path, flag, why) -> None:
    table = bench_table(repeat=1)
    table["vars"] = {**table["vars"], "server_args": f"--workers 2 --worker-flag={flag}"}
    manifest = write_bench_kit(tmp_path / "kit", bench=table, profiles={})
    store = tmp_path / "bench.sqlite"
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, "--commit",
                     history["base"])  # fmt: skip
    assert result.code == 0, result.out + result.err  # measured: not refused, only not proven
    assert "ok, not proven" in result.out
    assert "1 Python process of the server ran without the probe" in result.out, result.out
    record = json.loads(run_cli(capsys, "show", "1", "--json", "--repo", history.path, "--store", store).out)
    proof = record["record"]["proof"]
    assert proof["state"] == "not proven"
    [item] = proof["unaccounted"]
    assert flag in item["argv"] and item["why"].startswith(why)
    assert any(line.startswith(f"pid {item['pid']} (") and why in line for line in proof["reasons"])
    shown = run_cli(capsys, "show", "1", "--processes", "--repo", history.path, "--store", store).out
    assert f"  pid {item['pid']} ran without the probe: {item['why']}" in shown
    assert "  proof: not proven (1 Python process of the server ran without the probe" in shown


def test_a_bench_run_whose_workers_exec_is_proven_and_shows_the_chain(capsys, history, tmp_path) -> None:
    table = bench_table(repeat=1)
    table["vars"] = {**table["vars"], "server_args": "--workers 2 --worker-exec"}
    manifest = write_bench_kit(tmp_path / "kit", bench=table, profiles={})
    store = tmp_path / "bench.sqlite"
    result = run_cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, "--commit",
                     history["base"])  # fmt: skip
    assert result.code == 0, result.out + result.err
    doc = json.loads(run_cli(capsys, "show", "1", "--json", "--repo", history.path, "--store", store).out)
    assert doc["header"]["proof"]["state"] == "proven"
    chains: dict[str, list[int]] = {}
    for p in doc["processes"]["probed"]:
        chains.setdefault(p["ident"], []).append(p["exec_index"])
    assert sorted(chains.values()) == [[0], [0, 1], [0, 1]]  # the server; each worker and its exec
    shown = run_cli(capsys, "show", "1", "--processes", "--repo", history.path, "--store", store).out
    assert sum(1 for line in shown.splitlines() if "  exec 1: child" in line) == 2
