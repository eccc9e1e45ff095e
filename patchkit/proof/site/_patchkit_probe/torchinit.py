"""``torch.distributed.init_process_group``, wrapped once the program imports ``torch.distributed`` (the probe
never imports torch): the environment at the call, backend, rank, world size, ``torch.__version__`` and
``torch.cuda.nccl.version()`` (only when the program loaded ``torch.cuda.nccl``: no CUDA initialisation), and
each secret-looking expected variable compared in the process.  Imported only by a process that imports
``torch.distributed``."""

from __future__ import annotations

import os
import sys

from _patchkit_probe.env import wanted_env
from _patchkit_probe.writer import fault, mp_name, title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _patchkit_probe.probe import Probe


def patch_torch(probe: Probe) -> None:
    try:
        targets = [sys.modules.get("torch.distributed"), sys.modules.get("torch.distributed.distributed_c10d")]
        for mod in targets:
            original = getattr(mod, "init_process_group", None)
            if original is None or getattr(original, "__patchkit_probe__", False):
                continue
            mod.init_process_group = wrapped(probe, original)  # type: ignore[union-attr]
            probe.patched = True
        if probe.patched:
            probe.watch.pop("torch.distributed", None)
            probe.watch.pop("torch.distributed.distributed_c10d", None)
    except Exception as exc:
        probe.failed(exc)


def wrapped(probe: Probe, original: object) -> object:
    import functools

    @functools.wraps(original)  # type: ignore[arg-type]
    def init_process_group(*args: object, **kwargs: object) -> object:
        try:
            env = wanted_env(os.environ, probe.extra)
            secrets = compare_secrets(probe) if probe.secrets else {}
        except Exception as exc:
            probe.failed(exc)
            env, secrets = None, {}
        raised = None
        try:
            return original(*args, **kwargs)  # type: ignore[operator]
        except BaseException as exc:
            raised = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            try:
                fault("init")
                init_record(probe, env, args, kwargs, raised, secrets)
            except Exception as exc:
                probe.failed(exc)

    init_process_group.__patchkit_probe__ = True  # type: ignore[attr-defined]
    return init_process_group


def compare_secrets(probe: Probe) -> dict[str, str]:
    """Each secret-looking expected variable, compared here with its expected value's salted digest:
    only ``equal``, ``different`` or ``unset`` leaves the process, never the value."""
    import hashlib

    out = {}
    for name, digest in probe.secrets.items():
        value = os.environ.get(name)
        if value is None:
            out[name] = "unset"
            continue
        found = hashlib.sha256((probe.salt + value).encode("utf-8", "surrogateescape")).hexdigest()
        out[name] = "equal" if found == digest else "different"
    return out


def init_record(
    probe: Probe,
    env: object,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    raised: object,
    secrets: dict[str, str] | None = None,
) -> None:
    probe.mains()
    dist = sys.modules.get("torch.distributed")
    backend = kwargs.get("backend", args[0] if args else None)
    rank = kwargs.get("rank", os.environ.get("RANK"))
    world_size = kwargs.get("world_size", os.environ.get("WORLD_SIZE"))
    if raised is None and dist is not None:
        for attr, slot in (("get_rank", "rank"), ("get_world_size", "world_size"), ("get_backend", "backend")):
            try:
                value = getattr(dist, attr)()
            except Exception:
                continue
            if slot == "rank":
                rank = value
            elif slot == "world_size":
                world_size = value
            else:
                backend = value
    torch = sys.modules.get("torch")
    nccl_module = sys.modules.get("torch.cuda.nccl")
    nccl = None
    if nccl_module is not None:
        try:
            nccl = nccl_module.version()
        except Exception as exc:
            nccl = f"unknown ({type(exc).__name__}: {exc})"
    if isinstance(nccl, tuple):
        nccl = ".".join(str(part) for part in nccl)
    probe.emit(
        {
            "kind": "init",
            "env": env,
            "backend": None if backend is None else str(backend),
            "rank": _int(rank),
            "world_size": _int(world_size),
            "torch": getattr(torch, "__version__", None),
            "nccl": None if nccl is None else str(nccl),
            "title": title(),
            "mp_name": mp_name(),
            "raised": raised,
            "secrets": secrets or {},
        }
    )


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
