"""What ``bench``, ``noise`` and ``bisect`` share: their options, the session they open, and the launch loop.

``BenchArgs`` is the options every one of them takes (manifests, repository,
store, worktrees, ``--set``, ``--repeat``, ``--allow-dirty``, ``--fresh`` and the
executor's, ``ClusterArgs``), built once from the command line, as a frozen value.
``open_bench(args)`` loads the manifests, opens the repository and the
session; ``Opened.executor()`` is the ``Executor`` the options ask for
(``LocalExecutor`` by default, ``SlurmExecutor`` with ``--executor slurm``).
``measuring(session, show)`` is what surrounds every verb's launches: the store
open, the progress heard, SIGTERM taken as Ctrl-C.

``launch(session, pairs, executor)`` hands a list of (commit, profile)
launches to the executor: the local one runs ``Session.run`` for each, in this
process, one after the other; the Slurm one ships each planned launch as a job
(``run_scheduled``).  Either way the launches are one batch of the store's
ledger, so the same command run again after an interruption reads back what
is stored and launches only the rest (``run_here``, ``run_scheduled``);
``--fresh`` sets that unfinished batch aside and starts a new one
(``ledger.begin_batch``).  It says how its batch began and how it ended:
every launch done; a local launch stopped by Ctrl-C or SIGTERM (stored as
``interrupted``, the last record); or the submitter stopped while it waited
on Slurm, the jobs left running for the same command to collect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from patchkit.bench.execution.executor import Executor, Task
from patchkit.bench.execution.ledger import RESUME_HINT, Begun, begin_batch, local_batch_key
from patchkit.bench.execution.local import LocalExecutor
from patchkit.bench.execution.scheduled import run_scheduled
from patchkit.bench.execution.session import Interrupted, Session, parse_sets, sigterm_as_interrupt
from patchkit.bench.execution.slurm import SlurmExecutor, slurm_options
from patchkit.bench.records.record import RunRecord
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, load_manifest
from patchkit.wording import plural

Show = Callable[[Commit, str, str, str], None]  # a session's progress: commit, profile, phase, detail

EXECUTORS = ("local", "slurm")


@dataclass(frozen=True)
class ClusterArgs:
    """The Slurm options of a verb (``--executor`` and the rest), as the command line gave them."""

    executor: str = "local"
    shared_dir: str | None = None
    slurm_partition: str | None = None
    gpus_per_job: int | None = None
    timeout_min: int | None = None
    slots: int | None = None
    slurm_extra: tuple[str, ...] = ()

    @classmethod
    def take(cls, kwargs: dict[str, Any], *, keep: Sequence[str] = ()) -> ClusterArgs:
        """Pop these options out of a verb's keyword arguments (``keep``: also left there for the verb)."""
        names = [f.name for f in fields(cls)]
        values = {n: (kwargs[n] if n in keep else kwargs.pop(n)) for n in names if n in kwargs}
        if "slurm_extra" in values:
            values["slurm_extra"] = tuple(values["slurm_extra"])
        return cls(**values)


LOCAL = ClusterArgs()  # the default: in-process, one slot


def scheduled_executor(session: Session, args: ClusterArgs, *, worktree_root: str | None) -> Executor:
    """The verbs' one entry: the executor their options ask for (``LocalExecutor`` by default), for Slurm
    with the session's worktrees and run directories moved onto the shared directory, which the jobs read."""
    options = slurm_options(
        session.config,
        executor=args.executor,
        shared_dir=args.shared_dir,
        partition=args.slurm_partition,
        gpus_per_job=args.gpus_per_job,
        timeout_min=args.timeout_min,
        slots=args.slots,
        extra=args.slurm_extra,
    )
    if options is None:
        return LocalExecutor()
    if worktree_root is None:
        session.root = options.shared_dir / "worktrees"
    session.runs_dir = options.shared_dir / "bench-runs"
    return SlurmExecutor(options)


@dataclass(frozen=True)
class BenchArgs:
    """The options of ``bench``, ``noise`` and ``bisect`` that open a session and say where launches run."""

    manifests: tuple[str, ...]
    repo: str = "."
    store: str | None = None
    worktree_root: str | None = None
    sets: tuple[str, ...] = ()
    repeat: int | None = None
    allow_dirty: bool = False
    fresh: bool = False  # --fresh: a new batch, the unfinished one of the same command set aside (``begin_batch``)
    cluster: ClusterArgs = LOCAL  # --executor and the Slurm options

    @classmethod
    def take(cls, kwargs: dict[str, Any], *, keep: Sequence[str] = ()) -> BenchArgs:
        """Pop these options (and the Slurm ones) out of a verb's keyword arguments; ``keep``: Slurm options also
        left there for the verb (bisect's ``--slots`` is its search's too)."""
        cluster = ClusterArgs.take(kwargs, keep=keep)
        names = [f.name for f in fields(cls) if f.name != "cluster"]
        values = {name: kwargs.pop(name) for name in names if name in kwargs}
        for name in ("manifests", "sets"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values, cluster=cluster)


