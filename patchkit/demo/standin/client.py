"""The demo's stand-in for ``sglang.bench_serving``: timed /generate requests, SGLang-style result lines.

Sends ``--num-prompts`` requests of ``--output-len`` tokens one after the
other, prints ``Output token throughput (tok/s):`` as bench_serving does and
appends one JSON line with ``output_throughput`` to ``--output-file``.

The throughput is the tokens over the decoding time the server reports with
each reply, not over the client's wall time: a run is about 170 ms, and on a
loaded two-core machine what lies around the decoding (the HTTP round trips,
a busy scheduler) once made a launch read 74 tok/s where its server decoded
at about 90, and the demo's compare failed.  The server reports its modelled
decoding time (see server.py for why no timer is read there either).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--output-file", required=True)
    parser.add_argument("--num-prompts", type=int, default=2)
    parser.add_argument("--output-len", type=int, default=8)
    args = parser.parse_args()
    tokens = 0
    decoding = 0.0
    for _ in range(args.num_prompts):
        url = f"http://127.0.0.1:{args.port}/generate?tokens={args.output_len}"
        with urllib.request.urlopen(url, timeout=30) as response:
            reply = json.loads(response.read())
            tokens += int(reply["tokens"])
            decoding += float(reply["decode_s"])
    throughput = tokens / decoding
    print("============ Serving Benchmark Result ============")
    print(f"Output token throughput (tok/s):         {throughput:.2f}")
    with open(args.output_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"output_throughput": throughput, "accept_length": None}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
