"""The per-process recorder (``Probe``) and ``start``, which the entry point calls at start-up.

``Probe`` is the probe's file (``writer.Writer``) and its import finding (``finder.Finder``) with the state of
one process: the variable names to record, the expected secrets' digests, the modules to patch once imported
(``watch``: each patcher is imported then, from ``loaders`` or ``torchinit``), and the core that records what
ran (``cores``).  One instance, installed at the front of ``sys.meta_path``.
"""

from __future__ import annotations

import os
import sys

from _patchkit_probe.cores import choose
from _patchkit_probe.env import wanted_env
from _patchkit_probe.finder import Finder, site_dirs
from _patchkit_probe.reads import install_open_hook
from _patchkit_probe.writer import Writer, fault, mp_name, time_ns, title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class Probe(Writer, Finder):
    """The per-process recorder; one instance, installed at the front of ``sys.meta_path``."""

    def __init__(self, out: str, entry: str) -> None:
        Writer.__init__(self, out)
        self.entry = entry  # the probe's sitecustomize: recorded as the probe, it stands for every part
        self.extra = frozenset(n for n in os.environ.get("PATCHKIT_PROBE_ENV", "").split(",") if n)
        salt, _, expected = os.environ.get("PATCHKIT_PROBE_SECRETS", "").partition(";")
        self.salt = salt
        self.secrets: dict[str, str] = {}
        for item in expected.split(","):
            name, _, digest = item.partition("=")
            if name and digest:
                self.secrets[name] = digest
        self.searching: set[str] = set()
        self.fault = os.environ.get("PATCHKIT_PROBE_FAULT")
        self.patched = False
        # modules whose functions the probe wraps once the program has imported them (never before)
        self.watch: dict[str, Callable[[], None]] = {
            "torch.distributed": self.patch_torch,
            "torch.distributed.distributed_c10d": self.patch_torch,
            "importlib.util": self.patch_importlib,
            "runpy": self.patch_runpy,
        }
        self.mains_seen: set[str] = set()
        self.core = choose()

    def open(self, forked_from: int | None = None) -> None:
        host, boot, ticks, image = self.open_file()
        self.emit(
            {
                "kind": "process",
                "pid": self.pid,
                "ppid": os.getppid(),
                # where and when: `patchkit show` lists each process with its host and start
                "host": host,
                "boot_id": boot,
                "start_ticks": ticks,  # /proc/self/stat's starttime: the kernel's, the same across exec()
                "exec_index": image,  # 0: the process's first Python image; N: after its Nth exec()
                "started_ns": time_ns(),
                "argv": list(sys.argv),
                "orig_argv": list(getattr(sys, "orig_argv", sys.argv)),
                "executable": sys.executable,
                "prefix": sys.prefix,
                "base_prefix": sys.base_prefix,
                "stdlib": os.path.dirname(os.__file__),
                "site_dirs": site_dirs(),
                "probe": self.entry,
                "forked_from": forked_from,
                # the core that records what ran (cores.py): its name, its granularity, why a coarser one runs
                "core": self.core.describe(),
                # where this interpreter reads a source's .pyc: the accounting judges the one that ran
                "bytecode": {
                    "tag": sys.implementation.cache_tag,
                    "optimize": sys.flags.optimize,
                    "prefix": sys.pycache_prefix,
                },
                "env": wanted_env(os.environ, self.extra),
            }
        )

    # -- the patchers, imported when the program imports their module -----------------------------------
    def patch_torch(self) -> None:
        from _patchkit_probe.torchinit import patch_torch

        patch_torch(self)

    def patch_importlib(self) -> None:
        from _patchkit_probe.loaders import patch_importlib

        patch_importlib(self)

    def patch_runpy(self) -> None:
        from _patchkit_probe.loaders import patch_runpy

        patch_runpy(self)

    # -- the end of the process, and a fork ---------------------------------------------------------------
    def at_exit(self) -> None:
        try:
            if self.pid != os.getpid():
                return
            self.mains()
            self.emit({"kind": "exit", "title": title(), "mp_name": mp_name(), "compiled": compiled_frames()})
        except Exception as exc:
            self.failed(exc)

    def after_fork(self) -> None:
        parent = self.pid
        try:
            if self.fd >= 0:
                os.close(self.fd)
            self.fd = -1
            self.core.forget()
            self.open(forked_from=parent)
            self.core.resume()
        except Exception as exc:
            self.fd = -1
            self.failed(exc)


def compiled_frames() -> int | None:
    """How many frames torch.compile (dynamo) compiled in this process: None where dynamo was never loaded, -1 where
    its counters could not be read.  Code dynamo compiles runs as a graph and never starts as Python, so the
    accounting records such a process at file granularity (``proof/records.py``)."""
    if "torch._dynamo" not in sys.modules:
        return None
    try:
        counters = sys.modules["torch._dynamo.utils"].counters
        return int(counters["frames"]["ok"]) + int(counters["stats"]["unique_graphs"])
    except Exception:
        return -1


def report(exc: BaseException) -> None:
    """One of the probe's own errors, through the probe when it started, else on stderr alone."""
    probe = getattr(sys, "_patchkit_probe", None)
    if isinstance(probe, Probe):
        probe.failed(exc)
        return
    try:
        sys.stderr.write(f"probe failed in pid {os.getpid()}: {type(exc).__name__}: {exc}\n")
    except Exception:
        pass


def start(entry: str) -> None:
    """Start the probe in this process (``entry``: the absolute path of the sitecustomize that calls this), unless
    ``PATCHKIT_PROBE_DIR`` is unset or it already runs here; never raises."""
    out = os.environ.get("PATCHKIT_PROBE_DIR")
    if not out or getattr(sys, "_patchkit_probe", None) is not None:
        return
    probe = Probe(out, entry)
    try:
        probe.open()
        fault("start")
        probe.module("sitecustomize", entry, kind="probe")
        probe.already_loaded()
        probe.core.install(probe)
        install_open_hook(probe)
        sys.meta_path.insert(0, probe)  # type: ignore[arg-type]
        sys._patchkit_probe = probe  # type: ignore[attr-defined]
        import atexit

        atexit.register(probe.at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=probe.after_fork)
    except Exception as exc:
        probe.failed(exc)
        if probe.fd < 0:
            return
        sys._patchkit_probe = probe  # type: ignore[attr-defined]
