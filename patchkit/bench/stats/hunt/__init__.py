"""The noise-aware search for the first bad commit: a pure algorithm over an ordered line of commits.

Why not a binary search on one launch per commit: with launch-to-launch noise
of a few percent and a step of a few percent, one launch lands on the wrong
side of the midpoint often enough that ``git bisect run`` names a wrong commit
in a third of hunts, with full confidence (``benchmarks/bench_hunt.py``).  And
real servers are noisier than a Gaussian: a launch in a few dozen runs 20-40 %
slow (a noisy neighbour, a throttled GPU, a cold page cache), placements make
launches bimodal, and a host drifts while a long hunt runs.  The promise here
is that the hunt is never *confidently* wrong under any of that: a FIRST BAD
only with ``1 - alpha`` of the posterior behind it, and no single launch able
to decide; otherwise a range, with why.

The line is positions ``0`` (GOOD) to ``size - 1`` (BAD); ``measure(positions)``
starts one server launch per entry, in that order (interleaved: the executor
runs them round-robin or, with ``slots > 1``, at once) and returns one value
per entry (``None``: the launch failed; it is retried, up to ``MAX_FAILURES``
per commit, after which a commit without a value is skipped, like a commit
``git bisect`` cannot test, and one with values keeps them).

The package, by job (each module's docstring holds its part of the design):

- ``report``: what a hunt is given and answers (``HuntReport``, ``Side``, ``Spread``, ``Drift``, ``OtherStep``,
  ``Failure``, ``Round``, ``GiveUp``), frozen values;
- the model, numpy and scipy over arrays, tested by calling it with a few numbers: ``likelihood`` (the
  contamination mixture, every split's fit and likelihood, the spread integrated out), ``sigma`` (the spread,
  pooled with the prior and checked against it), ``modes`` (a second mode of the launch noise, from repeated
  launches and the prior's A/A run), ``model`` (``Model.fit``: the posterior, drift, outliers, and the
  second-step test within a side) and ``posterior`` (the belief the rest reads);
- ``state``: the bookkeeping of launches, values and failures;
- ``mask``: pruning, the relevant positions round by round and the parent check that tests them;
- ``policy``: which positions a round asks for (endpoints, posterior quantiles, confirmations, the spread's
  check, references for the drift, second-step checks);
- ``answer``: GOOD against BAD, the evidence behind a named commit, other steps, a range's why and advice;
- ``driver``: ``hunt()``, the steps of the search.
"""

from patchkit.bench.stats.hunt.answer import launches_to_decide
from patchkit.bench.stats.hunt.driver import hunt
from patchkit.bench.stats.hunt.mask import Pruned, Relevant
from patchkit.bench.stats.hunt.policy import ahead, default_budget
from patchkit.bench.stats.hunt.report import (
    Drift,
    Failure,
    GiveUp,
    HuntReport,
    Measure,
    OtherStep,
    Round,
    Side,
    Spread,
    Value,
)
from patchkit.bench.stats.hunt.state import MAX_FAILURES

__all__ = [
    "MAX_FAILURES",
    "Drift",
    "Failure",
    "GiveUp",
    "HuntReport",
    "Measure",
    "OtherStep",
    "Pruned",
    "Relevant",
    "Round",
    "Side",
    "Spread",
    "Value",
    "ahead",
    "default_budget",
    "hunt",
    "launches_to_decide",
]
