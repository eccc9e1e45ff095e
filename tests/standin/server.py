"""A stand-in for ``sglang.launch_server`` on 127.0.0.1, for patchkit bench tests.

HTTP endpoints: ``/health`` (503 until the start-up delay has passed, then
200), ``/get_server_info`` (JSON with ``version``, read as SGLang's
``python/sglang/version.py`` does: the tree's ``sglang._version`` first), and
``/generate`` (one request of a client run; with
``PATCHKIT_EAGLE3_VERIFY_TIMING=1`` it prints ``[patchkit] eagle3
verify_ms=...`` to stderr, as the eagle3-verify-timing patch does).

It starts ``--workers`` child processes (so the environment check has a tree
to read) and has failure modes: ``--exit-during-startup``, ``--never-healthy``,
``--die-after N`` (/generate requests), ``--drop-env NAME`` (the last worker
starts without NAME; ``--worker-title T`` gives it one more argument), ``--report-version V``, ``--ignore-sigterm``.
``--worker-exec``: each worker execs another Python once (same process, a second image), and /health waits for
each second image to run; ``--worker-flag -I``
and ``--worker-empty-env``: the last worker runs Python with that flag, or with no environment at all.
``--read-file PATH`` (tree-relative or absolute): each spawn worker reads that JSON file before init.
``--marker FILE`` gets a line when it starts; ``--pid-file`` lists the pids of the server and its workers, one a line.
``--speed-from MODULE:FUNC``: the server's speed is code of the tree: it imports MODULE (the tree is on its
``PYTHONPATH``) and calls FUNC() once per /generate, and its reply's throughput factor is divided by what FUNC
returns (a cost: 1.0 as fast as ever, 2.0 half the speed), so that a regression is planted in the tree's
functions, constants or the data files they read, as the pruning tests need.  ``--speed-from-child PATH``: a
process that is not Python (``/bin/sh``, then ``sleep``) reads the tree's PATH and hands its first line to the
server as one more cost factor, and lives as long as the server: what it read, no probe can see.
``--log-every SECONDS``: a server that logs late, as one that reports on a timer does: every SECONDS, if any
/generate came since its last line, it prints ``stand-in stats: served=N`` (N: the requests since then), so
the line about a short client run comes after the run's last response.

``--noise SIGMA``: launch-to-launch noise.  Each start draws a throughput
factor exp(N(0, SIGMA)) from ``random.Random`` seeded with ``--noise-seed``
and the number of starts before it (counted as lines of ``--noise-state
FILE``), so a sequence of launches is reproducible; each /generate reply
carries that factor times its own exp(N(0, SIGMA/4)) (within-launch noise),
and the stand-in client multiplies its throughput by their mean.
SGLang's process shape, for the probe (patchkit/proof): ``--main-env NAME=VALUE`` sets
``os.environ`` in the main process before the workers start (as SGLang's
``_set_envs_and_config`` does), then ``--spawn-workers N`` starts N
``multiprocessing`` spawn children named ``scheduler_TP<rank>`` that import
``torch`` (the stand-in under tests/standin/torch_standin on PYTHONPATH),
set ``--worker-env RANK:NAME=VALUE`` themselves (``--tree-envs``: the tree's
``sglang.srt.entrypoints.engine._set_envs_and_config()`` runs first, as SGLang's does), load ``--load-so PATH``
through ctypes (as pynccl loads libnccl) and call
``torch.distributed.init_process_group(--backend)``; /health is 200 only
once every one of them has.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def worker(exec_once: bool = False, ready_fd: int | None = None) -> None:
    if exec_once:  # a worker that execs another Python: the same process (pid, start time), a second image
        argv = [a for a in sys.argv if a != "--worker-exec"]
        os.execv(sys.executable, [sys.executable, *argv])
    if ready_fd is not None:  # the image that serves is up (its probe file written): the server may be healthy
        os.write(ready_fd, b".")
        os.close(ready_fd)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(0.2)


def spawn_worker(
    rank: int, world: int, backend: str, sets: list[str], load_so: str | None, ready, reads: tuple[str, ...] = ()
) -> None:
    """A scheduler process as SGLang spawns it: its own env edits, a ctypes-loaded library, the configs it reads
    (as SGLang reads a fused-MoE tuning config), then init."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    for path in reads:
        with open(path, encoding="utf-8") as f:
            json.load(f)
    for item in sets:
        where, _, assignment = item.partition(":")
        name, _, value = assignment.partition("=")
        if where in ("*", str(rank)):
            os.environ[name] = value
    if load_so:
        import ctypes

        ctypes.CDLL(load_so)
    import torch.distributed as dist

    dist.init_process_group(backend=backend, rank=rank, world_size=world)
    ready.put(rank)
    while True:
        time.sleep(0.2)


