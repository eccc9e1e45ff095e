"""``LocalExecutor``: a verb's launches in this process, one at a time, in order (the default executor).

One slot, in-process, no pickling.  It resumes as far as a launch in this process can: with a ledger,
each task is written to it just before it runs, a task the batch holds as collected is not run again,
and one an earlier run started and did not settle is run again (there is no job to reattach to: nothing
of it outlived that process).  It has nothing to cancel: Ctrl-C stops the launch that runs, and the
session stores it as ``interrupted``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from patchkit.bench.execution.executor import Finished, Ledger, Task
from patchkit.bench.records.provenance import host_facts
from patchkit.wording import plural


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
