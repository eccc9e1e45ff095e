"""The phase line of work done in an abandonable child (``engine/abandon.py``): the child's end of it.

The analysis (``engine/evaluate.py``, ``capture/core.py``) says what it does
now with ``report_phase``; in the parent, or in any process that is not such
a child, that is a no-op.  It lives apart from ``abandon`` so that the
analysis does not import the fork, the pipe and the pickle a warm range
check never uses.
"""

from __future__ import annotations

import contextlib
import os


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
