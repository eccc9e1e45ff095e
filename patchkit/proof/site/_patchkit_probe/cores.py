"""The core that records what ran, chosen per process as coverage.py's collector chooses its tracer.

A core is what the probe records code with.  Each has a ``name`` and a ``granularity``, and installs itself
once the probe's file is open:

* ``file``: the module files a process runs, as each is imported (``finder.install_path_stats``: the stat the
  source loader makes anyway, so no stat of the probe's own on the hottest path).  Which modules ran, not which
  of their functions.

``PATCHKIT_PROBE_CORE`` names one; otherwise the finest the interpreter offers is taken.  The accounting needs
the module files whatever the core, so every core records them.
"""

from __future__ import annotations

import os

from _patchkit_probe.finder import install_path_stats

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _patchkit_probe.probe import Probe


class FileCore:
    """Module files as they are imported: the granularity every interpreter offers."""

    name = "file"
    granularity = "file"

    def install(self, probe: Probe) -> None:
        install_path_stats(probe)

    def after_fork(self) -> None:
        """A forked child records into its own file from here on; nothing of the parent's to undo."""


CORES: dict[str, type[FileCore]] = {"file": FileCore}


def choose() -> FileCore:
    """The core ``PATCHKIT_PROBE_CORE`` names when this interpreter offers it, else the finest one it offers."""
    wanted = os.environ.get("PATCHKIT_PROBE_CORE", "")
    for name in (wanted, *reversed(CORES)):
        core = CORES.get(name)
        if core is not None and available(core):
            return core()
    return FileCore()


def available(core: type[FileCore]) -> bool:
    return core is FileCore