def timing_helpers(tree: str) -> dict:
    """The module-level code eagle3-verify-timing adds to the tree's eagle_worker.py, executed on its own.

    The tree's eagle_worker.py imports SGLang internals the demo tree does not
    have, so the GPU stand-in runs just the patch's definitions (the flag, read
    from the environment at "import", and the timer helpers) from the patched file.
    """
    import ast

    path = Path(tree) / "python/sglang/srt/speculative/eagle_worker.py"
    module = ast.parse(path.read_text(encoding="utf-8"))
    keep = [
        node
        for node in module.body
        if (isinstance(node, ast.FunctionDef) and node.name.startswith("_patchkit_"))
        or (isinstance(node, ast.Assign) and any(getattr(t, "id", "").startswith("_PATCHKIT_") for t in node.targets))
    ]
    if not keep:
        raise SystemExit(f"{path} has no eagle3-verify-timing code: apply the manifest first")
    code = "import os, sys, time\nfrom typing import Optional\n" + "\n".join(ast.unparse(n) for n in keep)
    namespace: dict = {}
    exec(compile(code, str(path), "exec"), namespace)
    return namespace


def torch_worker(rank: int, tree: str, jobs, done) -> None:
    """A TP-rank stand-in started with torch.multiprocessing (spawn): real CUDA work, timed by the patch's code."""
    import torch

    helpers = timing_helpers(tree)
    device = torch.device("cuda", rank % max(1, torch.cuda.device_count()))
    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    while True:
        job = jobs.get()
        if job is None:
            return
        t0 = helpers["_patchkit_verify_timer_start"]() if helpers["_PATCHKIT_VERIFY_TIMING"] else None
        for _ in range(job):
            a = (a @ a).tanh()
        helpers["_patchkit_verify_timer_stop"](t0)
        done.put(rank)


