"""The process supervisor of ``patchkit run``: a command on our stdin, stdout and stderr, signals passed on.

Why here and not in ``commands/``: a verb parses and prints; starting a process, taking its
signals synchronously and pumping its output is execution, next to the job that starts a
server.  ``run_passthrough`` is what ``run`` (with or without ``--probe``) calls; it returns
the command's exit code (128+N when signal N killed it) and raises ``UsageError`` for a
command that cannot start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import IO

from patchkit.errors import UsageError
from patchkit.proof.libs import LibrarySampler

_SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel sent (a terminal's Ctrl-C), not kill(2)


def run_passthrough(
    command: Sequence[str],
    env: dict[str, str],
    cwd: str | None,
    *,
    lines: Callable[[bytes], None] | None = None,
    sampler: LibrarySampler | None = None,
) -> int:
    """Run ``command`` on our stdin/stdout/stderr; its exit code (128+N if killed by signal N).

    ``lines``: its stdout and stderr go through pipes, copied to ours as they come, byte for byte, and each
    line is given to ``lines`` too.  ``sampler``: started on its pid while it runs.
    """
    pipe = subprocess.PIPE if lines is not None else None
    try:
        proc = subprocess.Popen(list(command), env=env, cwd=cwd, stdout=pipe, stderr=pipe)
    except FileNotFoundError:
        where = f" (a relative path is looked up in {cwd}, where it runs)" if cwd is not None else ""
        raise UsageError(
            f"command not found: {command[0]}{where}", hint="give a path or a command on PATH after --"
        ) from None
    except PermissionError:
        raise UsageError(
            f"command not executable: {command[0]}", hint="chmod +x it, or run it via its interpreter"
        ) from None
    # The signals are taken synchronously (blocked, then sigtimedwait) to see who sent each one: a
    # Ctrl-C comes from the kernel (si_code SI_KERNEL) to the whole foreground group, so the command
    # has it already; a SIGINT sent to patchkit's pid by a process (kill, a scheduler) reached only
    # patchkit and is passed on.  SIGCHLD wakes the wait when the command ends.
    watched = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    received: list[int] = []
    pumps: list[threading.Thread] = []
    try:  # threads started here inherit the blocked mask: every signal comes to sigtimedwait below
        if lines is not None:
            assert proc.stdout is not None and proc.stderr is not None
            pumps = [_pump(proc.stdout, 1, lines), _pump(proc.stderr, 2, lines)]
        if sampler is not None:
            sampler.start(proc.pid)
        while proc.poll() is None:
            info = signal.sigtimedwait(watched, 0.5)
            if info is None or info.si_signo == signal.SIGCHLD or proc.poll() is not None:
                continue
            received.append(info.si_signo)
            if info.si_signo != signal.SIGINT:
                proc.send_signal(info.si_signo)
            elif info.si_code != _SI_KERNEL:
                proc.send_signal(signal.SIGINT)  # sent to patchkit alone: the command has not seen it
            elif received.count(signal.SIGINT) > 1:
                proc.terminate()  # a second Ctrl-C: the command ignored the first
        code = proc.wait()
        for pump in pumps:  # a process CMD left behind may hold the pipes open: do not wait for it forever
            pump.join(timeout=5)
        while signal.sigtimedwait(watched - {signal.SIGCHLD}, 0) is not None:
            pass  # a signal that came as the command ended: it was for the command, now gone
    finally:
        if sampler is not None:
            sampler.stop()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if code < 0:
        return 128 - code
    return code


def _pump(source: IO[bytes], fd: int, lines: Callable[[bytes], None]) -> threading.Thread:
    """Copy ``source`` to our ``fd`` as it comes, unchanged, and give each line to ``lines``."""

    def copy() -> None:
        pending = b""
        writing = True
        raw = source.fileno()
        while True:
            try:
                chunk = os.read(raw, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            if writing:
                try:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                except OSError:
                    writing = False  # our side is closed: keep draining, so the command is never blocked
            pending += chunk
            if b"\n" in pending:
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    lines(line)
        if pending:
            lines(pending)

    thread = threading.Thread(target=copy, name=f"patchkit-pump-{fd}", daemon=True)
    thread.start()
    return thread
