"""What the probed processes of one launch ran: the coverage kept with its run.

The probe records per process what ran there (``site/_patchkit_probe/cores.py``): every module file, and on
Python 3.12+ every code object that started (file, qualified name, first line: ``sys.monitoring``), and every
file read under the benchmarked tree.  ``coverage_json`` folds a launch's processes into one value, compact
(one entry per code object, whichever processes and however many calls ran it; the functions grouped by file):

* ``granularity``: the coarsest of the processes, ``function`` or ``file`` (an interpreter before 3.12, or a
  core that could not start, records which modules ran and not which of their functions; a process where
  torch.compile compiled code, or may have, counts as ``file``: compiled code runs without starting);
* ``functions``, ``modules``, ``reads``: the unions over the processes, absolute paths (``root``, the tree,
  says which are the tree's);
* ``processes``: per process its core, granularity and counts;
* ``blind``: one sentence per process whose code the probe cannot vouch for: an ``exec`` that no probe file
  follows (``-I``, another program), a probe that failed there or could not write its file.  What the proof
  finds from outside (a Python process without the probe, a worker that is not Python) is in the record's
  ``proof``; ``bench/records/coverage.py`` joins both.

Kept with the run (``RunRecord.coverage``) in the store's own ``coverage`` table, not in the record: a hunt
reads it, ``show --code`` shows it, and a listing of runs never loads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from patchkit.proof.document import CoverageJson, CoverageProcessJson
from patchkit.proof.records import ProcessFacts

COVERAGE_VERSION = 1
MODULE_KINDS = ("module", "pth", "chained")


def coverage_json(processes: Sequence[ProcessFacts], root: str | None) -> CoverageJson:
    """The coverage of one launch from its probe files (``read_probe_dir``), read once its server stopped."""
    functions: dict[str, set[tuple[str, int]]] = {}
    modules: set[str] = set()
    reads: set[str] = set()
    rows: list[CoverageProcessJson] = []
    for proc in processes:
        for path, name, line in proc.code:
            functions.setdefault(path, set()).add((name, line))
        ran = {f.path for f in proc.files if f.kind in MODULE_KINDS}
        read = {f.path for f in proc.files if f.kind == "data"} | set(proc.reads)
        modules |= ran
        reads |= read
        rows.append(
            {
                "ident": proc.ident,
                "pid": proc.pid,
                "exec_index": proc.exec_index,
                "label": proc.label,
                "python": proc.executable,
                "core": proc.core,
                "granularity": "file" if proc.compiled else proc.granularity,
                "why": proc.compiled or proc.core_why,
                "functions": len(proc.code),
                "modules": len(ran),
                "reads": len(read),
            }
        )
    granularity = "function" if rows and all(r["granularity"] == "function" for r in rows) else "file"
    return {
        "version": COVERAGE_VERSION,
        "granularity": granularity,
        "root": root,
        "processes": rows,
        "functions": {path: [[n, line] for n, line in sorted(functions[path])] for path in sorted(functions)},
        "modules": sorted(modules),
        "reads": sorted(reads),
        "blind": blind(processes),
    }


def blind(processes: Sequence[ProcessFacts]) -> list[str]:
    """Why the probe cannot vouch for what some process ran, one sentence each: an ``exec`` that no probe file of
    the same process follows, a probe that failed there, a file it could not write."""
    images = {(p.ident, p.exec_index) for p in processes}
    out = []
    for proc in processes:
        for path in proc.execs[:1]:  # one exec per image: a process image that execs is gone after it
            if (proc.ident, proc.exec_index + 1) not in images:
                out.append(
                    f"pid {proc.pid} ({proc.label}) exec'd {path} and the probe did not follow it (no probe file of "
                    "its next image: not Python, or Python without the probe): what that image ran is not recorded"
                )
        if proc.incomplete:
            out.append(
                f"pid {proc.pid} ({proc.label}): the probe could not write its file ({proc.incomplete}): what ran "
                "after that is not recorded"
            )
        elif proc.errors:
            out.append(f"pid {proc.pid} ({proc.label}): {proc.errors[0]}: what ran there may be missing")
    return out
