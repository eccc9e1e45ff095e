"""The shapes of the probe's facts as a run record stores them (``RunRecord.proof``: ``ProofJson``), for the
code that writes them and the code that reads them back (``bench/records/runview.py``, ``proof/compare.py``).

Why one module of types: the writers (the ``to_json`` methods of ``records.InitCall``,
``records.ProcessFacts``, ``libs.MappedLibrary``, ``account.Verdict``, ``account.Accounting``,
``dists.Distribution``, ``unprobed.Unprobed`` and ``nccllog.NcclProcess``, and ``runproof.proof_json``)
return these, so mypy holds what is written and what is read to one shape; docs/json.md describes it.
Every key is optional (``total=False``): a record stored by an older patchkit lacks what its probe did
not write, and such a record is read as it is (these are types, not a conversion).
"""

from __future__ import annotations

from typing import TypedDict


class InitJson(TypedDict, total=False):
    """One ``init_process_group`` call of a process (``records.InitCall.to_json``)."""

    env: dict[str, str]
    backend: str | None
    rank: int | None
    world_size: int | None
    torch: str | None
    nccl: str | None
    raised: str | None
    secrets: dict[str, str]  # secret-looking expected names, compared in the process: equal | different | unset


class LibraryJson(TypedDict, total=False):
    """A shared library a process mapped (``libs.MappedLibrary.to_json``)."""

    path: str
    size: int | None
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
    title: str | None
    mp_name: str | None
    prefix: str | None
    site_dirs: list[str]
    forked_from: int | None
    start_env: dict[str, str]
    init: list[InitJson]
    files: int
    errors: list[str]
    incomplete: str | None
    exited: bool
    libraries: list[LibraryJson]  # the notable ones (libnccl, libcudart, libcuda), of its last image
    mapped: int  # how many shared libraries psutil saw it map


class VerdictJson(TypedDict, total=False):
    """Where one file that ran belongs, and who loaded it (``account.Verdict.to_json``)."""

    path: str
    category: str
    owner: str | None
    why: str | None
    pids: list[int]
    processes: list[str]  # loaders' idents (host/boot/pid/start); a record older than idents: none
    sha256: str | None  # data files only


class DistributionJson(TypedDict, total=False):
    """An installed distribution of the site directories (``dists.Distribution.to_json``)."""

    name: str
    version: str
    site_dir: str
    editable_dir: str | None
    files: int


class AccountingJson(TypedDict, total=False):
    """One accounting of every file that ran (``account.Accounting.summary_json``); the record keeps its
    ``distributions`` once, at the top of ``ProofJson``."""

    counts: dict[str, int]
    strays: list[VerdictJson]
    allowed: list[VerdictJson]
    data: list[VerdictJson]
    allow_stray: list[str]
    distributions: list[DistributionJson]
    editable_commits: dict[str, str | None]


class AccountingsJson(TypedDict, total=False):
    """The accounting once healthy and at stop (None: not made then)."""

    healthy: AccountingJson | None
    stop: AccountingJson | None


class UnaccountedJson(TypedDict, total=False):
    """A Python process of the server's tree that ran without the probe (``unprobed.Unprobed.to_json``)."""

    pid: int
    argv: list[str]
    why: str


class NcclJson(TypedDict, total=False):
    """What NCCL said in one process (``nccllog.NcclProcess.to_json``)."""

    pid: int
    host: str
    devices: list[str]
    version: str | None
    env: dict[str, str]


class ProofJson(TypedDict, total=False):
    """A run record's ``proof`` (``runproof.proof_json``; ``job`` writes only ``state`` and ``reason`` when the
    probe was off or no server ran)."""

    state: str  # proven | refused | not proven
    reason: str | None
    probe_dir: str
    reasons: list[str]
    processes: list[ProcessJson]
    unprobed: list[str]  # "pid N (argv)" of the server's tree without a probe file
    unaccounted: list[UnaccountedJson]
    libraries: list[str]  # every notable library path any process mapped
    accounting: AccountingsJson
    distributions: list[DistributionJson]
    nccl: dict[str, NcclJson]  # "host:pid" (a record before hosts: "pid") -> NCCL's lines of that process


class CoverageProcessJson(TypedDict, total=False):
    """One probed process of a launch in its coverage (``coverage.coverage_json``): which core recorded it."""

    ident: str
    pid: int
    exec_index: int
    label: str
    python: str | None  # its executable
    core: str | None  # "sysmon" | "file"; null: a probe older than cores
    granularity: str  # "function" | "file"
    why: str | None  # why a coarser core ran than the interpreter could have had
    functions: int  # code objects that started there
    modules: int
    reads: int


class CoverageJson(TypedDict, total=False):
    """What the probed processes of one launch ran (``coverage.coverage_json``): kept with its run
    (``RunRecord.coverage``), in the store's ``coverage`` table rather than in the record."""

    version: int
    granularity: str  # the coarsest of its processes: "function" | "file"
    root: str | None  # the benchmarked tree (PATCHKIT_BENCH_TREE), under which paths are the tree's
    processes: list[CoverageProcessJson]
    functions: dict[str, list[list[str | int]]]  # file -> [[qualname, first line], ...], the union, sorted
    modules: list[str]  # every module file that ran
    reads: list[str]  # every file read under the tree (and the data files read under a data root)
    blind: list[str]  # one sentence per process whose code the probe cannot vouch for
