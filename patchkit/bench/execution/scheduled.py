"""Bench launches as Slurm jobs: the glue between the session (specs, records, store) and ``SlurmExecutor``.

``run_scheduled(session, pairs, executor)`` plans every (commit, profile):
a commit the guard refuses gets its ``refused`` record here and is never
submitted.  The rest become ``Task`` values keyed by what makes two launches
the same (``ledger.task_key``), and the whole call is one batch of the ledger
(``ledger.begin_batch``), keyed by the command, its tasks and the Slurm options.
The store resumes an unfinished batch of the same key: tasks already collected
are read back, tasks submitted by a submitter that died are reattached, only
the rest is submitted.  ``ScheduledRounds`` is a search's launches, one such
batch a round.

``ship(spec)`` is what runs inside the Slurm job: ``run_job`` exactly as
locally (probe, accounting, the start-environment check), plus the job's own
Slurm facts; it returns plain JSON so that the submitter reads it back
whatever pickling does with classes.  A job that ends without a result
(``scancel``, its time limit, a node failure) is stored as ``interrupted``
with the Slurm state and the job's log paths (``record_of``).
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType

from patchkit.bench.execution.executor import Finished, Task
from patchkit.bench.execution.job import JobSpec, run_job
from patchkit.bench.execution.ledger import RESUME_HINT, Begun, batch_key, begin_batch, task_key
from patchkit.bench.execution.session import Session, unstarted_record
from patchkit.bench.execution.slurm import SIGNAL_DELAY_S, SlurmExecutor, gpus_for, job_facts
from patchkit.bench.records.record import ManifestJson, Outcome, RunRecord
from patchkit.bench.records.store import Submission, SubmissionLabel
from patchkit.git import Commit
from patchkit.manifest.bench import BenchConfig

LOG_TAIL = 20


def ship(spec: JobSpec) -> dict[str, object]:
    """Inside the Slurm job: one launch, as ``bench`` would run it locally, and where it ran.

    ``stopped``: what stopped the launch early, if anything (``SIGTERM``: scancel or the end of the job;
    ``time-limit``: submitit's signal ``SIGNAL_DELAY_S`` before the limit)."""
    with slurm_stops_the_launch() as caught:
        record = run_job(spec, None, base_env=dict(os.environ))
    return {"record": record.to_json(with_coverage=True), "job": job_facts(), "stopped": caught[0] if caught else None}


@contextmanager
def slurm_stops_the_launch() -> Iterator[list[str]]:
    """Inside a Slurm job, what Ctrl-C is locally: SIGTERM, and submitit's time-limit signal, end the launch
    as ``interrupted`` (``run_job`` stops the server and keeps the samples so far), once.

    submitit's own handlers would not: it ignores SIGTERM (the server then dies under a job that goes on
    and calls it ``server-failed``), and at the time limit raises out of the launch, so that nothing of it
    comes back.  A preemption (the same signal before the time limit) is still submitit's: it requeues
    the job.  The list says what came: ``SIGTERM`` or ``time-limit``."""
    caught: list[str] = []
    usr = signal.SIGUSR2
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, usr)}

    def handler(signum: int, frame: FrameType | None) -> None:
        if signum == usr and not _timed_out(previous[usr]):
            earlier = previous[usr]
            if callable(earlier):
                earlier(signum, frame)
            return
        if caught:  # the launch is already stopping
            return
        caught.append("time-limit" if signum == usr else "SIGTERM")
        raise KeyboardInterrupt

    try:
        for signum in previous:
            signal.signal(signum, handler)
    except ValueError:  # not the main thread
        yield caught
        return
    try:
        yield caught
    finally:
        for signum, earlier in previous.items():
            signal.signal(signum, earlier)


def _timed_out(submitits: object) -> bool:
    """Whether the time-limit signal is the time limit, as submitit's own handler decides it (else a
    preemption); a signal no submitit handler awaits is taken as the time limit."""
    check = getattr(getattr(submitits, "__self__", None), "has_timed_out", None)
    return True if check is None else bool(check())


def label(spec: JobSpec) -> SubmissionLabel:
    """What a submission row keeps of its spec: enough for `runs --pending` and for a lost job's record."""
    return {
        "commit": spec.commit.sha,
        "subject": spec.commit.subject,
        "date": spec.commit.date,
        "profile": spec.profile,
        "vars": dict(spec.vars),
        "run_dir": str(spec.run_dir),
        "tree": str(spec.tree),
        "warmup": spec.warmup,
        "repeat": spec.repeat,
    }


