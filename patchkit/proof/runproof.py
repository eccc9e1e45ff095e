"""The probe's verdict on one server run, for ``bench``: read once healthy and again at stop.

``prove`` reads the probe's files, lists the shared libraries each live
process mapped (psutil), notes the processes of the server's tree that ran
no probe (not Python, or started with ``-S``/``-I``), accounts for every file
that ran, and checks every ``init_process_group`` environment against the
expected ``[bench].env`` values.  Its ``reasons`` are what refuse the run.
``proof_json`` is what the run record keeps (docs/json.md, ``proof``).

A process in which the probe failed (``probe failed in pid N: ...``) saw
only part of what ran there: a module it did not record is not accounted
for, an ``init_process_group`` it did not record is not checked.  Such a run
is measured, like a run with ``[bench].probe = false``, but its proof is
``not proven`` with those errors as its ``reasons`` (``doubts``), and bench,
runs and compare say so.  It is not refused: the failure is patchkit's, not
the server's, and refusing would leave a probe bug no way round but turning
the probe off, which gives the same "not proven".  A refusal still wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit.proof.account import Accounting, TreeFacts, account
from patchkit.proof.check import env_reasons, stray_reasons
from patchkit.proof.digests import DigestCache
from patchkit.proof.jitcache import JitCache
from patchkit.proof.libs import MappedLibrary, mapped_libraries
from patchkit.proof.nccllog import parse_nccl_log
from patchkit.proof.records import ProcessFacts, read_probe_dir
from patchkit.render import plural

NOT_PROVEN = "not proven"


@dataclass(frozen=True)
class Proof:
    """The probe's verdict on a server run at one moment (``healthy`` or ``stop``): its processes and their libraries,
    the accounting, what refuses the run (``reasons``) and what leaves it not proven (``doubts``)."""

    when: str  # healthy | stop
    processes: tuple[ProcessFacts, ...]
    libraries: Mapping[int, tuple[MappedLibrary, ...]]
    unprobed: tuple[str, ...]  # "pid N (cmdline)" of the server's tree without a probe file
    accounting: Accounting
    reasons: tuple[str, ...]
    doubts: tuple[str, ...] = ()  # the probe's own failures, one line per process: what makes it "not proven"


def prove(
    probe_dir: Path,
    *,
    live: Mapping[int, str],
    tree: TreeFacts | None,
    allow_stray: Sequence[str],
    expected: Mapping[str, str],
    when: str,
    generated: Sequence[JitCache] = (),
) -> Proof:
    """``live``: pid -> command line of the server's processes now (empty at stop: they are gone)."""
    cache = DigestCache.for_scope("bench:" + (str(tree.root) if tree is not None else str(probe_dir)))
    processes = tuple(read_probe_dir(probe_dir))
    probed = {p.pid for p in processes}
    libraries = {pid: mapped_libraries(pid, cache) for pid in live if pid in probed}
    unprobed = tuple(f"pid {pid} ({cmd})" for pid, cmd in sorted(live.items()) if pid not in probed)
    accounting = account(processes, tree=tree, allow_stray=allow_stray, cache=cache, generated=generated)
    reasons = [*stray_reasons(accounting, processes), *env_reasons(processes, expected)]
    return Proof(when, processes, libraries, unprobed, accounting, tuple(reasons), tuple(doubts(processes)))


def doubts(processes: Iterable[ProcessFacts]) -> list[str]:
    """One line per process in which the probe failed: its first error, its label, how many more."""
    out = []
    for proc in processes:
        if proc.errors:
            more = len(proc.errors) - 1
            tail = f"; {plural(more, 'more probe error')} there" if more else ""
            out.append(f"{proc.errors[0]} ({proc.label}{tail})")
    return out


def nccl_json(server_log: Path) -> dict[str, Any]:
    try:
        with server_log.open(encoding="utf-8", errors="replace") as f:
            found = parse_nccl_log(f)
    except OSError:
        return {}
    return {str(pid): item.to_json() for pid, item in sorted(found.items())}


def _processes_json(processes: Iterable[ProcessFacts], libraries: Mapping[int, Sequence[MappedLibrary]]) -> list[Any]:
    out = []
    for proc in processes:
        libs = libraries.get(proc.pid, ())
        item = proc.to_json()
        item["libraries"] = [lib.to_json() for lib in libs if lib.notable]
        item["mapped"] = len(libs)
        out.append(item)
    return out


def proof_json(healthy: Proof | None, stop: Proof | None, *, server_log: Path, probe_dir: Path) -> dict[str, Any]:
    """The record's ``proof``: state, per-process facts, libraries, both accountings, distributions, NCCL lines."""
    last = stop or healthy
    if last is None:
        return {"state": NOT_PROVEN, "reason": "the probe's files could not be read", "probe_dir": str(probe_dir)}
    libraries = healthy.libraries if healthy is not None else {}
    reasons = [
        *(healthy.reasons if healthy else ()),
        *(r for r in (stop.reasons if stop else ()) if not healthy or r not in healthy.reasons),
    ]
    every = sorted({lib.path for libs in libraries.values() for lib in libs})
    doubted = list(last.doubts)
    if reasons:
        state, why = "refused", None
    elif not last.processes:
        state, why = NOT_PROVEN, "no process of the server ran the probe"
    elif doubted:
        state = NOT_PROVEN
        why = f"the probe failed in {plural(len(doubted), 'process', 'processes')}: what it saw is incomplete"
    else:
        state, why = "proven", None

    def summary(proof: Proof | None) -> dict[str, Any] | None:
        if proof is None:
            return None
        data = proof.accounting.summary_json()
        data.pop("distributions")
        return data

    return {
        "state": state,
        "reason": why,
        "probe_dir": str(probe_dir),
        "reasons": [*reasons, *doubted],
        "processes": _processes_json(last.processes, libraries),
        "unprobed": list(healthy.unprobed if healthy else ()),
        "libraries": every,
        "accounting": {"healthy": summary(healthy), "stop": summary(stop)},
        "distributions": [d.to_json() for d in last.accounting.distributions],
        "nccl": nccl_json(server_log),
    }
