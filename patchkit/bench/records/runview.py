"""One stored run read whole, for people and tools: what ``patchkit show RUN`` prints.

The store keeps each run as one ``RunRecord`` (``record.py``); its facts are
spread over the record's keys the way they were collected (the guard's
reports, the probe's per-process files, NCCL's log lines, nvidia-smi, the
client logs).  ``run_view`` regroups them by the questions a person asks of
one run, each a *section*:

* ``header``: commit, subject, profile, launch, outcome, each manifest's
  patch states, the server's version and the proof's verdict;
* ``processes``: every Python process the probe saw (host, pid, role, rank,
  argv, start, interpreter, the probe's status there) and every process of
  the server's tree it did not see;
* ``files``: the files that ran, by class (tree, dist, editable, stdlib,
  generated, probe, data), every STRAY and every allowed one by path, and
  every data file read (JSON/YAML/txt/jinja configs) with its class and digest;
* ``env``: the effective environment per rank (at ``init_process_group``; the
  start environment where no process called it), each variable marked where
  the ranks disagree and where a rank differs from what the launch passed;
* ``nccl``: NCCL's own ``NCCL_DEBUG=INFO`` lines per process and the
  NCCL/CUDA libraries each process mapped;
* ``gpus``: nvidia-smi's facts and torch's CUDA stack;
* ``clients``: each client run (warm-up or measured), its logs and metric values;
* ``code`` (only when asked for: it is long): what the probed processes ran (the run's coverage, which the
  store keeps apart: ``RunRecord.coverage`` filled by the caller), the tree's files with the functions that
  started in them, the files outside the tree by count, the tree's files read, the core and granularity per
  process, and why the probe cannot vouch for some of it.

Only what the record holds is shown: nothing is read from the run's log
files or the probe directory again (they may be gone, or on another host),
so a run stored by an older patchkit shows what its record has and says
what it lacks.  The view is plain data (``to_json``); ``commands/show.py``
renders it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from patchkit.bench.records.coverage import TreeRelative, tree_root
from patchkit.bench.records.hygiene import problems
from patchkit.bench.records.record import RunRecord
from patchkit.proof import PROBE_FAMILIES
from patchkit.proof.document import ProcessJson, ProofJson
from patchkit.proof.nccllog import nccl_host

SECTIONS = ("processes", "files", "env", "nccl", "gpus", "clients")
OPT_IN = ("code",)  # sections shown only when asked for by name
FILE_CLASSES = ("tree", "dist", "editable", "stdlib", "generated", "probe", "data", "stray", "allowed")
_UNPROBED = re.compile(r"^pid (\d+) \((.*)\)$", re.DOTALL)


@dataclass(frozen=True)
class RunView:
    """One stored run regrouped by section (``SECTIONS``, plus the header that is always there): plain data,
    the same for the terminal and for ``show --json``."""

    run: int
    header: Mapping[str, object]
    sections: Mapping[str, dict[str, object]]  # name -> that section's data, only the sections asked for

    def to_json(self) -> dict[str, object]:
        return {"run": self.run, "header": dict(self.header), **{k: self.sections[k] for k in self.sections}}


def run_view(record: RunRecord, sections: Sequence[str] = SECTIONS) -> RunView:
    """The view of ``record`` with ``sections`` (in ``SECTIONS`` order, then ``OPT_IN``'s, whatever order they are
    asked in)."""
    build = {
        "processes": processes_section,
        "files": files_section,
        "env": env_section,
        "nccl": nccl_section,
        "gpus": gpus_section,
        "clients": clients_section,
        "code": code_section,
    }
    chosen = {name: build[name](record) for name in (*SECTIONS, *OPT_IN) if name in sections}
    return RunView(int(record.run_id or 0), header_section(record), chosen)


def _proof(record: RunRecord) -> ProofJson:
    return record.proof or {}


def header_section(record: RunRecord) -> dict[str, object]:
    """What the run was and how far to trust it: commit, profile, outcome, patch states, versions, the proof."""
    proof = record.proof
    patches = []
    for manifest in record.manifests:
        states: dict[str, int] = {}
        for result in manifest.get("results") or ():
            state = str(result.get("state") or "?")
            states[state] = states.get(state, 0) + 1
        patches.append({"manifest": manifest.get("name"), "digest": manifest.get("digest"), "states": states})
    return {
        "commit": record.commit.sha,
        "subject": record.commit.subject,
        "author_date": record.commit.date,
        "profile": record.profile,
        "without": None if record.without is None else dict(record.without),
        "launch": record.launch,
        "series": record.series,
        "outcome": record.outcome.value,
        "reason": record.reason,
        "details": list(record.details),
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "host": record.host.get("hostname"),
        "executor": record.executor_summary(),
        "allow_dirty": record.allow_dirty,
        "patches": patches,
        "guard": record.guard.get("ok") if record.guard else None,
        "server_version": (record.server_info or {}).get("version"),
        "python": (record.interpreter or {}).get("version"),
        "python_executable": (record.interpreter or {}).get("executable"),
        "proof": None
        if proof is None
        else {
            "state": proof.get("state"),
            "reason": proof.get("reason"),
            "reasons": list(proof.get("reasons") or ()),
            "probe_dir": proof.get("probe_dir"),
        },
        "server_log": record.logs.get("server"),
    }


def _rank(process: ProcessJson) -> int | None:
    inits = process.get("init") or ()
    return inits[-1].get("rank") if inits else None


def _probe_status(process: ProcessJson) -> str:
    if process.get("incomplete"):
        return f"incomplete ({process['incomplete']})"
    errors = list(process.get("errors") or ())
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"failed: {errors[0]}{more}"
    return "ok" if process.get("exited") or process.get("init") or process.get("files") else "started"


def _role(process: ProcessJson, pids: set[tuple[str | None, int | None]], host: str | None) -> str:
    """The process's title or multiprocessing name; a process named only by its argv: ``server`` for the one
    the server command started (its parent ran no probe on its host: ``pids`` are (host, pid)), else ``child``."""
    label = str(process.get("label") or "")
    if label and label != " ".join(process.get("argv") or ()):
        return label
    return "server" if (host, process.get("ppid")) not in pids else "child"


def processes_section(record: RunRecord) -> dict[str, object]:
    """Every process the probe saw, in pid order, and every process of the server's tree that it did not see."""
    proof = _proof(record)
    host = record.hostname
    probed = []
    processes = list(proof.get("processes") or ())
    pids = {(p.get("host") or host, p.get("pid")) for p in processes}  # a parent is one of its own host's
    for process in processes:
        inits = process.get("init") or ()
        where = process.get("host") or host  # a probe older than its own host field: the run's host
        probed.append(
            {
                "pid": process.get("pid"),
                "ppid": process.get("ppid"),
                "host": where,
                "role": _role(process, pids, where),
                "ident": process.get("ident"),  # host/boot/pid/start: one process whatever it exec()s
                "exec_index": int(process.get("exec_index") or 0),  # N: the image after its Nth exec()
                "rank": _rank(process),
                "world_size": inits[-1].get("world_size") if inits else None,
                "argv": list(process.get("argv") or ()),
                "started_at": process.get("started_at"),
                "python": process.get("executable"),
                "probe": _probe_status(process),
                "files": process.get("files"),
                "exited": bool(process.get("exited")),
            }
        )
    whys = {item.get("pid"): item.get("why") for item in proof.get("unaccounted") or ()}
    unprobed = []
    for line in proof.get("unprobed") or ():
        found = _UNPROBED.match(str(line))
        pid, command = (int(found.group(1)), found.group(2)) if found else (None, str(line))
        # why: for a Python process, what kept the probe out (-I, -S, -E, its own env); None: not Python
        unprobed.append({"pid": pid, "command": command, "probe": "none", "why": whys.get(pid)})
    return {"probed": probed, "unprobed": unprobed, "recorded": record.proof is not None and "processes" in proof}


