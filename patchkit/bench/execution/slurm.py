"""``SlurmExecutor``: each launch one Slurm job (via submitit), and what it needs of Slurm: the options (the
command line over ``[bench.slurm]``), the shared directory, the jobs' states, ``scancel``, a job's own facts.

The tasks a call does not already know go in as one job array (``slurm_array_parallelism = slots``).  It
survives its own death: the submission (batch, key, job id, submitit folder, label) is written to the
ledger (the bench store) *before* it waits, and a later call with the same batch reattaches to those jobs
(``SlurmJob(folder, job_id)`` reads the result pickle submitit leaves in the shared folder) instead of
submitting them again.  A job that ends without a result (``scancel``, time limit, node failure)
finishes with its Slurm state and no value; the caller records it as ``interrupted``.

Slurm's states come from ``squeue`` (finished jobs stay there for ``MinJobAge``), then ``sacct`` where
the cluster has accounting: a cluster without either still works, a job's result pickle is the proof it
finished.  ``slurm_states`` is also what ``runs --pending`` asks.  submitit is imported only when a job
is submitted or read back: nothing here loads it at import time.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from patchkit.bench.execution.executor import Finished, Ledger, Task
from patchkit.errors import InternalError, UsageError
from patchkit.wording import plural

if TYPE_CHECKING:
    from submitit import SlurmExecutor as SubmititExecutor

    from patchkit.manifest.bench import BenchConfig

# Slurm states after which a job produces nothing more; COMPLETED is the one that leaves a result.
ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)
RESULT_GRACE_S = 30.0  # how long a COMPLETED job's result pickle may take to show on a shared filesystem
SIGNAL_DELAY_S = 90  # submitit's time-limit signal (USR2) comes this long before the limit: the launch stops then


class JobPaths(Protocol):
    """Where a submitit job keeps its files (``submitit.core.utils.JobPaths``)."""

    @property
    def folder(self) -> Path: ...

    @property
    def stdout(self) -> Path: ...

    @property
    def stderr(self) -> Path: ...

    @property
    def result_pickle(self) -> Path: ...


class SlurmJob(Protocol):
    """The part of a ``submitit.Job`` this module reads: its id, its files, its result."""

    @property
    def job_id(self) -> str: ...

    @property
    def paths(self) -> JobPaths: ...

    def result(self) -> object: ...


@dataclass(frozen=True)
class SlurmOptions:
    """How ``SlurmExecutor`` submits launches: the directory every node sees, the partition, GPUs, time limit, slots
    (jobs at once) and further sbatch options, from the command line and ``[bench.slurm]``."""

    shared_dir: Path
    partition: str | None = None
    gpus_per_job: int | None = None
    timeout_min: int = 60
    slots: int = 1
    extra: Mapping[str, str] = field(default_factory=dict)  # sbatch long options: account, qos, constraint, ...

    @property
    def place(self) -> str:
        """The key of the noise prior of launches submitted with these options: ``slurm:<partition>`` (Slurm's
        default partition: ``default``) and the constraint, if one is asked; a launch may land on any node there,
        so the spread of a partition, not of one node, is what a comparison of its launches can lean on."""
        where = f"slurm:{self.partition or 'default'}"
        constraint = self.extra.get("constraint")
        return f"{where},constraint={constraint}" if constraint else where

    def to_json(self) -> dict[str, object]:
        return {
            "shared_dir": str(self.shared_dir),
            "partition": self.partition,
            "gpus_per_job": self.gpus_per_job,
            "timeout_min": self.timeout_min,
            "slots": self.slots,
            "extra": dict(self.extra),
        }


def check_shared_dir(path: Path) -> Path:
    """The shared directory exists, is a directory, and this host can write and read back a file in it.

    Run before anything is submitted: the jobs' pickles, logs, worktrees and run
    directories all live there, so a typo would otherwise surface as jobs that
    fail on the compute node."""
    where = path.expanduser()
    if not where.is_absolute():
        where = where.resolve()
    if not where.is_dir():
        raise UsageError(
            f"--shared-dir {path} is not a directory",
            hint="name a directory that the submitting host and every compute node mount at the same path",
        )
    probe = where / f".patchkit-probe-{uuid.uuid4().hex}"
    try:
        probe.write_text("reachable\n", encoding="utf-8")
        ok = probe.read_text(encoding="utf-8") == "reachable\n"
        probe.unlink()
    except OSError as exc:
        raise UsageError(
            f"--shared-dir {path} is not writable from this host: {exc.strerror or exc}",
            hint="the jobs' pickles, logs and worktrees go there; pick a directory you can write",
        ) from None
    if not ok:
        raise UsageError(f"--shared-dir {path}: a file written there reads back differently")
    return where


def parse_extra(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not eq or not key:
            raise UsageError(f"--slurm-extra {item!r} is not KEY=VALUE", hint="e.g. --slurm-extra account=perf")
        out[key] = value
    return out


def slurm_options(
    config: BenchConfig,
    *,
    executor: str,
    shared_dir: str | None,
    partition: str | None,
    gpus_per_job: int | None,
    timeout_min: int | None,
    slots: int | None,
    extra: Sequence[str],
) -> SlurmOptions | None:
    """The Slurm options (the command line over ``[bench.slurm]``), None for the local executor.

    With ``--executor local`` a Slurm-only option is an error rather than silently ignored;
    the shared directory is checked here, before anything is prepared or submitted."""
    given = {
        "--shared-dir": shared_dir,
        "--slurm-partition": partition,
        "--gpus-per-job": gpus_per_job,
        "--timeout-min": timeout_min,
        "--slurm-extra": extra or None,
    }
    if executor == "local":
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise UsageError(
                f"{', '.join(named)} only appl{'ies' if len(named) == 1 else 'y'} with --executor slurm",
                hint=f"add --executor slurm, or drop {'it' if len(named) == 1 else 'them'}",
            )
        return None
    table = config.slurm
    where = shared_dir or table.shared_dir
    if where is None:
        raise UsageError(
            "--executor slurm needs --shared-dir DIR (or shared_dir in [bench.slurm])",
            hint="a directory the submitting host and every compute node see at the same path",
        )
    timeout = timeout_min or table.timeout_min or 60
    if timeout * 60 <= SIGNAL_DELAY_S:
        source = f"--timeout-min {timeout}" if timeout_min else f"[bench.slurm].timeout_min = {timeout}"
        raise UsageError(
            f"{source}: submitit signals a job {SIGNAL_DELAY_S} s before its time limit and the launch stops "
            f"then, so a job of {plural(timeout, 'minute')} would stop as it starts",
            hint=f"give {SIGNAL_DELAY_S // 60 + 1} minutes or more: start-up, health wait and client runs must "
            f"fit in the limit less {SIGNAL_DELAY_S} s",
        )
    return SlurmOptions(
        shared_dir=check_shared_dir(Path(where)),
        partition=partition or table.partition,
        gpus_per_job=gpus_per_job if gpus_per_job is not None else table.gpus_per_job,
        timeout_min=timeout,
        slots=slots or table.slots or 1,
        extra={**table.extra, **parse_extra(extra)},
    )


def gpus_for(options: SlurmOptions, values: Mapping[str, str]) -> int | None:
    """``--gpus-per-job``, else the profile's ``tp`` variable when it is a whole number, else none."""
    if options.gpus_per_job is not None:
        return options.gpus_per_job or None
    tp = values.get("tp", "")
    return int(tp) if tp.isdigit() and int(tp) > 0 else None


