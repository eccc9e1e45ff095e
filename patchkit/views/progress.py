"""Progress as a long command goes: a session's phases (``bench``, ``noise``, ``bisect``) and a range check's
bar (``check``).

On a terminal, a live status line (or bar, on stderr); off one (nohup, a pipe, CI), a session says one
timestamped line per phase on stderr as it happens, the health wait at most once every ``HEALTH_EVERY``
seconds, so that stdout stays clean for ``--json``; a range check says nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING

from patchkit.views.console import make_console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from patchkit.git import Commit
    from patchkit.views.console import Console

HEALTH_EVERY = 30.0  # seconds between two "waiting for health" lines off a terminal

Show = Callable[["Commit", str, str, str], None]


class ProgressLines:
    """Off a terminal: one timestamped line per phase on ``stream``; health at most every HEALTH_EVERY s."""

    def __init__(self, verb: str, stream: IO[str]) -> None:
        self.verb = verb
        self.stream = stream
        self.last_health: float | None = None

    def __call__(self, commit: Commit, profile: str, phase: str, detail: str) -> None:
        if phase == "waiting for health":
            now = time.monotonic()
            if self.last_health is not None and now - self.last_health < HEALTH_EVERY:
                return
            self.last_health = now
        else:
            self.last_health = None
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"{stamp} {self.verb} {commit.short} {profile}: {phase}"
        self.stream.write((f"{line} {detail}" if detail else line) + "\n")
        self.stream.flush()


@contextmanager
def progress(console: Console, verb: str, *, live: bool) -> Iterator[Show]:
    """The progress callback of a session: a live status line on a terminal (``live``), else lines on stderr."""
    if not (live and console.is_terminal):
        yield ProgressLines(verb, sys.stderr)
        return
    from rich.text import Text

    with console.status("starting") as status:

        def show(commit: Commit, profile: str, phase: str, detail: str) -> None:
            status.update(Text(f"{commit.short} {profile}: {phase} {detail}".rstrip()))

        yield show


class RangeProgress:
    """A progress bar on stderr for long checks (only on a terminal, unless forced)."""

    def __init__(self, wanted: bool | None) -> None:
        self.wanted = wanted
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        interactive = sys.stderr.isatty()
        if self.wanted is False or (self.wanted is None and not interactive):
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn("checking distinct file versions"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=make_console(sys.stderr),
            transient=True,
        )
        return self._tick

    def _tick(self, done: int, total: int) -> None:
        assert self.bar is not None
        if self.task is None:
            if total < 20 and self.wanted is None:
                return
            self.bar.start()
            self.task = self.bar.add_task("check", total=total)
        self.bar.update(self.task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.stop()
