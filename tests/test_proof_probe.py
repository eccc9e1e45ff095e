"""The probe in real processes: a stand-in server that spawns its workers (multiprocessing spawn) with a venv
holding the stand-in torch as a real distribution; psutil from outside; NCCL's own lines."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil
import pytest
from proof_env import SERVER, TORCH_VERSION, free_port, make_venv, site_packages, wait_healthy, wheels, write_source

from patchkit.proof import PROBE_SITE_DIR, probe_env
from patchkit.proof.account import account
from patchkit.proof.check import env_reasons, stray_reasons
from patchkit.proof.digests import DigestCache
from patchkit.proof.libs import mapped_libraries
from patchkit.proof.nccllog import nccl_host, parse_nccl_log
from patchkit.proof.records import read_probe_dir

SECRET = "hf_never_stored_4242"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("probe-venv")
    return make_venv(base / "venv", wheels(tmp_path_factory.mktemp("wheels")))


@pytest.fixture
def fake_nccl(tmp_path: Path) -> Path:
    """A real shared object under libnccl's name (pynccl loads libnccl.so.2 through ctypes the same way)."""
    source = next(
        p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1") if os.path.exists(p)
    )
    target = tmp_path / "nccl" / "libnccl.so.2"
    target.parent.mkdir()
    shutil.copy(source, target)
    return target


def start_server(python: Path, out: Path, *extra: str, env_extra: dict[str, str] | None = None, names=()):
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHKIT_PROBE", "NCCL_"))}
    base.update(env_extra or {})
    env = probe_env(base, out, env_names=names)
    cmd = [str(python), str(SERVER), f"--port={port}", "--workers=0", *extra]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    wait_healthy(port, proc)
    return proc, port


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM to the server's whole group (its spawned workers too), SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return out, err


