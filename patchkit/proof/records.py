"""The probe's per-process files (``probe-<pid>-<start>-<host>-<boot>[.<exec>].jsonl``), read back as frozen values.

Each file is a stream of JSON lines written by the probe (``site/``: its ``sitecustomize.py`` and parts):
``process`` (identity, prefixes, site dirs, start environment), ``module`` /
``pth`` / ``probe`` / ``chained`` (a file that ran, with size and mtime when it
was found), ``init`` (``torch.distributed.init_process_group``: environment
at the call, backend, rank, world size, torch and NCCL versions), ``error``
(the probe's own failures) and ``exit``; and what ran, for the coverage: ``code_file`` (a number for a file
named once) and ``code`` (one per code object that started: that number, its qualified name and first line: the
``sysmon`` core), ``read`` (a file read under the benchmarked tree) and ``exec`` (the path the process exec'd).
A torn last line (a process killed mid-write) is skipped.  Values are redacted again here, so a secret that
reached a file by any route never reaches the store.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from patchkit.proof.bytecode import BytecodeConfig
from patchkit.proof.document import InitJson, ProcessJson
from patchkit.redact import redact_env

FILE_KINDS = ("module", "pth", "probe", "chained", "data")


@dataclass(frozen=True)
class LoadedFile:
    """One file the probe saw run in a process, with the size and mtime it had then: the accounting checks that
    what is on disk is still what ran."""

    kind: str  # module | pth (a .pth with an import line) | probe | chained (the shadowed sitecustomize) | data
    name: str
    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class InitCall:
    """One call of ``torch.distributed.init_process_group``."""

    env: dict[str, str]
    backend: str | None
    rank: int | None
    world_size: int | None
    torch: str | None
    nccl: str | None
    raised: str | None
    # secret-looking expected names (HF_TOKEN), compared inside the process: equal | different | unset
    secrets: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> InitJson:
        return {
            "env": dict(self.env),
            "backend": self.backend,
            "rank": self.rank,
            "world_size": self.world_size,
            "torch": self.torch,
            "nccl": self.nccl,
            "raised": self.raised,
            "secrets": dict(self.secrets),
        }


@dataclass(frozen=True)
class ProcessFacts:
    """One Python process as its probe file records it: identity, prefixes and site directories, start environment,
    every file that ran, its ``init_process_group`` calls, and the probe's own errors."""

    pid: int
    ppid: int | None
    argv: tuple[str, ...]
    executable: str | None
    title: str | None  # setproctitle's, seen at init or exit
    mp_name: str | None  # multiprocessing's process name (SGLang: none; the stand-in: scheduler_TP<n>)
    prefix: str | None
    base_prefix: str | None
    stdlib: str | None
    site_dirs: tuple[str, ...]
    forked_from: int | None
    start_env: dict[str, str] = field(repr=False)
    files: tuple[LoadedFile, ...] = field(repr=False)
    inits: tuple[InitCall, ...] = ()
    errors: tuple[str, ...] = ()
    exited: bool = False
    bytecode: BytecodeConfig | None = None  # where its interpreter reads a .pyc (None: a probe that did not say)
    host: str | None = None  # os.uname().nodename in the process (None: a probe older than that)
    started_ns: int | None = None  # time.time_ns() when its probe started
    boot_id: str | None = None  # /proc/sys/kernel/random/boot_id: with host, which machine and boot
    start_ticks: int | None = None  # the kernel's start time of the process: the same across exec()
    exec_index: int = 0  # 0: the process's first Python image; N: the image after its Nth exec()
    incomplete: str | None = None  # the errno (ENOSPC, EDQUOT...) that stopped its probe writing: what came after
    # the core that recorded what ran: "sysmon" (functions) or "file" (modules); None: a probe older than cores
    core: str | None = None
    granularity: str = "file"  # "function" or "file"; an older probe's record: "file"
    core_why: str | None = None  # why a coarser core ran than the interpreter could have had
    code: tuple[tuple[str, str, int], ...] = field(default=(), repr=False)  # (file, qualname, first line) started
    reads: tuple[str, ...] = field(default=(), repr=False)  # files read under the benchmarked tree (kind "read")
    execs: tuple[str, ...] = ()  # the paths the process exec'd (its next image, if probed, is the next file)
    # why code ran here that the core never saw start: torch.compile (dynamo) loaded and compiling (or not saying)
    compiled: str | None = None

    @property
    def ident(self) -> str:
        """The process, whatever it exec()s: ``host/boot8/pid/start ticks`` (``?`` for what an older probe did not
        record).  Two processes that share a pid (reused, or on two hosts) have two idents."""
        ticks = "?" if self.start_ticks is None else str(self.start_ticks)
        return f"{self.host or '?'}/{(self.boot_id or '?')[:8]}/{self.pid}/{ticks}"

    @property
    def started_at(self) -> str | None:
        """When its probe started, UTC ISO 8601 to the millisecond (None: not recorded)."""
        if self.started_ns is None:
            return None
        stamp = datetime.fromtimestamp(self.started_ns / 1e9, UTC)
        return stamp.isoformat(timespec="milliseconds")

    @property
    def label(self) -> str:
        """How a person names this process: its title, else its multiprocessing name, else its argv."""
        if self.title:
            return self.title.split("::", 1)[-1] if "::" in self.title else self.title
        if self.mp_name and self.mp_name != "MainProcess":
            return self.mp_name
        return " ".join(self.argv) or f"pid {self.pid}"

    @property
    def rank(self) -> int | None:
        return self.inits[-1].rank if self.inits else None

    def to_json(self) -> ProcessJson:
        return {
            "pid": self.pid,
            "ppid": self.ppid,
            "host": self.host,
            "ident": self.ident,
            "exec_index": self.exec_index,
            "started_at": self.started_at,
            "label": self.label,
            "argv": list(self.argv),
            "executable": self.executable,
            "title": self.title,
            "mp_name": self.mp_name,
            "prefix": self.prefix,
            "site_dirs": list(self.site_dirs),
            "forked_from": self.forked_from,
            "start_env": dict(self.start_env),
            "init": [i.to_json() for i in self.inits],
            "files": len(self.files),
            "errors": list(self.errors),
            "incomplete": self.incomplete,
            "exited": self.exited,
        }


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if isinstance(item, dict):
            out.append(item)
    return out


