"""Benchmark: start-up of a stand-in server that imports 3,000 modules, probe on against probe off.

``--real``: instead of generated modules, the real modules of the standard library's packages and of the
packages installed here (rich, libcst, pygments, click, jsonschema, ...: every one that imports cleanly,
found with ``pkgutil.walk_packages`` and tried once in a subprocess), and each process also reads
``--configs`` small JSON configs under a data root (``PATCHKIT_PROBE_ROOTS``), as SGLang reads its tuning
configs: the probe's audit hook (``open`` events) is on that path, and sees every other audit event too.

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

``--against DIR``: a third side, the probe of another checkout (DIR: its ``patchkit/proof/site``, e.g.
``/work/main/patchkit/proof/site``), run in the same rounds, so that a change to the probe is measured as the
ratio of this checkout's probe against that one's (``on/against``), on the same machine at the same moments.

    python benchmarks/bench_probe.py [--runs 15] [--modules 3000]
    python benchmarks/bench_probe.py --real [--runs 15] [--configs 200]
    python benchmarks/bench_probe.py --against /work/main/patchkit/proof/site
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


REAL_PACKAGES = (
    "email", "json", "xml", "http", "urllib", "asyncio", "concurrent", "logging", "unittest", "importlib",
    "encodings", "ctypes", "sqlite3", "multiprocessing", "rich", "libcst", "pygments", "click", "jsonschema",
    "packaging",
)  # fmt: skip

FIND_REAL = """import importlib, json, pkgutil, sys
limit = int(sys.argv[2]) if len(sys.argv) > 2 else None  # at most this many (bench_probe_code.py: about 1,000)
names = []
for pkg in json.loads(sys.argv[1]):
    if limit is not None and len(names) >= limit:
        break
    try:
        m = importlib.import_module(pkg)
    except Exception:
        continue
    names.append(pkg)
    for info in pkgutil.walk_packages(getattr(m, "__path__", []), pkg + ".", onerror=lambda name: None):
        if limit is not None and len(names) >= limit:
            break
        if ".tests" in info.name or ".test_" in info.name or "__main__" in info.name:
            continue
        try:
            importlib.import_module(info.name)
        except BaseException:
            continue
        names.append(info.name)
print(json.dumps(names))
"""


def generate_real(root: Path, configs: int) -> Path:
    """The server of ``--real``: imports every importable module of REAL_PACKAGES, reads ``configs`` JSON files."""
    import json

    found = subprocess.run(
        [sys.executable, "-c", FIND_REAL, json.dumps(REAL_PACKAGES)], capture_output=True, text=True, check=True
    )
    names = json.loads(found.stdout.strip().splitlines()[-1])
    data = root / "configs"
    data.mkdir(parents=True)
    for n in range(configs):
        (data / f"E={n},N=64,device_name=H200.json").write_text(json.dumps({"1": {"BLOCK_SIZE_M": n}}))
    lines = [
        "import importlib, json, os",
        f"NAMES = {names!r}",
        "def load():",
        "    for name in NAMES:",
        "        try:",
        "            importlib.import_module(name)",
        "        except BaseException:",
        "            pass",
        f"    for name in sorted(os.listdir({str(data)!r})):",
        f"        with open(os.path.join({str(data)!r}, name)) as f:",
        "            json.load(f)",
    ]
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
    parser.add_argument("--real", action="store_true", help="real modules of installed packages, and JSON reads")
    parser.add_argument("--configs", type=int, default=200, help="with --real: JSON configs each process reads")
    parser.add_argument("--against", type=Path, default=None, help="another probe directory, as a third side")
    args = parser.parse_args()
    if args.against is not None:
        args.against = args.against.resolve()
        if not (args.against / "sitecustomize.py").is_file():
            raise SystemExit(f"--against {args.against}: no sitecustomize.py there (give a probe directory)")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.against)], check=True)
    work = Path(tempfile.mkdtemp(prefix="patchkit-bench-probe-"))
    try:
        server = generate_real(work / "app", args.configs) if args.real else generate(work / "app", args.modules)
        base = {k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPATH"] = f"{work / 'app'}{os.pathsep}{STANDIN_TORCH}"
        if args.real:
            base["PATCHKIT_PROBE_ROOTS"] = str(work / "app" / "configs")  # the reads are recorded (on side only)
        cmd = [sys.executable, str(server)]
        sides: dict[str, list[tuple[float, float]]] = {"off": [], "on": [], "against": []}
        off, on, against = sides["off"], sides["on"], sides["against"]
        timed(cmd, base, work)  # warm the page cache
        for index in range(args.runs):
            out = work / f"probe-{index}"
            out.mkdir()
            pair = [("off", base), ("on", probe_env(base, out))]
            if args.against is not None:
                other = work / f"against-{index}"
                other.mkdir()
                env = probe_env(base, other)
                env["PYTHONPATH"] = os.pathsep.join([str(args.against), *env["PYTHONPATH"].split(os.pathsep)[1:]])
                pair.append(("against", env))
            if index % 2:
                pair.reverse()
            for side, env in pair:
                sides[side].append(timed(cmd, env, work))
        files = sum(1 for _ in (work / "probe-0").iterdir())
        records = [line for p in (work / "probe-0").iterdir() for line in p.read_text().splitlines()]
        lines = len(records)
        modules = sum(1 for line in records if line.startswith('{"kind": "module"'))
        data = sum(1 for line in records if line.startswith('{"kind": "data"'))
        wall_off, wall_on = statistics.median(w for w, _ in off), statistics.median(w for w, _ in on)
        cpu_off, cpu_on = statistics.median(c for _, c in off), statistics.median(c for _, c in on)
        what = "real modules of installed packages" if args.real else f"{args.modules} generated modules"
        print(f"stand-in server importing {what} in 2 processes (+ resource tracker), {args.runs} runs each")
        print(f"probe files per run: {files}, {lines} records: {modules} module files, {data} data files read")
        print(f"wall median: off {wall_off:.3f}s  on {wall_on:.3f}s  ratio {wall_on / wall_off:.3f}")
        print(f"cpu  median: off {cpu_off:.3f}s  on {cpu_on:.3f}s  ratio {cpu_on / cpu_off:.3f}  (target <= 1.05)")
        # Each round runs both sides back to back: the ratio within a round cancels the machine's drift
        # between rounds, which on a shared machine is wider than the probe's cost.
        for name, index in (("wall", 0), ("cpu", 1)):
            ratios = [b[index] / a[index] for a, b in zip(off, on, strict=True)]
            q1, q2, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
            print(f"{name} on/off within each round: median {q2:.3f}, quartiles {q1:.3f}-{q3:.3f}")
        if against:
            print(f"against {args.against}: this checkout's probe (on) / that one's, within each round:")
            for name, index in (("wall", 0), ("cpu", 1)):
                ratios = [b[index] / a[index] for a, b in zip(against, on, strict=True)]
                q1, q2, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
                mine = statistics.median(x[index] for x in on)
                theirs = statistics.median(x[index] for x in against)
                print(
                    f"{name} on/against: medians {mine:.3f}s / {theirs:.3f}s = {mine / theirs:.3f}; "
                    f"within rounds median {q2:.3f}, quartiles {q1:.3f}-{q3:.3f}"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
