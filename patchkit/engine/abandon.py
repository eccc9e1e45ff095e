"""Work the main process can abandon: a large file's parse, in a forked child.

libcst's native parser (and ``ast.parse``) do not return to Python until they
are done, and hold the GIL throughout: a Ctrl-C is only seen when the parse
ends, which for a generated file of megabytes is far longer than anyone waits
for a Ctrl-C.  A thread cannot help (the GIL is held), so
work on large targets runs in a child made with ``fork``.  The child inherits
everything loaded (the manifest, its payloads, the parsed schema), computes,
and sends its small result (verdicts, rendered bytes) back through a pipe
as a pickle.  The parent waits in Python, a second at a time: a Ctrl-C there
kills the child at once and raises ``KeyboardInterrupt``.  Only reading and
analysis are done this way; the child writes nothing, so abandoning it is
always safe.  Writes stay in the parent, in a ``Transaction``.

Off a terminal nothing is printed; on one (stderr a TTY), a line on stderr
names the phase the child reports (``evaluate``, ``render``) and the seconds
elapsed, rewritten in place, and is cleared when the work ends.

``PATCHKIT_ABANDON_BYTES`` sets the size (bytes of target files) from which
work goes to a child (default 256 KiB; tests lower it): that rule, and the
child's phase line, are in ``engine/abandonable.py``, which every analysis
imports; this module is imported only where a target is large.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from patchkit.engine.abandonable import PHASE
from patchkit.errors import ExitCode, InternalError, PatchkitError

T = TypeVar("T")


def run(work: Callable[[], T], *, label: str) -> T:
    """``work()`` in a forked child; its result (picklable) back here, or ``KeyboardInterrupt`` within a
    tenth of a second of a Ctrl-C.  An exception in the child is raised here (it must pickle too)."""
    result_r, result_w = os.pipe()
    phase_r, phase_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's exit handlers
        code = 0
        try:
            os.close(result_r)
            os.close(phase_r)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent decides; a Ctrl-C ends the child now
            PHASE.fd = phase_w
            try:
                payload = pickle.dumps((True, work()), protocol=pickle.HIGHEST_PROTOCOL)
            except PatchkitError as exc:  # raised again in the parent, with its exit code and words
                payload = pickle.dumps((False, (exc.message, exc.hint, int(exc.exit_code), None)))
            except BaseException as exc:  # noqa: BLE001 (a bug: its traceback goes to the parent's crash log)
                trace = "".join(traceback.format_exception(exc))
                payload = pickle.dumps((False, (f"{type(exc).__name__}: {exc}", None, 3, trace)))
            view = memoryview(payload)
            while view:
                view = view[os.write(result_w, view) :]
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(result_w)
    os.close(phase_w)
    result: T = _wait(pid, result_r, phase_r, label)
    return result


def _wait(pid: int, result_r: int, phase_r: int, label: str) -> Any:
    chunks: list[bytes] = []
    shown = _Progress(label)
    done = False
    try:
        open_fds = {result_r, phase_r}
        while result_r in open_fds:
            ready, _, _ = select.select(list(open_fds), [], [], 0.1)
            for fd in ready:
                data = os.read(fd, 1 << 20)
                if fd == phase_r:
                    if not data:
                        open_fds.discard(phase_r)
                    else:
                        shown.phase(data.decode("utf-8", "replace").strip().splitlines()[-1])
                elif data:
                    chunks.append(data)
                else:
                    open_fds.discard(result_r)
            shown.tick()
        done = True
    finally:
        shown.clear()
        if not done:  # interrupted (or any error here): the child is abandoned, and reaped
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        status = 0
        with contextlib.suppress(ChildProcessError):
            status = os.waitpid(pid, 0)[1]
        os.close(result_r)
        os.close(phase_r)
    if not chunks:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT:
            raise KeyboardInterrupt  # the Ctrl-C reached the child first
        raise InternalError(f"the worker that analysed {label} ended without a result (wait status {status})")
    ok, value = pickle.loads(b"".join(chunks))
    if ok:
        return value
    message, hint, code, trace = value
    if trace is not None:
        raise WorkerCrash(f"{message} (in the worker process; its traceback:\n{trace})")
    raise ForwardedError(message, hint=hint, code=code)


class ForwardedError(PatchkitError):
    """A ``PatchkitError`` the child raised: its words and exit code, raised again in the parent."""

    def __init__(self, message: str, *, hint: str | None, code: int) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = ExitCode(code)


class WorkerCrash(RuntimeError):
    """A bug in the child: reported as an internal error, with the child's traceback."""


class _Progress:
    """Elapsed time and the child's phase, on one stderr line, on a terminal only."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.what = "reading"
        self.start = time.monotonic()
        self.last = -1
        self.on = sys.stderr.isatty() and not os.environ.get("NO_PROGRESS")
        self.width = 0

    def phase(self, what: str) -> None:
        self.what = what
        self.last = -1
        self.tick()

    def tick(self) -> None:
        seconds = int(time.monotonic() - self.start)
        if not self.on or seconds == self.last or seconds < 1:
            return
        self.last = seconds
        line = f"patchkit: {self.what} {self.label}: {seconds} s (Ctrl-C stops at once; nothing is written yet)"
        sys.stderr.write("\r" + line.ljust(self.width))
        sys.stderr.flush()
        self.width = len(line)

    def clear(self) -> None:
        if self.on and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