def read_process(path: Path, incomplete: str | None = None) -> ProcessFacts | None:
    items = _lines(path)
    head = next((i for i in items if i.get("kind") == "process"), None)
    if head is None:
        return None
    files: list[LoadedFile] = []
    inits: list[InitCall] = []
    errors: list[str] = []
    title = mp_name = None
    exited = False
    frames: object = None  # the exit record's count of frames dynamo compiled (None: no exit record, or no dynamo)
    numbered: dict[object, str] = {}
    code: list[tuple[str, str, int]] = []
    reads: list[str] = []
    execs: list[str] = []
    for item in items:
        kind = item.get("kind")
        if kind == "code":
            where = numbered.get(item.get("file"))
            name, line = item.get("name"), item.get("line")
            if where is not None and isinstance(name, str) and isinstance(line, int):
                code.append((where, name, line))
            continue
        if kind == "code_file":
            if isinstance(item.get("path"), str):
                numbered[item.get("id")] = item["path"]
            continue
        if kind == "read":
            if isinstance(item.get("path"), str):
                reads.append(item["path"])
            continue
        if kind == "exec":
            execs.append(str(item.get("path")))
            continue
        if kind in FILE_KINDS:
            try:
                name, where = str(item["name"]), str(item["path"])
                files.append(LoadedFile(str(kind), name, where, int(item["size"]), int(item["mtime_ns"])))
            except (KeyError, TypeError, ValueError):
                continue
        elif kind == "init":
            inits.append(
                InitCall(
                    env=redact_env(item.get("env")),
                    backend=item.get("backend"),
                    rank=item.get("rank"),
                    world_size=item.get("world_size"),
                    torch=item.get("torch"),
                    nccl=item.get("nccl"),
                    raised=item.get("raised"),
                    secrets=_verdicts(item.get("secrets")),
                )
            )
        elif kind == "error":
            errors.append(str(item.get("message")))
        if kind in ("init", "error", "exit"):
            title = item.get("title") or title
            mp_name = item.get("mp_name") or mp_name
            exited = exited or kind == "exit"
            if kind == "exit":
                frames = item.get("compiled")
    return ProcessFacts(
        pid=int(head["pid"]),
        ppid=head.get("ppid"),
        argv=tuple(str(a) for a in head.get("argv") or ()),
        executable=head.get("executable"),
        title=title,
        mp_name=mp_name,
        prefix=head.get("prefix"),
        base_prefix=head.get("base_prefix"),
        stdlib=head.get("stdlib"),
        site_dirs=tuple(str(d) for d in head.get("site_dirs") or ()),
        forked_from=head.get("forked_from"),
        start_env=redact_env(head.get("env")),
        files=tuple(files),
        inits=tuple(inits),
        errors=tuple(errors),
        exited=exited,
        bytecode=_bytecode(head.get("bytecode")),
        host=head.get("host") if isinstance(head.get("host"), str) else None,
        started_ns=_int_or_none(head.get("started_ns")),
        boot_id=head.get("boot_id") if isinstance(head.get("boot_id"), str) else None,
        start_ticks=_int_or_none(head.get("start_ticks")),
        exec_index=_int_or_none(head.get("exec_index")) or 0,
        incomplete=incomplete,
        **_core(head.get("core")),
        code=tuple(code),
        reads=tuple(reads),
        execs=tuple(execs),
        compiled=_compiled(files, exited, frames),
    )


