"""From outside, per process (psutil): the shared libraries it mapped, the NCCL and CUDA ones with digests.

``/proc/PID/maps`` (``psutil.Process.memory_maps``) lists what the dynamic
loader mapped, including what ``ctypes.CDLL`` loaded at run time, which is how
SGLang's pynccl loads its own ``libnccl`` next to torch's.  Every mapped
``lib*.so*`` is listed by path; ``libnccl*``, ``libcudart*`` and ``libcuda*``
also get size and sha256 (through the digest cache: a 300 MB libnccl is
hashed once).  A process that is gone or not ours gives an empty list.

``LibrarySampler`` does the same for a command's whole process tree while it
runs (``patchkit run --probe``): its processes are gone by the time the
command exits, so the tree is read every ``interval`` seconds (growing from
0.2 s to 2 s, to keep its own cost small beside a benchmark), and the NCCL and
CUDA libraries each process ever had mapped are kept.  A process that lived
less than one interval may be missed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import psutil

from patchkit.proof.digests import DigestCache, hex_of
from patchkit.proof.document import LibraryJson
from patchkit.proof.records import LocalKey
from patchkit.proof.unprobed import start_ticks

NOTABLE = ("libnccl", "libcudart", "libcuda")


@dataclass(frozen=True)
class MappedLibrary:
    """A shared library a process mapped; the notable ones (``libnccl``, ``libcudart``, ``libcuda``) also carry
    size and sha256, so that two runs can tell which build was loaded."""

    path: str
    size: int | None = None
    sha256: str | None = None  # hex

    @property
    def notable(self) -> bool:
        return os.path.basename(self.path).startswith(NOTABLE)

    def to_json(self) -> LibraryJson:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


def mapped_libraries(pid: int, cache: DigestCache) -> tuple[MappedLibrary, ...]:
    try:
        maps = psutil.Process(pid).memory_maps(grouped=True)
    except (psutil.Error, OSError):
        return ()
    paths = sorted({m.path for m in maps if ".so" in os.path.basename(m.path) and os.path.isabs(m.path)})
    out = []
    for path in paths:
        lib = MappedLibrary(path)
        if lib.notable:
            try:
                st = os.stat(path)
                lib = MappedLibrary(path, st.st_size, hex_of(cache.sha256(path, st)))
            except OSError:
                pass
        out.append(lib)
    return tuple(out)


class LibrarySampler:
    """The ``libnccl*``/``libcudart*``/``libcuda*`` each process of a tree mapped, sampled while it runs."""

    def __init__(self, *, first: float = 0.2, most: float = 2.0) -> None:
        self.first, self.most = first, most
        self.seen: dict[LocalKey, set[str]] = {}  # a reused pid is another process: keyed with its start
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._root: psutil.Process | None = None

    def start(self, pid: int) -> None:
        try:
            self._root = psutil.Process(pid)
        except psutil.Error:
            return
        self._thread = threading.Thread(target=self._loop, name="patchkit-library-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        delay = self.first
        while True:
            self.sample()
            if self._stop.wait(delay):
                return
            delay = min(delay * 1.5, self.most)

    def sample(self) -> None:
        root = self._root
        if root is None:
            return
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        for proc in procs:
            try:
                maps = proc.memory_maps(grouped=True)
            except (psutil.Error, OSError):
                continue
            found = {m.path for m in maps if os.path.basename(m.path).startswith(NOTABLE) and os.path.isabs(m.path)}
            if found:
                self.seen.setdefault((proc.pid, start_ticks(proc.pid)), set()).update(found)

    def libraries(self, cache: DigestCache) -> Mapping[LocalKey, tuple[MappedLibrary, ...]]:
        """(pid, start ticks) -> its notable libraries, with size and sha256 (of the file as it is now)."""
        out = {}
        for key, paths in sorted(self.seen.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            libs = []
            for path in sorted(paths):
                try:
                    st = os.stat(path)
                    libs.append(MappedLibrary(path, st.st_size, hex_of(cache.sha256(path, st))))
                except OSError:
                    libs.append(MappedLibrary(path))
            out[key] = tuple(libs)
        return out
