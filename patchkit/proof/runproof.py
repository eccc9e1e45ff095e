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

import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchkit.proof.account import Accounting, TreeFacts, account
from patchkit.proof.check import env_reasons, stray_reasons
from patchkit.proof.digests import DigestCache
from patchkit.proof.document import AccountingJson, NcclJson, ProcessJson, ProofJson
from patchkit.proof.jitcache import JitCache
from patchkit.proof.libs import MappedLibrary, mapped_libraries
from patchkit.proof.nccllog import parse_nccl_log
from patchkit.proof.records import LocalKey, ProcessFacts, local_key, read_probe_dir, same_host
from patchkit.proof.unprobed import LiveProcess, Unprobed, has_probe_file, started_under
from patchkit.proof.unprobed import unprobed as find_unprobed
from patchkit.wording import plural

NOT_PROVEN = "not proven"
PENDING_WAIT = 5.0  # seconds to wait for the probe file of a process that has the probe's environment
OUTLIVE_WAIT = 5.0  # seconds run --probe waits for a probed process its command left running to end


@dataclass(frozen=True)
class Proof:
    """The probe's verdict on a server run at one moment (``healthy`` or ``stop``): its processes and their libraries,
    the accounting, what refuses the run (``reasons``) and what leaves it not proven (``doubts``)."""

    when: str  # healthy | stop
    processes: tuple[ProcessFacts, ...]
    libraries: Mapping[LocalKey, tuple[MappedLibrary, ...]]  # (pid, start ticks) of this machine's processes
    unprobed: tuple[str, ...]  # "pid N (cmdline)" of the server's tree without a probe file
    accounting: Accounting
    reasons: tuple[str, ...]
    doubts: tuple[str, ...] = ()  # the probe's own failures, one line per process: what makes it "not proven"
    unaccounted: tuple[Unprobed, ...] = ()  # the Python processes among unprobed, with why: also "not proven"


def proof_cache(tree: TreeFacts | None, probe_dir: Path) -> DigestCache:
    """The digest cache of a proof: one per tree, whichever verb proves it, so that a ``run --probe`` and a
    ``bench`` of one worktree hash its files once.  The scope keeps its ``bench:`` prefix, so the caches that
    bench runs already filled stay warm."""
    return DigestCache.for_scope("bench:" + (str(tree.root) if tree is not None else str(probe_dir)))


def prove(
    probe_dir: Path,
    *,
    live: Sequence[LiveProcess],
    tree: TreeFacts | None,
    allow_stray: Sequence[str],
    expected: Mapping[str, str],
    when: str,
    generated: Sequence[JitCache] = (),
    cache: DigestCache | None = None,
) -> Proof:
    """The one verdict of a probed run: ``bench``'s server at health and at stop, ``run --probe``'s command
    once it exited (``execution.probed``), so both refuse, doubt and name what was not accounted for alike.

    ``live``: the server's processes now (``unprobed.live_processes``; empty at stop: they are gone, and so
    no process can be found unprobed then).  ``cache``: the digest cache to hash with (``proof_cache``
    by default); a caller that hashes more with it (``run --probe``'s sampled libraries) saves it."""
    cache = cache if cache is not None else proof_cache(tree, probe_dir)
    deadline = time.monotonic() + PENDING_WAIT
    while True:
        processes = tuple(read_probe_dir(probe_dir))
        probed: dict[int, set[int | None]] = {}
        for proc in processes:
            if same_host(proc):  # pid 1234 on another node is not this node's 1234
                probed.setdefault(proc.pid, set()).add(proc.start_ticks)
        missing = find_unprobed(live, probed)
        # A process with the probe's environment that has not written yet is still starting (health can come
        # before a worker's site import): wait a little for it, never for one the probe cannot load in (-I, -S).
        if not any(m.pending for m in missing) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    missing_pids = {m.pid for m in missing}
    libraries = {
        (p.pid, p.start_ticks): mapped_libraries(p.pid, cache)
        for p in live
        if has_probe_file(p, probed) and p.pid not in missing_pids
    }
    unprobed = tuple(  # by pid and start time: a file an earlier process of the pid wrote is not this one's
        f"pid {p.pid} ({shlex.join(p.argv)})"
        for p in sorted(live, key=lambda p: p.pid)
        if not has_probe_file(p, probed) or p.pid in missing_pids
    )
    accounting = account(processes, tree=tree, allow_stray=allow_stray, cache=cache, generated=generated)
    reasons = [*stray_reasons(accounting, processes), *env_reasons(processes, expected)]
    return Proof(
        when, processes, libraries, unprobed, accounting, tuple(reasons), tuple(doubts(processes)), tuple(missing)
    )


