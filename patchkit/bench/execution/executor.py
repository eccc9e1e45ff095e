"""Where launches run: the ``Executor`` protocol, in this process (``LocalExecutor``) or as Slurm jobs
(``SlurmExecutor``, via submitit).

Why one protocol: ``bench``, ``noise`` and ``bisect`` hand their launches to whichever executor the
command line asks for (``cluster.scheduled_executor``) and read the results back the same way;
nothing above this module asks "is this Slurm?" except to choose what a launch ships.  Its four
verbs: submit a batch of tasks and get each result as it finishes (``map``), resume (a task
whose key the ledger already holds is reattached, not submitted again), cancel (``cancel``: what
a batch submitted and has not collected), and say where its launches run (``place``, the key of
the noise prior).

An executor takes ``Task`` values (a stable ``key``, a picklable argument and a
small JSON ``label``) and a function, and yields one ``Finished`` per task, in
the order they finish.  The function is what a launch is: for bench it is
``ship``, which calls ``run_job(spec)`` and returns the record with the Slurm
facts of the host it ran on.

``LocalExecutor`` is the default: one slot, in-process, no pickling.  It resumes as far as a launch in
this process can: with a ledger, each task is written to it just before it runs, a task the batch holds
as collected is not run again, and one an earlier run started and did not settle is run again (there
is no job to reattach to: nothing of it outlived that process).  It has nothing to cancel: Ctrl-C stops
the launch that runs, and the session stores it as ``interrupted``.

``SlurmExecutor`` makes each launch one Slurm job; the tasks a call does not
already know go in as one job array (``slurm_array_parallelism = slots``).  It
survives its own death: the submission (batch, key, job id, submitit folder,
label) is written to the ledger (the bench store) *before* it waits, and a
later call with the same batch reattaches to those jobs (``SlurmJob(folder,
job_id)`` reads the result pickle submitit leaves in the shared folder)
instead of submitting them again.  A job that ends without a result
(``scancel``, time limit, node failure) finishes with its Slurm state and no
value; the caller records it as ``interrupted``.

Slurm's states come from ``squeue`` (finished jobs stay there for
``MinJobAge``), then ``sacct`` where the cluster has accounting: a cluster
without either still works, a job's result pickle is the proof it finished.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from patchkit.bench.records.provenance import host_facts
from patchkit.bench.records.store import Submission
from patchkit.errors import InternalError, UsageError
from patchkit.wording import plural

if TYPE_CHECKING:
    from submitit import SlurmExecutor as SubmititExecutor

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


@dataclass(frozen=True)
class Task:
    """One launch handed to an executor: the function's argument, the key that matches it to a submission already
    made, and the label a pending or lost job shows."""

    key: str  # stable across re-runs of the same command: what "already submitted" is matched on
    arg: object  # the function's one argument (picklable for Slurm)
    # JSON: what `runs --pending` and a lost job's record show
    label: Mapping[str, object] = field(default_factory=dict)
    gpus: int | None = None  # GPUs this launch needs on its node (Slurm: --gpus-per-node)


@dataclass(frozen=True)
class Finished:
    """What became of one task: the function's value, or the Slurm state and the reason of a job that ended without
    one (the caller records that run as ``interrupted``)."""

    key: str
    value: Any  # the function's return; None when the job ended without one
    state: str  # "COMPLETED", "CANCELLED", ... ("LOCAL" in-process)
    reason: str | None = None  # why there is no value
    slurm: Mapping[str, Any] | None = None  # job id, array index, logs, state (Slurm only)
    label: Mapping[str, object] = field(default_factory=dict)


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


class Ledger(Protocol):
    """Where submissions are written before anyone waits for them (the bench store)."""

    def submissions(self, batch: str) -> list[Submission]: ...

    def add_submissions(self, batch: str, rows: Sequence[Mapping[str, object]]) -> None: ...

    def set_submission_state(self, batch: str, key: str, state: str) -> None: ...


class Executor(Protocol):
    """Where a verb's launches run (see the module docstring): ``LocalExecutor`` or ``SlurmExecutor``."""

    name: str  # "local" or "slurm": what a note or a JSON document calls it
    slots: int  # launches at once

    @property
    def remote(self) -> bool:
        """Whether launches run elsewhere (jobs): their GPUs are not this host's, a task must pickle."""
        ...

    @property
    def place(self) -> str:
        """The key of the noise prior of these launches (``RunRecord.place`` gives their records the same)."""
        ...

    def map(
        self,
        fn: Callable[[Any], Any],
        tasks: Sequence[Task],
        *,
        batch: str,
        ledger: Ledger | None,
        note: Callable[[str], None] | None = None,
    ) -> Iterator[Finished]:
        """Submit the batch's tasks (reattaching to those the ledger holds) and yield each as it finishes."""
        ...

    def cancel(self, batch: str, ledger: Ledger) -> list[str]:
        """Stop what ``batch`` submitted and has not collected; the ids stopped."""
        ...


