"""A sink for what a command has finished writing, handed to it by whoever must report an interrupt.

Why a sink and not a module global: the words of a Ctrl-C ("after writing a.py and b.py (whole
and recorded); nothing else was written") belong to the CLI, while only the engine's transaction
(and capture's publish step) knows when a file is whole.  The CLI makes one ``Written`` per
invocation and passes it down as an argument; the writer adds each path once it is whole.  A
caller of the Python API passes none and nothing is kept, so no state outlives a call or leaks
between two calls in one process.
"""

from __future__ import annotations

from collections.abc import Iterable


class Written:
    """The paths written whole so far, in the order they were finished (a path may repeat)."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def add(self, paths: Iterable[str]) -> None:
        self.paths.extend(paths)

    def distinct(self) -> list[str]:
        """Each path once, in the order it was first written."""
        return list(dict.fromkeys(self.paths))
