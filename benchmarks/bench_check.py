"""Benchmark: `patchkit check` over 5,000 commits against the naive loop.

Generates an upstream repository of N commits (default 5,000) in which two
target files of about 40 KB of Python change every ~25 commits and other
files change in every commit (with a side branch merged back every 500
commits), then reports in one run:

  (a) `patchkit check --range ROOT..main`, cold (no verdict cache) and warm;
  (b) the naive loop: `git checkout` + a single-commit check of the work
      tree (`patchkit status`, which analyses without rendering: the cheapest
      per-commit check there is), timed on 100 sampled commits, scaled to N;
  (c) the floor: `git log --format=%H -- <targets>` over the range, plus
      `patchkit --help` (the tool's own start-up).

Targets: (b)/(a cold) >= 100, (a warm)/(c) <= 3.  Times are wall-clock on
whatever machine runs this; only the ratios are meant to be compared.

    python benchmarks/bench_check.py [--commits 5000] [--samples 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchkit.demo.history import HistoryBuilder, git_env


def compile_bytecode() -> None:
    """Write patchkit's bytecode first, as pip does at install: with PYTHONDONTWRITEBYTECODE set
    (or a source newer than its .pyc), every timed run would compile the changed modules again."""
    import compileall

    import patchkit

    compileall.compile_dir(str(Path(patchkit.__file__).parent), quiet=1)


TARGETS = ("pkg/models/big_model.py", "pkg/speculative/worker.py")


def big_model(version: int, rng: random.Random) -> str:
    """~40 KB: helper functions and a model class, one function varying per version."""
    parts = ['"""A large model file."""', "import math", "from typing import List", "", ""]
    for i in range(135):
        scale = version if i == version % 135 else i
        parts.append(
            f"def helper_{i}(values: List[float], factor: float = {scale}.0) -> List[float]:\n"
            f'    """Scale values by factor and clamp them ({i})."""\n'
            f"    out = []\n"
            f"    for value in values:\n"
            f"        scaled = value * factor + {i}\n"
            f"        out.append(max(min(scaled, 1e6), -1e6))\n"
            f"    return out\n\n"
        )
    parts.append("class BigModel:")
    parts.append("    def __init__(self, language_model):\n        self.language_model = language_model\n")
    for i in range(40):
        parts.append(
            f"    def layer_{i}(self, x):\n"
            f"        y = helper_{i}([x])[0]\n"
            f"        return self.language_model.step(y, {i if i != version % 40 else version})\n"
        )
    parts.append("\nEntryClass = [BigModel]\n")
    return "\n".join(parts)


def worker(version: int) -> str:
    body = [
        '"""A speculative worker."""',
        "import time",
        "",
        "",
    ]
    for i in range(400):
        body.append(
            f"def util_{i}(batch):\n"
            f'    """Prepare batch part {i}."""\n'
            f"    return [item + {i if i != version % 400 else version} for item in batch]\n\n"
        )
    body.append(
        "class Worker:\n"
        "    def verify(self, batch, spec_info):\n"
        "        prepared = util_0(batch)\n"
        f"        extra = {version}\n"
        "        batch_result = self.target_worker.forward_batch_generation(prepared, is_verify=True)\n"
        "        logits_output = batch_result.logits_output\n"
        "        return logits_output, extra\n"
    )
    return "\n".join(body)


PAYLOAD = """from typing import Optional


class BigModel:
    def get_embed_and_head(self):
        if getattr(self, "language_model", None) is None:
            raise AttributeError("BigModel.get_embed_and_head: no language_model")
        return self.language_model.get_embed_and_head()


def before_forward(self, batch, spec_info):
    _t0 = time.perf_counter()


def after_forward(self, batch, spec_info):
    _elapsed = time.perf_counter() - _t0
"""

MANIFEST = """schema = 1
name = "bench"

[[patch]]
id = "imports"
op = "ensure-import"
file = "pkg/models/big_model.py"
import = "from typing import List, Optional"

[[patch]]
id = "hooks"
op = "add-methods"
file = "pkg/models/big_model.py"
class = "BigModel"
source = "payload.py"

[[patch]]
id = "timing-before"
op = "insert"
file = "pkg/speculative/worker.py"
function = "Worker.verify"
anchor = "batch_result = self.target_worker.forward_batch_generation(prepared, is_verify=True)"
position = "before"
source = "payload.py"
body_of = "before_forward"

