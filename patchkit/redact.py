"""The one rule for secrets: which environment names look like they hold one, and their redaction.

A variable whose name contains one of ``SECRET_WORDS`` (case-insensitive:
``HF_TOKEN``, ``OPENAI_API_KEY``, ``DB_PASSWD``, ``SGLANG_DB_CREDENTIAL``)
is kept with its name and the value ``<redacted>`` wherever patchkit stores or
prints it.  The probe (``proof/site/``, ``_patchkit_probe/env.py``) runs in the server's
interpreter, where patchkit may not be importable, so it holds a copy of the
words; a test keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
REDACTED = "<redacted>"


def is_secret(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a secret (HF_TOKEN, OPENAI_API_KEY ...)."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def redact_env(env: Mapping[str, object] | None) -> dict[str, str]:
    """``env`` (names to values) with the value of every secret-looking name replaced by ``<redacted>``."""
    if not env:
        return {}
    return {str(name): REDACTED if is_secret(str(name)) else str(value) for name, value in env.items()}


MIN_SECRET = 6  # shorter values are not searched for elsewhere (a "1" would be everywhere)


def secret_values(*envs: Mapping[str, str]) -> list[str]:
    """The values of the secret-looking names of ``envs`` (what must appear in no file patchkit writes),
    each once, those shorter than ``MIN_SECRET`` left out."""
    found = {value for env in envs for name, value in env.items() if is_secret(name) and value != REDACTED}
    return sorted((v for v in found if len(v) >= MIN_SECRET), key=lambda v: (-len(v), v))


@overload
def scrub(value: str, secrets: Sequence[str]) -> str: ...
@overload
def scrub(value: object, secrets: Sequence[str]) -> object: ...
def scrub(value: object, secrets: Sequence[str]) -> object:
    """``value`` (a string, or mappings and sequences of them) with every occurrence of a secret replaced."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub(v, secrets) for v in value)
    return value
