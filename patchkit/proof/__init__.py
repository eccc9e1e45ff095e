"""Proof from inside the benchmarked processes: the code that ran, its environment, the NCCL it loaded.

* ``site/``: the probe, run by every Python process of the server's tree
  (``probe_env`` puts the directory first on ``PYTHONPATH``): ``sitecustomize.py``,
  its entry point, and its parts, the package ``site/_patchkit_probe/``
  (``PROBE_FILES``: every one of them, which the accounting calls the probe);
* ``records``: the probe's per-process files, read back as frozen values;
* ``libs``: from outside (psutil), the shared libraries each process mapped;
* ``nccllog``: NCCL's own ``NCCL_DEBUG=INFO`` lines, per host and pid;
* ``dists`` and ``digests``: site directories, their distributions and RECORD
  hashes, with a stat cache of file digests;
* ``account``: every file that ran, put in one category (tree, dist,
  editable, stdlib, probe) or called STRAY with why;
* ``sitecheck``: the same verification of an interpreter's site directories
  without a server (``patchkit guard --python PY --site``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

PROBE_SITE_DIR = Path(__file__).resolve().parent / "site"
PROBE_PACKAGE = "_patchkit_probe"  # the probe's parts, beside its sitecustomize: no server module has the name
# Every file of the probe, by real path: its entry point and its parts.  The probe records only the entry point
# (it stands for the rest), and the accounting calls any of them "probe", whichever a process is seen to run.
PROBE_FILES = frozenset(
    os.path.realpath(p)
    for p in (PROBE_SITE_DIR / "sitecustomize.py", *sorted((PROBE_SITE_DIR / PROBE_PACKAGE).glob("*.py")))
)
# The variable families the probe records in every process, whatever [bench].env names: a copy of its FAMILIES
# (the probe cannot import patchkit; a test holds the two equal).
PROBE_FAMILIES = ("NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "SGLANG_", "NVIDIA_", "LD_", "OMP_", "PYTHON")
# The data files the probe records when a process reads them (its DATA_SUFFIXES; the same test holds them equal).
PROBE_DATA_SUFFIXES = (".json", ".yaml", ".yml", ".txt", ".jinja", ".jinja2")


def probe_env(
    environ: Mapping[str, str],
    out_dir: Path,
    *,
    env_names: Sequence[str] = (),
    secrets: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``environ`` with the probe on: its directory first on PYTHONPATH, writing to ``out_dir``.

    ``secrets``: expected values of secret-looking names (``patchkit.redact``).
    The probe never writes such a value, so it cannot be compared afterwards;
    instead each is passed as the sha256 of a fresh random salt and the value
    (``PATCHKIT_PROBE_SECRETS``), and the probe compares in the process at
    ``init_process_group`` and writes only ``equal``, ``different`` or ``unset``.
    """
    env = dict(environ)
    rest = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(PROBE_SITE_DIR) + (os.pathsep + rest if rest else "")
    env["PATCHKIT_PROBE_DIR"] = str(out_dir)
    if env_names:
        env["PATCHKIT_PROBE_ENV"] = ",".join(env_names)
    if secrets:
        salt = os.urandom(16).hex()
        digests = [
            f"{name}={hashlib.sha256((salt + value).encode('utf-8', 'surrogateescape')).hexdigest()}"
            for name, value in sorted(secrets.items())
            if "," not in name and "=" not in name
        ]
        env["PATCHKIT_PROBE_SECRETS"] = salt + ";" + ",".join(digests)
    return env
