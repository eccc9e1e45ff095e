"""Benchmarking patched trees: ``patchkit bench``, ``runs``, ``compare`` and ``bisect`` build on this.

* ``prepare``: a worktree per commit, every manifest applied, the guard, the
  setuptools-scm version file.
* ``job``: the unit of work, ``run_job(JobSpec) -> RunRecord``: start the
  server in its own process group, wait for health, prove it runs this tree
  with this environment, run the client, extract metrics, stop everything.
* ``metrics``: reading numbers out of one run; ``provenance``: host,
  interpreter, torch and GPU facts.

Records go to ``patchkit.store``; the verbs live in ``patchkit.commands``.
"""

from __future__ import annotations

from patchkit.bench.job import JobSpec, RunRecord, run_job

__all__ = ["JobSpec", "RunRecord", "run_job"]