def tree_version() -> str:
    try:
        from sglang._version import __version__  # type: ignore[import-not-found]

        return str(__version__)
    except ImportError:
        return "0.0.0.dev0"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--worker-exec", action="store_true", help="each --workers child execs itself once")
    parser.add_argument("--ready-fd", type=int, default=None, help="a worker: say on this pipe once it serves")
    parser.add_argument(
        "--worker-flag", action="append", default=[], help="a Python flag of the last worker (-I, -S, -E)"
    )
    parser.add_argument("--worker-empty-env", action="store_true", help="the last worker starts with env={}")
    parser.add_argument(
        "--read-file", action="append", default=[], help="a file the spawn workers read (tree-relative or absolute)"
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tree", default=".")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--exit-during-startup", type=int, default=None)
    parser.add_argument("--never-healthy", action="store_true")
    parser.add_argument("--die-after", type=int, default=None)
    parser.add_argument("--drop-env", action="append", default=[])
    parser.add_argument(
        "--worker-title", default=None, help="an extra argument of the last worker (may hold a newline)"
    )
    parser.add_argument("--report-version", default=None)
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--pid-file", default=None)
    parser.add_argument("--marker", default=None, help="append 'server' to this file when starting")
    parser.add_argument("--torch-workers", type=int, default=0, help="GPU: spawn workers with torch.multiprocessing")
    parser.add_argument("--matmuls", type=int, default=20, help="GPU: matmuls per verify step per worker")
    parser.add_argument("--verify-ms", type=float, default=18.0)
    parser.add_argument("--slow-if-exists", default=None, help="tree-relative file: verify takes --slow-factor longer")
    parser.add_argument("--slow-factor", type=float, default=1.6)
    parser.add_argument("--slow-if-contains", default=None, help="PATH=TEXT: slow when the tree's PATH contains TEXT")
    parser.add_argument("--noise", type=float, default=0.0, help="launch-to-launch sigma of the throughput factor")
    parser.add_argument("--noise-seed", default="0")
    parser.add_argument("--noise-state", default=None, help="file counting the starts (one line each)")
    parser.add_argument("--spawn-workers", type=int, default=0, help="multiprocessing spawn children that init torch")
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--main-env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--worker-env", action="append", default=[], metavar="RANK:NAME=VALUE")
    parser.add_argument("--load-so", default=None)
    parser.add_argument("--tree-envs", action="store_true", help="call the tree's _set_envs_and_config first")
    parser.add_argument("--log-every", type=float, default=None, help="a stats line on a timer (a late logger)")
    parser.add_argument("--speed-from", default=None, metavar="MODULE:FUNC", help="the tree's cost function")
    parser.add_argument("--speed-from-child", default=None, metavar="PATH", help="a cost a non-Python child reads")
    args, _unknown = parser.parse_known_args()
    if args.worker:
        worker(exec_once=args.worker_exec, ready_fd=args.ready_fd)
        return
    if args.marker:
        with open(args.marker, "a", encoding="utf-8") as fh:
            fh.write("server\n")
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"stand-in server starting on 127.0.0.1:{args.port} (pid {os.getpid()})", flush=True)

    workers = []
    # An exec'ing worker is up once its second image runs; the server is healthy only then, as SGLang's is once
    # its schedulers are, so a short run cannot stop a worker between its two images.
    ready_r, ready_w = os.pipe() if args.worker_exec else (None, None)
    for index in range(args.workers):
        env = dict(os.environ)
        if index == args.workers - 1:
            for name in args.drop_env:
                env.pop(name, None)
        last = index == args.workers - 1
        flags = args.worker_flag if last else []
        argv = [sys.executable, *flags, __file__, "--worker", f"--rank={index}"]
        if args.worker_exec:
            argv += ["--worker-exec", f"--ready-fd={ready_w}"]
        if args.worker_title and last:
            argv.append(args.worker_title)
        if args.worker_empty_env and last:
            env = {}
        fds = (ready_w,) if ready_w is not None else ()
        workers.append(subprocess.Popen(argv, env=env, pass_fds=fds))
    if ready_r is not None and ready_w is not None:
        os.close(ready_w)
        got = b""
        while len(got) < args.workers:
            chunk = os.read(ready_r, args.workers)
            if not chunk:  # every worker closed it: one died before it served
                break
            got += chunk
        os.close(ready_r)
    gpu_jobs: list = []
    gpu_done = None
    if args.torch_workers:
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        gpu_done = ctx.Queue()
        for rank in range(args.torch_workers):
            queue = ctx.Queue()
            process = ctx.Process(target=torch_worker, args=(rank, args.tree, queue, gpu_done), daemon=True)
            process.start()
            gpu_jobs.append(queue)
            workers.append(process)
    spawned_ready = None
    if args.spawn_workers:
        import multiprocessing as mp

        for assignment in args.main_env:
            name, _, value = assignment.partition("=")
            os.environ[name] = value
        if args.tree_envs:  # as SGLang's engine does before it spawns the schedulers: per commit
            from sglang.srt.entrypoints.engine import _set_envs_and_config  # type: ignore[import-not-found]

            _set_envs_and_config()
        ctx = mp.get_context("spawn")
        spawned_ready = ctx.Queue()
        reads = tuple(p if os.path.isabs(p) else os.path.join(os.path.abspath(args.tree), p) for p in args.read_file)
        for rank in range(args.spawn_workers):
            process = ctx.Process(
                target=spawn_worker,
                args=(rank, args.spawn_workers, args.backend, args.worker_env, args.load_so, spawned_ready, reads),
                name=f"scheduler_TP{rank}",
                daemon=True,
            )
            process.start()
            workers.append(process)
    if args.pid_file:
        Path(args.pid_file).write_text("\n".join(str(p) for p in [os.getpid(), *(w.pid for w in workers)]) + "\n")

    if args.exit_during_startup is not None:
        time.sleep(0.2)
        print("RuntimeError: stand-in start-up failure (CUDA out of memory)", file=sys.stderr, flush=True)
        os._exit(args.exit_during_startup)

    if spawned_ready is not None:
        for _ in range(args.spawn_workers):
            spawned_ready.get(timeout=120)
    ready_at = time.monotonic() + args.delay
    version = args.report_version or tree_version()
    verify_ms = args.verify_ms
    if args.slow_if_exists and (Path(args.tree) / args.slow_if_exists).exists():
        verify_ms *= args.slow_factor
    if args.slow_if_contains:
        path, _, text = args.slow_if_contains.partition("=")
        target = Path(args.tree) / path
        if target.is_file() and text in target.read_text(encoding="utf-8", errors="replace"):
            verify_ms *= args.slow_factor
    timing = os.environ.get("PATCHKIT_EAGLE3_VERIFY_TIMING") == "1"
    served = {"generate": 0, "since": 0}
    counting = threading.Lock()
    rng = None
    factor = 1.0
    cost = None
    child_cost = 1.0
    if args.speed_from:
        import importlib

        module, _, name = args.speed_from.partition(":")
        cost = getattr(importlib.import_module(module), name)
    if args.speed_from_child:
        path = os.path.join(os.path.abspath(args.tree), args.speed_from_child)
        child = subprocess.Popen(
            ["/bin/sh", "-c", 'cat "$0"; exec sleep 3600', path], stdout=subprocess.PIPE, text=True
        )
        workers.append(child)
        child_cost = float(child.stdout.readline()) if child.stdout is not None else 1.0
    if args.noise:
        import math
        import random

        start = 0
        if args.noise_state:
            state = Path(args.noise_state)
            start = len(state.read_text().splitlines()) if state.exists() else 0
            with state.open("a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        rng = random.Random(f"{args.noise_seed}-{start}")
        factor = math.exp(rng.gauss(0.0, args.noise))
        print(f"stand-in server: launch {start + 1}, throughput factor {factor:.4f}", flush=True)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *a: object) -> None:
            pass

        def reply(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                healthy = not args.never_healthy and time.monotonic() >= ready_at
                self.reply(200 if healthy else 503, {})
            elif self.path == "/get_server_info":
                self.reply(200, {"version": version, "tp_size": len(workers), "model_path": "stand-in"})
            elif self.path == "/generate":
                served["generate"] += 1
                with counting:
                    served["since"] += 1
                if args.die_after is not None and served["generate"] > args.die_after:
                    print("stand-in server: fatal error in the scheduler", file=sys.stderr, flush=True)
                    os._exit(17)
                if gpu_jobs and gpu_done is not None:
                    for queue in gpu_jobs:
                        queue.put(args.matmuls)
                    for _ in gpu_jobs:
                        gpu_done.get(timeout=120)
                elif timing:
                    for rank in range(max(1, len(workers))):
                        print(f"[patchkit] eagle3 verify_ms={verify_ms + rank * 0.1:.1f}", file=sys.stderr, flush=True)
                body: dict = {"text": "ok"}
                if rng is not None:
                    import math

                    body["factor"] = factor * math.exp(rng.gauss(0.0, args.noise / 4))
                elif cost is not None or args.speed_from_child:
                    body["factor"] = factor
                if cost is not None:
                    body["factor"] /= float(cost())
                if args.speed_from_child:
                    body["factor"] /= child_cost
                self.reply(200, body)
            else:
                self.reply(404, {})

    if args.log_every:

        def stats() -> None:
            while True:
                time.sleep(args.log_every)
                with counting:
                    count, served["since"] = served["since"], 0
                if count:
                    print(f"stand-in stats: served={count}", flush=True)

        threading.Thread(target=stats, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("stand-in server listening", flush=True)
    try:
        server.serve_forever()
    finally:
        for w in workers:
            w.terminate()


if __name__ == "__main__":
    main()
