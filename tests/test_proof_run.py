"""`patchkit run --probe -m M -- CMD`: every file the command's Python processes ran, accounted for after it exits."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import py_compile
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers import make_repo, patchkit_script
from histories import MODEL_V1, write_manifest
from proof_env import make_venv, site_packages, wheels, write_source

from patchkit.proof.account import Accounting
from patchkit.proof.jitcache import jit_caches

BENCH = """import multiprocessing as mp
import sys

import alpha.core
import torch.distributed as dist

sys.path.insert(0, ".")
import pkg.model  # the tree's patched file


def rank(r):
    dist.init_process_group(backend="gloo", rank=r, world_size=1)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=rank, args=(0,), name="scheduler_TP0")
    p.start()
    p.join()
    print("bench done", alpha.core.answer())
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("run-venv") / "venv", wheels(tmp_path_factory.mktemp("wheels")))


def run_probe(
    repo: Path, manifest: Path, python: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [patchkit_script(), "run", "-m", str(manifest), "--apply", "--probe", *extra, "--", str(python), "bench.py"],
        cwd=repo,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.slow
def test_run_probe_accounts_for_tree_dist_and_stdlib_and_refuses_an_edited_dist_file(
    venv: Path, tmp_path: Path
) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1, "bench.py": BENCH},
    )
    manifest = write_manifest(tmp_path / "kit")
    ok = run_probe(repo, manifest, venv)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout == "bench done 42\n"
    line = next(x for x in ok.stderr.splitlines() if x.startswith("files that ran:"))
    assert "tree" in line and "dist" in line and "stdlib" in line and line.endswith("; 0 STRAY"), line
    assert "scheduler_TP0" in ok.stderr  # its init_process_group, in the table

    core = site_packages(venv) / "alpha" / "core.py"
    original = core.read_text()
    write_source(core, original.replace("41", "40"))
    try:
        refused = run_probe(repo, manifest, venv)
        allowed = run_probe(repo, manifest, venv, "--allow-stray", "*/site-packages/alpha/*")
    finally:
        write_source(core, original)
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout == "bench done 41\n"  # CMD ran and its output passed through
    stray = [x for x in refused.stderr.splitlines() if str(core) in x]
    assert stray and "edited" in stray[0] and "alpha-dist 1.0" in refused.stderr
    assert "patchkit run --probe: 1 STRAY file ran; exit 1 (CMD exited 0)" in refused.stderr
    assert allowed.returncode == 0 and "(1 more allowed by allow_stray)" in allowed.stderr


def _pyc_taken_for(core: Path, compiled_text: str, source_text: str) -> Path:
    """``core``'s ``.pyc`` compiled from ``compiled_text``, then ``source_text`` (same size) written within the
    same second: Python takes the ``.pyc`` as fresh (size and whole-second mtime match) and runs its code."""
    assert len(compiled_text) == len(source_text)
    second = int(time.time()) - 100
    pyc = Path(importlib.util.cache_from_source(str(core)))
    core.write_text(compiled_text)
    os.utime(core, ns=(second * 10**9 + 10, second * 10**9 + 10))
    py_compile.compile(str(core), cfile=str(pyc), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    os.utime(pyc, ns=(second * 10**9 + 20, second * 10**9 + 20))
    core.write_text(source_text)
    os.utime(core, ns=(second * 10**9 + 30, second * 10**9 + 30))
    return pyc


@pytest.mark.slow
def test_a_stale_pyc_that_ran_in_place_of_a_clean_source_is_a_stray(venv: Path, tmp_path: Path) -> None:
    """The source hashes equal to its RECORD, but Python ran bytecode of other code: the proof must say so."""
    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1, "bench.py": BENCH},
    )
    manifest = write_manifest(tmp_path / "kit")
    core = site_packages(venv) / "alpha" / "core.py"
    original = core.read_text()
    try:
        pyc = _pyc_taken_for(core, original.replace("41", "40"), original)
        stale = run_probe(repo, manifest, venv)
        _pyc_taken_for(core, original, original)  # the same code: a touch, not a stale .pyc
        touched = run_probe(repo, manifest, venv)
    finally:
        write_source(core, original)
    assert stale.stdout == "bench done 41\n"  # the old bytecode ran, though the file says 41
    assert stale.returncode == 1, stale.stderr
    [line] = [x for x in stale.stderr.splitlines() if str(core) in x and "STRAY" in x]
    assert f"stale bytecode: {pyc} holds other code than this file" in line
    assert touched.stdout == "bench done 42\n"
    assert touched.returncode == 0, touched.stderr


