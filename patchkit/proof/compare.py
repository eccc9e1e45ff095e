"""What changed in the probe's facts between two runs: the rows ``compare`` adds (pure, over two records' proof).

Processes are matched by label (``sglang::scheduler_TP0`` -> ``scheduler_TP0``,
or the multiprocessing name): pids differ between runs.  Each difference
names the processes it holds for, with numbered runs written as a range
(``scheduler_TP0..7``), so eight ranks that moved the same way are one line:

* ``effective env NAME in LABELS``: the value at ``init_process_group``;
* ``torch`` / ``nccl in LABELS``: the versions each process reported at init;
* ``library BASENAME in LABELS``: the mapped ``libnccl``/``libcudart``/``libcuda``
  (path and digest);
* ``distribution NAME``: its version in the site directories;
* ``new STRAY PATH``: a file STRAY in B (let through by ``allow_stray``, or the
  run was refused) that A did not have;
* ``proof``: first, whenever a side is not proven (the probe off, or failed
  in a process) or refused, its state and why: "no differences" between a
  side the probe vouched for and one it did not would hide what changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from patchkit.proof.document import LibraryJson, ProcessJson, ProofJson

_NUMBERED = re.compile(r"^(?P<stem>.*?)(?P<n>\d+)$")


def ranges(labels: Sequence[str]) -> str:
    """``["scheduler_TP0", ..., "scheduler_TP7"]`` -> ``scheduler_TP0..7``; other labels listed as they are."""
    stems: dict[str, list[int]] = {}
    plain: list[str] = []
    for label in labels:
        match = _NUMBERED.match(label)
        if match:
            stems.setdefault(match["stem"], []).append(int(match["n"]))
        else:
            plain.append(label)
    parts = []
    for stem, numbers in stems.items():
        numbers = sorted(set(numbers))
        runs: list[tuple[int, int]] = []
        for n in numbers:
            if runs and n == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], n)
            else:
                runs.append((n, n))
        parts += [f"{stem}{lo}" if lo == hi else f"{stem}{lo}..{hi}" for lo, hi in runs]
    return ", ".join([*parts, *sorted(set(plain))])


def _by_label(proof: ProofJson | None) -> dict[str, ProcessJson]:
    out: dict[str, ProcessJson] = {}
    for proc in (proof or {}).get("processes", []):
        if proc.get("init"):
            out.setdefault(str(proc.get("label")), proc)
    return out


def _grouped(rows: Mapping[tuple[str, object, object], list[str]], what: str) -> list[tuple[str, object, object]]:
    return [(f"{what.format(key=key)} in {ranges(labels)}", a, b) for (key, a, b), labels in rows.items()]


def state_of(proof: ProofJson | None) -> str:
    """``proven``, or ``not proven (why)`` / ``refused (N reasons)``, as compare's ``proof`` row shows a side."""
    if not proof:
        return "not proven (no server was started)"
    state = str(proof.get("state"))
    if state == "refused":
        count = len(proof.get("reasons") or [])
        return f"refused ({count} {'reason' if count == 1 else 'reasons'})"
    reason = proof.get("reason")
    return f"{state} ({reason})" if reason and state != "proven" else state


def proof_changes(a: ProofJson | None, b: ProofJson | None) -> list[tuple[str, object, object]]:
    """(key, value in A, value in B) for every difference; the ``proof`` row first when a side is not proven;
    only that row when a side has no processes to compare."""
    out: list[tuple[str, object, object]] = []
    sa, sb = state_of(a), state_of(b)
    if sa != "proven" or sb != "proven":
        out.append(("proof", sa, sb))
    if not a or not b or "processes" not in a or "processes" not in b:
        return out
    pa, pb = _by_label(a), _by_label(b)
    env_rows: dict[tuple[str, object, object], list[str]] = {}
    version_rows: dict[tuple[str, object, object], list[str]] = {}
    lib_rows: dict[tuple[str, object, object], list[str]] = {}
    for label in sorted(set(pa) | set(pb)):
        ia = (pa.get(label) or {}).get("init") or [{}]
        ib = (pb.get(label) or {}).get("init") or [{}]
        ea, eb = ia[-1].get("env") or {}, ib[-1].get("env") or {}
        for name in sorted(set(ea) | set(eb)):
            if name == "PYTHONPATH":
                continue  # holds the per-commit worktree and the probe's directory
            if ea.get(name) != eb.get(name):
                env_rows.setdefault((name, ea.get(name), eb.get(name)), []).append(label)
        for key in ("torch", "nccl"):
            if ia[-1].get(key) != ib[-1].get(key):
                version_rows.setdefault((key, ia[-1].get(key), ib[-1].get(key)), []).append(label)
        la = {lib["path"].rsplit("/", 1)[-1]: lib for lib in (pa.get(label) or {}).get("libraries", [])}
        lb = {lib["path"].rsplit("/", 1)[-1]: lib for lib in (pb.get(label) or {}).get("libraries", [])}
        for name in sorted(set(la) | set(lb)):
            xa, xb = _lib(la.get(name)), _lib(lb.get(name))
            if xa != xb:
                lib_rows.setdefault((name, xa, xb), []).append(label)
    out += _grouped(env_rows, "effective env {key}")
    out += _grouped(version_rows, "{key}")
    out += _grouped(lib_rows, "library {key}")
    da = {d["name"]: d["version"] for d in a.get("distributions", [])}
    db = {d["name"]: d["version"] for d in b.get("distributions", [])}
    out += [(f"distribution {n}", da.get(n), db.get(n)) for n in sorted(set(da) | set(db)) if da.get(n) != db.get(n)]
    stray_a, stray_b = _strays(a), _strays(b)
    out += [(f"new STRAY {path}", None, why) for path, why in sorted(stray_b.items()) if path not in stray_a]
    return out


def _lib(lib: LibraryJson | None) -> str | None:
    if lib is None:
        return None
    digest = lib.get("sha256") or "?"
    return f"{lib['path']} sha256:{digest[:16]}"


def _strays(proof: ProofJson) -> dict[str, object]:
    out: dict[str, object] = {}
    accounting = proof.get("accounting") or {}
    for summary in (accounting.get("healthy") or {}, accounting.get("stop") or {}):
        for item in [*summary.get("strays", []), *summary.get("allowed", [])]:
            out.setdefault(item["path"], item.get("why"))
    return out
