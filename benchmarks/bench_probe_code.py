"""Benchmark: what the probe's function-level core (``sys.monitoring``, Python 3.12+) costs over its file core.

The probe records, per process, every code object that starts (``PY_START``, returning ``DISABLE`` so that a
code object costs one event in the life of a process).  Every figure here is a ratio against the same probe
with its file core (``PATCHKIT_PROBE_CORE=file``: module files only, as on Python 3.11), both sides in the same
rounds, interleaved, on the same interpreter (``--python``, which must be 3.12+):

1. **start-up**: a process that imports ``--modules`` real modules (default 1,000: those of numpy, scipy,
   libcst, rich, pygments, ... installed for ``--python``, then the standard library's packages), CPU time of
   the process (``wait4``); target <= 1.05;
2. **a CPU-bound loop inside a recorded function** (a call per iteration), timed inside the process with
   ``time.process_time`` (its start-up excluded; the least of five runs of it); target <= 1.01;
3. **memory**: the peak RSS of a process that imports a module of K generated functions and calls each N times,
   for K = 2,000 / 20,000 and N = 1 / 50: what the core adds grows with the code objects, not with the calls;
   and the lines it writes: one per code object, not per call.

Also printed: the probe off, for scale.

    python benchmarks/bench_probe_code.py --python VENV/bin/python [--rounds 15] [--modules 1000] [--loop-rounds 41]

``--python``: a Python 3.12+ with the packages to import installed (``python3.12 -m venv V && V/bin/pip install
numpy scipy libcst rich``); it needs nothing of patchkit (the probe is standard library only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_probe import FIND_REAL

from patchkit.proof import probe_env

PACKAGES = (
    "numpy", "scipy", "libcst", "rich", "pygments", "click", "jsonschema", "packaging", "markdown_it", "attr",
    "email", "json", "xml", "http", "urllib", "asyncio", "concurrent", "logging", "unittest", "importlib",
    "encodings", "ctypes", "sqlite3", "multiprocessing", "tomllib", "zoneinfo", "wsgiref", "dbm", "html",
)  # fmt: skip

LOOP = """import time


def step(x):
    return (x * 7 + 3) % 1009


def work(n):
    total = 0
    for i in range(n):
        total += step(i)
    return total


work(1000)
times = []
for _ in range(5):  # the least of five: what the loop costs, without the machine's other load
    start = time.process_time()
    work({n})
    times.append(time.process_time() - start)
