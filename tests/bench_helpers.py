"""A tiny upstream history and a [bench] manifest that drive the stand-in server and client (tests/standin/).

History (first parent, oldest first): ``base`` (tagged v0.5.8), ``docs``,
``break-model`` (renames class Model: the manifest cannot apply), ``restore-model``,
``slow`` ("Fix PCG MoE Error": perf/throughput.txt drops from 100 to 65 and the
verify time grows), ``docs-2``, ``tip``.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import venv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers import Kit, src, toml_value

from patchkit.demo.history import History, HistoryBuilder

STANDIN = Path(__file__).resolve().parent / "standin"
MODEL = "python/sglang/srt/model.py"
SLOW_MARKER = "python/sglang/srt/compilation/piecewise_context_manager.py"
MODEL_TEXT = "class Model:\n    def forward(self, x):\n        return x\n"
PAYLOAD = "class Model:\n    def set_eagle3_layers_to_capture(self, layers):\n        self.layers = layers\n"
SLOW_SUBJECT = "Fix PCG MoE Error (#17739)"


@functools.cache
def standin_python() -> str:
    """The interpreter of a fresh venv (no pip, no packages; made once per test process) for the stand-ins.

    The stand-ins need only the stdlib.  Running them with this checkout's own
    interpreter would make every probed run depend on what that interpreter's
    site-packages hold: one ``.pth`` file owned by no distribution (CI's
    machine has one) is a STRAY, and the probe rightly refuses the run.
    """
    root = Path(tempfile.mkdtemp(prefix="patchkit-standin-venv-"))
    atexit.register(shutil.rmtree, root, True)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root / "venv")
    return str(root / "venv" / "bin" / "python")


def build_history(path: Path, *, ignore: bool = True) -> History:
    """``ignore=False``: no .gitignore, so bench's own files (version file, bytecode) show as untracked."""
    b = HistoryBuilder(path)
    ignored = {".gitignore": "python/sglang/_version.py\n__pycache__/\n"} if ignore else {}
    b.commit(
        "base",
        "Initial import",
        {
            **ignored,
            "python/sglang/__init__.py": "",
            MODEL: MODEL_TEXT,
            "perf/throughput.txt": "100\n",
            "README.md": "upstream\n",
        },
    )
    b.tag("v0.5.8", "base")
    b.commit("docs", "docs: install notes", {"README.md": "upstream\ninstall\n"})
    b.commit("break-model", "refactor: rename Model to Net", {MODEL: MODEL_TEXT.replace("class Model", "class Net")})
    b.commit("restore-model", "revert the rename of Model", {MODEL: MODEL_TEXT})
    b.commit(
        "slow",
        SLOW_SUBJECT,
        {"perf/throughput.txt": "65\n", SLOW_MARKER: "def is_in_piecewise_cuda_graph():\n    return False\n"},
    )
    b.commit("docs-2", "docs: more notes", {"README.md": "upstream\ninstall\nmore\n"})
    b.commit("tip", "model: comment", {MODEL: MODEL_TEXT + "\n# tip\n"})
    return b.build()


def bench_table(**over: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "python": standin_python(),
        "pythonpath": ["python"],
        "import_check": ["sglang"],
        "scm_version_file": "python/sglang/_version.py",
        "server": "{python} {standin}/server.py --port {port} --tree {tree} --marker {marker} {server_args}",
        "health": "http://127.0.0.1:{port}/health",
        "server_info": "http://127.0.0.1:{port}/get_server_info",
        "ready_timeout": 20,
        "client": "{python} {standin}/client.py --port {port} --tree {tree} --output-file {output} "
        "--throughput-file perf/throughput.txt --slow-if-exists {slow_marker} --slow-factor 1 --num-prompts 2 "
        "--marker {marker} {client_args}",
        "warmup": 1,
        "repeat": 2,
        "stop_grace": 3,
        # verify_ms (server-log) is printed before each reply, never after a run: no wait for a late line
        "log_wait": 0,
        "env": {"PATCHKIT_EAGLE3_VERIFY_TIMING": "1", "NCCL_MIN_NCHANNELS": "4"},
        # the probe's accounting: the stand-ins run from this checkout, not from the tree or an install
        "allow_stray": [f"{STANDIN}/*"],
        "vars": {
            "standin": str(STANDIN),
            "server_args": "--workers 2",
            "client_args": "",
            "slow_marker": SLOW_MARKER,
            "marker": os.devnull,
        },
    }
    table.update(over)
    return {k: v for k, v in table.items() if v is not None}


PROFILES = {
    "eagle3": {"vars": {"server_args": "--workers 2 --slow-if-exists " + SLOW_MARKER}},
    "baseline": {"vars": {"server_args": "--workers 1", "client_args": "--spelling token"}},
}

METRICS = [
    {"name": "output_tok_s", "source": "output-file", "key": "output_throughput", "better": "higher"},
    {
        "name": "output_tok_s_printed",
        "source": "stdout",
        "regex": [
            r"Output token throughput \(tok/s\):\s+([0-9.]+)",
            r"Output token throughput \(token/s\):\s+([0-9.]+)",
        ],
        "better": "higher",
    },
    {
        "name": "verify_ms",
        "source": "server-log",
        "regex": [r"\[patchkit\] eagle3 verify_ms=([0-9.]+)"],
        "aggregate": "median",
        "better": "lower",
    },
]


def _section(name: str, table: Mapping[str, Any]) -> list[str]:
    lines = [f"[{name}]"]
    for key, value in table.items():
        lines.append(f"{key} = {repr(value) if isinstance(value, float) else toml_value(value)}")
    return lines


def write_bench_kit(
    root: Path,
    *,
    bench: Mapping[str, Any] | None = None,
    profiles: Mapping[str, Any] | None = None,
    metrics: list[dict[str, Any]] | None = None,
) -> Path:
    kit = Kit(root, name="standin")
    patches = [
        {"id": "typing", "op": "ensure-import", "file": MODEL, "import": "from typing import List"},
        {
            "id": "hooks",
            "op": "add-methods",
            "file": MODEL,
            "class": "Model",
            "source": src("hooks.py"),
        },
    ]
    path = kit.write(patches, {"hooks.py": PAYLOAD}, name="standin")
    lines = [path.read_text(encoding="utf-8"), *_section("bench", bench or bench_table())]
    for name, table in (PROFILES if profiles is None else profiles).items():
        lines += ["", *_section(f"bench.profiles.{name}", table)]
    for metric in METRICS if metrics is None else metrics:
        lines += ["", "[[bench.metric]]", *_section("x", metric)[1:]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
