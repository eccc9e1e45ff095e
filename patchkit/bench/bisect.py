"""The public path of the noise-aware search: ``patchkit.bench.bisect.bisect``, ``Measurement``, ``BisectReport``.

The search lives in ``patchkit.bench.stats.search`` with the other pure statistics; this
module keeps the import path that scripts and notebooks use, and nothing else.
"""

from __future__ import annotations

from patchkit.bench.stats.search import BisectReport, Measurement, bisect

__all__ = ["BisectReport", "Measurement", "bisect"]
