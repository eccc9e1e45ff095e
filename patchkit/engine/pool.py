"""Evaluate distinct file versions on every core, for range checks.

A cold range check is mostly ``ast.parse`` plus analysis of each distinct
version (blob) of each target file, and one blob's verdicts depend on nothing
but the blob and the patches on its file.  So before the (sequential)
per-state loop of ``engine/check.py`` runs, the blobs it will need and the
cache does not have are evaluated here in a process pool, and their verdicts
are handed to the cache; the loop then finds them there.

One core's behaviour is the reference: the pool computes exactly what the
loop would (``evaluate_file`` on the same bytes with the same patches and no
held patches), results come back in submission order, and the cache counts a
prefilled entry as the miss it would have been (``VerdictCache.prefill``), so
the report, its stats included, is the same for every worker count
(``tests/test_check_jobs.py``).

Workers are forked: they inherit the loaded manifest (payload ASTs are not
pickled) and each opens its own ``git cat-file --batch``.  Where ``fork`` is
not available, everything runs in the calling process.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from patchkit.engine.evaluate import evaluate_file
from patchkit.git import Entry, Repo
from patchkit.manifest import Patch
from patchkit.results import PatchResult
from patchkit.sources import read_entry

if TYPE_CHECKING:
    from concurrent.futures import Future


# What forked workers inherit: a repository handle of their own and the patches per file.
_WORK: tuple[Repo, Mapping[str, Sequence[Patch]]] | None = None

MIN_BATCH = 4  # fewer blobs than this are not worth starting processes for


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _evaluate_batch(refs: list[tuple[str, Entry]]) -> list[tuple[PatchResult, ...]]:
    return [_evaluate(ref) for ref in refs]


def _evaluate(ref: tuple[str, Entry]) -> tuple[PatchResult, ...]:
    assert _WORK is not None
    repo, by_file = _WORK
    path, entry = ref
    return evaluate_file(read_entry(repo, path, entry), by_file[path], {}).results


def can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


class Workers:
    """``jobs`` forked evaluation processes, started ahead of the work.

    A range check starts them while git is still listing the range (the
    listing leaves a core idle, and the forks' start-up is then hidden), and
    hands them the blobs once it knows which ones it needs.  ``close`` stops
    them whether or not they were used.
    """

    def __init__(self, repo: Repo, by_file: Mapping[str, Sequence[Patch]], jobs: int) -> None:
        global _WORK
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.jobs = jobs
        repo.close()  # no child may share the parent's cat-file pipes
        _WORK = (Repo(repo.path, repo.git_dir, repo.common_dir, repo.root), by_file)
        # What the children inherit is never scanned by their cycle collector (nor copied page by
        # page as it would touch it): the parent's heap is frozen while they fork.
        gc.freeze()
        try:
            self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))
            self.pool.submit(int)  # the executor forks all its workers at the first submit: now
        finally:
            gc.unfreeze()

    def submit(self, refs: list[tuple[str, Entry]]) -> Future[list[tuple[PatchResult, ...]]]:
        return self.pool.submit(_evaluate_batch, refs)

    def map(self, refs: Sequence[tuple[str, Entry]]) -> list[tuple[PatchResult, ...]]:
        """Each ref's verdicts (no patch held back), in order."""
        # Chunks of about 1/64th of a worker's share: a few hundred round trips, not one per
        # blob (the parent unpickles every reply on one of the same cores), yet a short tail.
        chunk = max(1, len(refs) // (self.jobs * 64))
        return list(self.pool.map(_evaluate, refs, chunksize=chunk))

    def close(self) -> None:
        global _WORK
        self.pool.shutdown(wait=True, cancel_futures=True)
        _WORK = None


class Feed:
    """File versions handed to the workers as git finds them (``listing.read_range``).

    Versions are sent in batches: at once while fewer than two batches per
    worker are outstanding (the workers must not wait), otherwise once 16
    have gathered (the parent unpickles every reply on one of the cores the
    workers use).  ``result`` gives an added version's verdicts, waiting for
    them; what is still gathered then is the tail of the work, and is split
    over the workers rather than left to one.
    """

    BATCH = 16

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.gathered: list[tuple[str, Entry]] = []
        self.batches: list[Future[list[tuple[PatchResult, ...]]]] = []
        self.where: dict[tuple[str, Entry], tuple[int, int] | None] = {}  # ref -> (batch, position) once sent

    def add(self, ref: tuple[str, Entry]) -> None:
        if ref in self.where:
            return
        self.where[ref] = None
        self.gathered.append(ref)
        busy = sum(1 for batch in self.batches[-2 * self.workers.jobs :] if not batch.done())
        if busy < 2 * self.workers.jobs or len(self.gathered) >= self.BATCH:
            self.flush()

    def flush(self, parts: int = 1) -> None:
        """Send what is gathered, in up to ``parts`` batches of near-equal size."""
        gathered, self.gathered = self.gathered, []
        if not gathered:
            return
        parts = min(parts, len(gathered))
        size, extra = divmod(len(gathered), parts)
        start = 0
        for n in range(parts):
            batch = gathered[start : start + size + (n < extra)]
            start += len(batch)
            for position, ref in enumerate(batch):
                self.where[ref] = (len(self.batches), position)
            self.batches.append(self.workers.submit(batch))

    def result(self, ref: tuple[str, Entry]) -> tuple[PatchResult, ...]:
        if self.where[ref] is None:
            self.flush(parts=self.workers.jobs)
        where = self.where[ref]
        assert where is not None
        batch, position = where
        return self.batches[batch].result()[position]


def evaluate_many(
    repo: Repo, by_file: Mapping[str, Sequence[Patch]], refs: Sequence[tuple[str, Entry]], jobs: int
) -> list[tuple[PatchResult, ...]] | None:
    """Each ref's verdicts (no patch held back), in order, from a pool started for them;
    None if not worth a pool here."""
    if jobs < 2 or len(refs) < MIN_BATCH or not can_fork():
        return None
    own = Workers(repo, by_file, min(jobs, len(refs)))
    try:
        return own.map(refs)
    finally:
        own.close()


__all__ = ["Feed", "Workers", "can_fork", "default_jobs", "evaluate_many"]