[[patch]]
id = "timing-after"
op = "insert"
file = "pkg/speculative/worker.py"
function = "Worker.verify"
anchor = "batch_result = self.target_worker.forward_batch_generation(prepared, is_verify=True)"
position = "after"
source = "payload.py"
body_of = "after_forward"
requires = ["timing-before"]
"""


def build(path: Path, commits: int) -> list[str]:
    rng = random.Random(1234)
    b = HistoryBuilder(path)
    versions = {TARGETS[0]: 0, TARGETS[1]: 0}
    b.commit("c0", "initial", {TARGETS[0]: big_model(0, rng), TARGETS[1]: worker(0), "docs/log.txt": "0\n"})
    n = 1
    while n < commits:
        files: dict[str, str] = {"docs/log.txt": f"{n}\n", f"pkg/misc/m{n % 50}.py": f"VALUE = {n}\n"}
        if n % 25 == 0:
            target = TARGETS[(n // 25) % 2]
            versions[target] += 1
            files[target] = big_model(versions[target], rng) if target == TARGETS[0] else worker(versions[target])
        if n % 500 == 250 and n + 12 < commits:
            base = f"c{n - 1}"
            branch = f"side{n}"
            b.start_branch(branch, base)
            for k in range(10):
                b.commit(f"c{n}", f"side work {n}", {f"side/s{k}.txt": f"{n}\n"}, branch=branch)
                n += 1
            b.commit(f"c{n}", f"Merge branch {branch}", files, merge=f"c{n - 1}")
        else:
            b.commit(f"c{n}", f"change {n}", files)
        n += 1
    history = b.build()
    return [history[label] for label in history.order]


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = parser.parse_args()
    compile_bytecode()

    work = args.keep or Path(tempfile.mkdtemp(prefix="patchkit-bench-"))
    repo = work / "upstream"
    mdir = work / "manifest"
    mdir.mkdir(parents=True, exist_ok=True)
    (mdir / "payload.py").write_text(PAYLOAD)
    (mdir / "bench.toml").write_text(MANIFEST)
    manifest = str(mdir / "bench.toml")
    patchkit = [sys.executable, "-m", "patchkit"]
    env = git_env()
    # An installed tool runs from compiled bytecode; make sure every timed
    # command (the floor included) does, whatever this shell sets.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([*patchkit, "--help"], stdout=subprocess.DEVNULL, env=env, check=True)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "patchkit")],
        stdout=subprocess.DEVNULL,
        env=env,
        check=False,
    )

    t = time.perf_counter()
    shas = build(repo, args.commits)
    print(f"built {len(shas):,} commits in {time.perf_counter() - t:.1f}s at {repo}")
    sizes = [len((repo / p).read_bytes()) for p in TARGETS]
    print(f"target files: {', '.join(f'{p} ({s / 1024:.0f} KB)' for p, s in zip(TARGETS, sizes, strict=False))}")
    root = shas[0]
    rng = f"{root}..main"
    cache = repo / ".git" / "patchkit" / "cache.sqlite"

    # (a) cold and warm
    cache.unlink(missing_ok=True)
    a_cold = timed([*patchkit, "check", "-m", manifest, "--repo", str(repo), "--range", rng, "--json"], repo, env)
    a_warm = min(
        timed([*patchkit, "check", "-m", manifest, "--repo", str(repo), "--range", rng], repo, env) for _ in range(3)
    )

    # (c) the floor
    git_log = min(timed(["git", "log", "--format=%H", rng, "--", *TARGETS], repo, env) for _ in range(3))
    help_ = min(timed([*patchkit, "--help"], repo, env) for _ in range(3))
    floor = git_log + help_

    # (b) the naive loop, sampled
    sample = random.Random(7).sample(shas[1:], min(args.samples, len(shas) - 1))
    start = time.perf_counter()
    for sha in sample:
        subprocess.run(["git", "checkout", "-q", "-f", "--detach", sha], cwd=repo, check=True, env=env)
        proc = subprocess.run(
            [*patchkit, "status", "-m", manifest, "--repo", str(repo), "--json"],
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        if proc.returncode not in (0, 1):
            raise SystemExit(f"patchkit status failed at {sha}: {proc.stderr.decode()}")
    naive_per = (time.perf_counter() - start) / len(sample)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=repo, check=True, env=env)
    naive = naive_per * (len(shas) - 1)

    print()
    print(f"(a) patchkit check, {len(shas) - 1:,} commits, cold : {a_cold:8.2f} s")
    print(f"(a) patchkit check, warm                  : {a_warm:8.2f} s")
    print(
        f"(b) naive checkout+status, {len(sample)} sampled  : {naive_per * 1000:8.1f} ms/commit "
        f"-> {naive:8.1f} s scaled to {len(shas) - 1:,}"
    )
    print(f"(c) git log -- targets {git_log:.3f} s + patchkit --help {help_:.3f} s = {floor:.3f} s")
    print()
    print(
        f"ratio (b)/(a cold) = {naive / a_cold:7.1f}x   target >= 100x   {'MET' if naive / a_cold >= 100 else 'MISSED'}"
    )
    print(
        f"ratio (a warm)/(c) = {a_warm / floor:7.2f}x   target <= 3x     {'MET' if a_warm / floor <= 3 else 'MISSED'}"
    )
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
