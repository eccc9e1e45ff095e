"""Where launches run: the ``Executor`` protocol and the values it takes and gives back; the executors are one
module each, in this process (``local.LocalExecutor``) or as Slurm jobs (``slurm.SlurmExecutor``, via submitit).

Why one protocol: ``bench``, ``noise`` and ``bisect`` hand their launches to whichever executor the
command line asks for (``launches.scheduled_executor``) and read the results back the same way;
nothing above the executors asks "is this Slurm?" except to choose what a launch ships.  Its four
verbs: submit a batch of tasks and get each result as it finishes (``map``), resume (a task
whose key the ledger already holds is reattached, not submitted again), cancel (``cancel``: what
a batch submitted and has not collected), and say where its launches run (``place``, the key of
the noise prior).

An executor takes ``Task`` values (a stable ``key``, a picklable argument and a
small JSON ``label``) and a function, and yields one ``Finished`` per task, in
the order they finish.  The function is what a launch is: for bench on Slurm it is
``scheduled.ship``, which calls ``run_job(spec)`` and returns the record with the Slurm
facts of the host it ran on.  The ``Ledger`` is where a batch's submissions are written
before anyone waits for them (the bench store); the batches themselves, begun, resumed and
set aside, are ``ledger.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from patchkit.bench.records.store import Submission


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


def prior_place(executor: Executor) -> str:
    """Where the launches of a verb run, as the noise prior is keyed: this host's name locally, the
    partition and constraint on Slurm (``SlurmOptions.place``), the same key ``RunRecord.place`` gives
    their records; ``noise`` stores under it, ``bisect`` and ``compare`` look it up."""
    return executor.place
