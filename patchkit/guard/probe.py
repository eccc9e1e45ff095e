"""The import probe: where does a given interpreter import a package from?

``probe(python, packages)`` runs ``PYTHON -c PROBE_SCRIPT NAME...`` once, as a
subprocess, and reads one JSON object from its stdout.

What the child inherits, and why: the full environment of the process that
runs patchkit (``PYTHONPATH``, ``VIRTUAL_ENV``, ``PATH``, ``.pth`` files of the
interpreter's site-packages, user site) and its working directory, with no
interpreter flags.  That is what a server started from the same shell as
``python -m sglang.launch_server`` gets, including ``sys.path[0]`` being the
current directory.  ``PYTHONSAFEPATH`` and friends are honoured as the
server would honour them.

Nothing of the packages runs: the script never imports them.  A top-level
name is resolved with ``importlib.util.find_spec``, which consults
``sys.meta_path`` (so editable-install finders count) without importing
anything.  For a dotted name ``a.b.c``, ``importlib.util.find_spec`` would
*import* ``a`` and ``a.b`` to learn their ``__path__``; the probe instead asks
every finder on ``sys.meta_path`` for ``a.b`` with the search locations of
``a``'s spec, and so on down, which is what the import system would do without
executing the parents' ``__init__`` (a namespace child needs its parent in
``sys.modules``: the probe puts an empty stand-in module there, holding only
the parent's search path).  (A package whose ``__init__`` rewrites
its own ``__path__`` at import time is therefore seen as it is on disk.)

Distribution versions come from ``importlib.metadata.version`` (for the
package's own name, else for the distribution that ``packages_distributions``
says provides it) and for ``torch``: metadata only, no import.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from patchkit.errors import UsageError

PROBE_SCRIPT = r"""
import importlib.machinery, importlib.metadata, importlib.util, json, os, sys, types

def locate(name):
    parts = name.split(".")
    spec = importlib.util.find_spec(parts[0])
    for i in range(1, len(parts)):
        if spec is None or spec.submodule_search_locations is None:
            return None
        full = ".".join(parts[: i + 1])
        parent = ".".join(parts[:i])
        search = list(spec.submodule_search_locations)
        # A namespace child asks sys.modules for its parent's __path__: give it
        # an empty stand-in module carrying only that path (no code runs).
        if parent not in sys.modules:
            stand_in = types.ModuleType(parent)
            stand_in.__path__ = search
            sys.modules[parent] = stand_in
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(full, search)
            if spec is not None:
                break
    return spec

def where(spec):
    if spec is None:
        return None, []
    if spec.submodule_search_locations is not None:
        locations = [os.path.realpath(p) for p in spec.submodule_search_locations]
        if spec.origin and os.path.basename(spec.origin).startswith("__init__."):
            return os.path.realpath(os.path.dirname(spec.origin)), locations
        return (locations[0] if locations else None), locations
    if spec.origin and spec.has_location:
        return os.path.realpath(spec.origin), []
    return spec.origin, []

_dists = None

def version(name):
    global _dists
    top = name.split(".")[0]
    try:
        return importlib.metadata.version(top)
    except importlib.metadata.PackageNotFoundError:
        pass
    except Exception:
        return None
    if _dists is None:
        try:
            _dists = importlib.metadata.packages_distributions()
        except Exception:
            _dists = {}
    for dist in _dists.get(top, []):
        try:
            return importlib.metadata.version(dist)
        except Exception:
            continue
    return None

out = {
    "executable": sys.executable,
    "version": ".".join(map(str, sys.version_info[:3])),
    "prefix": sys.prefix,
    "packages": {},
}
for name in sys.argv[1:]:
    try:
        spec = locate(name)
        error = None
    except Exception as exc:
        spec, error = None, "%s: %s" % (type(exc).__name__, exc)
    location, locations = where(spec)
    out["packages"][name] = {"location": location, "locations": locations, "version": version(name), "error": error}
