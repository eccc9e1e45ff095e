# ruff: noqa: E501  (the [bench] table is TOML text, one command a line)
"""patchkit bench on a real GPU host, in under 5 minutes (issue 10, item 8).

UNTESTED: written in a session without a GPU host.  Run it once where there
is one (torch with CUDA and nvidia-smi installed in this interpreter):

    python benchmarks/bench_gpu.py [--workers 1] [--keep DIR]

It builds the demo history (patchkit.demo.sglang), writes a kit with the Kimi
manifest's patches and a [bench] table that starts tests/standin/server.py
with ``--torch-workers N``: its workers are started with
``torch.multiprocessing`` (spawn), as SGLang starts its TP workers, do real
CUDA matmuls per verify step, and time them with the code that
``eagle3-verify-timing`` applied to the tree (``[patchkit] eagle3
verify_ms=...`` in the server log).  Then ``patchkit bench --json`` at two
commits (before and after the planted "Fix PCG MoE Error" slowdown of the
stand-in client) and prints:

* the stored GPU facts (nvidia-smi) and torch's CUDA / cuDNN / NCCL versions;
* the env check passing across the spawned CUDA workers (their pids);
* verify_ms read from the server log, and the throughput ratio between the
  two commits, from the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STANDIN = ROOT / "tests" / "standin"
PLANTED = "python/sglang/srt/distributed/parallel_state.py=is_in_piecewise_cuda_graph"


def kit(root: Path, workers: int) -> Path:
    (root / "manifests").mkdir(parents=True)
    shutil.copytree(ROOT / "patches", root / "patches")
    shutil.copy(ROOT / "manifests" / "eagle3-verify-timing.toml", root / "manifests")
    source = (ROOT / "manifests" / "kimi-k25-eagle3.toml").read_text(encoding="utf-8")
    patches = source[: source.index("# -- Benchmarking")]
    bench = f"""
[bench]
python = {json.dumps(sys.executable)}
pythonpath = ["python"]
import_check = ["sglang"]
scm_version_file = "python/sglang/_version.py"
server = "{{python}} {STANDIN}/server.py --port {{port}} --tree {{tree}} --workers 0 --torch-workers {workers} --slow-if-contains {{planted}}"
health = "http://127.0.0.1:{{port}}/health"
server_info = "http://127.0.0.1:{{port}}/get_server_info"
ready_timeout = 180
client = "{{python}} {STANDIN}/client.py --port {{port}} --tree {{tree}} --num-prompts 20 --throughput 94.2 --slow-if-contains {{planted}} --output-file {{output}}"
warmup = 1
repeat = 3
stop_grace = 10
env = {{ PATCHKIT_EAGLE3_VERIFY_TIMING = "1", NCCL_MIN_NCHANNELS = "4" }}
inherit = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"]
vars = {{ planted = "{PLANTED}" }}

[[bench.metric]]
name = "output_tok_s"
source = "output-file"
key = "output_throughput"
better = "higher"

[[bench.metric]]
name = "verify_ms"
source = "server-log"
regex = ['\\[patchkit\\] eagle3 verify_ms=([0-9.]+)']
aggregate = "median"
better = "lower"
"""
    path = root / "manifests" / "kimi-k25-eagle3.toml"
    path.write_text(patches + bench, encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1, help="torch.multiprocessing workers (one per GPU is fine)")
    parser.add_argument("--keep", default=None, help="build in this new directory and keep it")
    args = parser.parse_args()
    from patchkit.demo.sglang import build_sglang_history

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="patchkit-gpu-"))
    history = build_sglang_history(base / "sglang")
    manifest = kit(base / "kit", args.workers)
    timing = base / "kit" / "manifests" / "eagle3-verify-timing.toml"
    before, after = history["add-kimi"], history["kimi-npu"]
    command = [
        sys.executable, "-m", "patchkit", "bench", "-m", str(manifest), "-m", str(timing),
        "--repo", str(history.path), "--commit", before, "--commit", after, "--json",
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=290, check=False)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        print(proc.stderr, file=sys.stderr)
        return proc.returncode or 1
    data = json.loads(proc.stdout)
    for run in data["runs"]:
        print(f"run {run['run']} {run['commit']['sha'][:10]} {run['commit']['subject']}: {run['outcome']}")
        if run["outcome"] != "ok":
            print(f"  reason: {run['reason']}")
            for line in run["details"]:
                print(f"  {line}")
            continue
        print(f"  gpus: {json.dumps(run['gpus'])}")
        print(f"  torch: {json.dumps(run['torch'])}")
        print(f"  env check passed in pids {run['logs']['env_checked_pids']} (server + spawned CUDA workers)")
        print(f"  verify_ms samples (server log): {run['samples']['verify_ms']}")
        print(f"  output_tok_s samples: {run['samples']['output_tok_s']}")
    rows = {(r["commit"], r["metric"]): r for r in data["table"]}
    for metric in ("output_tok_s", "verify_ms"):
        row = rows.get((after, metric))
        if row and row["ratio"] is not None:
            print(f"{metric}: {after[:10]} / {before[:10]} = {row['ratio']:.3f}")
    print(f"store: {data['store']}; built in {base}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
