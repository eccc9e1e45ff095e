"""The public path of a place's noise: ``patchkit.bench.verdict.noise_of`` (and ``Noise``, what it returns).

The verdicts live in ``patchkit.bench.stats.verdict`` with the other pure statistics; this
module keeps the import path that scripts and notebooks use, and nothing else.
"""

from __future__ import annotations

from patchkit.bench.stats.verdict import Noise, noise_of

__all__ = ["Noise", "noise_of"]
