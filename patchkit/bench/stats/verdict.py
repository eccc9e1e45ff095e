"""The three-way verdict on one metric between two sides, from per-launch values.

Why launches: the spread between server launches (placement, clocks, the memory
layout of a freshly loaded model) is several times the spread of client runs
inside one launch, so a test fed the client runs calls noise a change.  Each
side here is one value per launch (that launch's aggregate over its measured
runs), and only launches count as replicates.

The comparison works on logarithms, so the estimate is the ratio of the
geometric means (B over A) and its confidence interval is a Student-t interval
on the difference of mean logs:

* each side's spread is its own launches' pooled with the noise prior by
  degrees of freedom (the launch-to-launch spread that ``patchkit noise``
  measured where the launches run, for the profile): a conjugate update, so
  the prior counts fully at one launch and fades as launches accumulate, with
  no switch at a launch count.  When both sides share one prior (``noise``),
  each takes half its degrees of freedom, so it is counted once; sides
  measured in different places pass their own (``noise`` for A, ``noise_b``
  for B).  The interval is then Welch's: each side's variance over its
  launches, with Welch-Satterthwaite degrees of freedom, so a side that
  scatters more is not hidden by a quiet one;
* without a prior, with at least two launches per side, the same interval
  from the launches alone;
* with one launch on a side and no prior, nothing is known about the spread:
  the verdict is ``unknown`` and the number of launches needed cannot be
  estimated (``launches_needed`` is None); ``next`` says what would decide it:
  a prior from ``patchkit noise``, or two launches a side, after which the
  verdict names a count.

A side's spread is never below its values' resolution (``resolution_floor``):
a metric printed to one decimal cannot show a spread under its rounding, and
launches that repeat to the last digit give an interval of that width, not
one of zero width that reads as ``different`` for any change.

Verdict, with the band ``[1/(1+t), 1+t]`` for the threshold ``t``:

* ``same``: the whole interval lies inside the band (no change as large as
  the threshold);
* ``different``: the whole interval lies outside it, on one side
  (``direction`` says which: ``higher`` or ``lower``, B against A);
* ``unknown``: the interval straddles an edge of the band.  Then
  ``launches_needed`` estimates how many launches per side would shrink the
  interval enough, at the present estimate and spread, and ``next`` says it
  in words (or why no count would do).

With ``threshold = 0`` the band is the single ratio 1: ``same`` is impossible
and ``different`` means the interval excludes 1 (used by the bisect for GOOD
against BAD, where any confident change is the one being hunted).

``level`` is one side alone: the geometric mean of one commit's launches
with its interval, by the same spread rules (the prior pooled in by degrees
of freedom; one launch and no prior: unknown).  The report draws it per benchmarked commit, so the
picture's intervals and ``compare``'s verdicts come from one rule.

scipy is imported here and this module is imported only by the verbs that
compare (``compare``, ``noise``, ``bisect``), so the other verbs start without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from scipy import stats

from patchkit.bench.stats.spread import Noise, gpu_label
from patchkit.wording import plural

__all__ = ["Noise", "gpu_label", "judge", "level", "noise_of"]  # Noise, gpu_label: from the scipy-free spread module

OUTLIER_MADS = 5.0  # a launch this many robust spreads (Qn) from the median is an outlier of an A/A run
QN_SMALL = {2: 0.399, 3: 0.994, 4: 0.512, 5: 0.844, 6: 0.611, 7: 0.857, 8: 0.669, 9: 0.872}  # Qn's finite-n factors
POWER = 0.8  # launches_needed plans for this chance of a decided interval
MAX_NEEDED = 1000  # launches_needed above this is reported as None (not worth planning)
NO_SPREAD = "run `patchkit noise` for a noise prior, or launch each side at least twice"


class Call(str, Enum):
    """The three answers.  ``str()`` is the value written in tables and JSON."""

    DIFFERENT = "different"
    SAME = "same"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Verdict:
    """One metric, B against A: launches per side, ratio with interval, the call, and what to do next."""

    n_a: int
    n_b: int
    ratio: float | None  # geometric mean of B over that of A
    low: float | None  # the confidence interval of the ratio
    high: float | None
    confidence: float
    threshold: float
    call: Call
    direction: str | None  # "higher" / "lower" (B against A) when different
    launches_needed: int | None  # per side, when unknown and estimable
    sigma: float | None  # the launch-to-launch spread used (log scale)
    df: float | None  # its degrees of freedom
    prior_used: bool
    why: str  # one line: how the call was reached, or why it could not be
    next: str | None = None  # when unknown: what would decide it (launches per side, or a noise prior)

    def as_json(self) -> dict[str, object]:
        return {
            "launches_a": self.n_a,
            "launches_b": self.n_b,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "verdict": self.call.value,
            "direction": self.direction,
            "launches_needed": self.launches_needed,
            "sigma": self.sigma,
            "df": self.df,
            "prior_used": self.prior_used,
            "why": self.why,
            "next": self.next,
        }


def noise_of(launches: Sequence[float]) -> Noise | None:
    """The launch-to-launch spread of one commit's launches (an A/A run), or None with fewer than two.

    Values must be positive (throughputs, latencies): the spread is that of their
    logs, without the launches ``outliers`` flags (one launch in a few dozen runs
    20-40 % slow on a real server; kept in, it would make the prior of every later
    comparison ten times too wide).
    """
    logs = _logs(launches)
    if logs is None:
        return None
    flags = outliers(launches)
    kept = [x for x, out in zip(logs, flags, strict=True) if not out]
    if len(kept) < 2:
        return None
    return Noise(sigma=_sd(kept), df=len(kept) - 1, offsets=_offsets(logs))


def offsets(launches: Sequence[float]) -> tuple[float, ...]:
    """Each launch's log offset from the launches' median, in order (none for values that are not all positive):
    what the prior keeps of an A/A run besides its spread, so that the hunt can see a second mode in it."""
    return _offsets(_logs(launches))


def _offsets(logs: Sequence[float] | None) -> tuple[float, ...]:
    if not logs:
        return ()
    mid = _median(sorted(logs))
    return tuple(x - mid for x in logs)


def outliers(launches: Sequence[float]) -> list[bool]:
    """Which launches lie farther than ``OUTLIER_MADS`` robust spreads (Rousseeuw and Croux's Qn of the logs, at
    least the values' resolution) from the median: fewer than three launches flag nothing.

    Why Qn and not the median absolute deviation: an A/A run is ten or so launches, and at that size the MAD is
    a poor estimate (37 % efficient): five launches that happen to cluster make it small, ordinary launches
    then read as outliers, and the prior comes out too small, the very staleness the hunt must then catch.
    Seeded: 3.4 % of ten-launch Gaussian runs lost launches to the MAD at five spreads, 0.9 % to Qn."""
    logs = _logs(launches)
    if logs is None or len(logs) < 3:
        return [False] * len(launches)
    mid = _median(sorted(logs))
    scale = max(_qn(logs), resolution_floor(launches), 1e-12)
    return [abs(x - mid) > OUTLIER_MADS * scale for x in logs]


def _qn(logs: Sequence[float]) -> float:
    """Rousseeuw and Croux's Qn: the h-choose-2-th smallest pairwise distance (h = n // 2 + 1), scaled to a
    Gaussian's standard deviation with its finite-sample factor."""
    n = len(logs)
    h = n // 2 + 1
    pairs = sorted(abs(logs[i] - logs[j]) for i in range(n) for j in range(i + 1, n))
    factor = QN_SMALL.get(n, n / (n + 1.4) if n % 2 else n / (n + 3.8))
    return 2.2219 * pairs[h * (h - 1) // 2 - 1] * factor


def _median(ordered: Sequence[float]) -> float:
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def pooled_noise(groups: Sequence[Sequence[float]]) -> Noise | None:
    """The spread pooled over several commits' launches (each group its own mean), or None without df."""
    ss, df = 0.0, 0
    for group in groups:
        logs = _logs(group)
        if logs is None or len(logs) < 2:
            continue
        mean = math.fsum(logs) / len(logs)
        ss += math.fsum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
    if df == 0:
        return None
    return Noise(sigma=math.sqrt(ss / df), df=df)


@lru_cache(maxsize=4096)
def t_critical(confidence: float, df: float) -> float:
    """Two-sided Student-t critical value (cached: the bisect asks for the same few df again and again)."""
    return float(stats.t.ppf(0.5 + confidence / 2, df))


def judge(
    a: Sequence[float],
    b: Sequence[float],
    *,
    threshold: float = 0.05,
    confidence: float = 0.99,
    noise: Noise | None = None,
    noise_b: Noise | None = None,
) -> Verdict:
    """B against A for one metric, from one value per launch on each side.

    ``noise``: the prior of both sides, or of A alone when ``noise_b`` gives B's
    (sides measured in different places)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    n_a, n_b = len(a), len(b)

    def unknown(why: str, **known: object) -> Verdict:
        fields: dict[str, object] = {
            "ratio": None,
            "low": None,
            "high": None,
            "launches_needed": None,
            "sigma": None,
            "df": None,
            "prior_used": False,
        }
        fields.update(known)
        return Verdict(
            n_a=n_a, n_b=n_b, confidence=confidence, threshold=threshold, call=Call.UNKNOWN, direction=None,
            why=why, **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    if n_a == 0 or n_b == 0:
        return unknown("a side has no launch", next="launch both sides")
    la, lb = _logs(a), _logs(b)
    if la is None or lb is None:
        return unknown("a value is zero, negative or not a number: ratios need positive values")
    diff = math.fsum(lb) / n_b - math.fsum(la) / n_a
    ratio = math.exp(diff)
    floor = resolution_floor([*a, *b])
    prior_a, prior_b = noise, (noise_b if noise_b is not None else noise)
    shared = noise_b is None  # one prior for both sides: its degrees of freedom are shared, counted once
    use_prior = prior_a is not None or prior_b is not None
    if use_prior or (n_a >= 2 and n_b >= 2):
        va, dfa = _side_variance(la, prior_a, shared, floor)
        vb, dfb = _side_variance(lb, prior_b, shared, floor)
        if va is None or vb is None:
            missing = "A" if va is None else "B"
            return unknown(
                f"1 launch on side {missing} and no noise prior there: the launch-to-launch spread is unknown",
                ratio=ratio,
                next=NO_SPREAD,
            )
        se2 = va / n_a + vb / n_b
        df = se2 * se2 / ((va / n_a) ** 2 / dfa + (vb / n_b) ** 2 / dfb)  # Welch-Satterthwaite
        half = t_critical(confidence, df) * math.sqrt(se2)
        sigma = math.sqrt((va * dfa + vb * dfb) / (dfa + dfb))
        if use_prior:
            where = "the noise prior" if shared else "each side's noise prior"
            how = f"spread {sigma:.2%} from {where} pooled with each side's launches"
        else:
            how = "Welch interval over the launches"
    else:
        return unknown(
            f"{min(n_a, n_b)} launch on a side and no noise prior: the launch-to-launch spread is unknown",
            ratio=ratio,
            next=NO_SPREAD,
        )
    low, high = math.exp(diff - half), math.exp(diff + half)
    edge = math.log1p(threshold)
    then: str | None = None  # what would decide an unknown
    if diff - half > edge or diff + half < -edge:
        call, direction = Call.DIFFERENT, ("higher" if diff > 0 else "lower")
        why = f"the interval lies outside ±{threshold:.1%}; {how}"
        needed = None
    elif -edge <= diff - half and diff + half <= edge and threshold > 0:
        call, direction = Call.SAME, None
        why = f"the interval lies within ±{threshold:.1%}; {how}"
        needed = None
    else:
        call, direction = Call.UNKNOWN, None
        needed = launches_needed(diff, sigma, threshold=threshold, confidence=confidence, prior_df=_prior_df(noise))
        why = f"the interval straddles ±{threshold:.1%}; {how}"
        if needed is not None:
            then = f"about {plural(needed, 'launch', 'launches')} per side"
        elif threshold > 0:
            then = f"more than {MAX_NEEDED} launches per side: the change is about the size of ±{threshold:.1%}"
        else:
            then = f"more than {MAX_NEEDED} launches per side: the change is too small for the launch noise"
    return Verdict(
        n_a=n_a,
        n_b=n_b,
        ratio=ratio,
        low=low,
        high=high,
        confidence=confidence,
        threshold=threshold,
        call=call,
        direction=direction,
        launches_needed=needed,
        sigma=sigma,
        df=df,
        prior_used=use_prior,
        why=why,
        next=then,
    )


@dataclass(frozen=True)
class Level:
    """One side alone (one commit's launches): their geometric mean and its confidence interval."""

    n: int
    center: float | None  # the geometric mean of the launches
    low: float | None  # its confidence interval; None when the spread is unknown
    high: float | None
    confidence: float
    sigma: float | None  # the launch-to-launch spread used (log scale)
    df: float | None
    prior_used: bool
    why: str  # one line: how the interval was reached, or why it could not be

    def as_json(self) -> dict[str, object]:
        return {
            "launches": self.n,
            "center": self.center,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "sigma": self.sigma,
            "df": self.df,
            "prior_used": self.prior_used,
            "why": self.why,
        }


def level(values: Sequence[float], *, confidence: float = 0.99, noise: Noise | None = None) -> Level:
    """The level of one side, from one value per launch, with ``judge``'s spread rules."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    n = len(values)
    logs = _logs(values)

    def unknown(why: str, center: float | None = None) -> Level:
        return Level(n, center, None, None, confidence, None, None, False, why)

    if n == 0:
        return unknown("no launch")
    if logs is None:
        return unknown("a value is zero, negative or not a number: levels need positive values")
    mean = math.fsum(logs) / n
    variance, df = _side_variance(logs, noise, False, resolution_floor(values))
    if variance is None:
        return unknown("1 launch and no noise prior: the launch-to-launch spread is unknown", math.exp(mean))
    sigma = math.sqrt(variance)
    how = (
        f"spread {sigma:.2%} from the noise prior ({noise.df} df) pooled with the launches"
        if noise is not None
        else "Student interval over the launches"
    )
    half = t_critical(confidence, df) * sigma / math.sqrt(n)
    return Level(
        n=n,
        center=math.exp(mean),
        low=math.exp(mean - half),
        high=math.exp(mean + half),
        confidence=confidence,
        sigma=sigma,
        df=df,
        prior_used=noise is not None,
        why=f"{plural(n, 'launch', 'launches')}; {how}",
    )


def launches_needed(
    diff: float,
    sigma: float,
    *,
    threshold: float,
    confidence: float,
    prior_df: int = 0,
    power: float = POWER,
) -> int | None:
    """Launches per side for the interval to clear the band's nearer edge with probability ``power``, if the
    true difference is this estimate and the spread this one.

    ``diff`` is the estimated difference of mean logs.  The interval's half width
    must fit in the room between the estimate and the edge with the estimate's own
    sampling error to spare: ``(t + z_power) * sigma * sqrt(2 / n) < room``.  None
    when the estimate sits on an edge of the band or more than ``MAX_NEEDED``
    launches would be needed.
    """
    edge = math.log1p(threshold)
    room = abs(abs(diff) - edge)
    if sigma == 0:
        return 2
    if room == 0:
        return None
    z = float(stats.norm.ppf(power))
    for n in range(2, MAX_NEEDED + 1):
        df = prior_df + 2 * (n - 1)
        if (t_critical(confidence, df) + z) * sigma * math.sqrt(2 / n) < room:
            return n
    return None


def resolution_floor(values: Sequence[float]) -> float:
    """The least launch spread (log scale) values this coarse can show: a metric printed to ``q`` (its last
    digit, at most six decimals) has a rounding spread of ``q / sqrt(12)`` around the smallest value.  Launches
    that repeat to the last digit then give an interval of that width, never one of zero width."""
    positive = [v for v in values if isinstance(v, int | float) and math.isfinite(v) and v > 0]
    if not positive:
        return 0.0
    decimals = 0
    for value in positive:
        while decimals < 6 and abs(round(value, decimals) - value) > 1e-9 * max(abs(value), 1.0):
            decimals += 1
    return 10.0**-decimals / math.sqrt(12) / min(positive)


def _side_variance(
    logs: Sequence[float], prior: Noise | None, shared: bool, floor: float
) -> tuple[float | None, float]:
    """One side's variance of log values and its degrees of freedom: its own launches pooled with the prior by
    degrees of freedom (a conjugate update, at any launch count; half the prior's df when both sides share it,
    so that it is counted once), at least ``floor`` squared.  None without a prior and with one launch."""
    own = _ss(logs)
    own_df = len(logs) - 1
    if prior is not None:
        prior_df = prior.df / 2 if shared else float(prior.df)
        df = prior_df + own_df
        variance = (prior_df * prior.sigma**2 + own) / df
    elif own_df >= 1:
        df = float(own_df)
        variance = own / df
    else:
        return None, 0.0
    return max(variance, floor * floor, 1e-24), df


def _prior_df(noise: Noise | None) -> int:
    return noise.df if noise is not None else 0


def _logs(values: Sequence[float]) -> list[float] | None:
    out = []
    for value in values:
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            return None
        out.append(math.log(value))
    return out


def _ss(logs: Sequence[float]) -> float:
    if len(logs) < 2:
        return 0.0
    mean = math.fsum(logs) / len(logs)
    return math.fsum((x - mean) ** 2 for x in logs)


def _sd(logs: Sequence[float]) -> float:
    return math.sqrt(_ss(logs) / (len(logs) - 1))
