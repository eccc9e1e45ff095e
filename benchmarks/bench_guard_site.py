"""Benchmark: `patchkit guard --python PY --site` over a generated site directory of 30,000 files and 2 GB.

A venv (no pip) whose site-packages gets 30 distributions of 1,000 files
each: 990 small ``.py`` files and 10 large binary files per distribution
(``--gb`` in all), every one listed in its RECORD with its sha256, as pip
writes it.  Then, interleaved, ``--runs`` times each, on the same cores:

  cold:   ``patchkit guard --python PY --site`` with an empty cache directory
          (every file hashed, the cache written), against
          ``sha256sum`` over the same files (``xargs -0 -a LIST sha256sum``);
  warm:   the same command with the cache filled, against a bare stat walk of
          the same directory in the same interpreter (``os.scandir`` +
          ``stat`` of every file, in a fresh ``python -c``);
  in-process warm: ``check_site_dirs`` (the library call) against the walk
          alone, both in this process: the work without two interpreter starts.

Figures: medians of wall time and of CPU time (user+sys of the process tree,
from ``wait4``).  Targets: cold <= 1.3x sha256sum, warm <= 2x the stat walk.

    python benchmarks/bench_guard_site.py [--runs 3] [--files 30000] [--gb 2]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WALK = (
    "import os, sys\n"
    "stack=[sys.argv[1]]; n=0\n"
    "while stack:\n"
    "    with os.scandir(stack.pop()) as it:\n"
    "        for e in it:\n"
    "            if e.is_dir(follow_symlinks=False): stack.append(e.path)\n"
    "            else: e.stat(follow_symlinks=False); n+=1\n"
    "print(n)\n"
)


def patchkit() -> str:
    candidate = Path(sys.executable).parent / "patchkit"
    return str(candidate) if candidate.exists() else (shutil.which("patchkit") or "patchkit")


def b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def generate(site: Path, files: int, total: int) -> list[str]:
    dists = 30
    per = files // dists
    large_per = 10
    small_size = 8 * 1024
    large_size = max(1, (total - dists * (per - large_per) * small_size) // (dists * large_per))
    block = os.urandom(1 << 20)
    paths: list[str] = []
    for d in range(dists):
        name, version = f"gen_dist_{d:02d}", "1.0"
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        rows = []
        for i in range(per):
            if i < large_per:
                rel = f"{name}/_lib{i}.cpython-311-x86_64-linux-gnu.so"
                size = large_size
            else:
                rel = f"{name}/mod_{i // 100:02d}/m{i:04d}.py"
                size = small_size
            path = site / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            head = f"# {rel}\n".encode()
            body = (block * (size // len(block) + 1))[: size - len(head)]
            data = head + body
            path.write_bytes(data)
            rows.append(f"{rel},sha256={b64(hashlib.sha256(data).digest())},{len(data)}")
            paths.append(str(path))
        for pkg_dir in {os.path.dirname(r.split(",")[0]) for r in rows}:
            init = site / pkg_dir / "__init__.py"
            if not init.exists():
                init.write_bytes(b"")
                rows.append(f"{pkg_dir}/__init__.py,sha256={b64(hashlib.sha256(b'').digest())},0")
                paths.append(str(init))
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
        rows.append(f"{info.name}/METADATA,,")
        rows.append(f"{info.name}/RECORD,,")
        (info / "RECORD").write_text("\n".join(rows) + "\n")
    return paths


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{cmd[:3]} exited {code}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def med(values: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=30000)
    parser.add_argument("--gb", type=float, default=2.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="patchkit-bench-site-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], check=True)
        python = str(work / "venv" / "bin" / "python")
        site = next((work / "venv" / "lib").glob("python3*/site-packages"))
        paths = generate(site, args.files, int(args.gb * (1 << 30)))
        listing = work / "files.list"
        listing.write_bytes(b"\0".join(p.encode() for p in paths))
        size = sum(os.path.getsize(p) for p in paths)
        print(f"site dir: {len(paths)} files, {size / (1 << 30):.2f} GiB, {os.cpu_count()} CPUs")
        guard = [patchkit(), "guard", "--python", python, "--site"]
        sha = ["xargs", "-0", "-a", str(listing), "sha256sum"]
        walk = [sys.executable, "-c", WALK, str(site)]
        warm_cache = work / "warm-cache"
        env_warm = {**os.environ, "XDG_CACHE_HOME": str(warm_cache)}
        timed(sha)  # the page cache holds every file from here on
        timed(guard, env_warm)  # fills the warm cache
        cold, sums, warm, walks = [], [], [], []
        for index in range(args.runs):
            fresh = work / f"cold-cache-{index}"
            order = [("cold", guard, {**os.environ, "XDG_CACHE_HOME": str(fresh)}), ("sha", sha, None)]
            if index % 2:
                order.reverse()
            for side, cmd, env in order:
                (cold if side == "cold" else sums).append(timed(cmd, env))
            shutil.rmtree(fresh, ignore_errors=True)
        for index in range(args.runs * 3):
            order = [("warm", guard, env_warm), ("walk", walk, None)]
            if index % 2:
                order.reverse()
            for side, cmd, env in order:
                (warm if side == "warm" else walks).append(timed(cmd, env))
        (cw, cc), (sw, sc) = med(cold), med(sums)
        (ww, wc), (kw, kc) = med(warm), med(walks)
        print(
            f"cold guard --site {cw:.2f}s wall {cc:.2f}s cpu | sha256sum {sw:.2f}s wall {sc:.2f}s cpu | "
            f"ratio wall {cw / sw:.2f} cpu {cc / sc:.2f} (target <= 1.3)"
        )
        print(
            f"warm guard --site {ww:.3f}s wall {wc:.3f}s cpu | stat walk {kw:.3f}s wall {kc:.3f}s cpu | "
            f"ratio wall {ww / kw:.2f} cpu {wc / kc:.2f} (target <= 2)"
        )
        # In-process: the library call against the walk alone (no interpreter or CLI start-up on either side).
        os.environ["XDG_CACHE_HOME"] = str(warm_cache)
        from patchkit.proof.sitecheck import check_site_dirs
        from patchkit.proof.sitecheck import walk as walk_fn

        lib, bare = [], []
        for _ in range(args.runs * 3):
            t = time.perf_counter()
            report = check_site_dirs([os.path.realpath(site)], python=python, executable=python, version="")
            lib.append(time.perf_counter() - t)
            t = time.perf_counter()
            walk_fn(os.path.realpath(site))
            bare.append(time.perf_counter() - t)
        assert report.ok and report.hashed == 0, (len(report.findings), report.hashed)
        li, ba = statistics.median(lib), statistics.median(bare)
        print(f"in-process warm check_site_dirs {li:.3f}s | walk {ba:.3f}s | ratio {li / ba:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
