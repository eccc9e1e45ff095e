"""Where the server's JIT compilers keep the code they generate and load back by path.

Triton compiles a small C launcher per kernel signature into ``~/.triton/cache``
and loads it with ``importlib.util.spec_from_file_location``; so do
``torch.utils.cpp_extension`` builds (FlashInfer's and other JIT kernels).  The
probe records those loads, and such a file lies outside every root the
accounting knows (tree, site directories, editable checkouts, stdlib), so
every real SGLang run would be refused as STRAY.  These files are derived:
built from code the accounting does verify, named by a hash of it.  The
accounting puts them in their own category, ``generated``, named with the
cache, recorded and not verified.  Which compilers and where they look is data
(``jit_caches.toml``), filled in with the environment the server was given,
since that is where the compiler looks.
"""

from __future__ import annotations

import os
import pwd
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "jit_caches.toml"
_ONLY_VAR = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_VAR_OR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}")


@dataclass(frozen=True)
class JitCache:
    """One JIT compiler's cache directory, as a server started with the given environment would find it: files
    loaded from under it are accounted as ``generated``."""

    name: str  # "Triton"
    root: str  # the directory, absolute, as that server would find it


def jit_caches(env: Mapping[str, str]) -> tuple[JitCache, ...]:
    """The JIT cache directories of a server started with ``env`` (a process of the same user as this one)."""
    with DATA.open("rb") as f:
        entries = tomllib.load(f)["cache"]
    home, user, tmp = _home(env), _user(env), env.get("TMPDIR") or "/tmp"
    found = []
    for entry in entries:
        for candidate in entry["dir"]:
            root = _fill(str(candidate), env, home=home, user=user, tmp=tmp)
            if root:
                found.append(JitCache(str(entry["name"]), os.path.normpath(root)))
                break
    return tuple(found)


def _fill(template: str, env: Mapping[str, str], *, home: str, user: str, tmp: str) -> str | None:
    only = _ONLY_VAR.match(template)
    if only:
        return env.get(only.group(1)) or None
    text = _VAR_OR.sub(lambda m: env.get(m.group(1)) or m.group(2), template)
    if text.startswith("~"):
        text = home + text[1:]
    text = text.replace("{tmp}", tmp).replace("{user}", user)
    return text if os.path.isabs(text) else None


def _home(env: Mapping[str, str]) -> str:
    if env.get("HOME"):
        return env["HOME"]
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.path.expanduser("~")


def _user(env: Mapping[str, str]) -> str:
    for name in ("USER", "LOGNAME"):
        if env.get(name):
            return env[name]
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
