"""The demo history benchmarked with the stand-in server (tests/standin/), and reading a report back.

``demo_bench(root)`` builds ``patchkit demo``'s SGLang-shaped history, a copy
of the bundled manifests with a stand-in ``[bench]`` table added to
kimi-k25-eagle3 (the client is 35 % slower, the verify step 60 % longer, from
"Fix PCG MoE Error" on, where ``pynccl.py`` gains ``outplace_all_reduce``),
then fills a store with real runs: a bisect of that slowdown over ``main``,
a second launch of the first bad commit and of its parent, baseline runs,
and refused runs where the Kimi class does not exist (v0.5.8) or is renamed
(``rename-kimi``).

``long_history(root)`` is the scale case: 5,000 commits built with
``git fast-import`` in seconds, with made-up runs (no server is involved in
what a page shows).
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import re
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench_helpers import STANDIN, _section, standin_python
from helpers import run_script
from histories import MODEL_BROKEN, MODEL_RENAMED, MODEL_UPSTREAMED, MODEL_V1, MODEL_V2, write_manifest

from patchkit.bench.records.record import RunRecord
from patchkit.bench.records.store import Store
from patchkit.demo.history import History, HistoryBuilder
from patchkit.demo.sglang import build_sglang_history

REPO_ROOT = Path(__file__).resolve().parents[1]
SLOW_WHEN = "python/sglang/srt/distributed/device_communicators/pynccl.py=outplace_all_reduce"
RANGES = ("v0.5.8~3..main", "main..rename-kimi")

METRICS = [
    {"name": "output_tok_s", "source": "output-file", "key": "output_throughput", "better": "higher", "unit": "tok/s"},
    {
        "name": "verify_ms",
        "source": "server-log",
        "regex": [r"\[patchkit\] eagle3 verify_ms=([0-9.]+)"],
        "aggregate": "median",
        "better": "lower",
        "unit": "ms",
        "profiles": ["eagle3"],
    },
]


@dataclass(frozen=True)
class DemoBench:
    history: History
    kimi: Path  # the kimi-k25-eagle3 patches with the stand-in [bench] table
    timing: Path  # eagle3-verify-timing, as bundled
    store: Path
    bisect: dict[str, Any]

    @property
    def repo(self) -> Path:
        return self.history.path


def write_kit(root: Path) -> tuple[Path, Path]:
    shutil.copytree(REPO_ROOT / "manifests", root / "manifests")
    shutil.copytree(REPO_ROOT / "patches", root / "patches")
    text = (root / "manifests" / "kimi-k25-eagle3.toml").read_text(encoding="utf-8")
    bench = {
        "python": standin_python(),
        "pythonpath": ["python"],
        "import_check": ["sglang"],
        "server": "{python} {standin}/server.py --port {port} --tree {tree} {server_args}",
        "health": "http://127.0.0.1:{port}/health",
        "server_info": "http://127.0.0.1:{port}/get_server_info",
        "ready_timeout": 20,
        "client": "{python} {standin}/client.py --port {port} --tree {tree} --output-file {output} --throughput 94 "
        f"--slow-if-contains {SLOW_WHEN} --num-prompts 2 {{client_args}}",
        "warmup": 0,
        "repeat": 2,
        "stop_grace": 3,
        "env": {"PATCHKIT_EAGLE3_VERIFY_TIMING": "1", "NCCL_MIN_NCHANNELS": "4"},
        # the probe's accounting: the stand-ins run from this checkout, not from the tree or an install
        "allow_stray": [f"{STANDIN}/*"],
        "vars": {"standin": str(STANDIN), "server_args": "--workers 1", "client_args": ""},
    }
    lines = [text[: text.index("[bench]")].rstrip("\n"), "", *_section("bench", bench)]
    profiles = {
        "eagle3": {"vars": {"server_args": f"--workers 2 --slow-if-contains {SLOW_WHEN}"}},
        "baseline": {"vars": {"server_args": "--workers 1", "client_args": "--spelling token --slow-factor 0.9"}},
    }
    for name, table in profiles.items():
        lines += ["", *_section(f"bench.profiles.{name}", table)]
    for metric in METRICS:
        lines += ["", "[[bench.metric]]", *_section("x", metric)[1:]]
    kimi = root / "manifests" / "standin-kimi.toml"
    kimi.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return kimi, root / "manifests" / "eagle3-verify-timing.toml"


def demo_bench(root: Path) -> DemoBench:
    history = build_sglang_history(root / "sglang")
    kimi, timing = write_kit(root / "kit")
    store = root / "bench.sqlite"
    common = ["-m", kimi, "--repo", history.path, "--store", store]
    found = run_script(
        "bisect", *common, "--good", "main~20", "--bad", "main~8", "--metric", "output_tok_s", "--ratio", "0.9",
        "--profile", "eagle3", "--json",
    )  # fmt: skip
    assert found.code == 0, found.err
    bisect = json.loads(found.out)
    # A second launch of the first bad commit and of its parent: a verdict needs two launches a side.
    first_bad = bisect["first_bad"]["commit"]
    again = run_script("bench", *common, "--commit", f"{first_bad}~1", "--commit", first_bad, "--profile", "eagle3")
    assert again.code == 0, again.out + again.err
    more = run_script("bench", *common, "--commit", "main~20", "--commit", "main~14", "--profile", "baseline")
    assert more.code == 0, more.out + more.err
    refused = run_script("bench", *common, "--commit", "v0.5.8", "--commit", "rename-kimi", "--profile", "eagle3")
    assert refused.code == 1 and "refused" in refused.out, refused.out + refused.err
    return DemoBench(history, kimi, timing, store, bisect)


def embedded(html: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The report's index and, per element id, the bytes of each embedded document (docs/json.md "report")."""
    found = re.search(r'<script type="application/json" id="patchkit-report">(.*?)</script>', html, re.S)
    assert found is not None, "no index in the page"
    index = json.loads(found[1])
    pattern = re.compile(
        r'<script type="text/plain" id="([^"]+)" data-encoding="gzip\+base64"[^>]*>(.*?)</script>', re.S
    )
    blobs = {m[1]: gzip.decompress(base64.b64decode(m[2])) for m in pattern.finditer(html)}
    return index, blobs