def test_effective_env_differs_from_the_start_env_psutil_sees(venv: Path, tmp_path: Path, fake_nccl: Path) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    env_extra = {"NCCL_MIN_NCHANNELS": "4", "NCCL_DEBUG": "INFO", "HF_TOKEN": SECRET, "MY_API_KEY": SECRET}
    proc, _port = start_server(
        venv, out,
        "--spawn-workers=2", "--backend=nccl", "--main-env=CUDA_DEVICE_MAX_CONNECTIONS=8",
        "--worker-env=1:NCCL_MIN_NCHANNELS=8", f"--load-so={fake_nccl}",
        env_extra=env_extra, names=("NCCL_MIN_NCHANNELS", "HF_TOKEN", "MY_API_KEY"),
    )  # fmt: skip
    try:
        workers = [
            c for c in psutil.Process(proc.pid).children(recursive=True) if "--multiprocessing-fork" in c.cmdline()
        ]
        assert len(workers) == 2
        # From outside, both workers look right: /proc/PID/environ is the environment at exec.
        assert [w.environ().get("NCCL_MIN_NCHANNELS") for w in workers] == ["4", "4"]
        libs = {w.pid: mapped_libraries(w.pid, DigestCache(None)) for w in workers}
        processes = read_probe_dir(out)
    finally:
        _stdout, stderr = stop(proc)
    by_label = {p.label: p for p in processes}
    tp0, tp1 = by_label["scheduler_TP0"], by_label["scheduler_TP1"]
    assert {tp0.pid, tp1.pid} == {w.pid for w in workers}
    assert (tp0.rank, tp1.rank) == (0, 1)
    call = tp1.inits[0]
    assert (call.backend, call.world_size, call.torch, call.nccl) == ("nccl", 2, TORCH_VERSION, "2.27.5")
    # From inside, TP1 had NCCL_MIN_NCHANNELS=8 at init_process_group; both had the main process's edit.
    assert tp0.inits[0].env["NCCL_MIN_NCHANNELS"] == "4" and call.env["NCCL_MIN_NCHANNELS"] == "8"
    assert tp1.start_env["NCCL_MIN_NCHANNELS"] == "4"
    assert tp0.inits[0].env["CUDA_DEVICE_MAX_CONNECTIONS"] == call.env["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"
    main = next(p for p in processes if p.pid == proc.pid)
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in main.start_env and not main.inits
    reasons = env_reasons(processes, {"NCCL_MIN_NCHANNELS": "4"})
    assert reasons == [
        f"pid {tp1.pid} (scheduler_TP1, rank 1): NCCL_MIN_NCHANNELS at init_process_group: "
        "expected '4', found '8' (it started with '4')"
    ]
    # NCCL's own lines agree with the probe, per pid.
    nccl = parse_nccl_log(stderr.splitlines())
    rank0, rank1 = nccl[nccl_host(tp0.host), tp0.pid], nccl[nccl_host(tp1.host), tp1.pid]  # by host and pid
    assert rank1.env["NCCL_MIN_NCHANNELS"] == "8" and rank0.env["NCCL_MIN_NCHANNELS"] == "4"
    assert rank0.version == "2.27.5+cuda12.9"
    # The libnccl each worker mapped (ctypes), with its digest.
    digest = hashlib.sha256(fake_nccl.read_bytes()).hexdigest()
    for pid, found in libs.items():
        mapped = [lib for lib in found if lib.notable]
        assert [(lib.path, lib.size, lib.sha256) for lib in mapped] == [
            (str(fake_nccl), fake_nccl.stat().st_size, digest)
        ], pid
    # A secret is redacted inside the process and never written.
    assert call.env["HF_TOKEN"] == "<redacted>" and call.env["MY_API_KEY"] == "<redacted>"
    for path in out.iterdir():
        assert SECRET not in path.read_text(), path
    # Every file that ran: torch from its distribution, the stand-in server outside every root.
    accounting = account(processes, tree=None, cache=DigestCache(None))
    torch_files = [v for v in accounting.verdicts if "/torch/" in v.path]
    assert torch_files and {(v.category, v.owner) for v in torch_files} == {("dist", f"torch {TORCH_VERSION}")}
    assert [v.path for v in accounting.strays] == [str(SERVER)]
    assert "outside every known root" in stray_reasons(accounting, processes)[0]
    allowed = account(processes, tree=None, cache=DigestCache(None), allow_stray=[str(SERVER.parent) + "/*"])
    assert not allowed.strays and [v.path for v in allowed.allowed] == [str(SERVER)]
    assert accounting.counts["probe"] == 1 and accounting.counts["stdlib"] > 50


def test_an_edited_site_packages_file_is_a_stray_naming_its_distribution(venv: Path, tmp_path: Path) -> None:
    core = site_packages(venv) / "torch" / "cuda" / "nccl.py"
    original = core.read_text()
    out = tmp_path / "probe"
    out.mkdir()
    try:
        write_source(core, original.replace("(2, 27, 5)", "(2, 21, 5)"))
        proc, _port = start_server(venv, out, "--spawn-workers=1")
        processes = read_probe_dir(out)
        stop(proc)
    finally:
        write_source(core, original)
    assert processes[-1].inits[0].nccl == "2.21.5"
    accounting = account(processes, tree=None, cache=DigestCache(None))
    edited = [v for v in accounting.strays if v.path == str(core)]
    # restoring the content changed the mtime: "changed since loaded" is what a file rewritten after load gets
    assert edited and "changed since pid" in (edited[0].why or "")


def test_the_users_own_sitecustomize_still_runs_in_spawned_children(venv: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    marker = tmp_path / "marker"
    (user / "sitecustomize.py").write_text(
        f"import os\nwith open({str(marker)!r}, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\n"
        "os.environ.setdefault('USER_SITECUSTOMIZE', 'ran')\n"
    )
    out = tmp_path / "probe"
    out.mkdir()
    program = (
        "import multiprocessing as mp, os, sys\n"
        "def child(q):\n    q.put(os.environ.get('USER_SITECUSTOMIZE'))\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('spawn'); q = ctx.Queue(); p = ctx.Process(target=child, args=(q,)); p.start()\n"
        "    print(os.environ.get('USER_SITECUSTOMIZE'), q.get(timeout=60)); p.join()\n"
    )
    script = tmp_path / "prog.py"
    script.write_text(program)
    env = probe_env({**os.environ, "PYTHONPATH": str(user)}, out)
    assert env["PYTHONPATH"] == f"{PROBE_SITE_DIR}{os.pathsep}{user}"
    proc = subprocess.run([str(venv), str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran ran\n" and "probe failed" not in proc.stderr
    pids = {int(line) for line in marker.read_text().split()}
    processes = read_probe_dir(out)
    assert {p.pid for p in processes} <= pids and len(pids) >= 2
    chained = [f for p in processes for f in p.files if f.kind == "chained"]
    assert chained and {f.path for f in chained} == {str(user / "sitecustomize.py")}


@pytest.mark.parametrize("point", ["start", "import", "init"])
def test_a_fault_in_the_probe_never_changes_what_the_server_does(venv: Path, tmp_path: Path, point: str) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    proc, port = start_server(venv, out, "--spawn-workers=2", env_extra={"PATCHKIT_PROBE_FAULT": point})
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/generate", timeout=10) as reply:
            assert reply.status == 200
    finally:
        _stdout, stderr = stop(proc)
    failures = [line for line in stderr.splitlines() if line.startswith("probe failed in pid ")]
    assert failures and all(f"injected fault at {point}" in line for line in failures)
    processes = read_probe_dir(out)
    if point == "init":
        assert all(not p.inits for p in processes)
        assert sum(1 for p in processes for e in p.errors if "injected fault at init" in e) == 2


def test_a_process_stopped_after_its_probe_failed_is_named_by_what_it_was_then(venv: Path, tmp_path: Path) -> None:
    """A worker killed before its exit line (a server stopped) has no init record when the probe failed at
    init: the error line itself carries its names, so the proof says 'scheduler_TP7', not its argv."""
    out = tmp_path / "probe"
    out.mkdir()
    program = (
        "import multiprocessing, os\n"
        "multiprocessing.current_process().name = 'scheduler_TP7'\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group(backend='gloo', rank=0, world_size=1)\n"
        "os._exit(0)\n"  # no atexit: no exit line, as for a worker the server's stop killed
    )
    env = {**probe_env(os.environ, out), "PATCHKIT_PROBE_FAULT": "init"}
    proc = subprocess.run([str(venv), "-c", program], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "injected fault at init" in proc.stderr, proc.stderr
    [facts] = read_probe_dir(out)
    assert not facts.exited and not facts.inits and facts.errors
    assert facts.label == "scheduler_TP7"


def test_a_module_only_looked_up_is_not_a_file_that_ran(tmp_path: Path) -> None:
    """``importlib.util.find_spec`` asks whether a package is installed without running it (SGLang does so for
    optional kernels): a source module is recorded as its loader reads it, with the stat the loader checks the
    .pyc against, not when it is found."""
    out = tmp_path / "probe"
    out.mkdir()
    pkg = tmp_path / "lib"
    (pkg / "maybe").mkdir(parents=True)
    (pkg / "maybe" / "__init__.py").write_text("")
    (pkg / "maybe" / "kernel.py").write_text("VALUE = 1\n")
    (pkg / "used.py").write_text("VALUE = 2\n")
    program = (
        "import importlib.util\n"
        "print(importlib.util.find_spec('maybe.kernel') is not None)\n"  # imports the package, not kernel
        "import used\n"
    )
    env = probe_env(dict(os.environ, PYTHONPATH=str(pkg)), out)
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "True\n", proc.stderr
    [facts] = read_probe_dir(out)
    ran = {f.path: f for f in facts.files if f.kind == "module"}
    assert str(pkg / "maybe" / "kernel.py") not in ran
    assert str(pkg / "maybe" / "__init__.py") in ran
    used = ran[str(pkg / "used.py")]
    st = (pkg / "used.py").stat()
    assert (used.size, used.mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert [f.path for f in facts.files].count(str(pkg / "used.py")) == 1  # one record per module run


def test_a_spec_made_from_a_source_file_counts_once_and_only_when_it_runs(tmp_path: Path) -> None:
    """``spec_from_file_location`` of a ``.py`` is recorded as its code runs, like an import: a spec made and
    never executed is not a file that ran, and one executed is one record."""
    (tmp_path / "never.py").write_text("VALUE = 0\n")
    (tmp_path / "plug.py").write_text("VALUE = 1\n")
    program = (
        "import importlib.util\n"
        f"importlib.util.spec_from_file_location('never', {str(tmp_path / 'never.py')!r})\n"
        f"spec = importlib.util.spec_from_file_location('plug', {str(tmp_path / 'plug.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "print(module.VALUE)\n"
    )
    out = tmp_path / "probe"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", program], env=probe_env(os.environ, out), capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout == "1\n", proc.stderr
    [facts] = read_probe_dir(out)
    paths = [f.path for f in facts.files]
    assert str(tmp_path / "never.py") not in paths
    assert paths.count(str(tmp_path / "plug.py")) == 1


def test_an_unwritable_probe_dir_is_reported_and_the_program_runs(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    env = probe_env(os.environ, blocker)
    proc = subprocess.run(
        [sys.executable, "-c", "import json; print(json.dumps([1]))"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout == "[1]\n"
    assert proc.stderr.startswith("probe failed in pid ") and "NotADirectoryError" in proc.stderr, proc.stderr


def test_the_probe_adds_no_import_and_leaves_the_function_and_loader_as_they_were(venv: Path, tmp_path: Path) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    program = (
        "import sys\n"
        "before = sorted(m for m in sys.modules if not m.startswith(('_', 'encodings')))\n"
        "print('torch' in sys.modules, 'typing' in sys.modules)\n"
        "import torch.distributed as dist, torch.distributed.distributed_c10d as c10d\n"
        "print(dist.init_process_group.__name__, dist.init_process_group is c10d.init_process_group)\n"
        "print(type(dist.__loader__).__name__, type(dist.__spec__.loader).__name__)\n"
        "dist.init_process_group(backend='gloo', rank=0, world_size=1)\n"
        "print(dist.get_rank(), dist.get_world_size())\n"
    )
    plain = subprocess.run([str(venv), "-c", program], capture_output=True, text=True)
    probed = subprocess.run([str(venv), "-c", program], env=probe_env(os.environ, out), capture_output=True, text=True)
    assert probed.returncode == plain.returncode == 0, probed.stderr
    assert (
        probed.stdout
        == plain.stdout
        == ("False False\ninit_process_group True\nSourceFileLoader SourceFileLoader\n0 1\n")
    )
    [facts] = read_probe_dir(out)
    assert facts.inits[0].rank == 0 and facts.inits[0].backend == "gloo"


def test_a_forked_child_writes_its_own_file(tmp_path: Path) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    program = (
        "import os\nparent = os.getpid()\npid = os.fork()\n"
        "if pid == 0:\n    import email.parser\n    os._exit(0)\nos.waitpid(pid, 0)\nprint(parent, pid)\n"
    )
    env = probe_env(os.environ, out)
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True)
    parent, child = map(int, proc.stdout.split())
    facts = {p.pid: p for p in read_probe_dir(out)}
    assert facts[child].forked_from == parent and facts[parent].forked_from is None
    assert any(f.name == "email.parser" for f in facts[child].files)
    assert not any(f.name == "email.parser" for f in facts[parent].files)


def test_files_run_through_spec_from_file_location_and_run_path_are_recorded(venv: Path, tmp_path: Path) -> None:
    """Generated and plug-in code loaded outside the import statement is a file that ran, and is accounted for;
    the probe wraps the two functions only once the program imported their modules (it imports neither)."""
    (tmp_path / "plug.py").write_text("VALUE = 'plug'\n")
    (tmp_path / "script.py").write_text("RESULT = 'script'\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text("RESULT = 'app'\n")
    program = (
        "import sys\n"
        "print('importlib.util' in sys.modules, 'runpy' in sys.modules)\n"
        "import importlib.util, runpy\n"
        f"spec = importlib.util.spec_from_file_location('plug', {str(tmp_path / 'plug.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        f"print(module.VALUE, runpy.run_path({str(tmp_path / 'script.py')!r})['RESULT'],"
        f" runpy.run_path({str(tmp_path / 'app')!r})['RESULT'])\n"
        "print(importlib.util.spec_from_file_location.__name__, runpy.run_path.__name__)\n"
    )
    out = tmp_path / "probe"
    out.mkdir()
    plain = subprocess.run([str(venv), "-c", program], capture_output=True, text=True)
    probed = subprocess.run([str(venv), "-c", program], env=probe_env(os.environ, out), capture_output=True, text=True)
    assert probed.returncode == plain.returncode == 0, probed.stderr
    assert probed.stdout == plain.stdout == "False False\nplug script app\nspec_from_file_location run_path\n"
    assert "probe failed" not in probed.stderr
    [facts] = read_probe_dir(out)
    ran = {f.path for f in facts.files}
    expected = {str(tmp_path / "plug.py"), str(tmp_path / "script.py"), str(tmp_path / "app" / "__main__.py")}
    assert expected <= ran
    accounting = account([facts], tree=None, cache=DigestCache(None))
    assert {v.path for v in accounting.strays} == expected  # outside every known root: each named
