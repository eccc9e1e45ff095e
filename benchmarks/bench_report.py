"""Benchmark: `patchkit report` against the warm `check --json` runs it embeds.

The real-size case of issue #27: an upstream of 6,000 commits (the history
of benchmarks/bench_check.py: two ~40 KB target files changing every ~25
commits, a side branch merged every 500), two manifests (the model patches
and the verify-timing patches of bench_check's manifest, one manifest each),
and a bench store with 50 runs spread over the range (45 ok with 3 measured
values of two metrics, 5 refused, each with a full run record: env, 8 GPUs,
versions, a guard report).  The store is written with the store's own
``add``; the runs are made up, since no server is involved in what is timed.

Timed, alternately, per round (after one unmeasured warm-up of each):

  (a) `patchkit check -m M1 --range R --json` + `patchkit check -m M2 --range R --json`, warm;
  (b) `patchkit report -m M1 -m M2 --range R --store S -o report.html`, warm.

Target: (b) <= 2 x (a).  Printed: the median ratio over the rounds in wall
time and in CPU time (user + sys of the processes and their children, less
noisy on a shared machine), with the spread, and the size of the page.

    python benchmarks/bench_report.py [--commits 6000] [--runs 50] [--rounds 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_check import MANIFEST, PAYLOAD, build, compile_bytecode

from patchkit.bench.records.record import RunRecord
from patchkit.bench.records.store import Store
from patchkit.demo.history import git_env


def split_manifest(directory: Path) -> tuple[Path, Path]:
    """bench_check's manifest as two: the model patches and the verify-timing patches."""
    head, *patches = MANIFEST.split("\n[[patch]]\n")
    model = [p for p in patches if "big_model.py" in p]
    timing = [p for p in patches if "worker.py" in p]
    (directory / "payload.py").write_text(PAYLOAD)
    paths = []
    for name, chosen in (("bench-model", model), ("bench-timing", timing)):
        text = head.replace('name = "bench"', f'name = "{name}"') + "".join("\n[[patch]]\n" + p for p in chosen)
        path = directory / f"{name}.toml"
        path.write_text(text)
        paths.append(path)
    return paths[0], paths[1]