# -- a long history: 5,000 commits on one screen -------------------------------------------------------

LONG_VERSIONS = (MODEL_V1, MODEL_V2, MODEL_BROKEN, MODEL_RENAMED, MODEL_V2, MODEL_UPSTREAMED)


@dataclass(frozen=True)
class LongHistory:
    history: History
    manifest: Path
    store: Path
    shas: list[str]  # oldest first

    @property
    def repo(self) -> Path:
        return self.history.path


def long_history(root: Path, commits: int = 5000) -> LongHistory:
    """``commits`` commits on main (fast-import), whose model file changes every 97 commits through six
    versions (so each band has dozens of windows), the hooks manifest of tests/histories.py, and a store of
    made-up runs written with the store's own ``add``: one launch at most benchmarked commits, three at
    some (an interval from the launches), refused runs, and a noise prior for the baseline profile (an
    interval for one launch)."""
    b = HistoryBuilder(root / "upstream", step=timedelta(minutes=20))
    b.commit("c0", "Initial layout", {"README.md": "upstream\n", "pkg/model.py": MODEL_V1, "docs/log.txt": "0\n"})
    for n in range(1, commits):
        files = {"docs/log.txt": f"{n}\n"}
        if n % 97 == 0:
            files["pkg/model.py"] = LONG_VERSIONS[(n // 97) % len(LONG_VERSIONS)]
        b.commit(f"c{n}", f"change {n}", files)
    history = b.build()
    shas = [history[label] for label in history.order]
    manifest = write_manifest(root / "kit")
    store = root / "bench.sqlite"
    rng = random.Random(27)
    with Store(store) as opened:
        number = 0
        for i, sha in enumerate(shas[::50]):
            launches = 3 if i % 10 == 3 else 1
            for _ in range(launches):
                number += 1
                opened.add(_made_up_run(sha, f"change {i * 50}", number, "eagle3", 94 - i * 0.1, rng, i % 25 == 7))
            if i % 4 == 0:
                number += 1
                opened.add(_made_up_run(sha, f"change {i * 50}", number, "baseline", 80.0, rng, False))
        opened.add_noise(
            host="gpu-1", profile="baseline", metric="output_tok_s", sigma=0.02, df=9, commit=shas[0], series="aa"
        )
    return LongHistory(history, manifest, store, shas)


def _made_up_run(
    sha: str, subject: str, number: int, profile: str, level: float, rng: random.Random, refused: bool
) -> RunRecord:
    values = [] if refused else [round(level * (1 + rng.gauss(0, 0.02)), 2) for _ in range(3)]
    data: dict[str, Any] = {
        "run": None,
        "commit": {"sha": sha, "subject": subject, "date": "2026-03-01T00:00:00+00:00"},
        "profile": profile,
        "outcome": "refused" if refused else "ok",
        "reason": "1 required patch cannot apply at this commit; nothing was started" if refused else None,
        "details": ["hooks:hook FAIL CLASS_NOT_FOUND"] if refused else [],
        "started_at": "2026-03-01T00:00:00+00:00",
        "finished_at": "2026-03-01T00:00:30+00:00",
        "vars": {"port": str(30000 + number)},
        "commands": {} if refused else {"server": ["python3", "-m", "sglang.launch_server"], "cwd": "/w/tree"},
        "env": {} if refused else {"NCCL_MIN_NCHANNELS": str(4 + number % 2)},
        "manifests": [{"name": "hooks", "digest": "sha256:0", "results": []}],
        "guard": {"ok": not refused, "reports": []},
        "host": {"hostname": "gpu-1", "platform": "Linux", "machine": "x86_64"},
        "interpreter": {"executable": "/venv/bin/python", "version": "3.11.7", "packages": {"sglang": "0.5.9"}},
        "torch": {"torch": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9"},
        "gpus": None,
        "server_info": None if refused else {"version": "0.5.9"},
        "samples": {} if refused else {"output_tok_s": values},
        "missing": [],
        "metrics": [{"name": "output_tok_s", "better": "higher", "unit": "tok/s"}],
        "logs": {},
    }
    return RunRecord.from_json(data)