class LocalExecutor:
    """In this process, one task at a time, in order; with a ledger, each task written to it before it runs."""

    name = "local"
    slots = 1
    remote = False

    @property
    def place(self) -> str:
        """This host's name: a local launch's prior is the host's."""
        return str(host_facts().get("hostname", ""))

    def map(
        self,
        fn: Callable[[Any], Any],
        tasks: Sequence[Task],
        *,
        batch: str = "",
        ledger: Ledger | None = None,
        note: Callable[[str], None] | None = None,
    ) -> Iterator[Finished]:
        """Run each task here, in order, and yield it as it returns.

        Without a ledger (a bisect's single launch), that is all.  With one, the batch resumes as far as a
        launch in this process can: a task the ledger holds as collected is not run again, nor yielded (as
        on Slurm: the caller reads its record back); one that an earlier run of the batch started and did
        not settle (interrupted, refused before it started, or its patchkit killed) is run again, since
        nothing of it outlives the process that ran it: there is no job to reattach to.  Every other task
        is written to the ledger (``local``, this process's pid) just before it runs, so the ledger says
        which launches were started, not which were meant to be."""
        if ledger is None:
            for task in tasks:
                yield Finished(task.key, fn(task.arg), "LOCAL", label=task.label)
            return
        say = note or (lambda line: None)
        known = {row.key: row for row in ledger.submissions(batch)}
        again = [known[t.key] for t in tasks if t.key in known and not known[t.key].collected]
        if again:
            states = Counter(UNSETTLED.get(row.state, row.state) for row in again)
            said = ", ".join(f"{count} {state}" for state, count in sorted(states.items()))
            what = plural(len(again), "launch", "launches")
            say(f"running again {what} an earlier run of this batch did not settle ({said})")
        for task in tasks:
            row = known.get(task.key)
            if row is not None and row.collected:
                continue
            if row is None:
                ledger.add_submissions(
                    batch,
                    [{"key": task.key, "executor": "local", "job_id": f"pid {os.getpid()}", "folder": "",
                      "label": dict(task.label)}],
                )  # fmt: skip
            yield Finished(task.key, fn(task.arg), "LOCAL", label=task.label)

    def cancel(self, batch: str, ledger: Ledger) -> list[str]:
        """Nothing to stop, so ``[]``: a local launch lives and dies with the patchkit that runs it (Ctrl-C or
        SIGTERM there stops its server and stores it ``interrupted``); nothing of a batch runs detached from
        that process, as a Slurm job does.  The ledger is left as it is, as Slurm's cancel leaves it: a
        re-run of the command runs the launches it holds unsettled again."""
        return []


# How a local ledger row that was not collected reads in the note of the run that takes it up again.
UNSETTLED = {
    "interrupted": "interrupted",
    "refused": "refused before it started",
    "submitted": "started by a patchkit that was killed or still runs",
    "deleted": "whose stored run was deleted",
}


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
