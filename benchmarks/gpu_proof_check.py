"""The proof's GPU check (issue 21, item 8): the probe, NCCL and the mapped libnccl must agree, on real torch.

NOT YET RUN ON A GPU: written in a session that was lent no GPU host.  Only
its CPU part (the two gloo ranks) has run, there with the stand-in torch of
tests/standin (no torch in that interpreter).  Run it once where the
``device`` tool lends a GPU, with an interpreter that has torch with CUDA:

    python benchmarks/gpu_proof_check.py --python /venv/bin/python --out /tmp/gpu-proof

In under 3 minutes it starts one driver process with the probe on
(``patchkit.proof.probe_env``), ``NCCL_DEBUG=INFO`` and
``NCCL_DEBUG_SUBSYS=INIT,ENV``; the driver spawns (``multiprocessing``
spawn, as SGLang starts its schedulers):

* two ranks that form a gloo group (world size 2) and all-reduce a CPU
  tensor; rank 1 sets ``NCCL_MIN_NCHANNELS=8`` itself after start-up, so its
  start environment (what psutil reads) says 4 and the probe must say 8;
* one rank that forms an NCCL group on GPU 0 (world size 1) and all-reduces a
  CUDA tensor, so NCCL creates its communicator and prints its lines.

While they run, ``LibrarySampler`` (psutil) reads the ``libnccl*``,
``libcudart*`` and ``libcuda*`` each process maps.  Then it checks that:

* the probe saw each rank's ``init_process_group`` with its backend, and the
  environment there (gloo rank 1: 8, rank 0: 4);
* every ``NCCL_*`` variable NCCL itself says it read ("set by environment",
  parsed by ``patchkit.proof.nccllog``) has, in the NCCL rank, the value the
  probe recorded at ``init_process_group`` (integers compared as numbers:
  NCCL prints the number it parsed);
* NCCL's ``NCCL version`` line, ``torch.cuda.nccl.version()`` as the probe
  recorded it, and the version string inside the ``libnccl`` file that
  process mapped (NCCL embeds ``NCCL version X.Y.Z+cudaA.B`` in the library)
  name the same NCCL.

``--out DIR`` gets what it saw, shaped for tests/fixtures/: ``nccl/`` (the
driver's output, NCCL's lines as printed, for ``nccllog``'s fixture),
``probe/`` (the probe's files), ``libraries.json``, ``summary.json`` (every
check, what was skipped and why, versions, host, GPU) and a README.md.  Where
torch has no CUDA device (or there is no real torch: then the stand-in torch
runs the gloo part), the NCCL rank is skipped and it says so; a skip is not a
failure.  Exit 0 when every check that ran agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from patchkit.proof import probe_env  # noqa: E402
from patchkit.proof.digests import DigestCache  # noqa: E402
from patchkit.proof.libs import LibrarySampler  # noqa: E402
from patchkit.proof.nccllog import nccl_host, parse_nccl_log  # noqa: E402
from patchkit.proof.records import local_key, read_probe_dir  # noqa: E402

STANDIN_TORCH = ROOT / "tests" / "standin" / "torch_standin"
TIMEOUT = 150  # seconds for the driver: the whole check stays under 3 minutes
NCCL_ENV = {"NCCL_MIN_NCHANNELS": "4", "NCCL_P2P_LEVEL": "NVL", "NCCL_BUFFSIZE": "4194304"}

DRIVER = """
import multiprocessing as mp
import os
import sys
import time


def gloo_rank(rank, port, results):
    if rank == 1:
        os.environ["NCCL_MIN_NCHANNELS"] = "8"  # after start-up: psutil would still read 4
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    total = None
    if hasattr(dist, "all_reduce"):
        t = torch.ones(4) * (rank + 1)
        dist.all_reduce(t)
        total = float(t[0])
    time.sleep(1.0)  # alive for a library sample
    results.put(("gloo", rank, os.getpid(), total))
    dist.destroy_process_group()


