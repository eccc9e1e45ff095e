"""The regression hunt ``patchkit demo`` replays: which commits, the demo's bench manifest, the condensed windows.

The bench manifest is the bundled kimi-k25-eagle3 manifest with its [bench]
table replaced by the demo's (``data/bench/kimi-k25-eagle3-demo.toml``),
which runs the demo's stand-in server and client (``patchkit/demo/standin``).

The stand-ins run in a venv the demo creates (no pip, no site packages of
its own; they need only the stdlib).  The probe accounts for every file a
benchmarked process loads, and a ``.pth`` file or an edited package in the
user's own interpreter is a STRAY that refuses the run, as it should for a
real server.  The demo is about the hunt, not about the user's environment,
so it benchmarks in one it knows is clean, and says so.
"""

from __future__ import annotations

import venv
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

from patchkit.engine.check import CheckReport
from patchkit.manifest import Manifest

GOOD = "add-kimi"  # model: support Kimi-K2.5 (#17789): the day it ran at 94 tok/s
BAD = "dsv2-weight-mixin"  # the last commit before upstream's own hooks: the day it ran at 60
PLANTED = "fix-pcg-moe"  # Fix PCG MoE Error (#17739): the out-of-place all-reduce the stand-in server pays for
RANGE_START = "v0.5.8"

STANDIN = files("patchkit.demo") / "standin"
BENCH_TABLE = files("patchkit.demo") / "data" / "bench" / "kimi-k25-eagle3-demo.toml"


def standin_python(work: Path) -> Path:
    """A fresh venv at ``work/venv`` for the stand-ins; returns its interpreter.

    ``OSError`` when it cannot be made (the demo turns that into one line)."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(work / "venv")
    return work / "venv" / "bin" / "python"


def write_bench_manifest(work: Path, kimi: Manifest, python: Path) -> Path:
    """``work/manifests/kimi-k25-eagle3.toml``: the bundled patches (payload copied beside), the demo's [bench]."""
    text = kimi.path.read_text(encoding="utf-8").split("\n[bench]\n", 1)[0]
    table = (
        BENCH_TABLE.read_text(encoding="utf-8")
        .replace("@python@", str(python))
        .replace("@standin@", str(STANDIN))
        .replace("@state@", str(work / "noise-state"))
    )
    (work / "manifests").mkdir()
    (work / "patches").mkdir()
    for payload in (kimi.path.parent.parent / "patches").glob("kimi_k25_eagle3*"):
        (work / "patches" / payload.name).write_bytes(payload.read_bytes())
    target = work / "manifests" / "kimi-k25-eagle3.toml"
    target.write_text(text + "\n" + table, encoding="utf-8")
    return target


def condensed_windows(report: CheckReport) -> Iterator[str]:
    """One line per [[group]]: its windows on the range, oldest first, as 'covered-by (N commits)'."""
    names = [g.group for g in (report.commits[0].groups if report.commits else ())]
    for index, name in enumerate(names):
        windows: list[list[object]] = []
        for row in reversed(report.commits):
            group = row.groups[index]
            label = "+".join(group.covered_by) if group.covered_by else f"{group.status.value}"
            if windows and windows[-1][0] == label:
                windows[-1][1] = int(str(windows[-1][1])) + 1
            else:
                windows.append([label, 1])
        yield f"{name}: " + " -> ".join(f"{label} ({count})" for label, count in windows)
