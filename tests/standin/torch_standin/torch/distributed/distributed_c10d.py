"""The process-group calls of torch.distributed, stood in.

With backend ``nccl`` and ``NCCL_DEBUG=INFO`` it prints what real NCCL prints on
its first communicator, in NCCL's own line format
(``<host>:<pid>:<tid> [<dev>] NCCL INFO ...``): the version line, and one
``<NAME> set by environment to <VALUE>`` line per NCCL_ variable it reads,
an integer as NCCL's ``ncclLoadParam`` prints it (the number it parsed, and a
period: ``4.``), anything else as it is (tests/fixtures/nccl/README.md).
"""

import os
import socket
import sys
import threading

__all__ = ["destroy_process_group", "get_backend", "get_rank", "get_world_size", "init_process_group", "is_initialized"]

NCCL_VERSION = "2.27.5+cuda12.9"
_group: dict = {}


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None, **kwargs):
    if _group:
        raise RuntimeError("trying to initialize the default process group twice!")
    if rank < 0:
        rank = int(os.environ.get("RANK", "0"))
    if world_size < 0:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    _group.update(backend=backend or "gloo", rank=rank, world_size=world_size)
    if _group["backend"] == "nccl" and os.environ.get("NCCL_DEBUG", "").upper() == "INFO":
        prefix = f"{socket.gethostname().split('.')[0]}:{os.getpid()}:{threading.get_native_id()} [{rank}] NCCL INFO"
        lines = [f"{prefix} NCCL version {NCCL_VERSION}"]
        lines += [
            f"{prefix} {name} set by environment to {_as_nccl_prints(value)}"
            for name, value in sorted(os.environ.items())
            if name.startswith("NCCL_") and name not in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS")
        ]
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()


def _as_nccl_prints(value):
    try:
        return f"{int(value, 0)}."
    except ValueError:
        return value


def is_initialized():
    return bool(_group)


def get_rank():
    return _group["rank"]


def get_world_size():
    return _group["world_size"]


def get_backend(group=None):
    return _group["backend"]


def destroy_process_group(group=None):
    _group.clear()
