"""What goes to an abandonable child (``engine/abandon.py``), and the child's phase line.

This module is light on purpose: every analysis imports it.  It holds the
size rule (``large``: from ``PATCHKIT_ABANDON_BYTES``, default 256 KiB, of
target files, a parse outlasts a Ctrl-C) and ``report_phase``, with which
the analysis says what it does now (a no-op anywhere but in such a child).
``engine/abandon.py``, the fork, the pipe and the pickle, is imported only
by ``in_child``, where a target is large (a named cold boundary of
``tools/import_graph.py``): the guard of a usual tree and a warm range check
never load it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

THRESHOLD_ENV = "PATCHKIT_ABANDON_BYTES"
# From this size a parse lasts long enough that an unanswered Ctrl-C is noticed; below it the fork
# would cost more than it saves.
DEFAULT_THRESHOLD = 256 << 10


def threshold() -> int:
    try:
        return int(os.environ.get(THRESHOLD_ENV, DEFAULT_THRESHOLD))
    except ValueError:
        return DEFAULT_THRESHOLD


def large(total_bytes: int) -> bool:
    return total_bytes >= threshold()


def target_sizes(root: Path, files: Sequence[str]) -> dict[str, int]:
    """Bytes of each target file in the tree (0 where it is missing or not a plain file)."""
    out = {}
    for path in files:
        try:
            out[path] = (root / path).stat().st_size
        except OSError:
            out[path] = 0
    return out


def describe(sizes: Mapping[str, int]) -> str:
    """``a.py (6.1 MB)``, the largest files first."""
    shown = sorted(((n, p) for p, n in sizes.items() if n), reverse=True)[:3]
    return ", ".join(f"{path} ({n / 1e6:.1f} MB)" for n, path in shown) or "the target files"


def in_child(work: Callable[[], T], sizes: Mapping[str, int]) -> T:
    """``work()`` in a forked child a Ctrl-C abandons at once (``abandon.run``), labelled by ``sizes``.

    The one place ``engine/abandon.py`` is imported: callers decide with ``large`` first.
    """
    from patchkit.engine.abandon import run

    return run(work, label=describe(sizes))


class Phase:
    """The child's side of the phase pipe: ``fd`` is set in the child (``abandon.run``), None elsewhere."""

    fd: int | None = None


PHASE = Phase()


def report_phase(text: str) -> None:
    """Tell the waiting parent what the child does now (shown on a terminal)."""
    if PHASE.fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(PHASE.fd, (text.replace("\n", " ") + "\n").encode("utf-8", "replace"))
