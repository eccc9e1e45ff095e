"""NCCL's own account of what it read, from its ``NCCL_DEBUG=INFO`` lines in a server log.

NCCL prefixes every debug line with ``<host>:<pid>:<tid> [<dev>] NCCL INFO``
(``src/debug.cc``; ``<host>`` is cut at its first dot, ``[<dev>]`` is the
CUDA device of the calling thread), and with ``NCCL_DEBUG_TIMESTAMP_LEVELS``
covering INFO, a timestamp before it (``[%F %T] `` by default).  The lines
that matter here, as NCCL's source prints them (v2.27.5 and master alike):

* ``%s set by environment to %lld.``: every integer parameter
  (``ncclLoadParam``, ``src/misc/param.cc``: ``NCCL_MIN_NCHANNELS``,
  ``NCCL_CUMEM_ENABLE``, ...), printed as the number NCCL parsed
  (``strtoll`` base 0: ``0x10`` is printed ``16``) *with a trailing period*,
  which is not part of the value;
* ``%s set by environment to %s`` / ``%d``: string settings and a few others,
  without a period (``NCCL_P2P_LEVEL`` as its path type name, ``src/graph/paths.cc``;
  ``NCCL_SOCKET_IFNAME``, ``src/misc/socket.cc``; ``NCCL_ALGO``, ``NCCL_PROTO``);
* ``NCCL version 2.27.5+cuda12.9`` (``showVersion``, ``src/init.cc``): the
  library that is actually loaded.

Lines from processes that interleave on one stream are told apart by host
and pid (two nodes' pid 1234 are two processes); a pid reused on one host
within one log cannot be told apart (NCCL's prefix holds no start time), and
its first process's values win.  Anything else in the log is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from patchkit.proof.document import NcclJson

_LINE = re.compile(
    r"^(?:\[[^\]]*\] )?(?P<host>[^\s:\[]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[^\]]*)\] NCCL INFO (?P<message>.*)$"
)
_SET = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*) set by environment to (?P<value>.*)$")
_VERSION = re.compile(r"^NCCL version (?P<version>\S+)")
_INTEGER = re.compile(r"^-?\d+\.$")  # ncclLoadParam's "%lld.": the period is not the value's


@dataclass(frozen=True)
class NcclProcess:
    """What NCCL said in one process."""

    pid: int
    host: str
    devices: tuple[str, ...]
    version: str | None
    env: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> NcclJson:
        return {
            "pid": self.pid,
            "host": self.host,
            "devices": list(self.devices),
            "version": self.version,
            "env": dict(self.env),
        }


class _Seen(TypedDict):
    """One process's NCCL lines so far, while ``parse_nccl_log`` reads."""

    host: str
    devices: list[str]
    version: str | None
    env: dict[str, str]


def parse_nccl_log(lines: Iterable[str]) -> dict[tuple[str, int], NcclProcess]:
    """(host, pid) -> what NCCL printed for it (first value wins, as NCCL reads each variable once)."""
    found: dict[tuple[str, int], _Seen] = {}
    for raw in lines:
        match = _LINE.match(raw.rstrip("\r\n"))
        if match is None:
            continue
        key = (match["host"], int(match["pid"]))
        entry = found.setdefault(key, {"host": match["host"], "devices": [], "version": None, "env": {}})
        if match["dev"] not in entry["devices"]:
            entry["devices"].append(match["dev"])
        message = match["message"].strip()
        setting = _SET.match(message)
        if setting is not None:
            value = setting["value"].strip()
            if _INTEGER.match(value):
                value = value[:-1]
            entry["env"].setdefault(setting["name"], value)
            continue
        version = _VERSION.match(message)
        if version is not None and entry["version"] is None:
            entry["version"] = version["version"]
    return {
        (host, pid): NcclProcess(pid, host, tuple(e["devices"]), e["version"], e["env"])
        for (host, pid), e in found.items()
    }


def nccl_host(host: str | None) -> str:
    """A host name as NCCL prefixes its lines with it (cut at its first dot), to match a probe's record with them;
    "" for a record without a host (an older probe)."""
    return (host or "").split(".", 1)[0]


class NcclLines:
    """Collects NCCL's INFO lines from a command's output as it passes through (``patchkit run --probe``):
    only lines that can be NCCL's are kept, so a long benchmark's output costs no memory here."""

    MARK = b" NCCL INFO "

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: bytes) -> None:
        if self.MARK in line:
            self.lines.append(line.decode("utf-8", "replace"))

    def parse(self) -> dict[tuple[str, int], NcclProcess]:
        return parse_nccl_log(self.lines)


def wants_nccl_lines(env: Mapping[str, str]) -> bool:
    """Whether NCCL will print INFO lines (``NCCL_DEBUG`` INFO, or TRACE, which includes them)."""
    return env.get("NCCL_DEBUG", "").strip().upper() in ("INFO", "TRACE")
