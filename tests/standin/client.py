"""A stand-in for ``sglang.bench_serving``: requests to the stand-in server, SGLang-style result lines.

Throughput is read from a file in the tree (``--throughput-file``, default
100 tok/s), so a slowdown can be planted at a known commit; ``--slow-if-exists
PATH`` multiplies it by ``--slow-factor`` when PATH exists in the tree.  It
prints the result block as bench_serving does (``--spelling`` picks the older
``(token/s)`` or the newer ``(tok/s)`` label) and appends one JSON line to
``--output-file`` with ``output_throughput`` and ``accept_length``.
``--hang-at N`` makes the Nth client run (counted in ``--marker``) hang, for an interrupt to end it.
Against a server started with ``--noise``, the throughput is multiplied by the mean of the factors its
/generate replies carry.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tree", default=".")
    parser.add_argument("--output-file", required=True)
    parser.add_argument("--num-prompts", type=int, default=4)
    parser.add_argument("--throughput-file", default=None)
    parser.add_argument("--throughput", type=float, default=100.0, help="tok/s when there is no --throughput-file")
    parser.add_argument("--slow-if-exists", default=None)
    parser.add_argument("--slow-factor", type=float, default=0.65)
    parser.add_argument("--slow-if-contains", default=None, help="PATH=TEXT: slow when the tree's PATH contains TEXT")
    parser.add_argument("--spelling", choices=["tok", "token"], default="tok")
    parser.add_argument("--accept-length", type=float, default=3.2)
    parser.add_argument("--no-output", action="store_true", help="write no JSON line (a missing metric)")
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--marker", default=None, help="append 'client' to this file when starting")
    parser.add_argument("--hang-at", type=int, default=None, help="the Nth client run (by --marker) hangs")
    args, _unknown = parser.parse_known_args()
    if args.marker:
        with open(args.marker, "a", encoding="utf-8") as fh:
            fh.write("client\n")
        if args.hang_at is not None and Path(args.marker).read_text().split().count("client") >= args.hang_at:
            time.sleep(600)  # until bench is interrupted
    factors = []
    for _ in range(args.num_prompts):
        with urllib.request.urlopen(f"http://127.0.0.1:{args.port}/generate", timeout=10) as response:
            reply = json.loads(response.read() or b"{}")
            if "factor" in reply:  # a server started with --noise
                factors.append(float(reply["factor"]))
    if args.fail:
        print("Traceback: stand-in client failure", file=sys.stderr)
        return 1
    tree = Path(args.tree)
    throughput = args.throughput
    if args.throughput_file and (tree / args.throughput_file).exists():
        throughput = float((tree / args.throughput_file).read_text().strip())
    if args.slow_if_exists and (tree / args.slow_if_exists).exists():
        throughput *= args.slow_factor
    if args.slow_if_contains:
        path, _, text = args.slow_if_contains.partition("=")
        target = tree / path
        if target.is_file() and text in target.read_text(encoding="utf-8", errors="replace"):
            throughput *= args.slow_factor
    if factors:
        throughput *= sum(factors) / len(factors)
    print("============ Serving Benchmark Result ============")
    print(f"{'Backend:':<40} sglang")
    print(f"{'Successful requests:':<40} {args.num_prompts}")
    print(f"{f'Output token throughput ({args.spelling}/s):':<40} {throughput:.2f}")
    print(f"{'Accept length:':<40} {args.accept_length:.2f}")
    print("=" * 50)
    if not args.no_output:
        with open(args.output_file, "a", encoding="utf-8") as fh:
            record = {"backend": "sglang", "completed": args.num_prompts, "output_throughput": throughput}
            record["accept_length"] = args.accept_length
            fh.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
