"""Wall time of `patchkit demo` against its 60 s budget (issue 28), `patchkit --version` as the baseline.

Usage: python benchmarks/bench_demo.py [RUNS]

Runs the console script next to this interpreter RUNS times (default 2) and
prints each run's wall time and CPU time (user+sys of the process tree), the
ratio of the wall time to the budget, and the ratio to the start-up cost of
the CLI measured in the same run.  Exits 1 when a run is over budget.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

BUDGET_S = 60.0
SCRIPT = Path(sys.executable).with_name("patchkit")


def timed(*argv: str) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if proc.returncode != 0:
        raise SystemExit(f"patchkit {' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    base_wall, _ = timed("--version")
    over = False
    for n in range(1, runs + 1):
        wall, cpu = timed("demo")
        over |= wall > BUDGET_S
        print(
            f"run {n}: patchkit demo {wall:.1f} s wall, {cpu:.1f} s CPU; "
            f"{wall / BUDGET_S:.2f} of the {BUDGET_S:.0f} s budget; {wall / base_wall:.0f}x `patchkit --version`"
        )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
