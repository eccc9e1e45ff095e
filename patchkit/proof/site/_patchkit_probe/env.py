"""The environment the probe records: the variable families, and secret-looking values redacted before a write."""

from __future__ import annotations

import os

FAMILIES = ("NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "SGLANG_", "NVIDIA_", "LD_", "OMP_", "PYTHON")
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")  # patchkit.redact's (a test checks)
REDACTED = "<redacted>"


def redact(name: str, value: str) -> str:
    upper = name.upper()
    return REDACTED if any(word in upper for word in SECRET_WORDS) else value


def wanted_env(environ: dict[str, str] | os._Environ[str], extra: frozenset[str]) -> dict[str, str]:
    return {name: redact(name, value) for name, value in environ.items() if name in extra or name.startswith(FAMILIES)}