print(min(times))
"""

MEMORY = """import resource, sys
sys.path.insert(0, {root!r})
import many
for _ in range({calls}):
    for f in many.FUNCTIONS:
        f()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def cpu_of(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed")
    return usage.ru_utime + usage.ru_stime


def output_of(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0 or "probe failed" in done.stderr:
        raise SystemExit(f"{cmd} failed: {done.stderr[-2000:]}")
    return done.stdout


def quartiles(values: list[float]) -> str:
    q1, q2, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
    return f"median {q2:.3f} (quartiles {q1:.3f}-{q3:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=sys.executable, help="a Python 3.12+ with the packages installed")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--modules", type=int, default=1000)
    parser.add_argument("--loop", type=int, default=2_000_000, help="iterations of the CPU-bound loop")
    parser.add_argument("--loop-rounds", type=int, default=41, help="rounds of the loop's three sides")
    args = parser.parse_args()
    version = output_of(
        [args.python, "-c", "import sys; print(sys.version_info >= (3, 12))"], dict(os.environ), Path.cwd()
    )
    if version.strip() != "True":
        raise SystemExit(f"--python {args.python}: not Python 3.12+ (no sys.monitoring)")
    work = Path(tempfile.mkdtemp(prefix="patchkit-bench-probe-code-"))
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_") and k != "PYTHONPATH"}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        found = output_of([args.python, "-c", FIND_REAL, json.dumps(PACKAGES), str(args.modules)], base, work)
        names = json.loads(found.strip().splitlines()[-1])
        (work / "startup.py").write_text(
            "import importlib\n"
            f"for name in {names!r}:\n"
            "    try:\n        importlib.import_module(name)\n    except BaseException:\n        pass\n"
        )
        (work / "loop.py").write_text(LOOP.format(n=args.loop))
        from patchkit.proof import PROBE_SITE_DIR

        subprocess.run([args.python, "-m", "compileall", "-q", str(PROBE_SITE_DIR), str(work)], check=True)

        def sides(index: int) -> list[tuple[str, dict[str, str]]]:
            out: list[tuple[str, dict[str, str]]] = [("off", base)]
            for core in ("file", "sysmon"):
                probe_dir = work / f"probe-{core}-{index}"
                probe_dir.mkdir()
                out.append((core, {**probe_env(base, probe_dir), "PATCHKIT_PROBE_CORE": core}))
            return out if index % 2 == 0 else out[::-1]

        startup: dict[str, list[float]] = {"off": [], "file": [], "sysmon": []}
        loop: dict[str, list[float]] = {"off": [], "file": [], "sysmon": []}
        cpu_of([args.python, "startup.py"], base, work)  # warm the page cache and the bytecode
        began = time.monotonic()
        for index in range(args.rounds):
            for side, env in sides(index):
                startup[side].append(cpu_of([args.python, "startup.py"], env, work))
        for index in range(args.loop_rounds):  # short processes: more rounds for the same time
            for side, env in sides(args.rounds + index):
                loop[side].append(float(output_of([args.python, "loop.py"], env, work)))
        files = list((work / "probe-sysmon-0").iterdir())
        lines = [line for path in files for line in path.read_text().splitlines()]
        code = sum(1 for line in lines if line.startswith('{"kind": "code"'))
        modules = sum(1 for line in lines if line.startswith('{"kind": "module"'))
        print(
            f"--python {args.python}: {len(names)} modules imported; {args.rounds} rounds of start-up and "
            f"{args.loop_rounds} of the loop, the sides interleaved"
        )
        print(f"sysmon core: {code} code objects recorded ({modules} module files) in one start-up")
        for side in ("off", "file", "sysmon"):
            print(f"  start-up cpu median, {side:6}: {statistics.median(startup[side]):.3f}s")
        ratio = [s / f for s, f in zip(startup["sysmon"], startup["file"], strict=True)]
        print(f"start-up, sysmon / file core, within each round: {quartiles(ratio)}  (target <= 1.05)")
        on_off = [s / f for s, f in zip(startup["file"], startup["off"], strict=True)]
        print(f"start-up, file core / probe off (for scale): {quartiles(on_off)}")
        for side in ("off", "file", "sysmon"):
            print(f"  loop of {args.loop} calls, process time median, {side:6}: {statistics.median(loop[side]):.4f}s")
        ratio = [s / f for s, f in zip(loop["sysmon"], loop["file"], strict=True)]
        print(f"CPU-bound loop in a recorded function, sysmon / file core: {quartiles(ratio)}  (target <= 1.01)")

        root = work / "many"
        root.mkdir()
        print("memory (peak RSS, KiB) and lines written, by code objects K and calls per function N:")
        for functions in (2_000, 20_000):
            body = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(functions))
            names_list = ", ".join(f"f{n}" for n in range(functions))
            (root / "many.py").write_text(body + f"FUNCTIONS = [{names_list}]\n")
            subprocess.run([args.python, "-m", "compileall", "-q", str(root)], check=True)
            for calls in (1, 50):
                (work / "memory.py").write_text(MEMORY.format(root=str(root), calls=calls))
                rss = {}
                written = 0
                for core in ("file", "sysmon"):
                    probe_dir = work / f"mem-{core}-{functions}-{calls}"
                    probe_dir.mkdir()
                    env = {**probe_env(base, probe_dir), "PATCHKIT_PROBE_CORE": core}
                    rss[core] = statistics.median(
                        int(output_of([args.python, "memory.py"], env, work)) for _ in range(3)
                    )
                    if core == "sysmon":  # per process (three ran): its lines for the generated functions
                        written = max(p.read_text().count('"name": "f') for p in probe_dir.iterdir())
                print(
                    f"  K={functions:>6} N={calls:>3}: file core {rss['file']:>8.0f}, sysmon {rss['sysmon']:>8.0f} "
                    f"(+{rss['sysmon'] - rss['file']:.0f}); code lines for the K functions: {written}"
                )
        print(f"({time.monotonic() - began:.0f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
