"""Benchmark: what `patchkit capture` costs, and what the `diff` op's offset search costs.

Builds an upstream repository with a ~40 KB Python file (135 functions and a
class) and a 20,000-line text file, edits them by hand (statements inserted
into 20 functions, 10 changed defaults, 3 methods added, 200 edited lines of
the text file), then reports in one run:

  (a) `capture` (propose, stage, verify at the base, write) against
      (b) `apply` of the manifest it wrote on a reset tree: the verification
      renders the same patches once, so (a)/(b) shows the rest of capture's
      overhead;
  (c) `apply` of the text file's diff when upstream inserted 500 lines at the
      top (every hunk found by the offset search) against (d) the same diff
      with no offset (every hunk at its header's line).

Times are wall-clock; only the ratios are meant to be compared.

    python benchmarks/bench_capture.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from patchkit.capture.core import capture
from patchkit.cli import main
from patchkit.git import Repo
from patchkit.testing.history import HistoryBuilder, git_env

BIG = "pkg/models/big_model.py"
TEXT = "conf/big.txt"


def big_model() -> str:
    parts = ['"""A large model file."""', "import math", "from typing import List", "", ""]
    for i in range(135):
        parts.append(
            f"def helper_{i}(x: float, scale: float = 1.0) -> float:\n"
            f"    y = math.sqrt(abs(x)) * scale\n    z = y + {i}\n    return z * 2\n\n"
        )
    parts.append("class BigModel:\n    def forward(self, x):\n        return x\n")
    return "\n".join(parts)


def edited_model(text: str) -> str:
    for i in range(20):
        text = text.replace(f"    z = y + {i}\n", f"    z = y + {i}\n    if z > 100:\n        z = 100.0\n", 1)
    for i in range(20, 30):
        text = text.replace(
            f"def helper_{i}(x: float, scale: float = 1.0)", f"def helper_{i}(x: float, scale: float = 2.0)"
        )
    methods = "".join(f"\n    def extra_{k}(self):\n        return {k}\n" for k in range(3))
    return text + methods


def big_text(lines: int = 20_000) -> str:
    return "".join(f"line {i}: value = {i % 97}\n" for i in range(lines))


def edited_text(text: str) -> str:
    out = text.splitlines(keepends=True)
    for i in range(0, len(out), len(out) // 200):
        out[i] = out[i].replace("value", "VALUE")
    return "".join(out)


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(repeat: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    try:
        base = {BIG: big_model(), TEXT: big_text()}
        builder = HistoryBuilder(root / "repo")
        builder.commit("base", "base", base)
        builder.build()
        repo_dir = root / "repo"
        (repo_dir / BIG).write_text(edited_model(base[BIG]))
        (repo_dir / TEXT).write_text(edited_text(base[TEXT]))
        repo = Repo.discover(repo_dir)
        out = root / "kit"

        def do_capture() -> None:
            capture(repo, name="bench", out=out, force=True)

        t_capture = timed(do_capture, repeat)
        manifest = out / "manifests" / "bench.toml"
        env = git_env()

        def do_apply() -> None:
            subprocess.run(["git", "checkout", "--", "."], cwd=repo_dir, check=True, env=env)
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["apply", "-m", str(manifest), "--repo", str(repo_dir)]) == 0

        t_apply = timed(do_apply, repeat)

        # The text file's diff alone, at its header's lines and 500 lines further down.
        diff_manifest = root / "kit" / "manifests" / "text.toml"
        diff_id = next(p.name for p in (out / "patches" / "bench").iterdir() if p.name.endswith(".txt.diff"))
        diff_manifest.write_text(
            f'schema = 1\nname = "text"\n\n[[patch]]\nid = "t"\nop = "diff"\nfile = "{TEXT}"\n'
            f'source = "../patches/bench/{diff_id}"\n'
        )

        def apply_text(prefix: str) -> Callable[[], None]:
            def go() -> None:
                (repo_dir / TEXT).write_text(prefix + base[TEXT])
                with contextlib.redirect_stdout(io.StringIO()):
                    assert main(["apply", "-m", str(diff_manifest), "--repo", str(repo_dir)]) == 0

            return go

        t_offset = timed(apply_text("".join(f"upstream {i}\n" for i in range(500))), repeat)
        t_exact = timed(apply_text(""), repeat)
        print(f"(a) capture                         {t_capture * 1e3:8.1f} ms")
        print(f"(b) apply of the captured manifest  {t_apply * 1e3:8.1f} ms   (a)/(b) = {t_capture / t_apply:.2f}")
        print(f"(c) diff apply, every hunk offset   {t_offset * 1e3:8.1f} ms")
        print(f"(d) diff apply, no offset           {t_exact * 1e3:8.1f} ms   (c)/(d) = {t_offset / t_exact:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    run(parser.parse_args().repeat)