def test_run_probe_says_not_proven_when_the_probe_failed(venv: Path, tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1, "bench.py": BENCH},
    )
    manifest = write_manifest(tmp_path / "kit")
    failed = run_probe(repo, manifest, venv, env={"PATCHKIT_PROBE_FAULT": "import"})
    assert failed.returncode == 0 and failed.stdout == "bench done 42\n", failed.stderr
    lines = failed.stderr.splitlines()
    # one line per process (the first error and how many more), not one per module the probe failed on
    shown = [x for x in lines if x.startswith("probe failed in pid ") and "more probe error" in x]
    assert len(shown) == 3 and any("(scheduler_TP0; " in x for x in shown)  # bench.py, the resource tracker, TP0
    assert "patchkit run --probe: not proven: the probe failed in 3 processes, so what it saw is incomplete" in lines


RANKS = """import ctypes
import multiprocessing as mp
import os
import sys
import time

import torch.distributed as dist


def rank(r, lib):
    if r == 1:
        os.environ["NCCL_MIN_NCHANNELS"] = "8"  # after start-up: the start environment says 4
    ctypes.CDLL(lib)  # as pynccl loads its libnccl
    dist.init_process_group(backend="nccl", rank=r, world_size=2)
    time.sleep(1.5)  # alive long enough for a sample of its mapped libraries


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank, args=(r, sys.argv[1]), name=f"scheduler_TP{r}") for r in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("ranks done")
"""

BENCH_TABLE = """
[bench]
python = "python3"
server = "python3 -c pass"
health = "http://127.0.0.1:9/health"
client = "python3 -c pass"
env = {NCCL_MIN_NCHANNELS = "4", HF_TOKEN = "{token}", SERVER_PORT = "{port}"}
vars = {token = "hf_run_secret_7171"}

[[bench.metric]]
name = "x"
source = "stdout"
regex = ["x=([0-9.]+)"]
better = "higher"
"""


@pytest.mark.slow
def test_run_probe_checks_bench_env_at_init_lists_mapped_libraries_and_reads_nccls_lines(
    venv: Path, tmp_path: Path
) -> None:
    """The manifest's [bench].env at init_process_group, the libnccl each process mapped, NCCL's own lines from
    CMD's output (which passes through unchanged), for a user's own command."""
    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1, "ranks.py": RANKS},
    )
    manifest = write_manifest(tmp_path / "kit")
    manifest.write_text(manifest.read_text() + BENCH_TABLE)
    lib = tmp_path / "nccl" / "libnccl.so.2"
    lib.parent.mkdir()
    shutil.copy(next(p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1")
                     if os.path.exists(p)), lib)  # fmt: skip
    env = {"NCCL_DEBUG": "INFO", "NCCL_MIN_NCHANNELS": "4", "HF_TOKEN": "hf_run_secret_7171"}
    proc = subprocess.run(
        [patchkit_script(), "run", "-m", str(manifest), "--apply", "--probe", "--", str(venv), "ranks.py", str(lib)],
        cwd=repo, capture_output=True, stdin=subprocess.DEVNULL, env={**os.environ, **env},
    )  # fmt: skip
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 1, err
    assert out == "ranks done\n"  # CMD's stdout, unchanged
    nccl = [x for x in err.splitlines() if " NCCL INFO " in x]
    assert len([x for x in nccl if x.endswith("NCCL INFO NCCL_MIN_NCHANNELS set by environment to 8.")]) == 1
    assert len([x for x in nccl if x.endswith("NCCL INFO NCCL_MIN_NCHANNELS set by environment to 4.")]) == 1
    lines = err.splitlines()
    tp1 = next(x for x in lines if "(scheduler_TP1, rank 1): NCCL_MIN_NCHANNELS at init_process_group" in x)
    assert tp1.endswith("expected '4', found '8' (it started with '4')")
    assert not any("scheduler_TP0, rank 0)" in x for x in lines)  # HF_TOKEN equal in both, NCCL_MIN 4 in TP0
    assert "[bench].env SERVER_PORT is not checked: its value needs a placeholder only bench sets" in lines
    assert "patchkit run --probe: 1 process without [bench].env's value at init_process_group; exit 1" in err
    digest = hashlib.sha256(lib.read_bytes()).hexdigest()[:16]
    mapped = [x for x in lines if str(lib) in x and digest in x]
    assert {x.split()[1] for x in mapped} == {"scheduler_TP0", "scheduler_TP1"}, err
    versions = [
        x
        for x in lines
        if x.split()[1:3] in (["scheduler_TP0", "2.27.5+cuda12.9"], ["scheduler_TP1", "2.27.5+cuda12.9"])
    ]
    assert len(versions) == 2 and any("NCCL_MIN_NCHANNELS=8" in x for x in versions), err
    assert "hf_run_secret_7171" not in err


