"""patchkit's probe: what every Python process of a benchmarked server really ran with (the entry point).

This directory is put first on the server's ``PYTHONPATH``; Python's ``site`` imports ``sitecustomize`` from it
at start-up, in the server and in every process it starts (``multiprocessing`` spawn children are fresh
interpreters and run ``site`` again).  It does nothing unless ``PATCHKIT_PROBE_DIR`` names the directory it
writes to, and then starts the probe, whose parts are the package ``_patchkit_probe`` beside this file (a name
no server module has): per process one file of JSON lines, with identity, the start environment, every module
file that ran, the data files read, ``init_process_group``'s environment (docs/concepts/proof.md).  Either way
it then runs the ``sitecustomize`` it shadows (Debian's, or the user's own), so that one still runs.

The probe uses the standard library only (the server's interpreter may not have patchkit), and every error of
its own is swallowed and reported as ``probe failed in pid N: ...`` on stderr and in its file; an error raised
by the shadowed ``sitecustomize`` propagates as it would without the probe.  ``PATCHKIT_PROBE_FAULT=start|
import|init`` raises inside the probe at that point (the fault-injection test uses it to show the program is
unaffected).
"""

from __future__ import annotations

import os
import sys

try:
    HERE = os.path.dirname(os.path.abspath(__file__))
except OSError:  # a deleted working directory (abspath of a relative __file__ asks for it)
    HERE = os.path.dirname(__file__)


def _report(exc: BaseException) -> None:
    try:
        sys.stderr.write(f"probe failed in pid {os.getpid()}: {type(exc).__name__}: {exc}\n")
    except Exception:
        pass


def _start() -> None:
    if not os.environ.get("PATCHKIT_PROBE_DIR"):
        return  # off: none of the probe's parts is loaded
    try:
        from _patchkit_probe.probe import start
    except Exception as exc:
        _report(exc)
        return
    start(os.path.join(HERE, os.path.basename(__file__)))


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows, as ``site`` would have run it."""
    try:
        # the import system's own modules (importlib.machinery's PathFinder, importlib.util's module_from_spec):
        # importing importlib.util here would load a module the program may never import
        bootstrap = sys.modules["_frozen_importlib"]
        external = sys.modules["_frozen_importlib_external"]
        here = os.path.normcase(HERE)
        search = [p for p in sys.path if os.path.normcase(os.path.abspath(p or os.curdir)) != here]
        spec = external.PathFinder.find_spec("sitecustomize", search)
        if spec is None or spec.loader is None:
            return
        probe = getattr(sys, "_patchkit_probe", None)
        if probe is not None and spec.origin:
            probe.module("sitecustomize", spec.origin, kind="chained")
        module = bootstrap.module_from_spec(spec)
    except Exception as exc:
        probe = getattr(sys, "_patchkit_probe", None)
        if probe is not None:
            probe.failed(exc)
        else:
            _report(exc)
        return
    sys.modules["_patchkit_shadowed_sitecustomize"] = module
    spec.loader.exec_module(module)  # the user's errors are the user's: site reports them as usual


try:
    _start()
except Exception as _exc:  # pragma: no cover - start swallows its own
    _report(_exc)
_chain()