def slurm_states(job_ids: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, tuple[str, str]] | None:
    """``{job_id: (state, node)}`` for the ids Slurm still knows ("123" or "123_4"); others are absent.

    None when Slurm could not be asked at all (the controller down, a timeout): no news, which is not
    the same as a job Slurm has forgotten."""
    if not job_ids:
        return {}
    out: dict[str, tuple[str, str]] = {}
    mains = sorted({jid.split("_")[0] for jid in job_ids})
    fmt = ["-h", "-r", "-t", "all", "-o", "%i|%T|%N"]
    queue = _slurm(["squeue", *fmt, "-j", ",".join(mains)], env)
    if queue is None and len(mains) > 1:  # squeue refuses the whole list when one id is no longer known
        answers = [_slurm(["squeue", *fmt, "-j", main], env) for main in mains]
        queue = None if all(a is None for a in answers) else "".join(a or "" for a in answers)
    if queue is None:
        if not _controller_up(env):
            return None
        queue = ""  # the controller answers, and knows none of these jobs
    for line in (queue or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            out[parts[0]] = (parts[1].split()[0], parts[2])
    unknown = sorted({jid for jid in job_ids if jid not in out})
    if unknown:  # gone from the controller's memory (MinJobAge): ask accounting, where there is one
        acct = _slurm(["sacct", "-n", "-P", "-X", "-o", "JobID,State,NodeList", "-j", ",".join(unknown)], env)
        for line in (acct or "").splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3 and parts[0] in unknown:
                out[parts[0]] = (parts[1].split()[0], parts[2])
    return out


def _controller_up(env: Mapping[str, str] | None) -> bool:
    return _slurm(["squeue", "-h", "-o", "%i", "-t", "all"], env) is not None


def _slurm(argv: list[str], env: Mapping[str, str] | None) -> str | None:
    """The command's stdout, or None when it failed."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def scancel(job_ids: Sequence[str]) -> None:
    """Ask Slurm to cancel ``job_ids``; a controller that does not answer in 60 s is a Slurm problem, not a reason
    to lose what the caller was doing (the jobs then end at their time limit, and ``runs --pending`` shows them)."""
    if job_ids:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            subprocess.run(["scancel", *job_ids], capture_output=True, check=False, timeout=60)


class SlurmExecutor:
    """Each launch one Slurm job, the batch's new tasks one job array (see the module docstring)."""

    name = "slurm"
    remote = True

    def __init__(self, options: SlurmOptions, *, poll_s: float = 2.0, grace_s: float = RESULT_GRACE_S) -> None:
        if shutil.which("sbatch") is None:
            raise UsageError(
                "--executor slurm: sbatch is not on PATH on this host",
                hint="run from a Slurm login node, or use --executor local",
            )
        self.options = options
        self.slots = options.slots
        self.folder = options.shared_dir / "submitit"
        self.poll_s = poll_s
        self.grace_s = grace_s

    @property
    def place(self) -> str:
        """The partition (and constraint): a job may land on any node there."""
        return self.options.place

    def cancel(self, batch: str, ledger: Ledger) -> list[str]:
        """``scancel`` every job of ``batch`` that was submitted and not collected."""
        ids = [str(row.job_id) for row in ledger.submissions(batch) if not row.collected]
        if ids:
            scancel(ids)
        return ids

    def _executor(self, gpus: int | None) -> SubmititExecutor:
        import submitit

        executor = submitit.SlurmExecutor(folder=self.folder / "%A")
        params: dict[str, object] = {
            "time": self.options.timeout_min,
            "signal_delay_s": SIGNAL_DELAY_S,
            "array_parallelism": self.options.slots,
            "job_name": "patchkit-bench",
        }
        if self.options.partition:
            params["partition"] = self.options.partition
        if gpus:
            params["gpus_per_node"] = gpus
        if self.options.extra:
            params["additional_parameters"] = dict(self.options.extra)
        executor.update_parameters(**params)
        return executor

    def map(
        self,
        fn: Callable[[Any], Any],
        tasks: Sequence[Task],
        *,
        batch: str,
        ledger: Ledger | None,
        note: Callable[[str], None] | None = None,
    ) -> Iterator[Finished]:
        """Submit what this batch has not submitted yet (one array per GPU count), reattach to what it
        has, and yield each task as its job ends.  Collected tasks of the batch are not yielded again.
        The ledger is required: a submission is written down before anyone waits for it."""
        import submitit
        from submitit.core.utils import FailedJobError

        if ledger is None:
            raise InternalError("a Slurm batch needs a ledger (the bench store) to write its submissions to")

        say = note or (lambda line: None)
        known = {row.key: row for row in ledger.submissions(batch)}
        watching: dict[str, tuple[SlurmJob, Mapping[str, object]]] = {}
        for task in tasks:
            row = known.get(task.key)
            if row is not None and not row.collected:
                job: SlurmJob = submitit.SlurmJob(folder=Path(row.folder), job_id=row.job_id)
                watching[task.key] = (job, row.label)
        if watching:
            ids = ", ".join(str(job.job_id) for job, _ in watching.values())
            say(f"collecting {plural(len(watching), 'job')} submitted earlier: {ids}")
        fresh = [t for t in tasks if t.key not in known]
        for gpus in dict.fromkeys(t.gpus for t in fresh):
            group = [t for t in fresh if t.gpus == gpus]
            try:
                # submitit echoes sbatch's stderr itself; the error below says it once, in one line.
                with contextlib.redirect_stderr(io.StringIO()):
                    jobs = self._executor(gpus).map_array(fn, [t.arg for t in group])
            except (FailedJobError, OSError) as exc:  # sbatch said no: partition, account, GPUs it does not have
                last = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
                raise UsageError(
                    f"Slurm refused the submission: {last[0]}",
                    hint="check --slurm-partition, --gpus-per-job and --slurm-extra against `sinfo`",
                ) from None
            ledger.add_submissions(
                batch,
                [
                    {"key": t.key, "job_id": job.job_id, "folder": str(job.paths.folder), "label": dict(t.label)}
                    for t, job in zip(group, jobs, strict=True)
                ],
            )
            for t, job in zip(group, jobs, strict=True):
                watching[t.key] = (job, t.label)
            array = jobs[0].job_id.split("_")[0] if jobs else "-"
            where = f", {plural(gpus, 'GPU')} each" if gpus else ""
            say(f"submitted {plural(len(jobs), 'job')} as Slurm array {array} (at most {self.slots} at once{where})")
        yield from self._wait(watching, say)

    def _wait(
        self, watching: dict[str, tuple[SlurmJob, Mapping[str, object]]], say: Callable[[str], None]
    ) -> Iterator[Finished]:
        since: dict[str, float] = {}  # when a job was first seen COMPLETED, or forgotten, without a result
        ending: dict[str, float] = {}  # when a job's result was first seen while Slurm still ran the job
        seen: dict[str, str] = {}  # the last state said of each job: one line per change, as it happens
        while watching:
            asked = slurm_states([job.job_id for job, _ in watching.values()])
            for key, (job, label) in list(watching.items()):
                state, node = (asked or {}).get(job.job_id, ("UNKNOWN", ""))
                if asked is not None and seen.get(key) != state and state not in ("UNKNOWN", "COMPLETED"):
                    seen[key] = state
                    say(f"Slurm job {job.job_id} {state}" + (f" on {node}" if node and state == "RUNNING" else ""))
                facts = {**self.facts(job, state, node), "place": self.options.place}
                if job.paths.result_pickle.exists():
                    if asked is not None and state not in ENDED and state != "UNKNOWN":
                        # The result is written as the function returns, a moment before the job ends: wait for
                        # Slurm's own end state (CANCELLED for a launch that scancel stopped), at most grace_s.
                        first = ending.setdefault(key, time.monotonic())
                        if time.monotonic() - first < self.grace_s:
                            continue
                    del watching[key]
                    yield self._collect(key, job, label, facts)
                    continue
                if asked is None or (state not in ENDED and state != "UNKNOWN"):
                    continue  # running, pending, or Slurm not answering: keep waiting
                # COMPLETED: the result pickle may lag on a shared filesystem.  UNKNOWN: Slurm has
                # forgotten the job (no accounting, MinJobAge passed) and it left nothing.
                if state in ("COMPLETED", "UNKNOWN"):
                    first = since.setdefault(key, time.monotonic())
                    if time.monotonic() - first < self.grace_s:
                        continue
                del watching[key]
                ended = f"ended {state}" if state != "UNKNOWN" else "is no longer known to Slurm and ended"
                yield Finished(key, None, state, f"the Slurm job {job.job_id} {ended} without a result", facts, label)
            if watching:
                time.sleep(self.poll_s)

    def _collect(self, key: str, job: SlurmJob, label: Mapping[str, object], facts: dict[str, object]) -> Finished:
        """The job's result, with Slurm's end state (COMPLETED where Slurm has none to say yet)."""
        from submitit.core.utils import FailedJobError, UncompletedJobError

        ended = str(facts["state"]) if facts["state"] in ENDED else "COMPLETED"
        try:
            value = job.result()
        except (FailedJobError, UncompletedJobError) as exc:
            raised = raised_reason(str(exc))
            if "timed-out" in raised:  # submitit's time-limit signal came outside the launch
                why = f"the Slurm job {job.job_id} reached its time limit before it sent a result ({raised})"
                return Finished(key, None, "TIMEOUT", why, {**facts, "state": "TIMEOUT"}, label)
            state = ended if ended != "COMPLETED" else "FAILED"
            why = f"the Slurm job {job.job_id} raised {raised}"
            return Finished(key, None, state, why, {**facts, "state": state}, label)
        return Finished(key, value, ended, None, {**facts, "state": ended}, label)

    @staticmethod
    def facts(job: SlurmJob, state: str, node: str) -> dict[str, object]:
        main, _, index = str(job.job_id).partition("_")
        return {
            "job_id": str(job.job_id),
            "array_job_id": main,
            "array_index": int(index) if index.isdigit() else None,
            "state": state,
            "node": node or None,
            "logs": {"stdout": str(job.paths.stdout), "stderr": str(job.paths.stderr)},
        }


def raised_reason(text: str) -> str:
    """The one line of submitit's error text that says what was raised: the traceback's last line
    (``Type: message``), not the log paths submitit appends after it."""
    lines = [line.strip() for line in text.strip().splitlines()]
    bars = [i for i, line in enumerate(lines) if line and set(line) == {"-"}]
    if len(bars) >= 2:  # FailedJobError: "... with trace:", a bar, the traceback, a bar, where the logs are
        trace = [line for line in lines[bars[0] + 1 : bars[1]] if line]
        if trace:
            return trace[-1]
    return next((line for line in lines if line), "an error")


def job_facts(environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """Inside a Slurm job: its id, array index, node and GPUs, as Slurm's environment gives them."""
    env = os.environ if environ is None else environ
    gpus = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS") or env.get("CUDA_VISIBLE_DEVICES") or ""
    index = env.get("SLURM_ARRAY_TASK_ID")
    return {
        "job_id": env.get("SLURM_JOB_ID"),
        "array_job_id": env.get("SLURM_ARRAY_JOB_ID"),
        "array_index": int(index) if index and index.isdigit() else None,
        "node": env.get("SLURMD_NODENAME"),
        "gpu_ids": [g for g in gpus.split(",") if g],
    }
