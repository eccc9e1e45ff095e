"""The proof as a person reads it (``run --probe``): the accounting of the files that ran, each STRAY, and the
per-process facts (init_process_group, the libraries mapped, NCCL's own word)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from patchkit.proof.account import Accounting
from patchkit.proof.check import loaded_by
from patchkit.proof.libs import MappedLibrary
from patchkit.proof.nccllog import NcclProcess, nccl_host
from patchkit.proof.records import LocalKey, ProcessFacts, local_key
from patchkit.proof.runproof import doubts
from patchkit.views.console import emit
from patchkit.views.grid import Grid
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def accounting_line(accounting: Accounting) -> str:
    counts = accounting.counts
    parts = [
        f"{counts[c]} {c}" for c in ("tree", "dist", "editable", "stdlib", "generated", "probe", "data") if counts[c]
    ]
    line = f"files that ran: {', '.join(parts) or 'none'}; {counts['stray']} STRAY"
    if counts["allowed"]:
        line += f" ({counts['allowed']} more allowed by allow_stray)"
    return line


def strays_table(accounting: Accounting, processes: Sequence[ProcessFacts]) -> Grid:
    table = Grid()
    table.add_column("STRAY", whole=True)
    table.add_column("file")
    table.add_column("why", prose=True)
    table.add_column("loaded by")
    for item in accounting.strays:
        table.add_row("STRAY", item.path, item.why or "", loaded_by(item, processes))
    return table


def init_table(processes: Sequence[ProcessFacts], names: Sequence[str] = ()) -> Grid:
    """Per process that called init_process_group: rank, backend, versions, and the environment at the call."""
    table = Grid()
    for column in ("pid", "process", "rank", "backend", "torch", "nccl"):
        table.add_column(column, whole=True)
    table.add_column("environment at init_process_group", prose=True)
    for proc in processes:
        for call in proc.inits:
            shown = {k: v for k, v in call.env.items() if not names or k in names or k.startswith("NCCL_")}
            env = " ".join(f"{k}={v}" for k, v in sorted(shown.items()))
            table.add_row(
                str(proc.pid), proc.label, str(call.rank), call.backend or "?", call.torch or "?", call.nccl or "-", env
            )
    return table


def show_proof(console: Console, processes: Sequence[ProcessFacts], accounting: Accounting) -> None:
    console.print(f"probe: {plural(len(processes), 'Python process', 'Python processes')} seen", markup=False)
    for line in doubts(processes):  # one line per process, not one per failed event
        console.print(line, markup=False, style="yellow")
    if any(p.inits for p in processes):
        emit(console, init_table(processes))
    console.print(accounting_line(accounting), markup=False)
    if accounting.strays:
        emit(console, strays_table(accounting, processes))


def libraries_table(libraries: Mapping[LocalKey, Sequence[MappedLibrary]], processes: Sequence[ProcessFacts]) -> Grid:
    """Per process, the libnccl/libcudart/libcuda it mapped while it ran: path, size, sha256.  A process is
    (pid, start ticks) here: a pid reused during the run is another row, named by its own probe record."""
    labels: dict[LocalKey | None, str] = {local_key(p): p.label for p in processes}
    table = Grid()
    table.add_column("pid", whole=True)
    table.add_column("process")
    table.add_column("library mapped")
    table.add_column("size", justify="right", whole=True)
    table.add_column("sha256", whole=True)
    for key, libs in sorted(libraries.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        for lib in libs:
            size = "-" if lib.size is None else str(lib.size)
            table.add_row(str(key[0]), labels.get(key, "-"), lib.path, size, (lib.sha256 or "-")[:16])
    return table


def nccl_table(found: Mapping[tuple[str, int], NcclProcess], processes: Sequence[ProcessFacts]) -> Grid:
    """NCCL's own word per process (NCCL_DEBUG=INFO): its version, and each variable it read; a line's process is
    its host and pid (``nccl_host``), so another host's pid 1234 is never named by this one's."""
    labels = {(nccl_host(p.host), p.pid): p.label for p in processes}
    table = Grid()
    table.add_column("pid", whole=True)
    table.add_column("process")
    table.add_column("NCCL version", whole=True)
    table.add_column("NCCL: set by environment", prose=True)
    for key, item in sorted(found.items()):
        env = " ".join(f"{k}={v}" for k, v in sorted(item.env.items()))
        table.add_row(str(item.pid), labels.get(key, "-"), item.version or "-", env or "-")
    return table
