"""The core that records what ran, chosen per process as coverage.py's collector chooses its tracer.

A core is what the probe records code with.  Each has a ``name`` and a ``granularity``, and installs itself
once the probe's file is open:

* ``file``: the module files a process runs, as each is imported (``finder.install_path_stats``: the stat the
  source loader makes anyway, so no stat of the probe's own on the hottest path).  Which modules ran, not which
  of their functions.  Every interpreter offers it.
* ``sysmon`` (Python 3.12+, PEP 669's ``sys.monitoring``): the module files as ``file`` does, and every code
  object that starts (``PY_START``: functions, methods, lambdas, generator expressions, class bodies and module
  code), each written once as its file, qualified name (``co_qualname``) and first line; the callback returns
  ``sys.monitoring.DISABLE``, so a code object costs one event in the process's life and nothing after (a loop
  in a recorded function runs as fast as without the probe).  Memory: one entry per file named, none per code
  object or call.

``PATCHKIT_PROBE_CORE`` names one; otherwise the finest the interpreter offers is taken.  The accounting needs
the module files whatever the core, so every core records them.  What a core cannot see is in
docs/concepts/proof.md: code that ran before the probe started (a ``.pth`` import line's), code compiled from a
string (``<string>``, no file), a C extension's own work.
"""

from __future__ import annotations

import os
import sys

from _patchkit_probe.finder import install_path_stats
from _patchkit_probe.writer import quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

    from _patchkit_probe.probe import Probe

# the probe's directory (its entry point and this package): the probe's own functions are not the program's
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
TOOL_IDS = (3, 4)  # sys.monitoring's ids that no role reserves (0 debugger, 1 coverage, 2 profiler, 5 optimizer)


class FileCore:
    """Module files as they are imported: the granularity every interpreter offers."""

    name = "file"
    granularity = "file"
    why: str | None = None  # when this core stands in for a finer one that could not start here

    def install(self, probe: Probe) -> None:
        install_path_stats(probe)

    def forget(self) -> None:
        """In a forked child, before its own file opens: drop what belongs to the parent's file."""

    def resume(self) -> None:
        """In a forked child, once its own file is open: record what the child runs from here on."""

    def describe(self) -> dict[str, object]:
        """What the process record says of the core: its name, its granularity, and why a coarser one ran."""
        return {"name": self.name, "granularity": self.granularity, "why": self.why}


class MonitoringCore(FileCore):
    """Every code object that starts, once, through ``sys.monitoring`` (Python 3.12+)."""

    name = "sysmon"
    granularity = "function"

    def __init__(self, tool: int) -> None:
        self.tool = tool
        self.files: dict[str, int] = {}  # co_filename -> its number in this file (-1: not recorded)
        self.count = 0  # the files numbered so far

    def install(self, probe: Probe) -> None:
        super().install(probe)
        monitoring: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]  # 3.12+; mypy reads 3.11
        disable = monitoring.DISABLE
        files = self.files
        write = probe.write

        def started(code: CodeType, offset: int) -> object:
            """``PY_START``: the first start of ``code`` in this process, written once; never raises."""
            try:
                if probe.fd < 0:
                    return disable
                filename = code.co_filename
                number = files.get(filename)
                if number is None:
                    number = files[filename] = self.number(probe, filename)
                if number >= 0:
                    line = f'{{"kind": "code", "file": {number}, "name": {quote(code.co_qualname)}, '
                    write((line + f'"line": {code.co_firstlineno}}}\n').encode("ascii"))
            except Exception as exc:
                probe.failed(exc)
            return disable

        monitoring.register_callback(self.tool, monitoring.events.PY_START, started)
        monitoring.set_events(self.tool, monitoring.events.PY_START)

    def number(self, probe: Probe, filename: str) -> int:
        """The number of a file the first time one of its code objects starts, written with its path; -1 for one
        that names no file on disk (``<frozen ...>``, ``<string>``) and for the probe's own files."""
        if filename[:1] == "<" or not filename:
            return -1
        path = filename if filename[:1] == os.sep else os.path.abspath(filename)
        if path.startswith(HERE):
            return -1
        number, self.count = self.count, self.count + 1
        probe.write(f'{{"kind": "code_file", "id": {number}, "path": {quote(path)}}}\n'.encode("ascii"))
        return number

    def forget(self) -> None:
        """A forked child writes a file of its own: its files are numbered afresh."""
        self.files.clear()
        self.count = 0

    def resume(self) -> None:
        """Every code object the parent had already seen (its event disabled, and a child inherits that), and any
        that started while the child had no file, is recorded again when it next starts (``restart_events``:
        which re-enables what ``DISABLE`` turned off for every tool of the process)."""
        sys.monitoring.restart_events()  # type: ignore[attr-defined,unused-ignore]


CORES: dict[str, type[FileCore]] = {"file": FileCore, "sysmon": MonitoringCore}


def choose() -> FileCore:
    """The core ``PATCHKIT_PROBE_CORE`` names (``file``, ``sysmon``), else the finest this interpreter offers;
    ``sysmon`` needs ``sys.monitoring`` and a free tool id, else the file core runs and says why."""
    wanted = os.environ.get("PATCHKIT_PROBE_CORE") or "sysmon"
    if wanted == "file":
        return FileCore()
    monitoring = getattr(sys, "monitoring", None)
    core = FileCore()
    if monitoring is None:
        core.why = f"Python {sys.version_info[0]}.{sys.version_info[1]} has no sys.monitoring (3.12+)"
        return core
    for tool in TOOL_IDS:
        try:
            monitoring.use_tool_id(tool, "patchkit probe")
        except ValueError:
            continue
        return MonitoringCore(tool)
    core.why = f"sys.monitoring's tool ids {', '.join(map(str, TOOL_IDS))} are taken by other tools"
    return core
