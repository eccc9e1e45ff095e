"""What the search is told about which commits of its line could matter, and what it reports of it.

The contract between the coverage-aware hunt's two halves: the execution side reads the footprints of the
line (``patchkit.footprint``) and what the launches ran (``bench.records.coverage.ran_of``), judges each
commit (``relevance.judge``) and hands the search a ``Judge``; the search (``search.bisect`` and the hunt)
asks it again after every round, since what ran grows as launches come in, and reports what it did
(``PruningReport``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from patchkit.bench.stats.relevance import Judgement, Relevance


@dataclass(frozen=True)
class LineRelevance:
    """Each commit of the line judged against what the launches ran so far, in line order (GOOD first).

    ``off``: why pruning is off at this moment (the probe is blind: a Python process without the probe, a
    worker that is not Python, a launch without coverage; or no launch has run yet), ``None`` while it is on.
    While it is off, every commit is treated as relevant whatever ``relevances`` say."""

    relevances: tuple[Relevance, ...]
    off: str | None = None
    suspects: tuple[Relevance, ...] | None = None
    """The suspects list as ``relevance.suspects`` gives it (read as if the probe saw everything), where the judge
    computed it; None: the search takes the relevant commits of ``relevances``, each with ``why`` (none while off).
    Only the first answer's is reported (``PruningReport.suspects``)."""

    def positions(self, shas: Sequence[str]) -> tuple[bool, ...] | str:
        """What the hunt is told for a line of ``shas``: one bool per commit (relevant), or why pruning is off.
        A commit the answer does not name is relevant: where in doubt, relevant."""
        if self.off is not None:
            return self.off
        relevant = {r.commit: r.relevant for r in self.relevances}
        return tuple(relevant.get(sha, True) for sha in shas)

    def listed(self) -> tuple[Relevance, ...]:
        """The suspects: ``suspects`` where given, else the relevant commits with what makes each relevant."""
        if self.suspects is not None:
            return self.suspects
        if self.off is not None:
            return ()
        return tuple(Relevance(r.commit, r.why) for r in self.relevances if r.relevant)


Judge = Callable[[], LineRelevance]
"""Asked after GOOD's and BAD's first launches and again after every round."""


@dataclass(frozen=True)
class PruningReport:
    """What pruning did in one hunt, for the text report and ``bisect --json``.

    ``state``: ``on`` (inert commits took their relevant predecessor's side), ``off`` (never on: ``--every-commit``,
    or the probe could not vouch for what ran, or the hunt ended before it searched between GOOD and BAD: ``why``
    says which), or ``abandoned`` (the first bad commit's direct parent read BAD, so an inert commit was not inert
    after all: the hunt went on over the full line).
    ``inert``: the commits the search *skipped*: judged inert at its end (``abandoned``: until then) and never
    launched, each with its judgement (the rule per change).  GOOD and BAD are launched whatever they change, and
    so is a parent the check measured: none of them is ever here (``hunt.mask.Pruned``).  The text's "skipped N
    commits" is ``len(inert)``, as ``--json``'s ``inert_count`` is.
    ``suspects``: the relevant commits with the changes that make each relevant, as listed before the search.
    ``parent``: the direct parent of the first bad commit that the parent check measured last (its sha), with
    ``parent_p_bad``, its P(bad) on the check's posterior (``hunt.mask.check``; ``on``: it read GOOD;
    ``abandoned``: BAD).  ``subjects``: each listed commit's subject, for the JSON.

    ``to_json()`` is ``bisect --json``'s ``pruning`` (``null`` where no judge was given)::

        {"state": "on" | "off" | "abandoned", "why": str, "inert_count": int,
         "inert": [ENTRY, ...],          # each change with its inert rule
         "suspects": [ENTRY, ...],       # the changes that make it relevant
         "parent": null | {"commit": sha, "p_bad": float}}
        ENTRY = relevance_json(...) = {"commit": sha, "subject": str, "changes": [CHANGE, ...]}
        CHANGE = {"path": str, "kind": "body" | "module" | "data" | "build" | "format", "qualname": str | null,
                  "detail": str, "reason": relevance.Reason's value ("not-run", "ran", "imported", ...)}
    """

    state: str
    why: str
    inert: tuple[Relevance, ...] = ()
    suspects: tuple[Relevance, ...] = ()
    parent: str | None = None
    parent_p_bad: float | None = None
    subjects: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "why": self.why,
            "inert_count": len(self.inert),
            "inert": [relevance_json(r, self.subjects) for r in self.inert],
            "suspects": [relevance_json(r, self.subjects) for r in self.suspects],
            "parent": None if self.parent is None else {"commit": self.parent, "p_bad": self.parent_p_bad},
        }


def relevance_json(relevance: Relevance, subjects: Mapping[str, str]) -> dict[str, object]:
    """One commit's judgement for ``--json``, the one shape of ``pruning.inert``, ``pruning.suspects`` and
    ``suspects.commits`` (docs/json.md): its subject, and the changes that make it relevant (an inert commit:
    every change), each with the rule that decided it."""
    return {
        "commit": relevance.commit,
        "subject": subjects.get(relevance.commit, ""),
        "changes": [judgement_json(j) for j in relevance.why],
    }


def judgement_json(j: Judgement) -> dict[str, object]:
    change = j.change
    return {"path": change.path, "kind": change.kind.value, "qualname": change.qualname, "detail": change.detail,
            "reason": j.reason.value}  # fmt: skip
