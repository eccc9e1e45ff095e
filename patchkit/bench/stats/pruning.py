"""What the search is told about which commits of its line could matter, and what it reports of it.

The contract between the coverage-aware hunt's two halves: the execution side reads the footprints of the
line (``patchkit.footprint``) and what the launches ran (``bench.records.coverage.ran_of``), judges each
commit (``relevance.judge``) and hands the search a ``Judge``; the search (``search.bisect`` and the hunt)
asks it again after every round, since what ran grows as launches come in, and reports what it did
(``PruningReport``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from patchkit.bench.stats.relevance import Relevance


@dataclass(frozen=True)
class LineRelevance:
    """Each commit of the line judged against what the launches ran so far, in line order (GOOD first).

    ``off``: why pruning is off at this moment (the probe is blind: a Python process without the probe, a
    worker that is not Python, a launch without coverage; or no launch has run yet), ``None`` while it is on.
    While it is off, every commit is treated as relevant whatever ``relevances`` say."""

    relevances: tuple[Relevance, ...]
    off: str | None = None


Judge = Callable[[], LineRelevance]
"""Asked after GOOD's and BAD's first launches and again after every round."""


@dataclass(frozen=True)
class PruningReport:
    """What pruning did in one hunt, for the text report and ``bisect --json``.

    ``state``: ``on`` (inert commits took their relevant predecessor's side), ``off`` (never on: ``--every-commit``,
    or the probe could not vouch for what ran: ``why`` says which), or ``abandoned`` (the first bad commit's
    direct parent read BAD, so an inert commit was not inert after all: the hunt went on over the full line).
    ``inert``: the commits the search treated as inert at its end, each with its judgement (the rule per change).
    ``suspects``: the relevant commits with the changes that make each relevant, as listed before the search."""

    state: str
    why: str
    inert: tuple[Relevance, ...] = ()
    suspects: tuple[Relevance, ...] = ()
