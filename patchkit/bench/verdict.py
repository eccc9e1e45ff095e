"""The three-way verdict on one metric between two sides, from per-launch values.

Why launches: the spread between server launches (placement, clocks, the memory
layout of a freshly loaded model) is several times the spread of client runs
inside one launch, so a test fed the client runs calls noise a change.  Each
side here is one value per launch (that launch's aggregate over its measured
runs), and only launches count as replicates.

The comparison works on logarithms, so the estimate is the ratio of the
geometric means (B over A) and its confidence interval is a Student-t interval
on the difference of mean logs:

* with a noise prior (the launch-to-launch spread that ``patchkit noise``
  measured where the launches run, for the profile) and a side with fewer than
  ``PRIOR_UNTIL`` launches, the spread is the prior pooled with both sides'
  own spread, weighted by degrees of freedom, with the pooled degrees of
  freedom;
* otherwise, with at least two launches per side, Welch's interval
  (``scipy.stats.ttest_ind(equal_var=False).confidence_interval``);
* with one launch on a side and no prior, nothing is known about the spread:
  the verdict is ``unknown`` and the number of launches needed cannot be
  estimated (``launches_needed`` is None); ``next`` says what would decide it:
  a prior from ``patchkit noise``, or two launches a side, after which the
  verdict names a count.

With one launch a side and a prior, the prior is the spread (a host's launch
noise is known before the comparison, which is what ``patchkit noise`` is
for), so a change far outside the band is ``different`` at once; one that is
not is ``unknown`` with the launches per side that would decide it.

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
with its interval, by the same spread rules (the prior pooled in below
``PRIOR_UNTIL`` launches; else Student's t over the launches; one launch and
no prior: unknown).  The report draws it per benchmarked commit, so the
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

from patchkit.render import plural

PRIOR_UNTIL = 8  # a noise prior is used while either side has fewer launches than this
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
class Noise:
    """Launch-to-launch spread of one metric: the standard deviation of log values, with its degrees of freedom.

    ``sigma`` is on the log scale, so 0.03 is about 3 % between launches.  ``df``
    is the number of launches that measured it minus one: it weighs the prior
    against the launches of a comparison.
    """

    sigma: float
    df: int

    def __post_init__(self) -> None:
        if not (self.sigma >= 0 and math.isfinite(self.sigma)):
            raise ValueError(f"noise sigma must be a finite number >= 0, got {self.sigma!r}")
        if self.df < 1:
            raise ValueError(f"noise df must be >= 1, got {self.df!r}")


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

    Values must be positive (throughputs, latencies): the spread is that of their logs.
    """
    logs = _logs(launches)
    if logs is None or len(logs) < 2:
        return None
    return Noise(sigma=_sd(logs), df=len(logs) - 1)


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
) -> Verdict:
    """B against A for one metric, from one value per launch on each side."""
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
    use_prior = noise is not None and min(n_a, n_b) < PRIOR_UNTIL
    if use_prior:
        assert noise is not None
        sigma, df = _with_prior(noise, la, lb)
        half = t_critical(confidence, df) * sigma * math.sqrt(1 / n_a + 1 / n_b)
        how = f"spread {sigma:.2%} from the noise prior ({noise.df} df) pooled with the launches"
    elif n_a >= 2 and n_b >= 2:
        sa, sb = _sd(la), _sd(lb)
        if sa == 0 and sb == 0:
            # Identical launches: scipy's interval is undefined; the spread is measured as zero.
            sigma, df, half = 0.0, float(n_a + n_b - 2), 0.0
        else:
            test = stats.ttest_ind(lb, la, equal_var=False)
            interval = test.confidence_interval(confidence_level=confidence)
            half = (float(interval.high) - float(interval.low)) / 2
            df = float(test.df)
            sigma = math.sqrt(((n_a - 1) * sa**2 + (n_b - 1) * sb**2) / (n_a + n_b - 2))
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
    if noise is not None and n < PRIOR_UNTIL:
        sigma, df = _with_prior(noise, logs)
        how = f"spread {sigma:.2%} from the noise prior ({noise.df} df) pooled with the launches"
    elif n >= 2:
        sigma, df = _sd(logs), float(n - 1)
        how = "Student interval over the launches"
    else:
        return unknown("1 launch and no noise prior: the launch-to-launch spread is unknown", math.exp(mean))
    half = t_critical(confidence, df) * sigma / math.sqrt(n) if sigma > 0 else 0.0
    return Level(
        n=n,
        center=math.exp(mean),
        low=math.exp(mean - half),
        high=math.exp(mean + half),
        confidence=confidence,
        sigma=sigma,
        df=df,
        prior_used=noise is not None and n < PRIOR_UNTIL,
        why=f"{plural(n, 'launch', 'launches')}; {how}",
    )


def launches_needed(diff: float, sigma: float, *, threshold: float, confidence: float, prior_df: int = 0) -> int | None:
    """Launches per side for the interval to clear the band's nearer edge, at this estimate and spread.

    ``diff`` is the estimated difference of mean logs.  None when the estimate
    sits on an edge of the band or more than ``MAX_NEEDED`` launches would be needed.
    """
    edge = math.log1p(threshold)
    room = abs(abs(diff) - edge)
    if sigma == 0:
        return 2
    if room == 0:
        return None
    for n in range(2, MAX_NEEDED + 1):
        df = prior_df + 2 * (n - 1)
        if t_critical(confidence, df) * sigma * math.sqrt(2 / n) < room:
            return n
    return None


def _with_prior(noise: Noise, *sides: Sequence[float]) -> tuple[float, float]:
    """(spread, its degrees of freedom): the prior pooled with each side's own spread of logs, weighted by df."""
    ss = 0.0
    for logs in sides:
        ss += _ss(logs)
    df = float(noise.df + sum(len(logs) - 1 for logs in sides))
    return math.sqrt((noise.df * noise.sigma**2 + ss) / df), df


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