def files_section(record: RunRecord) -> dict[str, object]:
    """The files that ran, counted by class (at stop, else once healthy), and each STRAY and allowed one by path."""
    proof = _proof(record)
    accounting = proof.get("accounting") or {}
    last = accounting.get("stop") or accounting.get("healthy")
    if not last:
        return {
            "at": None,
            "counts": None,
            "strays": [],
            "allowed": [],
            "data": [],
            "distributions": [],
            "editable_commits": {},
        }
    at = "stop" if accounting.get("stop") else "healthy"
    counts = {name: int((last.get("counts") or {}).get(name, 0)) for name in FILE_CLASSES}
    return {
        "at": at,
        "counts": counts,
        "strays": [dict(v) for v in last.get("strays") or ()],
        "allowed": [dict(v) for v in last.get("allowed") or ()],
        "data": [dict(v) for v in last.get("data") or ()],  # every data file read (configs, templates), by class
        "allow_stray": list(last.get("allow_stray") or ()),
        "distributions": [dict(d) for d in proof.get("distributions") or ()],
        "editable_commits": dict(last.get("editable_commits") or {}),
    }


class _EnvColumn(TypedDict):
    """One rank's (or process's) column of ``env_section``: read back to sort and compare."""

    pid: int | None
    role: str | None
    rank: int | None
    env: dict[str, str]


