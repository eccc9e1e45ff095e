"""The demo's stand-in for ``sglang.launch_server``: 127.0.0.1 only, timings read from the tree's code.

Endpoints: ``/health`` (200 once listening), ``/get_server_info`` (the
version in the tree's generated ``sglang/_version.py``, as SGLang reports
it, and the model's architectures) and ``/generate?tokens=N`` (sleeps as long
as decoding N tokens takes, then answers ``{"tokens": N, "decode_s": S}``, S
that decoding time as the model below gives it).

S is the modelled time, not a timer read around the sleep.  On a GPU server
the decoding runs on the device, and a busy host CPU hardly moves it; here
the sleep stands in for the device, and a loaded two-core machine wakes a
sleeper late (a 170 ms launch once read tens of milliseconds slower under a
full test run), which would time the host's scheduler instead of the tree's
code.  With S modelled, a demo's numbers depend only on the tree and the
seeded noise below, so the same launches give the same numbers on any
machine and the demo's hunt takes the same path.

How long a token takes comes from the benchmarked tree, not from a table of
commits: the server parses ``python/sglang/srt/distributed/parallel_state.py``
and finds which all-reduce methods ``_all_reduce_out_place_method`` can pick.
An in-place or custom all-reduce costs nothing extra; the out-of-place pynccl
path (which "Fix PCG MoE Error (#17739)" adds for piecewise CUDA graphs)
allocates and copies an output buffer on every MoE layer, which the model
below charges per token.  So whatever commit adds that path is the slow one.
It also reads the model it serves, ``python/sglang/srt/models/kimi_k25.py``,
for its architectures (its ``EntryClass``), as SGLang's model registry does.

Those two files are all it reads of the tree, and it imports none of it (the
tree's modules import torch): the probe records both reads, so ``bisect``
knows that a commit changing any other file could not change what it ran.

Noise: each start draws a factor exp(N(0, --noise)) from ``random.Random``
seeded with ``--noise-seed`` and the number of earlier starts (lines of
``--noise-state FILE``), so a demo's sequence of launches is reproducible.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import random
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

PARALLEL_STATE = "python/sglang/srt/distributed/parallel_state.py"
MODEL = "python/sglang/srt/models/kimi_k25.py"
DISPATCH = "_all_reduce_out_place_method"
BASE_MS_PER_TOKEN = 1000 / 94  # the story's good day: 94 tok/s
OUTPLACE_MS_PER_TOKEN = 1000 / 60 - 1000 / 94  # the out-of-place buffer per MoE layer: down to 60 tok/s


def all_reduce_methods(tree: Path) -> set[str]:
    """The method names the tree's all-reduce dispatch can return (string constants in its returns)."""
    path = tree / PARALLEL_STATE
    if not path.is_file():
        return set()
    module = ast.parse(path.read_text(encoding="utf-8"))
    methods: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name == DISPATCH:
            for ret in ast.walk(node):
                value = ret.value if isinstance(ret, ast.Return) else None
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    methods.add(value.value)
    return methods


def ms_per_token(tree: Path) -> float:
    return BASE_MS_PER_TOKEN + (OUTPLACE_MS_PER_TOKEN if "pynccl" in all_reduce_methods(tree) else 0.0)


def architectures(tree: Path) -> list[str]:
    """The model classes the served model's module registers (the names in its ``EntryClass``)."""
    path = tree / MODEL
    if not path.is_file():
        return []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "EntryClass" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            return [v.id for v in values if isinstance(v, ast.Name)]
    return []


def launch_factor(seed: str, sigma: float, state: str | None) -> float:
    if sigma <= 0:
        return 1.0
    starts = 0
    if state:
        path = Path(state)
        starts = len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0
        with path.open("a", encoding="utf-8") as fh:
            fh.write("start\n")
    return math.exp(random.Random(f"{seed}:{starts}").gauss(0.0, sigma))


def version(tree: Path) -> str:
    path = tree / "python/sglang/_version.py"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith(("__version__", "version")) and "=" in line:
                return line.rsplit("=", 1)[1].strip().strip("'\"")
    return "0.0.0"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tree", required=True)
    parser.add_argument("--noise", type=float, default=0.0)
    parser.add_argument("--noise-seed", default="0")
    parser.add_argument("--noise-state", default=None)
    args = parser.parse_args()
    tree = Path(args.tree)
    per_token = ms_per_token(tree) * launch_factor(args.noise_seed, args.noise, args.noise_state)
    info = json.dumps(
        {"version": version(tree), "model_path": "stand-in", "architectures": architectures(tree)}
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path == "/health":
                body = b"ok"
            elif url.path == "/get_server_info":
                body = info
            elif url.path == "/generate":
                tokens = int(parse_qs(url.query).get("tokens", ["8"])[0])
                decode_s = tokens * per_token / 1000
                time.sleep(decode_s)  # the request takes as long as the decoding would
                body = json.dumps({"tokens": tokens, "decode_s": decode_s}).encode()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *values: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"stand-in server on 127.0.0.1:{args.port}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
