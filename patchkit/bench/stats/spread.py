"""A launch-to-launch spread with where it came from: the noise prior of compare and bisect.

Its own module, free of scipy: the store returns priors (``Store.noise``), and
the verbs that only list runs must not import the statistics to read them.
``patchkit.bench.stats.verdict`` re-exports both names, their public path.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Noise:
    """Launch-to-launch spread of one metric: the standard deviation of log values, with its degrees of freedom.

    ``sigma`` is on the log scale, so 0.03 is about 3 % between launches.  ``df``
    is the number of launches that measured it minus one: it weighs the prior
    against the launches of a comparison.
    """

    sigma: float
    df: int
    # Where it came from, when it was stored by `patchkit noise` (None for a prior made in code):
    measured_at: str | None = None  # UTC, ISO 8601
    place: str | None = None  # the host, or the Slurm partition (and constraint) the A/A launches ran on
    gpu: str | None = None  # the GPUs they ran on (``gpu_label``), None where no GPU facts were recorded
    launches: int | None = None  # the A/A run's usable launches
    # Each A/A launch as its log offset from the A/A's median, those left out of the spread as outliers too: where
    # several sit at one offset, the launch noise has a second mode, and the hunt's model takes it in.
    offsets: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not (self.sigma >= 0 and math.isfinite(self.sigma)):
            raise ValueError(f"noise sigma must be a finite number >= 0, got {self.sigma!r}")
        if self.df < 1:
            raise ValueError(f"noise df must be >= 1, got {self.df!r}")


def gpu_label(gpus: Sequence[Mapping[str, object]] | None) -> str | None:
    """The GPUs of a run as one comparable string: each model name with its count (``NVIDIA H200 x8``), None
    without GPU facts."""
    if not gpus:
        return None
    names = Counter(str(g.get("name") or "unknown") for g in gpus)
    return ", ".join(f"{name} x{count}" for name, count in sorted(names.items()))