def _recorded_name(name: str) -> bool:
    """Whether the probe records this variable whatever [bench].env says (its families)."""
    return name.startswith(PROBE_FAMILIES)


def env_section(record: RunRecord) -> dict[str, object]:
    """The effective environment per rank, against the launch's, one row per variable.

    A column is a rank's environment at ``init_process_group`` (its last call);
    where no process called it, each probed process's start environment.  A
    row is every variable some column holds, and every variable of the launch
    the probe records (its families): one the launch passed and a rank lacks is
    a difference too.  ``None`` is unset."""
    proof = _proof(record)
    columns: list[_EnvColumn] = []
    for process in proof.get("processes") or ():
        inits = process.get("init") or ()
        if inits:
            columns.append(
                {
                    "pid": process.get("pid"),
                    "role": process.get("label"),
                    "rank": inits[-1].get("rank"),
                    "env": dict(inits[-1].get("env") or {}),
                }
            )
    source = "init_process_group"
    if not columns:
        source = "start"
        for process in proof.get("processes") or ():
            env = dict(process.get("start_env") or {})
            columns.append({"pid": process.get("pid"), "role": process.get("label"), "rank": None, "env": env})
    columns.sort(key=lambda c: (c["rank"] is None, c["rank"] if c["rank"] is not None else 0, c["pid"] or 0))
    launch = dict(record.env)
    for column in columns:
        column["env"] = _without_probe(column["env"])
    names = {name for column in columns for name in column["env"]}
    names |= {name for name in launch if _recorded_name(name)}
    rows = []
    for name in sorted(names):
        values = [column["env"].get(name) for column in columns]
        rows.append(
            {
                "name": name,
                "launch": launch.get(name),
                "values": values,
                "between_ranks": len(set(values)) > 1,
                "from_launch": any(value != launch.get(name) for value in values),
            }
        )
    return {
        "source": None if not columns else source,
        "columns": [{"pid": c["pid"], "role": c["role"], "rank": c["rank"]} for c in columns],
        "rows": rows,
    }


def _without_probe(env: Mapping[str, str]) -> dict[str, str]:
    """A process's environment without the probe's own entry first on its PYTHONPATH (``probe_env`` put it
    there; the launch's env is the record's, before that): what the server was given, to compare with the launch."""
    out = dict(env)
    first, _, rest = out.get("PYTHONPATH", "").partition(os.pathsep)
    if first and Path(first).parts[-3:] == ("patchkit", "proof", "site"):
        if rest:
            out["PYTHONPATH"] = rest
        else:
            del out["PYTHONPATH"]
    return out


