"""The demo history benchmarked with the stand-in server (tests/standin/), and reading a report back.

``demo_bench(root)`` builds ``patchkit demo``'s SGLang-shaped history, a copy
of the bundled manifests with a stand-in ``[bench]`` table added to
kimi-k25-eagle3 (the client is 35 % slower, the verify step 60 % longer, from
"Fix PCG MoE Error" on, where ``pynccl.py`` gains ``outplace_all_reduce``),
then fills a store with real runs: a bisect of that slowdown over ``main``,
a second launch of the first bad commit and of its parent, baseline runs,
and refused runs where the Kimi class does not exist (v0.5.8) or is renamed
(``rename-kimi``).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_helpers import STANDIN, _section, standin_python
from helpers import run_script

from patchkit.demo.history import History
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
