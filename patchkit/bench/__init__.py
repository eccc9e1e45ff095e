"""Benchmarking patched trees: ``patchkit bench``, ``noise``, ``runs``, ``compare`` and ``bisect`` build on this.

Three sub-packages, one job each, so that the folder shows where "how a launch runs" ends and
"how a verdict is reached" begins:

* ``stats``: pure statistics and search over launch values (``spread``, ``verdict``, ``hunt``,
  ``search``, ``plan``, ``outcome``, ``delta``, ``relevance``, ``pruning``), each returning a
  frozen report.  They import nothing from the other two, nor any process, database or
  scheduler: a test calls them with numbers.
* ``records``: what a launch leaves behind and reading it (``record``, ``metrics``,
  ``provenance``, ``store``, ``runview``, ``hygiene``, ``compare``, ``aa``, ``rows``, ``coverage``,
  ``without``).  Built on ``stats``.
* ``execution``: how a launch runs (``executor``, ``local``, ``slurm``, ``ledger``, ``scheduled``,
  ``job``, ``group``, ``supervisor``, ``probed``, ``prepare``, ``session``, ``launches``, ``bisecting``,
  ``pruning``, ``smi``).  Built on both.

Layers, bottom up: ``stats`` < ``records`` < ``execution``; nothing here imports
``patchkit.commands`` (``tools/import_graph.py`` checks all three).  The verbs live in
``patchkit.commands``.

The package itself imports nothing, so that reading records never loads the job's process
machinery.  Two thin modules keep the public import paths of the search and the noise:
``patchkit.bench.bisect`` (``bisect``, ``Measurement``, ``BisectReport``) and
``patchkit.bench.verdict`` (``noise_of``).
"""

from __future__ import annotations