def nccl_section(record: RunRecord) -> dict[str, object]:
    """NCCL's own lines per process (version, devices, each variable it read) and the NCCL/CUDA libraries mapped."""
    proof = _proof(record)
    host = record.hostname
    # a line's process is (host as NCCL prints it, pid): another host's pid 1234 is never named by this one's
    roles = {(nccl_host(p.get("host") or host), p.get("pid")): p.get("label") for p in proof.get("processes") or ()}
    lines = []
    for key, item in (proof.get("nccl") or {}).items():  # keyed "host:pid" (a record before that: "pid")
        known = item.get("pid")
        pid = int(known) if known is not None else int(str(key).rpartition(":")[2])
        where = item.get("host") or nccl_host(host)
        lines.append({**dict(item), "pid": pid, "role": roles.get((nccl_host(where), pid))})
    lines.sort(key=lambda line: (str(line.get("host") or ""), line["pid"]))
    libraries = []
    for process in proof.get("processes") or ():
        for lib in process.get("libraries") or ():
            libraries.append({"pid": process.get("pid"), "role": process.get("label"), **dict(lib)})
    torch = record.torch or {}
    return {"log": lines, "libraries": libraries, "torch_nccl": torch.get("nccl")}


def gpus_section(record: RunRecord) -> dict[str, object]:
    """nvidia-smi's facts as stored (None: no nvidia-smi, or it failed) and torch's CUDA stack."""
    return {
        "gpus": None if record.gpus is None else [dict(g) for g in record.gpus],
        "torch": record.torch,
        "hygiene": None if record.gpu_hygiene is None else dict(record.gpu_hygiene),  # {"start", "end"} snapshots
        "problems": problems(record.gpu_hygiene, record.launch),
    }


def clients_section(record: RunRecord) -> dict[str, object]:
    """Each client run, warm-ups first: its command, its logs, and (measured runs) each metric's value.

    The record keeps the warm-ups' logs and commands with the measured runs'
    (``warmup + repeat`` of them, in order) and one sample per measured run;
    the warm-ups are the first ``commands - samples`` of them."""
    commands = list(record.commands.get("client") or ())
    logs = list(record.logs.get("clients") or ())
    measured = max((len(values) for values in record.samples.values()), default=0)
    planned = max(len(commands), len(logs))
    warmups = max(planned - measured, 0)
    missing = {(m.get("metric"), m.get("run")): m.get("log") for m in record.missing}
    runs = []
    for index in range(max(planned, measured)):
        number = index - warmups + 1
        is_measured = index >= warmups
        values = (
            {metric: (vals[number - 1] if number - 1 < len(vals) else None) for metric, vals in record.samples.items()}
            if is_measured
            else {}
        )
        runs.append(
            {
                "index": index + 1,
                "kind": "measured" if is_measured else "warmup",
                "run": number if is_measured else None,
                "command": list(commands[index]) if index < len(commands) else None,
                "logs": dict(logs[index]) if index < len(logs) else None,
                "values": values,
                "missing": {m: missing[(m, number)] for m in values if (m, number) in missing},
            }
        )
    return {"runs": runs, "stats": record.stats(), "metrics": [dict(m) for m in record.metrics]}


def code_section(record: RunRecord) -> dict[str, object]:
    """What the run's probed processes ran (``record.coverage``): the tree's files, each with the functions that
    started in it (by first line), the files outside the tree by count, the tree's files read, per process its
    core and granularity, and why the probe cannot vouch for some of it."""
    coverage = record.coverage
    if coverage is None:
        return {"recorded": False, "granularity": None, "root": None, "processes": [], "tree": [], "outside": [],
                "reads": [], "blind": []}  # fmt: skip
    root = tree_root(record, coverage)
    relative = TreeRelative(root)
    functions = coverage.get("functions") or {}
    modules = set(coverage.get("modules") or ())
    tree: dict[str, dict[str, object]] = {}
    outside = []
    for path in sorted(set(functions) | modules):
        started = sorted((int(line), str(name)) for name, line in functions.get(path, ()))
        names = [{"name": name, "line": line} for line, name in started]
        rel = relative(path)
        if rel is None:
            outside.append({"path": path, "module": path in modules, "functions": len(names)})
        else:
            tree[rel] = {"path": rel, "module": path in modules, "functions": names}
    reads = sorted(rel for rel in map(relative, coverage.get("reads") or ()) if rel is not None)
    processes = [dict(p) for p in coverage.get("processes") or ()]
    return {
        "recorded": True,
        "granularity": coverage.get("granularity"),
        "root": root,
        "processes": processes,
        "tree": [tree[rel] for rel in sorted(tree)],
        "outside": outside,
        "reads": reads,
        "blind": list(coverage.get("blind") or ()),
    }
