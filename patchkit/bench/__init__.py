"""Benchmarking patched trees: ``patchkit bench``, ``runs``, ``compare`` and ``bisect`` build on this.

* ``prepare``: a worktree per commit, every manifest applied, the guard, the
  setuptools-scm version file.
* ``job``: the unit of work, ``run_job(JobSpec) -> RunRecord``: start the
  server in its own process group, wait for health, prove it runs this tree
  with this environment, run the client, extract metrics, stop everything.
* ``metrics``: reading numbers out of one run; ``provenance``: host,
  interpreter, torch and GPU facts.
* ``record``: ``RunRecord`` and ``Outcome``, the values everything else
  passes around; ``store``: the SQLite store of records.
* ``compare`` and ``bisect`` (with ``hunt`` and ``verdict``): pure functions over records and measurements.
* ``session``: prepare + job + store, what ``bench``, ``noise`` and ``bisect`` drive; ``executor`` and
  ``cluster``: the same launches as Slurm jobs.
* ``launches``: what the three verbs share: their options (``BenchArgs``), the session they open, and the
  launch loop, local or Slurm; ``bisecting``: a bisect in a session; ``aa``: the A/A report of ``noise``.

Layers, bottom up: ``record`` (and ``metrics``) < ``store``, ``compare``,
``bisect`` < ``provenance``, ``job`` < ``prepare`` < ``session`` < ``cluster`` <
``launches`` < ``bisecting``; nothing here imports ``patchkit.commands``.  The
verbs live in ``patchkit.commands``.

The package itself imports nothing, so that reading records (``record``,
``store``, ``compare``) never loads the job's process machinery: import
``RunRecord`` and ``Outcome`` from ``patchkit.bench.record``, ``JobSpec`` and
``run_job`` from ``patchkit.bench.job``.
"""

from __future__ import annotations
