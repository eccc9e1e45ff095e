"""The pure part of a comparison: per-metric deltas with their verdict, provenance differences, commits between.

Why in ``stats``: these are frozen reports computed from numbers, mappings and commits alone;
``records.compare`` reads two sides' records and builds them, ``commands/compare.py`` prints
them.  A test checks a delta or a difference without a record or a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from patchkit.bench.stats.verdict import Verdict
from patchkit.commit import Commit


class Summary(TypedDict):
    """What ``patchkit.bench.records.metrics.summary`` says of a metric's samples."""

    median: float | None
    min: float | None
    max: float | None
    n: int
    missing: int


@dataclass(frozen=True)
class MetricDelta:
    """One metric of A against B: the client runs' stats of each side (all launches pooled), and the verdict over
    the launches (``call``)."""

    metric: str
    a: Summary | None  # the stats of run A (median, min, max, n, missing); None when A lacks the metric
    b: Summary | None
    ratio: float | None  # b median / a median
    verdict: Verdict | None = None  # over the launches: ratio, interval, different / same / unknown
    launch_values: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())  # one value per usable launch, A and B
    better: str | None = None  # the metric's `better`, to say whether a different is better or worse

    @property
    def shown_ratio(self) -> float | None:
        """The ratio a table shows: the verdict's, over the launches, where it has one; else the medians'."""
        v = self.verdict
        return v.ratio if v is not None and v.ratio is not None else self.ratio

    @property
    def call(self) -> str:
        """``different (worse)`` / ``different (better)`` / ``same`` / ``unknown``."""
        if self.verdict is None:
            return "unknown"
        if self.verdict.direction is not None:
            if self.better is None:
                return f"different ({self.verdict.direction})"
            up = self.verdict.direction == "higher"
            return f"different ({'better' if up == (self.better == 'higher') else 'worse'})"
        return self.verdict.call.value

    def to_json(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "a": None if self.a is None else dict(self.a),
            "b": None if self.b is None else dict(self.b),
            "ratio": self.ratio,
            "launches": {"a": list(self.launch_values[0]), "b": list(self.launch_values[1])},
            "verdict": None if self.verdict is None else {**self.verdict.as_json(), "call": self.call},
        }


@dataclass(frozen=True)
class Difference:
    """One leaf key of the provenance (dotted, ``[i]`` for list items) whose value differs: A's value and B's."""

    key: str
    a: object
    b: object

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class Between:
    """The first-parent commits from A's commit to B's: forward (A..B), backward (B is older), diverged, same."""

    direction: str
    commits: tuple[Commit, ...] = ()  # newest first

    def to_json(self) -> dict[str, object]:
        return {
            "direction": self.direction,
            "commits": [{"commit": c.sha, "subject": c.subject, "date": c.date} for c in self.commits],
        }


def between(forward: Sequence[Commit], backward: Sequence[Commit], *, same: bool = False) -> Between:
    """From ``commit_range(a, b)`` (``forward``) and ``commit_range(b, a)`` (``backward``), oldest first."""
    if same:
        return Between("same")
    if forward and not backward:
        return Between("forward", tuple(reversed(forward)))
    if backward and not forward:
        return Between("backward", tuple(reversed(backward)))
    return Between("diverged", tuple(reversed(forward)))


def _flat(prefix: str, value: object, out: dict[str, object]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), item, out)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
        for index, item in enumerate(value):
            _flat(f"{prefix}[{index}]", item, out)
    else:
        out[prefix] = value


def differences(a: object, b: object, prefix: str) -> list[Difference]:
    """Every leaf key (dotted, ``[i]`` for list items) whose value differs between ``a`` and ``b``."""
    fa: dict[str, object] = {}
    fb: dict[str, object] = {}
    _flat(prefix, a, fa)
    _flat(prefix, b, fb)
    return [Difference(k, fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)]
