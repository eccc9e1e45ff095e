"""Benchmark: what `patchkit guard` costs before every benchmark run.

Builds the demo's SGLang-shaped history (``patchkit.demo.sglang``), applies
the kimi-k25-eagle3 manifest at a commit that needs it (so the guard has a
record and a patched file to verify), then times, interleaved, in one run:

  (a) `patchkit guard -m kimi-k25-eagle3`, warm (after one untimed run);
  (b) the floor: `patchkit --help` plus `git status --porcelain`;
  (c) `patchkit guard ... --python PY --import sglang` (one more interpreter
      start: reported separately, against `PY -c pass`);
  (d) `patchkit status`, which evaluates the same manifest on the same tree,
      for reference.

Each figure is the median of --runs runs.  "Warm" includes Python's bytecode
cache: PYTHONDONTWRITEBYTECODE is dropped from the timed commands' environment.  Target: (a)/(b) <= 2.  Only the
ratios are meant to be compared between machines.

    python benchmarks/bench_guard.py [--runs 21] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchkit.demo.history import git_env


def compile_bytecode() -> None:
    """Write patchkit's bytecode first, as pip does at install: with PYTHONDONTWRITEBYTECODE set
    (or a source newer than its .pyc), every timed run would compile the changed modules again."""
    import compileall

    import patchkit

    compileall.compile_dir(str(Path(patchkit.__file__).parent), quiet=1)


MANIFEST = "kimi-k25-eagle3"


def patchkit() -> str:
    candidate = Path(sys.executable).parent / "patchkit"
    return str(candidate) if candidate.exists() else (shutil.which("patchkit") or "patchkit")


def timed(cmds: list[list[str]], cwd: Path, env: dict[str, str], expect: int = 0) -> float:
    """Wall time of running ``cmds`` one after the other."""
    start = time.perf_counter()
    for cmd in cmds:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env)
        if proc.returncode != expect:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-400:]}")
    return time.perf_counter() - start


def prepare(work: Path) -> Path:
    from patchkit.demo.sglang import build_sglang_history
    from patchkit.engine.check import check_range
    from patchkit.engine.commit_apply import apply_at_commit
    from patchkit.git import Repo
    from patchkit.manifest import load_manifest
    from patchkit.results import Status

    path = work / "sglang"
    build_sglang_history(path)
    manifest = load_manifest(MANIFEST)
    report = check_range(manifest, Repo.discover(path), ranges=["v0.5.8..main"])
    needs = [row.commit for row in report.commits if any(r.status is Status.APPLY for r in row.results)]
    applied = apply_at_commit(manifest, Repo.discover(path), needs[-1].sha)
    if applied.refused or not applied.written:
        raise SystemExit("could not prepare a patched tree")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--keep", metavar="DIR", help="build in DIR (must not exist) and keep it")
    args = parser.parse_args()
    compile_bytecode()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="patchkit-bench-guard-"))
    if args.keep:
        work.mkdir(parents=True)
    try:
        repo = prepare(work)
        # The probed interpreter finds the tree's sglang through PYTHONPATH, as a server started
        # from this shell would (patchkit itself never imports it).
        env = dict(git_env(), PYTHONPATH=str(repo / "python"))
        # Warm means what a user's second run sees: compiled bytecode cached (some sandboxes and CI
        # images set PYTHONDONTWRITEBYTECODE, which makes every run compile patchkit from source).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        exe = patchkit()
        guard = [exe, "guard", "-m", MANIFEST, "--repo", str(repo)]
        probe = [*guard, "--python", sys.executable, "--import", "sglang"]
        status = [exe, "status", "-m", MANIFEST, "--repo", str(repo)]
        floor = [[exe, "--help"], ["git", "status", "--porcelain"]]
        timed([guard, probe, status, *floor], repo, env)  # warm: caches, page cache, pyc files
        a: list[float] = []
        b: list[float] = []
        c: list[float] = []
        d: list[float] = []
        start: list[float] = []
        for _ in range(args.runs):
            a.append(timed([guard], repo, env))
            b.append(timed(floor, repo, env))
            c.append(timed([probe], repo, env))
            d.append(timed([status], repo, env))
            start.append(timed([[sys.executable, "-c", "pass"]], repo, env))
        ma, mb, mc, md, ms = (statistics.median(x) for x in (a, b, c, d, start))
        print(f"demo history at {repo}, manifest {MANIFEST} applied; median of {args.runs} runs")
        print(f"(a) patchkit guard (warm)                    : {ma * 1000:7.1f} ms")
        print(f"(b) patchkit --help + git status --porcelain : {mb * 1000:7.1f} ms")
        print(f"(c) patchkit guard --python PY --import sglang: {mc * 1000:7.1f} ms (PY -c pass: {ms * 1000:.1f} ms)")
        print(f"(d) patchkit status (reference)              : {md * 1000:7.1f} ms")
        print()
        print(f"guard / floor = {ma / mb:.2f}x (target: at most 2x); guard / status = {ma / md:.2f}x")
        print(f"the import probe adds {(mc - ma) * 1000:.1f} ms = {(mc - ma) / ms:.2f}x one `PY -c pass` start")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
