"""The shapes of the probe's facts as a run record stores them (``RunRecord.proof``), for the code that reads
them back (``bench/records/runview.py``, ``proof/compare.py``).

Every key is optional (``total=False``): a record stored by an older patchkit lacks what its probe did not
write.  The writers are the ``to_json`` methods of ``records.InitCall``, ``records.ProcessFacts`` and
``libs.MappedLibrary``, and ``runproof.proof_json``.
"""

from __future__ import annotations

from typing import TypedDict


class InitJson(TypedDict, total=False):
    """One ``init_process_group`` call of a process (``records.InitCall.to_json``)."""

    env: dict[str, str]
    rank: int | None
    world_size: int | None
    torch: str | None
    nccl: str | None


class LibraryJson(TypedDict, total=False):
    """A shared library a process mapped (``libs.MappedLibrary.to_json``)."""

    path: str
    size: int
    sha256: str | None


class ProcessJson(TypedDict, total=False):
    """One probed Python process (``records.ProcessFacts.to_json``, with its ``libraries`` added by
    ``runproof``)."""

    pid: int
    ppid: int | None
    host: str | None
    ident: str
    exec_index: int
    started_at: str | None
    label: str
    argv: list[str]
    executable: str | None
    start_env: dict[str, str]
    init: list[InitJson]
    files: int
    errors: list[str]
    incomplete: str | None
    exited: bool
    libraries: list[LibraryJson]


class VerdictJson(TypedDict, total=False):
    """Where one file that ran belongs, and who loaded it (``account.Verdict.to_json``)."""

    path: str
    category: str
    owner: str | None
    why: str | None
    pids: list[int]
    processes: list[str]  # loaders' idents (host/boot/pid/start); a record older than idents: none
    sha256: str | None  # data files only