@dataclass(frozen=True)
class Opened:
    """A verb's inputs, open: the repository, the loaded manifests and the session over them."""

    repo: Repo
    manifests: tuple[Manifest, ...]
    session: Session
    args: BenchArgs

    def executor(self, *, slots: int | None = None) -> Executor:
        """The executor the options ask for (Slurm: the session's worktrees and run directories moved onto
        the shared directory); ``slots`` over ``--slots``."""
        cluster = self.args.cluster if slots is None else replace(self.args.cluster, slots=slots)
        return scheduled_executor(self.session, cluster, worktree_root=self.args.worktree_root)


@contextmanager
def open_bench(args: BenchArgs, *, first: Callable[[Repo], object] | None = None) -> Iterator[Opened]:
    """The manifests first (a bad one is reported the same whatever the repository), then the repository and
    the session: a bad ``--set`` fails here, before anything is prepared.  ``first``: what the verb checks
    in the repository before the session (its revisions: an unknown or equal pair is named before a
    manifest without a [bench] table)."""
    manifests = tuple(load_manifest(m) for m in args.manifests)
    with Repo.discover(Path(args.repo)) as repo:
        if first is not None:
            first(repo)
        session = Session.open(
            repo,
            manifests,
            store=args.store,
            worktree_root_dir=args.worktree_root,
            sets=parse_sets(args.sets),
            repeat=args.repeat,
            allow_dirty=args.allow_dirty,
        )
        yield Opened(repo, manifests, session, args)


@contextmanager
def measuring(session: Session, show: Show) -> Iterator[None]:
    """Around a verb's launches: the store open, each phase told to ``show``, SIGTERM taken as Ctrl-C."""
    with session.store, sigterm_as_interrupt():
        session.progress = show
        yield


@dataclass(frozen=True)
class Launched:
    """How a list of launches ended: the records (in launch order; on Slurm, as far as they were collected)."""

    records: tuple[RunRecord, ...]
    interrupted: bool = False  # a local launch stopped by Ctrl-C or SIGTERM: the last record, stored interrupted
    submitter: bool = False  # Ctrl-C or SIGTERM while waiting on Slurm: the jobs keep running
    batch: Begun | None = None  # the store's batch they were, and how it began (resumed, or --fresh)

    @property
    def stopped(self) -> bool:
        return self.interrupted or self.submitter


def launch(
    session: Session,
    pairs: Sequence[tuple[Commit, str]],
    executor: Executor,
    *,
    command: str,
    fresh: bool = False,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    note: Callable[[str], None] = lambda line: None,
) -> Launched:
    """Every (commit, profile) launched, in order: in this process, or each one a Slurm job (refused commits
    stored without submitting).  Either way the launches are one batch of the store's ledger, so a re-run
    of the command after an interruption reads back what is stored and launches only the rest, unless
    ``fresh`` (``ledger.begin_batch``).  ``on_record`` hears each record as it is stored or read back (not
    a local launch's interrupted one, which ends the loop)."""
    if isinstance(executor, SlurmExecutor):
        collected: list[RunRecord] = []
        begun: list[Begun] = []

        def heard(record: RunRecord) -> None:
            collected.append(record)
            on_record(record)

        try:
            records = run_scheduled(session, pairs, executor, command=command, fresh=fresh, note=note,
                                    on_record=heard, on_batch=begun.append)  # fmt: skip
        except KeyboardInterrupt:  # the submitter, waiting: the jobs go on
            return Launched(tuple(collected), submitter=True, batch=begun[0] if begun else None)
        return Launched(tuple(records), batch=begun[0] if begun else None)
    order = [(session, commit, profile) for commit, profile in pairs]
    return launch_here(order, executor, command=command, fresh=fresh, on_record=on_record, note=note)


def launch_here(
    order: Sequence[tuple[Session, Commit, str]],
    executor: Executor | None = None,
    *,
    command: str | None = None,
    fresh: bool = False,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    note: Callable[[str], None] = lambda line: None,
) -> Launched:
    """Every launch in this process, in order, each by its own session (``bench --without`` interleaves two
    sessions over one commit: every patch, and all but one), handed to the local executor one task a launch,
    until Ctrl-C or SIGTERM.  ``command``: the launches are that command's batch (``run_here``; ``fresh``:
    a new one)."""
    records: list[RunRecord] = []
    begun: list[Begun] = []
    try:
        for record in run_here(order, executor or LocalExecutor(), command=command, fresh=fresh, note=note,
                               on_batch=begun.append):  # fmt: skip
            records.append(record)
            on_record(record)
    except Interrupted as stop:
        return Launched((*records, stop.record), interrupted=True, batch=begun[0] if begun else None)
    return Launched(tuple(records), batch=begun[0] if begun else None)


