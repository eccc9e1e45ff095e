"""What one benchmark run leaves behind: ``RunRecord`` and its ``Outcome``, plain frozen values.

This module is the bottom of ``patchkit.bench``: the store, compare, bisect,
the job and the verbs all build on it, and it imports none of them (no
psutil, no subprocess, no git process: ``Commit`` is only the value type).
A record is made once, by ``run_job`` or by the session for a refused
commit, stored as JSON, and read back with ``from_json``; a record of an
older patchkit (no ``author``/``parents`` in ``commit``, no ``allow_dirty``)
reads the same.

Secrets: an environment variable (or ``[bench].vars`` entry) whose name looks
like a secret (``patchkit.redact``: ``TOKEN``, ``KEY``, ``SECRET``,
``PASSWORD``, ``PASSWD``, ``CREDENTIAL``) is kept with its name and the value
``<redacted>``, and the value is replaced wherever else the record quotes it
(a command line, a refusal, the probe's proof); this happens
when a record is made, so no store, JSON, log or comparison written from a
record can hold the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Any, TypedDict, TypeVar

from patchkit.bench.records.metrics import summary
from patchkit.bench.stats.delta import Summary
from patchkit.bench.stats.outcome import Outcome
from patchkit.git import Commit
from patchkit.manifest.bench import MetricJson
from patchkit.proof.document import CoverageJson, ProofJson
from patchkit.redact import redact_env, scrub, secret_values
from patchkit.results import Reason, Status

E = TypeVar("E", bound=Enum)


class PatchState(StrEnum):
    """Which code of a patch was in the tree when a run ran: a stored ``state`` is one of these
    (``not applied`` followed by the status and reason that say why)."""

    APPLIED = "applied"
    PROVIDED_UPSTREAM = "provided upstream"
    NOT_APPLIED = "not applied"


_STATE_OF_SKIP = {Reason.ALREADY_APPLIED: PatchState.APPLIED, Reason.UPSTREAM_PROVIDES: PatchState.PROVIDED_UPSTREAM}


def _member(kind: type[E], value: E | str | None) -> E | None:
    """``value`` as a member of ``kind`` (a stored string reads as its member); None when it names none."""
    try:
        return None if value is None else kind(value)
    except ValueError:
        return None


def patch_state(status: Status | str | None, reason: Reason | str | None) -> str:
    """Which code of a patch was in the tree when a run ran, from what apply said: ``applied`` (APPLY,
    or SKIP ALREADY_APPLIED in a reused worktree: the same code), ``provided upstream``, or
    ``not applied (STATUS REASON)``.  A stored record's strings are read as the enums they name."""
    said, why = _member(Status, status), _member(Reason, reason)
    if said is Status.APPLY:
        return PatchState.APPLIED.value
    if said is Status.SKIP and why in _STATE_OF_SKIP:
        return _STATE_OF_SKIP[why].value
    words = " ".join(p.value if isinstance(p, Enum) else str(p) for p in (status, reason) if p)
    return f"{PatchState.NOT_APPLIED.value} ({words})"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def commit_to_json(commit: Commit) -> dict[str, object]:
    """A commit as records store it: ``sha``, ``subject``, ``date`` (as before), ``author``, ``parents``."""
    return {
        "sha": commit.sha,
        "subject": commit.subject,
        "date": commit.date,
        "author": commit.author,
        "parents": list(commit.parents),
    }


def commit_from_json(data: Mapping[str, Any]) -> Commit:
    return Commit(
        sha=data["sha"],
        parents=tuple(data.get("parents", ())),
        author=data.get("author", ""),
        date=data.get("date", ""),
        subject=data.get("subject", ""),
    )


# The record's keys that from_json takes as they are stored (the others are converted, or have defaults).
AS_STORED = (
    "profile", "reason", "started_at", "finished_at", "vars", "commands", "env", "guard", "host", "interpreter",
    "torch", "server_info", "logs",
)  # fmt: skip


class RunCommands(TypedDict, total=False):
    """The commands a launch ran, rendered (secrets scrubbed); empty when it never got to start a server."""

    server: list[str]
    health: str
    server_info: str | None
    client: list[list[str]]  # warm-ups first, then the measured runs
    cwd: str


