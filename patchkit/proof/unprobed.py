"""The processes of the server's tree that ran without the probe, and why: the accounting that can fail.

The probe sees only the processes it runs in.  A Python child started with
``-I`` (isolated: no ``PYTHONPATH``, no site-packages), ``-S`` (no ``site``,
so no ``sitecustomize``), ``-E`` (every ``PYTHON*`` variable ignored) or with
an environment of its own (``env={}``) runs code no probe sees, and a run
that read as proven would claim more than it knows.  So, once the server is
healthy, every live process of its tree (psutil: the server and all its
descendants) is matched with the probe's files by pid *and* kernel start time
(a reused pid is not the process that wrote the file), and every Python
process without a file is named, with its argv and why: the run is then
``not proven``, not refused (as when the probe fails in a process: the server
did nothing wrong that patchkit can name).

What this cannot see, and says so in the README: a process that started and
ended between two looks (before health, or after it and before the stop), a
Python that is not named ``python*``/``pypy*`` (an embedded interpreter), and
a process that left the server's tree (double-forked daemons).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchkit.proof.document import UnaccountedJson

_PYTHON = re.compile(r"^(python|pypy)[0-9.]*[dmu]?$")
# Options of the interpreter that take a value (the next word when not attached): they do not end the options.
_WITH_VALUE = frozenset("WXQ")


@dataclass(frozen=True)
class LiveProcess:
    """One process of the server's tree as psutil saw it: pid, kernel start time, argv, executable, and what its
    start environment says about the probe (``probe``, ``no-probe-dir``, ``empty``, or ``unreadable``)."""

    pid: int
    start_ticks: int | None
    argv: tuple[str, ...]
    exe: str | None
    env: str


@dataclass(frozen=True)
class Unprobed:
    """A Python process of the server's tree that wrote no probe file: pid, argv, and why the probe never ran."""

    pid: int
    argv: tuple[str, ...]
    why: str
    pending: bool = False  # it has the probe's environment: its file may only be late (a process still starting)

    def line(self) -> str:
        return f"pid {self.pid} ({' '.join(self.argv) or '?'}) ran without the probe: {self.why}"

    def to_json(self) -> UnaccountedJson:
        return {"pid": self.pid, "argv": list(self.argv), "why": self.why}


def start_ticks(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (``/proc/PID/stat`` field 22, as the probe records its own)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rpartition(")")[2].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def live_processes(root: int) -> list[LiveProcess]:
    """The server (``root``) and every descendant now, each with what tells a probed process from another."""
    import psutil

    try:
        top = psutil.Process(root)
        members = [top, *top.children(recursive=True)]
    except psutil.Error:
        return []
    out = []
    for proc in members:
        try:
            argv = tuple(proc.cmdline())
            exe = proc.exe() or None
        except (psutil.Error, OSError):
            continue
        try:
            environ = proc.environ()
            env = "empty" if not environ else "probe" if environ.get("PATCHKIT_PROBE_DIR") else "no-probe-dir"
        except (psutil.Error, OSError):
            env = "unreadable"
        out.append(LiveProcess(proc.pid, start_ticks(proc.pid), argv, exe, env))
    return out


def started_under(probe_dir: Path) -> list[LiveProcess]:
    """The processes running here now whose start environment names ``probe_dir`` as its PATCHKIT_PROBE_DIR:
    what a probed command started, Python or not, wherever it was reparented once the command ended (the
    directory is this run's own, so no other process names it).  Zombies are left out: they run no more code.
    A process of another user, whose environment cannot be read, is not among them."""
    import psutil

    wanted = str(probe_dir)
    out = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("PATCHKIT_PROBE_DIR") != wanted or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            argv = tuple(proc.cmdline())
            exe = proc.exe() or None
        except (psutil.Error, OSError):
            continue
        out.append(LiveProcess(proc.pid, start_ticks(proc.pid), argv, exe, "probe"))
    return out


def is_python(proc: LiveProcess) -> bool:
    names = [os.path.basename(proc.exe or ""), os.path.basename(proc.argv[0]) if proc.argv else ""]
    return any(_PYTHON.match(name) for name in names if name)


def interpreter_flags(argv: Sequence[str]) -> set[str]:
    """The one-letter interpreter options before the script, ``-c`` or ``-m`` (``-IS`` is ``I`` and ``S``)."""
    flags: set[str] = set()
    words = iter(argv[1:])
    for word in words:
        if not word.startswith("-") or word in ("-", "--") or word.startswith("--"):
            break
        letters = word[1:]
        for index, letter in enumerate(letters):
            if letter in "cm":
                return flags
            flags.add(letter)
            if letter in _WITH_VALUE:
                if index == len(letters) - 1:
                    next(words, None)
                break
    return flags


def why_unprobed(proc: LiveProcess) -> str:
    """Why a Python process wrote no probe file, from its flags and its start environment."""
    flags = interpreter_flags(proc.argv)
    if "I" in flags:
        return "started with -I (isolated: PYTHONPATH and site-packages ignored, the probe never loads)"
    if "S" in flags:
        return "started with -S (no site module: no sitecustomize, the probe never loads)"
    if "E" in flags:
        return "started with -E (PYTHON* variables ignored: PYTHONPATH never names the probe)"
    if proc.env == "empty":
        return "started with an empty environment (env={}: no PYTHONPATH, no PATCHKIT_PROBE_DIR)"
    if proc.env == "no-probe-dir":
        return "started with an environment of its own, without PATCHKIT_PROBE_DIR"
    if proc.env == "unreadable":
        return "its environment could not be read (another user's process?); it wrote no probe file"
    return "it had the probe's environment but wrote no probe file (still starting, or the probe could not write)"


def has_probe_file(proc: LiveProcess, probed: Mapping[int, set[int | None]]) -> bool:
    """Whether a probe file of this host is this live process's: its pid *and* start time (a file of an earlier
    process that had the pid is not; ``None``, a probe older than start times, matches any process of the pid)."""
    starts = probed.get(proc.pid)
    return starts is not None and (None in starts or proc.start_ticks is None or proc.start_ticks in starts)


def unprobed(live: Iterable[LiveProcess], probed: Mapping[int, set[int | None]]) -> list[Unprobed]:
    """Every live Python process without a probe file of its own.  ``probed``: pid -> the start times the probe's
    files of this host recorded for it (``None`` from a probe older than start times: any process of that pid)."""
    out = []
    for proc in live:
        if has_probe_file(proc, probed):
            continue
        if is_python(proc):
            why = why_unprobed(proc)
            pending = proc.env == "probe" and not interpreter_flags(proc.argv) & {"I", "S", "E"}
            out.append(Unprobed(proc.pid, proc.argv, why, pending))
    return out
