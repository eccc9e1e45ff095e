"""A server's process group: who is in it, who is still alive, and stopping all of them.

A benchmarked server runs in its own session (``start_new_session``), and its
workers may leave the group (a daemon, ``setsid``); so a process is known by
its pid *and* its create time (``Member``), a pid another process took later is
never signalled, and the stop goes to the group and to every known member.
Kept apart from ``job`` because it is the part that signals processes: a reader
sees in one place everything the job may kill.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil


def process_tree(pid: int) -> list[psutil.Process]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def group_members(pgid: int) -> list[int]:
    import psutil

    out = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if os.getpgid(proc.pid) == pgid:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return out


Member = tuple[int, float]  # a process of the server's tree: (pid, psutil's create time), its identity here


def members(procs: Iterable[psutil.Process]) -> set[Member]:
    """``process_tree``'s processes as identities: a pid alone could be reused by another process before the stop."""
    import psutil

    out = set()
    for proc in procs:
        with contextlib.suppress(psutil.Error):  # gone since it was listed
            out.add((proc.pid, proc.create_time()))
    return out


def alive(known: set[Member]) -> list[int]:
    """The pids of the known members still running: the same pid *and* create time (a pid that a later, unrelated
    process took is not the server's, and is never signalled)."""
    import psutil

    out = []
    for pid, created in known:
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def stop_group(proc: subprocess.Popen[bytes], known: set[Member], grace: float) -> list[str]:
    """SIGTERM the group (and known tree members), SIGKILL after ``grace``; problems left, as text."""
    pgid = proc.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for pid in alive(known):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)  # returns as soon as the leader exits
            if proc.poll() is not None and not group_members(pgid) and not alive(known):
                break
            if proc.poll() is not None:
                time.sleep(0.02)  # the leader is gone but members are not: wait() no longer blocks
        if proc.poll() is not None and not group_members(pgid) and not alive(known):
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)
    left = sorted(set(group_members(pgid)) | set(alive(known)))
    return [f"process {pid} of the server's group is still running after SIGKILL" for pid in left]