def record(sha: str, subject: str, number: int, rng: random.Random) -> RunRecord:
    refused = number % 10 == 9
    profile = "eagle3" if number % 2 == 0 else "baseline"
    values = [] if refused else [round(94 - number * 0.2 + rng.gauss(0, 0.8), 2) for _ in range(3)]
    verify = [] if refused else [round(18 + number * 0.05 + rng.gauss(0, 0.3), 2) for _ in range(3)]
    gpu = {
        "index": 0, "name": "NVIDIA H200", "uuid": "GPU-0", "driver_version": "580.159.04", "pstate": "P0",
        "sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "max_sm_clock_mhz": 1980, "pcie_gen": 5, "pcie_gen_max": 5,
        "pcie_width": 16, "pcie_width_max": 16, "memory_total_mib": 143771, "memory_used_mib": 0,
        "persistence_mode": "Enabled", "ecc_mode": "Enabled", "power_limit_w": 700.0, "temperature_c": 36,
        "compute_mode": "Default",
    }  # fmt: skip
    check = {"check": "patches", "ok": True, "severity": "ok", "message": "all patches are in place", "details": {}}
    guard = {"version": 1, "command": "guard", "commit": sha, "ok": True, "checks": [check] * 5, "results": []}
    data: dict[str, Any] = {
        "run": None,
        "commit": {"sha": sha, "subject": subject, "date": "2026-03-01T00:00:00+00:00"},
        "profile": profile,
        "outcome": "refused" if refused else "ok",
        "reason": "1 required patch cannot apply at this commit; nothing was started" if refused else None,
        "details": ["bench-model:hooks FAIL CLASS_NOT_FOUND"] if refused else [],
        "started_at": f"2026-03-01T00:{number:02d}:00+00:00",
        "finished_at": f"2026-03-01T00:{number:02d}:30+00:00",
        "vars": {"model": "moonshotai/Kimi-K2.5", "tp": "8", "port": str(30000 + number)},
        "commands": {} if refused else {"server": ["python3", "-m", "sglang.launch_server"], "cwd": "/w/tree"},
        "env": {} if refused else {f"NCCL_VAR_{i}": str(i + number % 3) for i in range(10)},
        "manifests": [{"name": "bench-model", "digest": "sha256:0", "results": [{"patch": "hooks", "status": "APPLY",
                                                                                "reason": None}]}],
        "guard": {"ok": not refused, "reports": [guard, guard]},
        "host": {"hostname": "gpu-1", "platform": "Linux", "machine": "x86_64"},
        "interpreter": {"executable": "/venv/bin/python", "version": "3.11.7",
                        "packages": {"sglang": "0.5.9", "torch": "2.11.0+cu130"}},
        "torch": {"torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91900, "nccl": "2.28.9"},
        "gpus": None if refused else [dict(gpu, index=i) for i in range(8)],
        "server_info": None if refused else {"version": "0.5.9"},
        "samples": {} if refused else {"output_tok_s": values, "verify_ms": verify},
        "missing": [],
        "metrics": [{"name": "output_tok_s", "better": "higher", "unit": "tok/s"},
                    {"name": "verify_ms", "better": "lower", "unit": "ms"}],
        "logs": {},
    }  # fmt: skip
    return RunRecord.from_json(data)


def timed(commands: list[list[str]], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of running the commands one after the other; CPU is user + sys of them and theirs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for cmd in commands:
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=6000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = parser.parse_args()
    compile_bytecode()
    work = args.keep or Path(tempfile.mkdtemp(prefix="patchkit-bench-report-"))
    repo = work / "upstream"
    mdir = work / "manifests"
    mdir.mkdir(parents=True, exist_ok=True)
    model, timing = split_manifest(mdir)
    t = time.perf_counter()
    shas = build(repo, args.commits)
    print(f"built {len(shas):,} commits in {time.perf_counter() - t:.1f}s at {repo}")
    store_path = work / "bench.sqlite"
    store_path.unlink(missing_ok=True)
    rng = random.Random(27)
    with Store(store_path) as store:
        step = max(1, len(shas) // args.runs)
        for number, sha in enumerate(shas[1::step][: args.runs]):
            store.add(record(sha, f"change {number}", number, rng))
    span = f"{shas[0]}..main"
    env = git_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    patchkit = [sys.executable, "-m", "patchkit"]
    checks = [
        [*patchkit, "check", "-m", str(m), "--repo", str(repo), "--range", span, "--json"] for m in (model, timing)
    ]
    page = work / "report.html"
    report = [
        [*patchkit, "report", "-m", str(model), "-m", str(timing), "--repo", str(repo), "--range", span,
         "--store", str(store_path), "-o", str(page)],
    ]  # fmt: skip
    timed(checks, repo, env)  # cold: fills the verdict cache
    timed(report, repo, env)  # fills the compressed plotly.js cache
    base_wall, base_cpu, rep_wall, rep_cpu = [], [], [], []
    for _ in range(args.rounds):
        wall, cpu = timed(checks, repo, env)
        base_wall.append(wall)
        base_cpu.append(cpu)
        wall, cpu = timed(report, repo, env)
        rep_wall.append(wall)
        rep_cpu.append(cpu)
    wall_ratios = [r / b for r, b in zip(rep_wall, base_wall, strict=True)]
    cpu_ratios = [r / b for r, b in zip(rep_cpu, base_cpu, strict=True)]
    print(f"{len(shas) - 1:,} commits x 2 manifests, {args.runs} stored runs, {args.rounds} alternating rounds")
    med = statistics.median
    print(f"(a) check --json x 2, warm : wall {med(base_wall):.2f} s, CPU {med(base_cpu):.2f} s")
    print(f"(b) report, warm           : wall {med(rep_wall):.2f} s, CPU {med(rep_cpu):.2f} s")
    print(
        f"(b)/(a) wall {statistics.median(wall_ratios):.2f}x ({min(wall_ratios):.2f}-{max(wall_ratios):.2f}), "
        f"CPU {statistics.median(cpu_ratios):.2f}x ({min(cpu_ratios):.2f}-{max(cpu_ratios):.2f})  (target: <= 2x)"
    )
    print(f"page: {page.stat().st_size / 1e6:.2f} MB (target: under ~5 MB for 5,000 commits)")
    if args.keep is None and not os.environ.get("PATCHKIT_BENCH_KEEP"):
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