def nccl_rank(port, results):
    import torch
    import torch.cuda.nccl  # so the probe records torch.cuda.nccl.version() at init
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    t = torch.ones(4, device="cuda")
    dist.all_reduce(t)  # NCCL creates its communicator at the first collective
    torch.cuda.synchronize()
    time.sleep(2.0)  # alive for a library sample
    results.put(("nccl", 0, os.getpid(), float(t[0].item())))
    dist.destroy_process_group()


if __name__ == "__main__":
    gloo_port, nccl_port, with_nccl = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=gloo_rank, args=(r, gloo_port, results), name=f"gloo_rank{r}") for r in (0, 1)]
    if with_nccl:
        procs.append(ctx.Process(target=nccl_rank, args=(nccl_port, results), name="nccl_rank0"))
    for p in procs:
        p.start()
    seen = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    for item in sorted(seen):
        print("RESULT", *item, flush=True)
    sys.exit(max(p.exitcode or 0 for p in procs))
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torch_facts(python: str) -> dict[str, Any]:
    """What ``python`` has: real torch (version, CUDA devices, NCCL) or none."""
    code = (
        "import json, torch\n"
        "cuda = torch.cuda.is_available()\n"
        "print(json.dumps({'torch': torch.__version__, 'file': torch.__file__, 'cuda': cuda,\n"
        " 'devices': torch.cuda.device_count() if cuda else 0,\n"
        " 'gpu': torch.cuda.get_device_name(0) if cuda else None,\n"
        " 'nccl': '.'.join(map(str, torch.cuda.nccl.version())) if cuda else None}))\n"
    )
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return {"torch": None, "why": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def nccl_version_in(library: str) -> str | None:
    """The ``NCCL version X.Y.Z+cudaA.B`` string NCCL embeds in its shared library."""
    try:
        data = Path(library).read_bytes()
    except OSError:
        return None
    found = re.search(rb"NCCL version (\d+\.\d+\.\d+[^\x00\s]*)", data)
    return found.group(1).decode("ascii", "replace") if found else None


def same_value(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    try:
        return int(a, 0) == int(b, 0)
    except ValueError:
        return a == b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter with torch (default: this one)")
    parser.add_argument("--out", required=True, help="folder for what it saw (shaped for tests/fixtures/)")
    args = parser.parse_args()
    started = time.monotonic()
    out = Path(args.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    (out / "probe").mkdir(parents=True)
    (out / "nccl").mkdir()
    checks: list[dict[str, Any]] = []
    skipped: list[str] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")

    facts = torch_facts(args.python)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "PATCHKIT_PROBE"))}
    env.update(NCCL_ENV, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,ENV", PYTHONUNBUFFERED="1")
    if facts.get("torch") is None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(STANDIN_TORCH), env.get("PYTHONPATH", "")) if p)
        skipped.append(
            f"real torch: {args.python} has none ({facts.get('why')}); the gloo ranks ran with the stand-in torch "
            "(tests/standin/torch_standin: no tensors, no all-reduce)"
        )
    with_nccl = bool(facts.get("cuda"))
    if not with_nccl:
        skipped.append("the NCCL rank, NCCL's own lines and the libnccl check: no CUDA device for this torch")
    print(f"torch: {facts}")
    env = probe_env(env, out / "probe", env_names=sorted(NCCL_ENV))
    driver = out / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    sampler = LibrarySampler(first=0.1, most=0.5)
    log = out / "nccl" / "gpu_nccl_info.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [args.python, str(driver), str(free_port()), str(free_port()), "1" if with_nccl else "0"],
            env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=out,
        )  # fmt: skip
        sampler.start(proc.pid)
        try:
            code = proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        finally:
            sampler.stop()
    driver.unlink()
    text = log.read_text(encoding="utf-8", errors="replace")
    check("driver", code == 0, f"exit {code} (output: {log})")
    processes = read_probe_dir(out / "probe")
    ranks = {p.label: p for p in processes if p.inits}
    for label, expected in (("gloo_rank0", "4"), ("gloo_rank1", "8")):
        proc_facts = ranks.get(label)
        call = proc_facts.inits[-1] if proc_facts else None
        found = call.env.get("NCCL_MIN_NCHANNELS") if call else None
        start = proc_facts.start_env.get("NCCL_MIN_NCHANNELS") if proc_facts else None
        check(
            f"probe at init, {label}",
            call is not None and call.backend == "gloo" and found == expected and start == "4",
            f"backend {call.backend if call else None}, NCCL_MIN_NCHANNELS at init {found!r} (expected {expected!r}), "
            f"at start {start!r}",
        )
    libraries = sampler.libraries(DigestCache(None))
    (out / "libraries.json").write_text(
        json.dumps({str(pid): [lib.to_json() for lib in libs] for (pid, _), libs in libraries.items()}, indent=2) + "\n"
    )
    nccl = parse_nccl_log(text.splitlines())
    if with_nccl:
        rank = ranks.get("nccl_rank0")
        call = rank.inits[-1] if rank else None
        said = nccl.get((nccl_host(rank.host), rank.pid)) if rank else None
        check("NCCL printed its lines", said is not None and bool(said.env), f"{said.to_json() if said else None}")
        if rank is not None and call is not None and said is not None:
            for name, value in sorted(said.env.items()):
                check(
                    f"NCCL and the probe agree on {name}",
                    same_value(value, call.env.get(name)),
                    f"NCCL read {value!r}, the probe saw {call.env.get(name)!r} at init_process_group",
                )
            unprinted = sorted(set(NCCL_ENV) - set(said.env))
            if unprinted:
                skipped.append(f"NCCL printed no 'set by environment' line for {', '.join(unprinted)} (not read here)")
            own = libraries.get(local_key(rank) or (rank.pid, None), ())  # this machine's process of that pid
            mapped = [lib for lib in own if os.path.basename(lib.path).startswith("libnccl")]
            embedded = {lib.path: nccl_version_in(lib.path) for lib in mapped}
            check(
                "a libnccl was mapped",
                bool(mapped),
                f"{[lib.to_json() for lib in mapped]}" if mapped else "none: is NCCL linked into torch statically?",
            )
            line = said.version
            check(
                "NCCL's version line, torch.cuda.nccl.version() and the mapped libnccl agree",
                bool(mapped)
                and line is not None
                and all(v == line for v in embedded.values())
                and call.nccl is not None
                and call.nccl.split(".")[:3] == line.split("+")[0].split(".")[:3],
                f"NCCL said {line!r}; torch.cuda.nccl.version() {call.nccl!r}; in the library file {embedded}",
            )
    elapsed = time.monotonic() - started
    summary = {
        "written_by": "benchmarks/gpu_proof_check.py",
        "host": platform.node(),
        "python": args.python,
        "torch": facts,
        "elapsed_s": round(elapsed, 1),
        "checks": checks,
        "skipped": skipped,
        "nccl": {str(pid): item.to_json() for pid, item in sorted(nccl.items())},
        "ranks": {label: {"pid": p.pid, "init": [i.to_json() for i in p.inits]} for label, p in sorted(ranks.items())},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "README.md").write_text(
        "# What benchmarks/gpu_proof_check.py saw\n\n"
        f"On {platform.node()}, torch {facts.get('torch')} ({facts.get('gpu') or 'no GPU'}), in {elapsed:.0f} s.\n\n"
        "- `nccl/gpu_nccl_info.log`: the driver's stdout and stderr (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,ENV), "
        "as printed;\n"
        "- `probe/`: the probe's files (`probe-<pid>.jsonl`, docs/json.md);\n"
        "- `libraries.json`: the libnccl/libcudart/libcuda each process mapped (psutil), with size and sha256;\n"
        "- `summary.json`: every check, what was skipped and why.\n\n"
        + "".join(f"Skipped: {line}\n\n" for line in skipped)
    )
    for line in skipped:
        print(f"skipped: {line}")
    failed = [c["check"] for c in checks if not c["ok"]]
    print(f"{len(checks) - len(failed)} of {len(checks)} checks agree in {elapsed:.1f} s; written to {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
