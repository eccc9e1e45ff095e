"""The batch ledger: what makes two launches the same launch, and a verb's batch of them in the bench store,
begun, resumed or set aside, whichever executor runs it.

A verb's launches are one *batch*, keyed by the command, its launches (``task_key``: commit, profile,
variables, warmup, repeat, manifest digests, the launch's ordinal) and where they run (the Slurm options,
``batch_key``; this host, ``local_batch_key``).  The same command run again after an interruption takes up
the unfinished batch of the same key (``begin_batch``): its collected launches are read back, its
submitted ones reattached (Slurm) or run again (locally), only the rest launched; ``--fresh`` sets it
aside first.  ``Begun`` says which happened (the ``batch`` of ``bench --json`` and ``noise --json``).

Why a module of its own: local runs keep the same ledger as Slurm's (``launches.run_here``), so it is
neither executor's; the executors only write their submissions to it (``executor.Ledger``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from patchkit.bench.execution.executor import Executor
from patchkit.bench.records.store import Store, Submission
from patchkit.git import Commit
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.bench.execution.session import Session
    from patchkit.bench.execution.slurm import SlurmOptions


def task_key(session: Session, commit: Commit, profile: str, ordinal: int) -> str:
    """What makes two launches the same launch (``Session.launch_key``, which local batches key by too)."""
    return session.launch_key(commit, profile, ordinal)


def batch_key(command: str, keys: Sequence[str], options: SlurmOptions) -> str:
    """A Slurm batch: the command, its launches and the Slurm options."""
    return _batch_key(command, keys, {"options": options.to_json()})


def local_batch_key(command: str, keys: Sequence[str], place: str) -> str:
    """A local batch: the command, its launches and the host that runs them (a store on a shared disk may
    hold another host's batch of the same command: its launches measured that host, not this one)."""
    return _batch_key(command, keys, {"executor": "local", "place": place})


def _batch_key(command: str, keys: Sequence[str], where: Mapping[str, object]) -> str:
    text = json.dumps({"command": command, "tasks": list(keys), **where}, sort_keys=True)
    return f"{command}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _within(row: Submission, batch: str) -> bool:
    """Whether the launch is of ``batch`` or of one of its rounds (``<batch>/round-I``)."""
    return row.batch == batch or row.batch.startswith(f"{batch}/")


class BatchJson(TypedDict):
    """``Begun.to_json``: the ``batch`` of ``bench --json`` and ``noise --json`` (docs/json.md)."""

    id: str
    executor: str
    resumed: bool
    read_back: list[int]
    fresh: bool
    abandoned: list[str]
    cancelled: list[str]


RESUME_HINT = "--fresh starts a new batch instead"  # what every "resuming batch" note ends with


@dataclass(frozen=True)
class Begun:
    """How a verb's batch began (``begin_batch``): which one, whether an unfinished one of the same command was
    taken up, and what ``--fresh`` set aside instead."""

    batch: str
    executor: str  # "local" or "slurm"
    resumed: bool  # an unfinished batch of this command, holding launches, was taken up
    fresh: bool = False  # --fresh: no earlier batch taken up, whatever the store held
    read_back: tuple[int, ...] = ()  # the runs of the batch read back from the store, not launched by this command
    abandoned: tuple[str, ...] = ()  # the unfinished batches of this command that --fresh set aside
    cancelled: tuple[str, ...] = ()  # their Slurm jobs, not collected, that --fresh cancelled

    def to_json(self) -> BatchJson:
        return {
            "id": self.batch,
            "executor": self.executor,
            "resumed": self.resumed,
            "read_back": list(self.read_back),
            "fresh": self.fresh,
            "abandoned": list(self.abandoned),
            "cancelled": list(self.cancelled),
        }


def begin_batch(
    store: Store, key: str, command: str, executor: Executor, *, fresh: bool, note: Callable[[str], None]
) -> Begun:
    """The batch of this command's key: the unfinished one, resumed; or with ``fresh`` (and when every earlier
    one finished), a new one.

    ``fresh`` sets every unfinished batch of the key aside first (``Store.abandon_batch``): finished, so that
    no later run of the command resumes it, its launches not collected ``abandoned``.  The runs it stored stay
    in the store (``runs`` lists them; they are not this batch's: their series is another).  On Slurm its jobs
    not collected are cancelled first (``Executor.cancel``, each round of a bisect too): nothing would ever
    collect them, and a job still queued or running would take the slots and GPUs the new batch's jobs need,
    load the nodes they measure and run from the worktrees the new batch prepares again.  Locally nothing
    of an earlier batch runs: there is nothing to cancel."""
    abandoned: list[str] = []
    cancelled: list[str] = []
    for old in store.unfinished_batches(key) if fresh else ():
        rows = [row for row in store.submissions() if _within(row, old)]
        pending = [row for row in rows if not row.collected and not row.abandoned]
        stopped = [job for part in sorted({row.batch for row in pending}) for job in executor.cancel(part, store)]
        store.abandon_batch(old)
        abandoned.append(old)
        cancelled.extend(stopped)
        stored = sum(1 for row in rows if row.collected)
        said = f"{plural(stored, 'launch', 'launches')} stored (its runs stay in the store), {len(pending)} abandoned"
        if stopped:
            said += f"; its Slurm jobs not collected cancelled: {', '.join(stopped)}"
        note(f"--fresh: set aside the unfinished batch {old}: {said}")
    batch, resumed = store.open_batch(key, command)
    resumed = resumed and any(_within(row, batch) for row in store.submissions())  # none launched: nothing resumed
    return Begun(batch, executor.name, resumed, fresh, abandoned=tuple(abandoned), cancelled=tuple(cancelled))