class RunLogs(TypedDict, total=False):
    """Where a launch's logs lie: the run directory, the server's log and each client run's (in process); the
    Slurm job's stdout and stderr (a job that ended without a result)."""

    run_dir: str
    server: str
    clients: list[dict[str, str]]
    env_checked_pids: list[int]
    slurm_stdout: str | None
    slurm_stderr: str | None


class PatchStateJson(TypedDict, total=False):
    """One patch's result in a run's manifest (older records: status and reason, without state)."""

    patch: str
    status: str | None
    reason: str | None
    state: str
    payload: str | None


class ManifestJson(TypedDict, total=False):
    """A manifest as a run applied it: its name, digest and each patch's result."""

    name: str
    digest: str
    results: list[PatchStateJson]


class RunIdent(TypedDict):
    """What names a run in tables and JSON (``RunRecord.ident``)."""

    run: int | None
    commit: str
    subject: str
    profile: str
    outcome: str
    without: dict[str, str] | None


@dataclass(frozen=True)
class RunRecord:
    """Everything one server launch of a commit with a profile leaves behind: its outcome, the metric samples, and the
    provenance (commands, env, patches, guard, host, versions, proof) that compare and bisect read."""

    commit: Commit
    profile: str
    outcome: Outcome
    reason: str | None
    started_at: str
    finished_at: str
    vars: Mapping[str, str]
    commands: RunCommands
    env: Mapping[str, str]  # redacted (see the module docstring)
    manifests: tuple[ManifestJson, ...]
    guard: Mapping[str, object]
    host: Mapping[str, object]
    interpreter: Mapping[str, object] | None
    torch: Mapping[str, object] | None
    gpus: tuple[Mapping[str, object], ...] | None
    server_info: Mapping[str, object] | None
    samples: Mapping[str, tuple[float | None, ...]]
    missing: tuple[Mapping[str, object], ...]  # {"metric", "run", "log"}
    logs: RunLogs
    details: tuple[str, ...] = ()  # log tails, offending pids: what explains the outcome
    metrics: tuple[MetricJson, ...] = ()  # the [[bench.metric]] tables the samples were read with
    run_id: int | None = None
    allow_dirty: bool = False  # --allow-dirty: the guard's clean check was not asked for
    executor: Mapping[str, object] | None = None  # where it ran when not in-process: Slurm job id, node, GPUs, logs
    launch: int = 1  # which server launch of its (commit, profile) in its series (1 = the first)
    series: str | None = None  # one patchkit bench / bisect / noise invocation: its launches belong together
    proof: ProofJson | None = None  # the probe's facts and accounting (patchkit/proof); None: no server ran
    # nvidia-smi at the start and end of the launch (bench/hygiene.py): {"start", "end"}; None: no nvidia-smi
    gpu_hygiene: Mapping[str, object] | None = None
    # bench --without: the patch left out of this launch's tree, {"manifest", "patch"}; None: every patch given
    without: Mapping[str, str] | None = None
    # what the probed processes ran (proof/coverage.py); None: not read (the probe off, or a record as the store's
    # ``runs`` table holds it: the store keeps it apart, ``Store.coverage``), so to_json leaves it out by default
    coverage: CoverageJson | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", Outcome(self.outcome))
        secrets = secret_values(self.env, self.vars)
        object.__setattr__(self, "env", redact_env(self.env))
        object.__setattr__(self, "vars", redact_env(self.vars))
        if secrets:  # a secret rendered into a command line or quoted in a refusal
            for name in ("commands", "details", "reason", "logs", "guard", "server_info", "proof"):
                object.__setattr__(self, name, scrub(getattr(self, name), secrets))

    def with_run_id(self, run_id: int) -> RunRecord:
        return replace(self, run_id=run_id)

    def ident(self) -> RunIdent:
        """What names a run in tables and JSON: run number, commit, subject, profile, outcome."""
        return {
            "run": self.run_id,
            "commit": self.commit.sha,
            "subject": self.commit.subject,
            "profile": self.profile,
            "outcome": self.outcome.value,
            "without": None if self.without is None else dict(self.without),
        }

    @property
    def label(self) -> str:
        """The profile, and the patch a ``bench --without`` launch left out: the two sides of one commit and
        profile are never read as one."""
        return self.profile if self.without is None else f"{self.profile} without {self.without['patch']}"

    @property
    def proof_state(self) -> str | None:  # NOT_PROVEN, "proven", "refused"
        """The probe's verdict: proven | refused | not proven; None when no server was started."""
        state = (self.proof or {}).get("state")
        return str(state) if state is not None else None

    def stats(self) -> dict[str, Summary]:
        return {name: summary(values) for name, values in self.samples.items()}

    def median(self, metric: str) -> float | None:
        stats = self.stats().get(metric)
        value = None if stats is None else stats["median"]
        return None if value is None else float(value)

    def has_data(self) -> bool:
        """Whether any metric has a measured value (a refused or early-failed run has none)."""
        return any(v is not None for values in self.samples.values() for v in values)

    def summary_json(self) -> dict[str, object]:
        """The short form ``runs --json`` lists (and the report reads): ident, reason, when, where, stats."""
        return {
            **self.ident(),
            "reason": self.reason,
            "started_at": self.started_at,
            "host": self.host.get("hostname"),
            "stats": self.stats(),
            "executor": self.executor_summary(),
            "proof": self.proof_state,
        }

    @property
    def hostname(self) -> str | None:
        """The host the launch ran on, as ``host_facts`` recorded it (None: not recorded)."""
        name = self.host.get("hostname")
        return name if isinstance(name, str) else None

    @property
    def place(self) -> str:
        """The key of the noise prior of this run's launches (``patchkit noise``): the host, for a run in this
        process; for a Slurm job, the partition and constraint it was submitted to (``executor.place``), since
        launches land on any node there.  A Slurm record older than that key gives its node."""
        return str((self.executor or {}).get("place") or self.host.get("hostname", ""))

    def executor_summary(self) -> dict[str, object] | None:
        """Where a scheduled run ran (Slurm job id, array index, node, GPUs); None for an in-process run."""
        job = self.executor
        if not job:
            return None
        keys = ("name", "job_id", "array_index", "node", "gpu_ids", "state")
        return {key: job.get(key) for key in keys}

    def to_json(self, *, with_coverage: bool = False) -> dict[str, object]:
        """The record as JSON (``bench --json``, the store's ``record``); ``with_coverage``: with its coverage too,
        for a record that travels whole (a Slurm job's result), which the store then keeps apart."""
        out: dict[str, object] = {
            "run": self.run_id,
            "commit": commit_to_json(self.commit),
            "profile": self.profile,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "details": list(self.details),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "allow_dirty": self.allow_dirty,
            "launch": self.launch,
            "series": self.series,
            "vars": dict(self.vars),
            "commands": dict(self.commands),
            "env": dict(self.env),
            "manifests": [dict(m) for m in self.manifests],
            "guard": dict(self.guard),
            "host": dict(self.host),
            "interpreter": None if self.interpreter is None else dict(self.interpreter),
            "torch": None if self.torch is None else dict(self.torch),
            "gpus": None if self.gpus is None else [dict(g) for g in self.gpus],
            "server_info": None if self.server_info is None else dict(self.server_info),
            "samples": {k: list(v) for k, v in self.samples.items()},
            "stats": self.stats(),
            "missing": [dict(m) for m in self.missing],
            "metrics": [dict(m) for m in self.metrics],
            "logs": dict(self.logs),
            "proof": None if self.proof is None else dict(self.proof),
            "executor": None if self.executor is None else dict(self.executor),
            "gpu_hygiene": None if self.gpu_hygiene is None else dict(self.gpu_hygiene),
            "without": None if self.without is None else dict(self.without),
        }
        if with_coverage and self.coverage is not None:
            out["coverage"] = self.coverage
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        plain = {name: data[name] for name in AS_STORED}  # required, and kept as they are
        kept: dict[str, Any] = {
            n: data.get(n) for n in ("executor", "series", "proof", "gpu_hygiene", "without", "coverage")
        }  # newer
        return cls(
            commit=commit_from_json(data["commit"]),
            outcome=Outcome(data["outcome"]),
            manifests=tuple(data["manifests"]),
            gpus=None if data["gpus"] is None else tuple(data["gpus"]),
            samples={k: tuple(v) for k, v in data["samples"].items()},
            missing=tuple(data["missing"]),
            details=tuple(data.get("details", ())),
            metrics=tuple(data.get("metrics", ())),
            run_id=data.get("run"),
            allow_dirty=bool(data.get("allow_dirty", False)),
            launch=int(data.get("launch", 1)),
            **plain,
            **kept,
        )