DYNAMO = "torch._dynamo"


def _compiled(files: Sequence[LoadedFile], exited: bool, frames: object) -> str | None:
    """Why the process ran code its core never saw start, or None: torch.compile (dynamo) interprets a function's
    bytecode symbolically, inlining every callee, and runs the graph it built, so a changed function that ran
    there reads as "did not run".  A process that loaded dynamo and compiled a frame, or that ended without
    saying (killed before its exit record), is recorded at file granularity; one that said it compiled none is
    not."""
    if not any(f.name == DYNAMO or f.name.startswith(DYNAMO + ".") for f in files):
        return None
    if not exited:
        return "torch.compile (dynamo) was loaded and the process ended before saying whether it compiled code"
    if isinstance(frames, int) and not isinstance(frames, bool) and frames == 0:
        return None
    if isinstance(frames, int) and not isinstance(frames, bool) and frames > 0:
        return f"torch.compile (dynamo) compiled code here ({frames} frames and graphs): it runs without starting"
    return "torch.compile (dynamo) was loaded and its counters could not be read"


def _core(item: object) -> dict[str, Any]:
    """The process record's ``core``: its name, granularity and why; a probe older than cores recorded files."""
    if not isinstance(item, dict):
        return {}
    granularity = item.get("granularity")
    return {
        "core": str(item.get("name")) if item.get("name") else None,
        "granularity": granularity if granularity in ("function", "file") else "file",
        "core_why": str(item["why"]) if item.get("why") else None,
    }


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _verdicts(item: object) -> dict[str, str]:
    if not isinstance(item, dict):
        return {}
    return {str(k): str(v) for k, v in item.items() if v in ("equal", "different", "unset")}


def _bytecode(item: object) -> BytecodeConfig | None:
    if not isinstance(item, dict) or not isinstance(item.get("tag"), str):
        return None  # cache_tag None: an interpreter that writes no bytecode
    prefix = item.get("prefix")
    return BytecodeConfig(item["tag"], int(item.get("optimize") or 0), prefix if isinstance(prefix, str) else None)


def read_probe_dir(directory: Path) -> list[ProcessFacts]:
    """Every process the probe saw, in pid order."""
    found = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    # <file>.<ERRNO>: the probe could not write on (a full disk, a quota) and left this empty marker
    markers = {}
    for name in names:
        stem, dot, tail = name.rpartition(".")
        if dot and stem.endswith(".jsonl") and tail.isupper() and tail.startswith("E"):
            markers[stem] = tail
    for name in names:
        if name.startswith("probe-") and name.endswith(".jsonl"):
            facts = read_process(directory / name, markers.get(name))
            if facts is not None:
                found.append(facts)
    return sorted(found, key=lambda p: (p.pid, p.host or "", p.start_ticks or 0, p.exec_index))


# A process of this machine and boot as psutil sees it: (pid, kernel start ticks).  Tables filled from outside
# the processes (the libraries each mapped) are keyed so: a pid reused during a run is another key, and a probe
# record is matched with it only when it ran here (``local_key``), never another host's same pid.
LocalKey = tuple[int, int | None]


def local_key(process: ProcessFacts) -> LocalKey | None:
    """The process's key among this machine's live processes; None when it ran on another host or boot."""
    return (process.pid, process.start_ticks) if same_host(process) else None


def same_host(process: ProcessFacts) -> bool:
    """Whether the process ran on this machine and boot (an older probe's record, without a host: assumed so):
    only such a pid can be matched with what psutil sees here."""
    if process.host is None:
        return True
    boot = None
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip() or None
    except OSError:
        pass
    return process.host == os.uname().nodename and (process.boot_id is None or boot is None or process.boot_id == boot)
