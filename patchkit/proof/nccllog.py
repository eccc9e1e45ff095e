"""NCCL's own account of what it read, from its ``NCCL_DEBUG=INFO`` lines in a server log.

NCCL prefixes every debug line with ``<host>:<pid>:<tid> [<dev>] NCCL INFO``
(``[<dev>]`` is the CUDA device index of the communicator's rank).  Two kinds
of line matter here:

* ``<NAME> set by environment to <VALUE>``: a variable NCCL read (subsystem
  ENV, printed once per process when the variable is set);
* ``NCCL version 2.27.5+cuda12.9``: the library that is actually loaded.

Lines from processes that interleave on one stream are told apart by pid;
anything else in the log is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_LINE = re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[^\]]*)\] NCCL INFO (?P<message>.*)$")
_SET = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*) set by environment to (?P<value>.*)$")
_VERSION = re.compile(r"^NCCL version (?P<version>\S+)")


@dataclass(frozen=True)
class NcclProcess:
    """What NCCL said in one process."""

    pid: int
    host: str
    devices: tuple[str, ...]
    version: str | None
    env: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "host": self.host,
            "devices": list(self.devices),
            "version": self.version,
            "env": dict(self.env),
        }


def parse_nccl_log(lines: Iterable[str]) -> dict[int, NcclProcess]:
    """pid -> what NCCL printed for it (first value wins, as NCCL reads each variable once)."""
    found: dict[int, dict[str, Any]] = {}
    for raw in lines:
        match = _LINE.match(raw.rstrip("\r\n"))
        if match is None:
            continue
        pid = int(match["pid"])
        entry = found.setdefault(pid, {"host": match["host"], "devices": [], "version": None, "env": {}})
        if match["dev"] not in entry["devices"]:
            entry["devices"].append(match["dev"])
        message = match["message"].strip()
        setting = _SET.match(message)
        if setting is not None:
            entry["env"].setdefault(setting["name"], setting["value"].strip())
            continue
        version = _VERSION.match(message)
        if version is not None and entry["version"] is None:
            entry["version"] = version["version"]
    return {pid: NcclProcess(pid, e["host"], tuple(e["devices"]), e["version"], e["env"]) for pid, e in found.items()}
