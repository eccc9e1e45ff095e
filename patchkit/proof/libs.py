"""From outside, per process (psutil): the shared libraries it mapped, the NCCL and CUDA ones with digests.

``/proc/PID/maps`` (``psutil.Process.memory_maps``) lists what the dynamic
loader mapped, including what ``ctypes.CDLL`` loaded at run time, which is how
SGLang's pynccl loads its own ``libnccl`` next to torch's.  Every mapped
``lib*.so*`` is listed by path; ``libnccl*``, ``libcudart*`` and ``libcuda*``
also get size and sha256 (through the digest cache: a 300 MB libnccl is
hashed once).  A process that is gone or not ours gives an empty list.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import psutil

from patchkit.proof.digests import DigestCache, hex_of

NOTABLE = ("libnccl", "libcudart", "libcuda")


@dataclass(frozen=True)
class MappedLibrary:
    path: str
    size: int | None = None
    sha256: str | None = None  # hex

    @property
    def notable(self) -> bool:
        return os.path.basename(self.path).startswith(NOTABLE)

    def to_json(self) -> dict[str, Any]:
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
