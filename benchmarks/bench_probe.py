"""Benchmark: start-up of a stand-in server that imports 3,000 modules, probe on against probe off.

Generates 30 packages of 100 small modules each (a function, a class, a
constant, two stdlib imports), compiles their bytecode (as an install
would), and a server script that imports all of them, then spawns one
worker with ``multiprocessing`` spawn that imports them too and calls the
stand-in ``torch.distributed.init_process_group`` (tests/standin/torch_standin),
and exits.  Both sides run the same interpreter, interleaved, ``--runs``
times each: probe off (plain environment) and probe on (``probe_env``: the
probe's directory first on PYTHONPATH, writing to a fresh directory).

Figures: the median wall time and the median CPU time (user+sys of the
process tree, from ``wait4``), their ratios on/off, and the median and
quartiles of the on/off ratio within each round (the two sides of a round run
back to back, so that ratio cancels the drift between rounds).  Target: <= 1.05.

    python benchmarks/bench_probe.py [--runs 15] [--modules 3000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchkit.proof import probe_env

STANDIN_TORCH = Path(__file__).resolve().parent.parent / "tests" / "standin" / "torch_standin"

MODULE = '''"""Generated module {n}."""
import os
import sys

CONSTANT_{n} = {n}


def function_{n}(x):
    return x + CONSTANT_{n} + len(sys.argv) + len(os.sep)


class Class_{n}:
    value = CONSTANT_{n}

    def method(self):
        return function_{n}(self.value)
'''

SERVER = """import multiprocessing as mp
import sys

import torch.distributed as dist

from gen_all import load


def worker(rank):
    load()
    dist.init_process_group(backend="gloo", rank=rank, world_size=1)


if __name__ == "__main__":
    load()
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=worker, args=(0,))
    p.start()
    p.join()
    sys.exit(p.exitcode)
"""


def generate(root: Path, modules: int) -> Path:
    per = 100
    lines = ["def load():"]
    for n in range(modules):
        package = root / f"gen_{n // per:03d}"
        if n % per == 0:
            package.mkdir(parents=True)
            (package / "__init__.py").write_text("")
        (package / f"m{n:05d}.py").write_text(MODULE.format(n=n))
        lines.append(f"    import gen_{n // per:03d}.m{n:05d}")
    (root / "gen_all.py").write_text("\n".join(lines) + "\n")
    (root / "server.py").write_text(SERVER)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root), str(STANDIN_TORCH)], check=True)
    from patchkit.proof import PROBE_SITE_DIR

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(PROBE_SITE_DIR)], check=True)
    return root / "server.py"


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} exited {proc.returncode}")
    # wait4 reports the child; its own children (the spawned worker, the resource tracker) were reaped by it
    # and are included in its ru_*children* only, which wait4 folds into the child's usage on Linux.
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--modules", type=int, default=3000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="patchkit-bench-probe-"))
    try:
        server = generate(work / "app", args.modules)
        base = {k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPATH"] = f"{work / 'app'}{os.pathsep}{STANDIN_TORCH}"
        cmd = [sys.executable, str(server)]
        off: list[tuple[float, float]] = []
        on: list[tuple[float, float]] = []
        timed(cmd, base, work)  # warm the page cache
        for index in range(args.runs):
            out = work / f"probe-{index}"
            out.mkdir()
            pair = [("off", base), ("on", probe_env(base, out))]
            if index % 2:
                pair.reverse()
            for side, env in pair:
                (on if side == "on" else off).append(timed(cmd, env, work))
        files = sum(1 for _ in (work / "probe-0").iterdir())
        lines = sum(len(p.read_text().splitlines()) for p in (work / "probe-0").iterdir())
        wall_off, wall_on = statistics.median(w for w, _ in off), statistics.median(w for w, _ in on)
        cpu_off, cpu_on = statistics.median(c for _, c in off), statistics.median(c for _, c in on)
        print(
            f"stand-in server importing {args.modules} modules in 2 processes (+ resource tracker), "
            f"{args.runs} runs each"
        )
        print(f"probe files per run: {files}, {lines} records")
        print(f"wall median: off {wall_off:.3f}s  on {wall_on:.3f}s  ratio {wall_on / wall_off:.3f}")
        print(f"cpu  median: off {cpu_off:.3f}s  on {cpu_on:.3f}s  ratio {cpu_on / cpu_off:.3f}  (target <= 1.05)")
        # Each round runs both sides back to back: the ratio within a round cancels the machine's drift
        # between rounds, which on a shared machine is wider than the probe's cost.
        for name, index in (("wall", 0), ("cpu", 1)):
            ratios = [b[index] / a[index] for a, b in zip(off, on, strict=True)]
            q1, q2, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
            print(f"{name} on/off within each round: median {q2:.3f}, quartiles {q1:.3f}-{q3:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