JIT = """import hashlib
import importlib.util
import os
import sys

sys.path.insert(0, ".")
import pkg.model  # the tree's patched file

# As Triton builds a launcher: source hashed into the cache directory, then loaded back by path.
source = "def launch():\\n    return 'launched'\\n"
root = os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.environ["HOME"], ".triton", "cache")
where = os.path.join(root, hashlib.sha256(source.encode()).hexdigest()[:16])
os.makedirs(where, exist_ok=True)
path = os.path.join(where, "launcher.py")
with open(path, "w") as f:
    f.write(source)
spec = importlib.util.spec_from_file_location("launcher", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.launch())
"""


@pytest.mark.parametrize("where", ["TRITON_CACHE_DIR", "HOME"])
def test_code_a_jit_compiler_generates_and_loads_by_path_is_generated_not_stray(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Triton loads its compiled launchers from its cache with spec_from_file_location: the probe records them,
    and they are outside every root, so each real run would be refused unless they are known as generated."""
    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1, "bench.py": JIT},
    )
    manifest = write_manifest(tmp_path / "kit")
    if where == "TRITON_CACHE_DIR":
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    else:  # Triton's default: ~/.triton/cache
        monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
        monkeypatch.delenv("TRITON_HOME", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
    proc = run_probe(repo, manifest, venv)
    assert proc.stdout == "launched\n"
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("files that ran:"))
    assert "1 generated" in line and line.endswith("; 0 STRAY"), line


def test_jit_cache_directories_follow_the_servers_environment(tmp_path: Path) -> None:
    home, tmp = str(tmp_path / "h"), str(tmp_path / "t")
    found = {c.name: c.root for c in jit_caches({"HOME": home, "USER": "kimi", "TMPDIR": tmp})}
    assert found == {
        "Triton": f"{home}/.triton/cache",
        "TorchInductor": f"{tmp}/torchinductor_kimi",
        "torch extensions": f"{home}/.cache/torch_extensions",
        "FlashInfer": f"{home}/.cache/flashinfer",
    }
    named = {
        "HOME": home, "USER": "kimi", "TRITON_HOME": "/scratch/t", "TORCHINDUCTOR_CACHE_DIR": "/scratch/i",
        "XDG_CACHE_HOME": "/scratch/xdg", "FLASHINFER_WORKSPACE_BASE": "/scratch/f",
    }  # fmt: skip
    found = {c.name: c.root for c in jit_caches(named)}
    assert found["Triton"] == "/scratch/t/.triton/cache" and found["TorchInductor"] == "/scratch/i"
    assert found["torch extensions"] == "/scratch/xdg/torch_extensions"
    assert found["FlashInfer"] == "/scratch/f/.cache/flashinfer"
    assert {c.name: c.root for c in jit_caches({**named, "TRITON_CACHE_DIR": "/x/tc"})}["Triton"] == "/x/tc"


@pytest.mark.slow
def test_run_probe_and_bench_share_one_proof_pipeline(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """run --probe's verdict is prove()'s at stop, the call bench makes on its server: the same reasons (every
    STRAY in bench's words, with who loaded it, then each [bench].env value lacking at init_process_group),
    the same accounting and doubts, and the same digest cache (one scope per tree, whichever verb proves it)."""
    from patchkit.bench.execution.probed import ProbeOptions, expected_env, run_probed
    from patchkit.git import Repo
    from patchkit.manifest import load_manifest
    from patchkit.proof.account import TreeFacts
    from patchkit.proof.runproof import proof_cache, prove

    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1, "bench.py": BENCH},
    )
    manifest = write_manifest(tmp_path / "kit")
    manifest.write_text(manifest.read_text() + BENCH_TABLE)
    bench = load_manifest(str(manifest)).bench
    assert bench is not None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(repo)
    env = {k: v for k, v in os.environ.items() if k != "NCCL_MIN_NCHANNELS"}  # TP0 lacks [bench].env's value
    env["HF_TOKEN"] = "hf_run_secret_7171"
    core = site_packages(venv) / "alpha" / "core.py"
    original = core.read_text()
    write_source(core, original.replace("41", "40"))
    probe_dir = tmp_path / "probe"
    try:
        with Repo.discover(repo) as git_repo:
            commit = git_repo.commit("HEAD").sha
            done = run_probed(
                [str(venv), "bench.py"], env, git_repo=git_repo, commit=commit,
                probe=ProbeOptions(str(probe_dir), ()), bench=bench,
            )  # fmt: skip
            tree = TreeFacts.of(git_repo, repo, commit)
            expected, skipped = expected_env(bench, repo)
            # what job._prove asks at stop, on the probe's files this run kept
            again = prove(probe_dir, live=[], tree=tree, allow_stray=(), expected=expected, when="stop",
                          generated=jit_caches(env))  # fmt: skip
    finally:
        write_source(core, original)
    assert done.code == 0 and capfd.readouterr().out == "bench done 41\n"
    proof = done.proof
    assert proof.when == "stop" and proof.unaccounted == () and proof.unprobed == ()
    assert (proof.reasons, proof.doubts) == (again.reasons, again.doubts)
    assert proof.accounting == again.accounting, accounting_diff(proof.accounting, again.accounting)
    stray, lacking = proof.reasons
    assert stray.startswith(f"STRAY {core} [alpha-dist 1.0]: ") and "; loaded by pid " in stray and "bench.py" in stray
    assert "(scheduler_TP0, rank 0): NCCL_MIN_NCHANNELS at init_process_group: expected '4', found None" in lacking
    assert done.skipped == tuple(skipped) == ("SERVER_PORT",)
    assert proof_cache(tree, probe_dir).file is not None and proof_cache(tree, probe_dir).file.exists()
    assert [p.name for p in (tmp_path / "cache" / "patchkit" / "digests").iterdir()] == [
        proof_cache(tree, probe_dir).file.name
    ]


def accounting_diff(a: Accounting, b: Accounting) -> str:
    """What differs between two accountings, field by field and file by file: a failure's message that names the
    difference (pytest's own cuts a tuple of hundreds of verdicts off before it)."""
    lines = [
        f"{name}: {getattr(a, name)!r} != {getattr(b, name)!r}"
        for name in ("distributions", "editable_commits", "allow_stray")
        if getattr(a, name) != getattr(b, name)
    ]
    left, right = {v.path: v for v in a.verdicts}, {v.path: v for v in b.verdicts}
    lines += [
        f"{p}: {left.get(p)!r} != {right.get(p)!r}"
        for p in sorted(left.keys() | right.keys())
        if left.get(p) != right.get(p)
    ]
    if [v.path for v in a.verdicts] != [v.path for v in b.verdicts]:
        lines.append("the verdicts' order differs")
    return "\n".join(lines)


LEAVES = """import os
import subprocess
import sys

# a probed child that outlives this process by SECONDS, as multiprocessing's resource tracker does by a moment
token = [os.environ["HF_TOKEN"]] if "HF_TOKEN" in os.environ else []  # a secret on its command line
subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(SECONDS)", *token],
    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
print("main done")
"""


def _leave_a_child(venv: Path, tmp_path: Path, seconds: float) -> tuple[Path, Path]:
    repo = make_repo(
        tmp_path / "repo",
        {"README.md": "upstream\n", "pkg/__init__.py": "", "pkg/model.py": MODEL_V1,
         "bench.py": LEAVES.replace("SECONDS", str(seconds))},
    )  # fmt: skip
    return repo, write_manifest(tmp_path / "kit")


@pytest.mark.slow
def test_run_probe_waits_for_a_process_cmd_left_running_before_it_proves(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proof is made on final files: a probed process that outlives CMD by a second has written its exit
    record by then, so a proof made again on the same files is the same (it once differed under load)."""
    from patchkit.bench.execution.probed import ProbeOptions, run_probed
    from patchkit.git import Repo
    from patchkit.proof.account import TreeFacts
    from patchkit.proof.records import read_probe_dir
    from patchkit.proof.runproof import prove

    repo, _manifest = _leave_a_child(venv, tmp_path, 1.0)
    monkeypatch.chdir(repo)
    probe_dir = tmp_path / "probe"
    with Repo.discover(repo) as git_repo:
        commit = git_repo.commit("HEAD").sha
        done = run_probed([str(venv), "bench.py"], dict(os.environ), git_repo=git_repo, commit=commit,
                          probe=ProbeOptions(str(probe_dir), ()))  # fmt: skip
        again = prove(probe_dir, live=[], tree=TreeFacts.of(git_repo, repo, commit), allow_stray=(), expected={},
                      when="stop")  # fmt: skip
    assert done.code == 0 and done.outlived == ()
    assert len(done.proof.processes) == 2 and all(p.exited for p in done.proof.processes)
    assert done.proof.processes == tuple(read_probe_dir(probe_dir))
    assert done.proof.accounting == again.accounting, accounting_diff(done.proof.accounting, again.accounting)


@pytest.mark.slow
def test_run_probe_names_a_process_still_running_after_the_wait_and_is_not_proven(venv: Path, tmp_path: Path) -> None:
    repo, manifest = _leave_a_child(venv, tmp_path, 60.0)
    started = time.monotonic()
    result = run_probe(repo, manifest, venv, env={"HF_TOKEN": "hf_left_child_4242"})
    waited = time.monotonic() - started
    lines = result.stderr.splitlines()
    [left] = [x for x in lines if " was still running 5 s after CMD exited" in x]
    pid = int(left.split()[1])
    try:
        assert result.returncode == 0 and result.stdout == "main done\n", result.stderr
        assert (
            left.endswith(": what it ran after the proof is not in it")
            and " -c 'import time; time.sleep(60.0)' <redacted>)" in left
        )
        assert (
            "patchkit run --probe: not proven: 1 process of CMD still ran when the proof was made, so what ran after "
            "it is not in it; stop them before CMD exits (join or wait for them)" in lines
        )
        assert waited >= 5.0 and "hf_left_child_4242" not in result.stdout + result.stderr
    finally:
        os.kill(pid, 9)


def test_started_under_finds_a_runs_processes_by_their_probe_dir_and_leaves_out_zombies(tmp_path: Path) -> None:
    """What ``outliving`` waits for: a process (Python or not) started with this run's PATCHKIT_PROBE_DIR, still
    running; not one of another run's directory, nor one that has ended but is not reaped yet (a zombie)."""
    from patchkit.proof.unprobed import started_under

    ours, other = tmp_path / "probe", tmp_path / "other"
    env = {**os.environ, "PATCHKIT_PROBE_DIR": str(ours)}
    live = subprocess.Popen(["sleep", "30"], env=env)
    elsewhere = subprocess.Popen(["sleep", "30"], env={**os.environ, "PATCHKIT_PROBE_DIR": str(other)})
    ended = subprocess.Popen(["true"], env=env)
    try:
        deadline = time.monotonic() + 10
        while ended.pid in {p.pid for p in started_under(ours)} and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(p.pid, p.argv) for p in started_under(ours)] == [(live.pid, ("sleep", "30"))]
        assert ended.poll() is not None  # reaped only now: until then it was a zombie, and left out
    finally:
        for proc in (live, elsewhere):
            proc.kill()
            proc.wait()
    assert started_under(ours) == []
