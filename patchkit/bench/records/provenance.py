"""Facts stored with every run: host, interpreter and packages, torch's CUDA stack, GPUs.

* Packages are read with ``importlib.metadata`` *in the bench interpreter*
  (with the server's environment), not in patchkit's own, by a short probe
  process.  torch's CUDA, cuDNN and NCCL versions come from a second probe
  that imports torch, only when torch is installed there.
* GPU facts come from ``nvidia-smi --query-gpu=... --format=csv``.  The parser
  is tested on real output (tests/fixtures/gpu/, captured on an H200); the
  header names the columns, so it reads them by name and strips the units
  (``345 MHz`` -> 345).  ``[N/A]`` and ``N/A`` become None.

Every probe has a timeout and failing probes give None: provenance never stops
a benchmark, it records what could be known.
"""

from __future__ import annotations

import json
import platform
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

PACKAGES = ("sglang", "torch", "sgl-kernel", "flashinfer-python", "flashinfer", "transformers")

QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "pstate",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "memory.total",
    "memory.used",
    "persistence_mode",
    "ecc.mode.current",
    "power.limit",
    "temperature.gpu",
    "compute_mode",
)

# nvidia-smi's CSV header (units stripped) -> our key.  The header says
# clocks.current.sm where the query said clocks.sm.
_COLUMNS = {
    "index": "index",
    "name": "name",
    "uuid": "uuid",
    "driver_version": "driver_version",
    "pstate": "pstate",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.memory": "mem_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.max.sm": "max_sm_clock_mhz",
    "clocks.max.streaming_multiprocessor": "max_sm_clock_mhz",
    "pcie.link.gen.current": "pcie_gen",
    "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.width.current": "pcie_width",
    "pcie.link.width.max": "pcie_width_max",
    "memory.total": "memory_total_mib",
    "memory.used": "memory_used_mib",
    "persistence_mode": "persistence_mode",
    "ecc.mode.current": "ecc_mode",
    "power.limit": "power_limit_w",
    "temperature.gpu": "temperature_c",
    "compute_mode": "compute_mode",
}
_NUMERIC = {
    "index",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "max_sm_clock_mhz",
    "pcie_gen",
    "pcie_gen_max",
    "pcie_width",
    "pcie_width_max",
    "memory_total_mib",
    "memory_used_mib",
    "power_limit_w",
    "temperature_c",
}


def _number(text: str) -> int | float | None:
    value = text.split()[0] if text.split() else ""
    try:
        number = float(value)
    except ValueError:
        return None
    return int(number) if number.is_integer() and "." not in value else number


def parse_query_csv(text: str) -> list[dict[str, object]]:
    """Rows of ``nvidia-smi --query-gpu=... --format=csv`` (with its header line), one dict per GPU."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip().split(" [", 1)[0] for h in lines[0].split(",")]
    gpus = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(header):
            continue
        gpu: dict[str, object] = {}
        for name, cell in zip(header, cells, strict=True):
            key = _COLUMNS.get(name, name)
            if cell in ("[N/A]", "N/A", "[Not Supported]", ""):
                gpu[key] = None
            elif key in _NUMERIC:
                gpu[key] = _number(cell)
            else:
                gpu[key] = cell
        gpus.append(gpu)
    return gpus


def gpu_facts(timeout: float = 20.0) -> list[dict[str, object]] | None:
    """GPU facts from nvidia-smi, or None where there is no nvidia-smi (or it fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    out = run_quiet([exe, f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv"], timeout=timeout)
    return None if out is None else parse_query_csv(out)


def run_quiet(
    cmd: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> str | None:
    """stdout of a command that exits 0 within ``timeout``, else None (provenance never stops a run)."""
    try:
        proc = subprocess.run(
            list(cmd),
            check=False,
            capture_output=True,
            env=None if env is None else dict(env),
            cwd=cwd,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def host_facts() -> dict[str, object]:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine()}


_PACKAGE_PROBE = """\
import importlib.metadata as m, json, sys
out = {"executable": sys.executable, "version": sys.version.split()[0], "packages": {}}
for name in %r:
    try:
        out["packages"][name] = m.version(name)
    except Exception:
        out["packages"][name] = None
print(json.dumps(out))
"""

_TORCH_PROBE = """\
import json, importlib.util
if importlib.util.find_spec("torch") is None:
    print("null")
else:
    import torch
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": None, "nccl": None}
    try:
        out["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        pass
    try:
        v = torch.cuda.nccl.version()
        out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
    print(json.dumps(out))
"""


def probe_json(
    python: str, code: str, env: Mapping[str, str], cwd: str, timeout: float, args: Sequence[str] = ()
) -> Any:  # json.loads of what the probe printed
    """The JSON value a ``python -c code args...`` probe prints last, or None."""
    out = run_quiet([python, "-c", code, *args], timeout=timeout, env=env, cwd=cwd)
    try:
        return None if out is None else json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None


def interpreter_facts(python: str, env: Mapping[str, str], cwd: str, timeout: float = 60.0) -> dict[str, object] | None:
    """sys.version, the executable and PACKAGES' versions, as the bench interpreter sees them."""
    result: dict[str, object] | None = probe_json(python, _PACKAGE_PROBE % (PACKAGES,), env, cwd, timeout)
    return result


def torch_facts(python: str, env: Mapping[str, str], cwd: str, timeout: float = 120.0) -> dict[str, object] | None:
    """torch, CUDA, cuDNN and NCCL versions as torch reports them; None without torch."""
    result: dict[str, object] | None = probe_json(python, _TORCH_PROBE, env, cwd, timeout)
    return result