def outliving(probe_dir: Path, wait: float = OUTLIVE_WAIT) -> tuple[LiveProcess, ...]:
    """Once a command has exited: the processes it started (``started_under``: their start environment names
    ``probe_dir``) still running after waiting up to ``wait`` seconds for them to end.

    A command's processes do not all end with it.  multiprocessing's resource tracker, started with the first
    spawned worker, sees its parent's pipe close and ends a moment later, writing its exit record then; on a
    loaded machine that moment is long enough for a proof made at once to read the tracker's file before its
    last records, and a proof made again on the same files can differ.  A child started just before the
    command exits may not have written its file at all.  Once they are gone their files are final, so the
    proof waits for them.  What still runs after the wait (a daemon the command started) is returned, to be
    named: what it runs after the proof is not in it."""
    deadline = time.monotonic() + wait
    while True:
        left = tuple(started_under(probe_dir))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def doubts(processes: Iterable[ProcessFacts]) -> list[str]:
    """One line per process in which the probe failed: its first error, its label, how many more; a process whose
    probe could not write its file (a full disk) says so first."""
    out = []
    for proc in processes:
        if proc.incomplete:
            out.append(
                f"proof incomplete ({proc.incomplete}): the probe in pid {proc.pid} could not write its file; "
                f"what ran after that is not recorded ({proc.label})"
            )
        elif proc.errors:
            more = len(proc.errors) - 1
            tail = f"; {plural(more, 'more probe error')} there" if more else ""
            out.append(f"{proc.errors[0]} ({proc.label}{tail})")
    return out


def nccl_json(server_log: Path) -> dict[str, NcclJson]:
    try:
        with server_log.open(encoding="utf-8", errors="replace") as f:
            found = parse_nccl_log(f)
    except OSError:
        return {}
    # "host:pid", as NCCL prefixes its lines: two hosts' pid 1234 are two entries
    return {f"{host}:{pid}": item.to_json() for (host, pid), item in sorted(found.items())}


def _processes_json(
    processes: Iterable[ProcessFacts], libraries: Mapping[LocalKey, Sequence[MappedLibrary]]
) -> list[ProcessJson]:
    out = []
    processes = list(processes)
    last: dict[str, int] = {}  # what psutil saw mapped is the latest image's, after exec()
    for p in processes:
        last[p.ident] = max(last.get(p.ident, 0), p.exec_index)
    for proc in processes:
        key = local_key(proc)  # another host's pid 1234 is not the 1234 psutil saw here
        libs = libraries.get(key, ()) if key is not None and proc.exec_index == last[proc.ident] else ()
        item = proc.to_json()
        item["libraries"] = [lib.to_json() for lib in libs if lib.notable]
        item["mapped"] = len(libs)
        out.append(item)
    return out


def proof_json(healthy: Proof | None, stop: Proof | None, *, server_log: Path, probe_dir: Path) -> ProofJson:
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
    unaccounted = list(healthy.unaccounted if healthy else ())
    if reasons:
        state, why = "refused", None
    elif not last.processes:
        state, why = NOT_PROVEN, "no process of the server ran the probe"
    elif unaccounted:
        state = NOT_PROVEN
        why = (
            f"{plural(len(unaccounted), 'Python process', 'Python processes')} of the server ran without the probe: "
            "what they ran is not accounted for"
        )
    elif any(p.incomplete for p in last.processes):
        codes = sorted({str(p.incomplete) for p in last.processes if p.incomplete})
        count = sum(1 for p in last.processes if p.incomplete)
        state = NOT_PROVEN
        why = (
            f"proof incomplete ({', '.join(codes)}): the probe could not write its file in "
            f"{plural(count, 'process', 'processes')}"
        )
    elif doubted:
        state = NOT_PROVEN
        why = f"the probe failed in {plural(len(doubted), 'process', 'processes')}: what it saw is incomplete"
    else:
        state, why = "proven", None

    def summary(proof: Proof | None) -> AccountingJson | None:
        if proof is None:
            return None
        data = proof.accounting.summary_json()
        data.pop("distributions")
        return data

    return {
        "state": state,
        "reason": why,
        "probe_dir": str(probe_dir),
        "reasons": [*reasons, *(u.line() for u in unaccounted), *doubted],
        "processes": _processes_json(last.processes, libraries),
        "unprobed": list(healthy.unprobed if healthy else ()),
        "unaccounted": [u.to_json() for u in unaccounted],
        "libraries": every,
        "accounting": {"healthy": summary(healthy), "stop": summary(stop)},
        "distributions": [d.to_json() for d in last.accounting.distributions],
        "nccl": nccl_json(server_log),
    }
