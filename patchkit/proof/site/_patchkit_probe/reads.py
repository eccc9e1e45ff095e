"""Files a process opens for reading, through an audit hook (``sys.addaudithook``, event ``open``).

The data files read at run time are recorded (and accounted like modules): text configs, chat templates.
"""

from __future__ import annotations

import os
import sys

from _patchkit_probe.finder import site_dirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _patchkit_probe.probe import Probe

DATA_SUFFIXES = (".json", ".yaml", ".yml", ".txt", ".jinja", ".jinja2")
_stat = os.stat


def data_roots() -> tuple[str, ...]:
    """Where a data file read is recorded: the benchmarked tree (``PATCHKIT_BENCH_TREE``), the site directories,
    and the roots of ``PATCHKIT_PROBE_ROOTS`` (``os.pathsep``-separated: a model directory, say); each with a
    trailing separator, real paths and the paths as given."""
    roots = [os.environ.get("PATCHKIT_BENCH_TREE", ""), *site_dirs()]
    roots += os.environ.get("PATCHKIT_PROBE_ROOTS", "").split(os.pathsep)
    out: list[str] = []
    for root in roots:
        if root and os.path.isabs(root):
            for form in (os.path.normpath(root), os.path.realpath(root)):
                entry = form.rstrip(os.sep) + os.sep
                if entry not in out:
                    out.append(entry)
    return tuple(out)


def install_open_hook(probe: Probe) -> None:
    """Record each data file (``DATA_SUFFIXES``) a process opens for reading under the data roots: a fused-MoE
    tuning config, a chat template, the model's ``config.json``.

    ``sys.addaudithook``: every ``open()``/``io.open``/``os.open``/``open_code``
    raises the ``open`` audit event with the path and mode (or flags), whoever
    opens it (C code that calls ``fopen`` is not seen).  The hook runs for
    every audit event of the process, so it returns at the first test that
    fails: the event's name, then the path's suffix; a hook cannot be removed,
    so a probe without a file to write to never installs it.  Each path is
    recorded once per process, with its stat then.
    """
    roots = data_roots()
    if not roots:
        return
    seen: set[str] = set()
    suffixes = DATA_SUFFIXES
    write_only = os.O_WRONLY | os.O_RDWR

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event != "open":
            return
        path = args[0]
        if path.__class__ is not str or not path.endswith(suffixes) or path in seen:
            return
        mode, flags = args[1], args[2]
        if mode.__class__ is str:
            if "r" not in mode or "+" in mode:
                return
        elif flags.__class__ is int and flags & write_only:
            return
        try:
            full = os.path.abspath(path)
            if not full.startswith(roots) or probe.fd < 0:
                return
            seen.add(path)
            probe.record_file("data", os.path.basename(full), full, _stat(full))
        except OSError:
            return  # gone, or not a file: open() itself will say so
        except Exception as exc:
            probe.failed(exc)

    sys.addaudithook(hook)
