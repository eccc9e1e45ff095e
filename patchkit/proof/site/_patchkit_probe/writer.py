"""The probe's file, and the identity of the process that writes it.

One file per Python image: ``probe-<pid>-<start ticks>-<host>-<boot id>.jsonl`` (``.<N>`` before ``.jsonl`` for
the Nth ``exec`` of the same process), one JSON object a line, appended with one ``os.write`` per record, so the
file is complete at every moment (no buffer to flush, nothing lost when the process is killed).  JSON is written
without ``json`` (and ``re``), which a program may never import.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported: it is not loaded at start-up, and the probe must stay cheap
if TYPE_CHECKING:
    from typing import Any


class ProbeFault(Exception):
    """Raised on purpose by PATCHKIT_PROBE_FAULT."""


def fault(point: str) -> None:
    if os.environ.get("PATCHKIT_PROBE_FAULT") == point:
        raise ProbeFault(f"injected fault at {point}")


class Writer:
    """The file of one process image: opened once (again after a fork), written one whole record at a time."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.fd = -1
        self.path = ""
        self.pid = 0

    def open_file(self) -> tuple[str | None, str | None, int | None, int]:
        """Create this image's file; returns (host, boot id, start ticks, exec index) for the process record.

        One file per (host, boot, pid, kernel start time): a reused pid, or the same pid on another host writing
        the same shared directory, is another file; the same process after exec() finds its earlier images'
        files taken and writes the next one of its chain (O_EXCL decides, atomically, on NFS too)."""
        self.pid = os.getpid()
        host, boot, ticks = nodename(), boot_id(), start_ticks()
        stem = f"probe-{self.pid}-{'x' if ticks is None else ticks}-{safe(host or 'unknown')}-{(boot or 'x')[:8]}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        image = 0
        while True:
            path = os.path.join(self.out, stem + (f".{image}" if image else "") + ".jsonl")
            try:
                self.fd = os.open(path, flags, 0o644)
                self.path = path
                break
            except FileExistsError:
                image += 1
                if image > 1000:
                    raise
        return host, boot, ticks, image

    def emit(self, record: dict[str, object]) -> None:
        if self.fd >= 0:
            self.write((dumps(record) + "\n").encode("ascii"))

    def record_file(self, kind: str, name: str, path: str, st: os.stat_result) -> None:
        """One file that ran, with its stat: the hot path (once per module), one f-string and one write."""
        q = quote
        line = f'{{"kind": "{kind}", "name": {q(name)}, "path": {q(path)}, "size": {st.st_size}, '
        self.write((line + f'"mtime_ns": {st.st_mtime_ns}}}\n').encode("ascii"))

    def write(self, data: bytes) -> None:
        """One record, whole; a write the filesystem refuses (a full disk, a quota) stops the recording here.

        The first refusal says so once on stderr, closes the file and leaves a
        marker next to it (``<file>.<ERRNO>``, empty: a file without data needs
        no block), from which the run is read as "proof incomplete (ENOSPC)";
        every later record is dropped in silence instead of failing again on
        every import.  A short write (the disk filled mid-record) is the same.
        """
        try:
            written = _write(self.fd, data)
            if written == len(data):
                return
            error: OSError = OSError(28, os.strerror(28) + " (a short write)")  # ENOSPC: the disk filled mid-record
        except OSError as exc:
            error = exc
        self.stop_writing(error)

    def stop_writing(self, error: OSError) -> None:
        fd, self.fd = self.fd, -1
        name = errno_name(error)
        try:
            os.close(fd)
        except OSError:
            pass
        try:
            os.close(os.open(f"{self.path}.{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except OSError:
            pass
        try:
            sys.stderr.write(
                f"probe in pid {os.getpid()}: cannot write {self.path} ({name}: {error.strerror or error}); "
                "it stops recording: the run's proof is incomplete\n"
            )
            sys.stderr.flush()
        except Exception:
            pass

    def failed(self, exc: BaseException) -> None:
        """Report one of the probe's own errors; never raises."""
        try:
            message = f"probe failed in pid {os.getpid()}: {type(exc).__name__}: {exc}"
            sys.stderr.write(message + "\n")
            sys.stderr.flush()
            # its names now: a worker stopped before its exit line is still named by what it was
            self.emit({"kind": "error", "message": message, "title": title(), "mp_name": mp_name()})
        except Exception:
            pass


def dumps(value: object) -> str:
    """JSON for what the probe writes (dicts, lists, str, int, bool, None), without importing json (and re)."""
    if isinstance(value, str):
        return quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{quote(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return quote(repr(value))


def quote(text: str) -> str:
    if text.isascii():
        return _encode_string(text)
    return _encode_string(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


def _encode_plain(text: str) -> str:
    return '"' + "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\u{ord(c):04x}" for c in text) + '"'


_encode_string: Any
try:
    from _json import encode_basestring_ascii as _encode_string
except ImportError:  # pragma: no cover - CPython always has _json
    _encode_string = _encode_plain

_write = os.write


# -- identity ---------------------------------------------------------------------------------------
def nodename() -> str | None:
    try:
        return os.uname().nodename
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        return None


def read_small(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def boot_id() -> str | None:
    """This boot of this machine (Linux); with the host name it tells nodes, and reboots, apart."""
    text = read_small("/proc/sys/kernel/random/boot_id")
    return text.strip() or None if text else None


def start_ticks() -> int | None:
    """When the kernel started this process (clock ticks since boot; ``/proc/self/stat`` field 22): with the pid,
    one process for the whole boot, whatever it exec()s, never a later process that reuses the pid."""
    text = read_small("/proc/self/stat")
    if not text or ")" not in text:
        return None
    fields = text.rpartition(")")[2].split()  # after the command name, which may hold spaces and parentheses
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)[:64]


def time_ns() -> int | None:
    try:
        import time  # built in: already loaded at start-up, nothing read from disk

        return time.time_ns()
    except Exception:  # pragma: no cover - time is built into CPython
        return None


def errno_name(error: OSError) -> str:
    try:
        import errno  # built in

        return str(errno.errorcode.get(error.errno or 0, "EIO"))
    except Exception:
        return "EIO"


def title() -> str | None:
    """The process title (setproctitle rewrites /proc/self/cmdline), when it is not the argv."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    parts = [p.decode("utf-8", "replace") for p in raw.split(b"\0") if p]
    original = list(getattr(sys, "orig_argv", sys.argv))
    if not parts or parts == original:
        return None
    return " ".join(parts).strip() or None


def mp_name() -> str | None:
    mp = sys.modules.get("multiprocessing.process")
    if mp is None:
        return None
    try:
        return str(mp.current_process().name)
    except Exception:
        return None
