"""The A/A run of ``patchkit noise``: one commit against itself, the launch-to-launch spread kept as the prior.

Per metric, each launch's value is the median of its measured runs; the
spread is the standard deviation of the logs of those values (so 0.03 is
about 3 %), with N - 1 degrees of freedom (``verdict.noise_of``), without
the launches ``verdict.outliers`` flags (listed by index in ``outliers``): one
launch 30 % slow in ten would widen the prior of every later comparison
tenfold.  The prior is stored with the GPUs its launches ran on (one GPU
model, ``verdict.gpu_label``) and the launches it kept, so that a bisect can
refuse it on other GPUs and say how old it is, and with each launch's log
offset from their median (``verdict.offsets``): a second mode of the launch
noise (a fifth of the launches a few percent slower) shows there, and the
hunt's model takes it in.  As a check
of the statistics, the launches are also split into the odd and the even ones
(interleaved, A1 B1 A2 B2 ...) and compared with the verdict ``compare``
uses: an A/A comparison must come out ``same`` or ``unknown``, never
``different``; ``different`` there means the launches drift (a warming
machine, another tenant), and the spread is not stored.  Nothing is stored
from an interrupted run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import NotRequired, TypedDict

from patchkit.bench.records.compare import launch_values
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.records.store import Store
from patchkit.bench.stats.verdict import Call, gpu_label, judge, noise_of, offsets, outliers


class AaRow(TypedDict):
    """One metric's row of the A/A report (``noise --json``'s ``profiles[].metrics[]``)."""

    metric: str
    launches: int
    values: list[float]
    outliers: list[int]
    median: float | None
    sigma: float | None
    df: int | None
    aa: dict[str, object]
    stored: bool
    why: str
    plan: NotRequired[dict[str, object] | None]  # noise: the hunt this spread plans, added by the command


class ProfileNoise(TypedDict):
    """One profile's A/A report (``keep_priors``)."""

    profile: str
    host: str
    metrics: list[AaRow]


def aa_report(launches: Sequence[RunRecord], *, threshold: float) -> list[AaRow]:
    """Per metric: the launch values, their spread, and the odd-against-even A/A verdict."""
    names = list(dict.fromkeys(name for r in launches for name in r.samples))
    rows = []
    for name in names:
        values = launch_values(launches, name)
        spread = noise_of(values)
        flagged = outliers(values)
        odd, even = values[0::2], values[1::2]
        aa = judge(odd, even, threshold=threshold, confidence=0.99, noise=None)
        row: AaRow = {
            "metric": name,
            "launches": len(values),
            "values": list(values),
            "outliers": [i for i, out in enumerate(flagged) if out],  # left out of the spread (verdict.outliers)
            "median": statistics.median(values) if values else None,
            "sigma": None if spread is None else spread.sigma,
            "df": None if spread is None else spread.df,
            "aa": aa.as_json(),
            "stored": False,
            "why": "",
        }
        if spread is None:
            row["why"] = "fewer than 2 usable launches"
        elif aa.call is Call.DIFFERENT:
            row["why"] = "the odd and even launches differ: the machine drifts; not stored"
        else:
            row["stored"] = True
            row["why"] = "stored as the prior of this profile where these launches ran"
        rows.append(row)
    return rows


def keep_priors(
    store: Store,
    records: Sequence[RunRecord],
    *,
    place: str,
    profile: str,
    threshold: float,
    commit: str,
    series: str,
    interrupted: bool,
) -> ProfileNoise:
    """One profile's A/A report (``noise --json``'s ``profiles[]``), each spread that passed the check stored
    as the prior of ``place`` (``executor.prior_place``), profile and metric, unless the run was interrupted."""
    report = aa_report(records, threshold=threshold)
    gpus = {gpu_label(r.gpus) for r in records if r.outcome is Outcome.OK}
    gpu = gpus.pop() if len(gpus) == 1 else None  # launches on mixed GPUs: not one GPU's prior
    for row in report:
        if row["stored"] and not interrupted:
            assert row["sigma"] is not None and row["df"] is not None  # stored: the spread was measured
            store.add_noise(
                host=place,
                profile=profile,
                metric=row["metric"],
                sigma=row["sigma"],
                df=row["df"],
                commit=commit,
                series=series,
                gpu=gpu,
                launches=row["df"] + 1,
                offsets=offsets(row["values"]),
            )
        elif row["stored"]:
            row["stored"] = False
            row["why"] = "interrupted: not stored"
    return {"profile": profile, "host": place, "metrics": report}
