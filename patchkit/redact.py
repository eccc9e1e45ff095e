"""The one rule for secrets: which environment names look like they hold one, and their redaction.

A variable whose name contains one of ``SECRET_WORDS`` (case-insensitive:
``HF_TOKEN``, ``OPENAI_API_KEY``, ``DB_PASSWD``, ``SGLANG_DB_CREDENTIAL``)
is kept with its name and the value ``<redacted>`` wherever patchkit stores or
prints it.  The probe (``proof/site/sitecustomize.py``) runs in the server's
interpreter, where patchkit may not be importable, so it holds a copy of the
words; a test keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
REDACTED = "<redacted>"


def is_secret(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a secret (HF_TOKEN, OPENAI_API_KEY ...)."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def redact_env(env: Mapping[str, Any] | None) -> dict[str, str]:
    """``env`` (names to values) with the value of every secret-looking name replaced by ``<redacted>``."""
    if not env:
        return {}
    return {str(name): REDACTED if is_secret(str(name)) else str(value) for name, value in env.items()}


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The values of the secret-looking names of ``env`` (what must appear in no file patchkit writes)."""
    return [value for name, value in env.items() if is_secret(name) and value and value != REDACTED]
