"""Levels and verdicts along the commit axis, per metric and profile.

A server launch is the unit of variance (``patchkit/bench/stats/verdict.py``): the
launches of a commit are its ``ok`` runs, each one started server, and a
launch's value is that run's median over its measured client runs.  Each
benchmarked commit gets its level: the median of its launch values, and the
interval ``verdict.level`` gives over them (the rule ``compare``'s verdicts
use, at the same confidence), so the page draws one point per launch and one
median with its interval per commit.  Each commit with runs is judged against
the previous benchmarked commit on the axis (same profile, same metric) with
``verdict.judge``, at its default confidence and the threshold given.

The noise prior ``patchkit noise`` stored for the place (host or Slurm partition), profile and metric
of the later commit's runs is used where there is one (``noise`` in the
pair).  Without one, a side with one launch cannot be judged (``judge``
documents the verdict as ``unknown`` with no estimate): such pairs are listed
with ``verdict: null`` and the launches per side, so the page can say to
launch the commits again (or to run ``patchkit noise``), and scipy is
imported only when some pair can be judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from statistics import median
from typing import NotRequired, TypedDict

from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.stats.spread import Noise

THRESHOLD = 0.05


class _Prior(TypedDict):
    sigma: float
    df: int


class _Level(TypedDict):
    metric: str
    profile: str
    commit: str
    runs: list[int | None]
    launches: list[float]
    median: float
    noise: _Prior | None
    interval: dict[str, object] | None


class _Pair(TypedDict):
    metric: str
    profile: str
    previous: str
    commit: str
    runs_a: list[int | None]
    runs_b: list[int | None]
    noise: _Prior | None
    verdict: dict[str, object] | None
    _values: NotRequired[tuple[list[float], list[float]]]  # A's and B's launches, until judged


def verdicts_document(
    records: Sequence[RunRecord],
    axis: Sequence[str],
    metrics: Sequence[str],
    *,
    noise: Mapping[tuple[str, str, str], Noise] | None = None,
    threshold: float = THRESHOLD,
) -> dict[str, object]:
    """``{"version", "threshold", "basis", "levels": [...], "pairs": [...]}``: docs/json.md "report" ("verdicts")."""
    position = {sha: i for i, sha in enumerate(axis)}
    launches: dict[tuple[str, str], dict[str, list[tuple[int | None, float]]]] = {}
    hosts: dict[tuple[str, str], str] = {}  # (profile, commit) -> the host of its latest launch
    for r in records:
        if r.outcome is not Outcome.OK or r.commit.sha not in position or r.without is not None:
            continue  # a `bench --without` launch measured another tree than the manifests': not this commit's level
        hosts[(r.profile, r.commit.sha)] = r.place  # the key of its noise prior: host, or Slurm partition
        for metric in metrics:
            value = r.median(metric)
            if value is not None and value > 0:
                launches.setdefault((metric, r.profile), {}).setdefault(r.commit.sha, []).append((r.run_id, value))

    def prior(metric: str, profile: str, commit: str) -> _Prior | None:
        found = (noise or {}).get((hosts[(profile, commit)], profile, metric))
        return None if found is None else {"sigma": found.sigma, "df": found.df}

    levels: list[_Level] = []
    pairs: list[_Pair] = []
    for (metric, profile), by_commit in launches.items():
        ordered = sorted(by_commit, key=position.__getitem__)
        for commit in ordered:
            values = [v for _, v in by_commit[commit]]
            levels.append(
                {
                    "metric": metric,
                    "profile": profile,
                    "commit": commit,
                    "runs": [run for run, _ in by_commit[commit]],
                    "launches": values,
                    "median": median(values),
                    "noise": prior(metric, profile, commit),
                    "interval": None,
                }
            )
        for previous, commit in pairwise(ordered):
            a, b = by_commit[previous], by_commit[commit]
            pairs.append(
                {
                    "metric": metric,
                    "profile": profile,
                    "previous": previous,
                    "commit": commit,
                    "runs_a": [run for run, _ in a],
                    "runs_b": [run for run, _ in b],
                    "noise": prior(metric, profile, commit),
                    "verdict": None,
                    "_values": ([v for _, v in a], [v for _, v in b]),
                }
            )
    judgeable = [p for p in pairs if p["noise"] is not None or min(map(len, p["_values"])) >= 2]
    measurable = [lv for lv in levels if lv["noise"] is not None or len(lv["launches"]) >= 2]
    if judgeable or measurable:
        from patchkit.bench.stats.verdict import Noise, judge, level  # scipy: only when a verdict can be reached

        def spread(found: _Prior | None) -> Noise | None:
            return None if found is None else Noise(float(found["sigma"]), int(found["df"]))

        for pair in judgeable:
            a_values, b_values = pair["_values"]
            pair["verdict"] = judge(a_values, b_values, threshold=threshold, noise=spread(pair["noise"])).as_json()
        for found in measurable:
            found["interval"] = level(found["launches"], noise=spread(found["noise"])).as_json()
    for pair in pairs:
        del pair["_values"]
    return {
        "version": 1,
        "threshold": threshold,
        "basis": "one value per server launch: the median of each ok run; B is a commit, A the previous "
        "benchmarked commit on the axis (same profile and metric)",
        "levels": levels,
        "pairs": pairs,
    }