out["torch"] = version("torch")
sys.stdout.write(json.dumps(out))
"""

PROBE_TIMEOUT = 60.0


@dataclass(frozen=True)
class PackageFacts:
    """Where a package resolves in the probed interpreter, and which installed distribution claims it."""

    name: str
    location: str | None  # the package directory (or module file); None: not importable
    locations: tuple[str, ...]  # a package's search locations (namespace packages: all of them)
    version: str | None  # installed distribution version, from metadata
    error: str | None  # a finder raised while resolving (the package did not run)

    def to_json(self) -> dict[str, object]:
        return {"location": self.location, "locations": list(self.locations), "version": self.version}


@dataclass(frozen=True)
class InterpreterFacts:
    """What the interpreter the server runs with reports about itself: executable, version, prefix,
    the packages asked for, and torch's version when it is installed."""

    python: str  # as given
    executable: str  # sys.executable of the child
    version: str
    prefix: str
    packages: tuple[PackageFacts, ...]
    torch: str | None

    def package(self, name: str) -> PackageFacts:
        for item in self.packages:
            if item.name == name:
                return item
        raise KeyError(name)


def resolve_python(python: str, origin: str = "--python") -> str:
    """``python`` as given if it is a path; else looked up on PATH like a shell would.  ``origin`` is where the
    user gave it, as the errors name it: ``--python``, or a bench verb's ``[bench].python``."""

    if os.sep in python:
        path = Path(python)
        if not path.exists():
            raise UsageError(f"{origin} {python}: no such file", hint="give the interpreter the server runs with")
        return str(path)
    found = shutil.which(python)
    if found is None:
        raise UsageError(f"{origin} {python}: not found on PATH", hint="give the interpreter's path")
    return found


class ProbeRun:
    """The probe started as a subprocess; ``result()`` waits for it.  Started
    first, it runs while the guard's git work goes on."""

    def __init__(
        self,
        python: str,
        packages: tuple[str, ...] | list[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        origin: str = "--python",
    ) -> None:
        """``env``/``cwd``: what the interpreter runs with (None: patchkit's own), e.g. the server's; ``origin``:
        where the user named it, for the errors (``resolve_python``)."""
        self.python, self.origin = python, origin
        exe = resolve_python(python, origin)
        try:
            self.proc = subprocess.Popen(
                [exe, "-c", PROBE_SCRIPT, *packages],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=None if env is None else dict(env),
                cwd=cwd,
            )
        except PermissionError:
            raise UsageError(
                f"{origin} {python}: not executable", hint="give the interpreter the server runs with"
            ) from None
        except OSError as exc:
            raise UsageError(f"{origin} {python}: cannot run it ({exc.strerror or exc})") from None

    def result(self) -> InterpreterFacts:
        python, origin = self.python, self.origin
        try:
            out, err_bytes = self.proc.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise UsageError(
                f"{origin} {python}: the import probe did not finish in {PROBE_TIMEOUT:.0f} s",
                hint="check that the interpreter starts (a site-packages .pth file may hang)",
            ) from None
        err = err_bytes.decode("utf-8", "replace").strip()
        try:
            data = json.loads(out.decode("utf-8", "replace"))
        except ValueError:
            printed = out.decode("utf-8", "replace").strip().splitlines()
            if err:
                last = err.splitlines()[-1]
            elif printed:  # e.g. a wrapper or an old interpreter that prints "Python 2.7" and exits 0
                last = f"exit {self.proc.returncode}, printed {printed[-1][:200]!r} instead of the probe's answer"
            else:
                last = f"exit {self.proc.returncode}, no output"
            raise UsageError(
                f"{origin} {python}: the import probe failed ({last})",
                hint="it must be a Python 3.8+ interpreter that starts in this environment",
            ) from None
        facts = tuple(
            PackageFacts(name, item["location"], tuple(item["locations"]), item["version"], item["error"])
            for name, item in data["packages"].items()
        )
        return InterpreterFacts(python, data["executable"], data["version"], data["prefix"], facts, data["torch"])

    def cancel(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


def probe(python: str, packages: tuple[str, ...] | list[str]) -> InterpreterFacts:
    """One interpreter start: the facts above, for every package at once."""
    return ProbeRun(python, packages).result()
