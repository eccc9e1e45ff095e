"""nvidia-smi, asked at the start and end of a launch: the GPU hygiene snapshot.

Why apart from ``records.hygiene``: asking is a process a launch runs (execution), reading
the answer is a pure function of text that a stored record keeps (records).  A store, a
comparison or ``show`` reads hygiene without ever starting nvidia-smi.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence

from patchkit.bench.records.hygiene import APPS_FIELDS, EXTRA_FIELDS, snapshot_from
from patchkit.bench.records.provenance import run_quiet


def snapshot(base: Sequence[Mapping[str, object]] | None, timeout: float = 20.0) -> dict[str, object] | None:
    """Ask nvidia-smi now (None without it, or when its base query gave nothing)."""
    exe = shutil.which("nvidia-smi")
    if exe is None or base is None:
        return None
    extra = run_quiet([exe, f"--query-gpu={','.join(EXTRA_FIELDS)}", "--format=csv"], timeout=timeout)
    apps = run_quiet([exe, f"--query-compute-apps={','.join(APPS_FIELDS)}", "--format=csv"], timeout=timeout)
    return snapshot_from(base, extra, apps)