@dataclass(frozen=True)
class Launch:
    """What the submitter knows of one launch: enough to store a job that ended without a result."""

    commit: Commit
    profile: str
    vars: Mapping[str, str]
    config: BenchConfig
    run_dir: str
    manifests: tuple[ManifestJson, ...] = ()
    guard: Mapping[str, object] = field(default_factory=dict)
    allow_dirty: bool = False

    @classmethod
    def of(cls, spec: JobSpec) -> Launch:
        return cls(
            spec.commit, spec.profile, spec.vars, spec.config, str(spec.run_dir), spec.manifests, spec.guard,
            spec.allow_dirty,
        )  # fmt: skip


def record_of(finished: Finished, launch: Launch | None) -> RunRecord:
    """The stored record of a finished Slurm job: the job's own record with where it ran, or, when the
    job ended without one, an ``interrupted`` record (of ``launch``) with the Slurm state and the job's logs."""
    slurm = dict(finished.slurm or {})
    if finished.value is not None:
        data = dict(finished.value["record"])
        job = finished.value.get("job", {})
        data["executor"] = {
            "name": "slurm",
            **slurm,
            "node": job.get("node") or slurm.get("node"),
            "gpu_ids": job.get("gpu_ids", []),
            "slurm_job_id": job.get("job_id"),
        }
        stopped = _stopped(finished, data["outcome"], finished.value.get("stopped"))
        if stopped is not None:
            data["executor"]["state"], why = stopped
            data["outcome"], data["reason"] = Outcome.INTERRUPTED.value, f"{why}; the samples so far are kept"
        return RunRecord.from_json(data)
    assert launch is not None, "a job without a result needs what was sent"
    logs = slurm.get("logs", {})
    return unstarted_record(
        launch.commit,
        launch.profile,
        Outcome.INTERRUPTED,
        finished.reason or f"the Slurm job {slurm.get('job_id')} ended without a result",
        _tail(Path(logs["stderr"])) if logs.get("stderr") else (),
        launch.vars,
        launch.manifests,
        launch.guard,
        launch.config,
        allow_dirty=launch.allow_dirty,
        host={"hostname": slurm.get("node") or ""},
        logs={
            "slurm_stdout": logs.get("stdout"),
            "slurm_stderr": logs.get("stderr"),
            "run_dir": str(finished.label.get("run_dir", launch.run_dir)),  # the job's, from its submission (a str)
        },
        executor={"name": "slurm", **slurm, "gpu_ids": []},
    )


def _stopped(finished: Finished, outcome: str, stopped: str | None) -> tuple[str, str] | None:
    """(state, why) of a launch that Slurm ended before it was done: stopped at the time-limit signal
    (TIMEOUT, though Slurm then sees the job end by itself), or a launch that did not finish ok in a job
    that Slurm ended (CANCELLED by scancel, PREEMPTED, NODE_FAIL, TIMEOUT); None for a launch left alone."""
    job_id = (finished.slurm or {}).get("job_id")
    if stopped == "time-limit":
        return "TIMEOUT", f"the Slurm job {job_id} reached its time limit: stopped {SIGNAL_DELAY_S} s before it"
    if finished.state != "COMPLETED" and (stopped is not None or outcome != Outcome.OK.value):
        return finished.state, f"the Slurm job {job_id} ended {finished.state} during the launch"
    return None


def submitted_launch(session: Session, commit: Commit, profile: str, row: Submission) -> Launch:
    """A launch submitted by an earlier run of the command (its job may still be running from the tree,
    which is therefore not prepared again): the spec it was submitted with, read back from submitit's
    pickle in the shared folder, else what its submission row says."""
    import submitit

    job: submitit.SlurmJob[object] = submitit.SlurmJob(folder=Path(row.folder), job_id=row.job_id)
    spec = None
    if job.paths.submitted_pickle.exists():
        try:
            spec = job.submission().args[0]
        except (OSError, EOFError, IndexError, AttributeError, ImportError, pickle.UnpicklingError):
            spec = None  # unreadable, or pickled by another patchkit: the submission row's label
    if isinstance(spec, JobSpec):
        return Launch.of(spec)
    label = row.label or {}
    values = label.get("vars") or session.config.resolve_vars(profile, session.sets)
    run_dir = str(label.get("run_dir", ""))
    return Launch(commit, profile, values, session.config, run_dir, allow_dirty=session.allow_dirty)


def _tail(path: Path) -> tuple[str, ...]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    return tuple(f"  | {line}" for line in lines[-LOG_TAIL:])


