"""The demo's stand-in for ``sglang.bench_serving``: timed /generate requests, SGLang-style result lines.

Sends ``--num-prompts`` requests of ``--output-len`` tokens one after the
other, measures the wall time, prints ``Output token throughput (tok/s):``
as bench_serving does and appends one JSON line with ``output_throughput``
to ``--output-file``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--output-file", required=True)
    parser.add_argument("--num-prompts", type=int, default=2)
    parser.add_argument("--output-len", type=int, default=8)
    args = parser.parse_args()
    tokens = 0
    start = time.perf_counter()
    for _ in range(args.num_prompts):
        url = f"http://127.0.0.1:{args.port}/generate?tokens={args.output_len}"
        with urllib.request.urlopen(url, timeout=30) as response:
            tokens += int(json.loads(response.read())["tokens"])
    throughput = tokens / (time.perf_counter() - start)
    print("============ Serving Benchmark Result ============")
    print(f"Output token throughput (tok/s):         {throughput:.2f}")
    with open(args.output_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"output_throughput": throughput, "accept_length": None}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