def run_here(
    order: Sequence[tuple[Session, Commit, str]],
    executor: Executor,
    *,
    command: str | None = None,
    fresh: bool = False,
    note: Callable[[str], None] = lambda line: None,
    on_batch: Callable[[Begun], None] = lambda begun: None,
) -> Iterator[RunRecord]:
    """Each (session, commit, profile) as ``Session.run`` launches it, handed to ``executor`` one task a launch.

    With ``command``, the launches are one batch of the store's ledger, keyed by the command, each
    launch (``Session.launch_key``) and this host, as a Slurm batch is (``scheduled.run_scheduled``): a
    re-run of the same command after an interruption (Ctrl-C, SIGTERM, a crash) resumes it.  A launch
    that the batch holds as collected is read back from the store, in its place in the order, not run
    again; an interrupted one, one refused before it started and one whose patchkit was killed run
    again (``LocalExecutor.map``).  Once every launch is stored the batch is finished, and the same
    command after that is a new batch that launches everything.  ``fresh`` (``--fresh``): a new batch
    now, the unfinished one set aside (``ledger.begin_batch``), so every launch runs again.
    ``on_batch`` hears how the batch began, before the first launch.  Without ``command`` (a bisect's
    single launches) there is no batch."""
    if command is None:
        tasks = [Task(f"{c.sha}:{p}:{i}", (s, c, p, None, None)) for i, (s, c, p) in enumerate(order)]
        for finished in executor.map(_run_one, tasks, batch="", ledger=None):
            yield finished.value
        return
    if not order:
        return
    assert not executor.remote, "a batch read back in order needs the executor's results in order: a local one"
    store = order[0][0].store
    assert all(s.store is store for s, _, _ in order), "one batch, one ledger: the sessions share a store"
    numbered = [(s, c, p, s.next_launch(c, p)) for s, c, p in order]
    keys = [s.launch_key(c, p, launch - 1) for s, c, p, launch in numbered]
    begun = begin_batch(store, local_batch_key(command, keys, executor.place), command, executor, fresh=fresh,
                        note=note)  # fmt: skip
    batch = begun.batch
    rows = {row.key: row for row in store.submissions(batch)}
    stored = {key for key, row in rows.items() if row.collected and row.run_id is not None}
    for key, row in rows.items():
        if row.collected and key not in stored:  # its run was deleted from the store: launched again
            store.set_submission_state(batch, key, "deleted")
    on_batch(replace(begun, read_back=tuple(int(rows[key].run_id or 0) for key in keys if key in stored)))
    if begun.resumed:
        left = sum(1 for key in keys if key not in stored)
        read = plural(len(stored), "launch", "launches")
        note(f"resuming batch {batch}: {read} stored earlier, read back; {left} to run; {RESUME_HINT}")
    tasks = [
        Task(key, (s, c, p, launch, (batch, key)), {"commit": c.sha, "subject": c.subject, "profile": p})
        for (s, c, p, launch), key in zip(numbered, keys, strict=True)
        if key not in stored
    ]
    ran = executor.map(_run_one, tasks, batch=batch, ledger=store, note=note)
    for key in keys:
        if key in stored:
            yield store.get(int(rows[key].run_id or 0))
        else:
            yield next(ran).value
    store.finish_batch(batch)


def _run_one(item: tuple[Session, Commit, str, int | None, tuple[str, str] | None]) -> RunRecord:
    session, commit, profile, launch, submission = item
    return session.run(commit, profile, launch=launch, submission=submission)


def run_local(session: Session, pairs: Sequence[tuple[Commit, str]], executor: Executor) -> Iterator[RunRecord]:
    """Each (commit, profile) as ``Session.run`` launches it (prepare, job, store), handed to ``executor``
    one task a launch, in order, in no batch; Ctrl-C or SIGTERM raises ``Interrupted`` with the stored record."""
    return run_here([(session, commit, profile) for commit, profile in pairs], executor)


def launch_order(
    commits: Sequence[Commit], profiles: Sequence[str], launches: int, *, interleave: bool = True
) -> list[tuple[Commit, str]]:
    """The (commit, profile) of each server launch, in the order they run.

    Interleaved (the default): round-robin, A1 B1 A2 B2 ..., so that drift of
    the machine over the session (clocks, thermals, other tenants) falls on
    every commit alike instead of on the last one.  Otherwise a commit's
    launches run back to back."""
    pairs = [(c, p) for c in commits for p in profiles]
    if interleave:
        return [pair for _ in range(launches) for pair in pairs]
    return [pair for pair in pairs for _ in range(launches)]