def run_scheduled(
    session: Session,
    pairs: Sequence[tuple[Commit, str]],
    executor: SlurmExecutor,
    *,
    command: str,
    batch: str | None = None,
    fresh: bool = False,
    note: Callable[[str], None] = lambda line: None,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    on_batch: Callable[[Begun], None] = lambda begun: None,
) -> list[RunRecord]:
    """Every (commit, profile) launched on Slurm (refused ones stored without submitting); records in
    the order of ``pairs``.  Resumes this command's unfinished batch, if the store has one, unless
    ``fresh`` (``begin_batch``: the unfinished one set aside, its jobs not collected cancelled); with
    ``batch`` (a round of a bisect), exactly that batch, finished or not.  ``on_batch`` hears how the
    batch began, before anything is submitted.

    A launch the batch already holds is read back (collected) or reattached to (submitted): its tree
    is not prepared again, since its job may be running from it; only the rest is planned."""
    store = session.store
    ordered = [(commit, profile, session.next_launch(commit, profile)) for commit, profile in pairs]
    keys = [task_key(session, commit, profile, launch - 1) for commit, profile, launch in ordered]
    if batch is None:
        begun = begin_batch(store, batch_key(command, keys, executor.options), command, executor, fresh=fresh,
                            note=note)  # fmt: skip
    else:
        begun = Begun(batch, executor.name, store.use_batch(batch, command) and bool(store.submissions(batch)))
    batch = begun.batch
    rows = {row.key: row for row in store.submissions(batch)}
    held = [rows[key] for key in keys if key in rows]  # in the order of pairs, as they are read back below
    on_batch(replace(begun, read_back=tuple(int(r.run_id) for r in held if r.collected and r.run_id is not None)))
    if begun.resumed:
        pending = sum(1 for row in rows.values() if not row.collected)
        note(
            f"resuming batch {batch}: {len(rows) - pending} collected, {pending} submitted earlier, not collected; "
            + RESUME_HINT
        )
    out: dict[int, RunRecord] = {}
    tasks: list[Task] = []
    launches: dict[str, tuple[int, int, Launch | None]] = {}  # key: index in pairs, launch number, what was sent
    for index, ((commit, profile, launch), key) in enumerate(zip(ordered, keys, strict=True)):
        row = rows.get(key)
        if row is not None and row.collected and row.run_id is not None:
            out[index] = store.get(int(row.run_id))
            on_record(out[index])
            continue
        if row is not None:  # submitted earlier and not collected: reattached, the tree left as it is
            launches[key] = (index, launch, None)
            tasks.append(Task(key, None, row.label))
            continue
        planned = session.plan(commit, profile)
        if isinstance(planned, RunRecord):
            record = replace(planned, launch=launch, series=session.series)
            out[index] = record.with_run_id(store.add(record))
            on_record(out[index])
            continue
        launches[key] = (index, launch, Launch.of(planned))
        tasks.append(Task(key, planned, label(planned), gpus_for(executor.options, planned.vars)))
    if tasks:
        for finished in executor.map(ship, tasks, batch=batch, ledger=store, note=note):
            index, launch, sent = launches[finished.key]
            if sent is None and finished.value is None:  # a reattached job that sent nothing back
                commit, profile, _ = ordered[index]
                sent = submitted_launch(session, commit, profile, rows[finished.key])
            record = replace(record_of(finished, sent), launch=launch, series=session.series)
            out[index] = record.with_run_id(store.add(record, submission=(batch, finished.key)))
            on_record(out[index])
    store.finish_batch(batch)
    return [out[i] for i in sorted(out)]


class ScheduledRounds:
    """A search's launches on Slurm, one round at a time: ``round(commits)`` is one batch (one array).

    A search is deterministic given its values, so a re-run of a killed bisect asks the same rounds
    again: round ``i`` is the sub-batch ``<search batch>/round-i``, whose collected launches are read
    back and whose submitted ones are reattached, so no launch is paid for twice.  ``fresh``: the
    search's unfinished batch is set aside with its rounds, their jobs not collected cancelled
    (``begin_batch``), and every round is launched anew."""

    def __init__(
        self,
        session: Session,
        profile: str,
        executor: SlurmExecutor,
        *,
        command: str,
        identity: Sequence[str],
        fresh: bool = False,
        note: Callable[[str], None] = lambda line: None,
        on_record: Callable[[RunRecord], None] = lambda record: None,
    ) -> None:
        self.session, self.profile, self.executor = session, profile, executor
        self.command, self.note, self.on_record = command, note, on_record
        key = batch_key(command, [*identity, profile], executor.options)
        begun = begin_batch(session.store, key, command, executor, fresh=fresh, note=note)  # --fresh: rounds too
        self.batch, self.resumed = begun.batch, begun.resumed
        self.rounds: list[list[RunRecord]] = []  # each round's records, in the order asked

    def round(self, commits: Sequence[Commit]) -> list[RunRecord]:
        records = run_scheduled(
            self.session,
            [(commit, self.profile) for commit in commits],
            self.executor,
            command=self.command,
            batch=f"{self.batch}/round-{len(self.rounds) + 1}",
            note=self.note,
            on_record=self.on_record,
        )
        self.rounds.append(records)
        return records

    def finish(self) -> None:
        """The search is over: a later run of the same command starts afresh."""
        self.session.store.finish_batch(self.batch)
