"""The bookkeeping of a hunt: every launch with its position, order and value, the failures, the commits given
up, and the model fitted to them (cached per launch count).

No decision is taken here beyond what a launch's value means for its commit: a value is kept (``order`` is its
place in the hunt, the drift's axis), a failed launch counts toward ``MAX_FAILURES``, after which a commit
without a value is skipped, like a commit ``git bisect`` cannot test, and one with values keeps them; a
``GiveUp`` (a refused run, a missing metric) gives its commit up at once.  Which positions to launch is the
policy's (``policy.py``), when to answer the driver's (``driver.py``).
"""

from __future__ import annotations

import math

import numpy as np

from patchkit.bench.stats.hunt.mask import Mask
from patchkit.bench.stats.hunt.model import Model
from patchkit.bench.stats.hunt.report import Failure, GiveUp, Side, Value
from patchkit.bench.stats.verdict import Noise, resolution_floor

MAX_FAILURES = 3  # failed launches of one commit before it is given up


class Launches:
    """Every launch (position, order, log value), the failures per position, and the skipped positions."""

    def __init__(self, size: int, noise: Noise | None, max_launches: int) -> None:
        self.size = size
        self.noise = noise
        self.max_launches = max_launches
        self.raw: dict[int, list[float]] = {}
        self.orders: dict[int, list[int]] = {}
        self.counts: dict[int, int] = {}
        self.failed: dict[int, int] = {}
        self.failures: list[Failure] = []
        self.skipped: set[int] = set()
        self.used = 0  # launches asked for, failed ones included (the budget's count)
        self.sign = 0.0  # -1: BAD lower than GOOD, +1: higher; 0 until the endpoints are told apart
        self.mask: Mask | None = None  # pruned: the positions that can be the first bad one (``mask.py``)
        self._model: Model | None = None
        self._model_at = -1
        self._model_mask: Mask | None = None

    def add(self, pos: int, value: Value) -> None:
        order = self.used
        self.used += 1
        if pos in self.skipped:
            return
        if isinstance(value, GiveUp) or value is None or not (math.isfinite(value) and value > 0):
            self.failed[pos] = MAX_FAILURES if isinstance(value, GiveUp) else self.failed.get(pos, 0) + 1
            self.failures.append(Failure(pos, order))
            if self.failed[pos] >= MAX_FAILURES and not self.counts.get(pos):
                self.skipped.add(pos)
            return
        self.raw.setdefault(pos, []).append(value)
        self.orders.setdefault(pos, []).append(order)
        self.counts[pos] = self.counts.get(pos, 0) + 1

    def can_launch(self, pos: int, pending: int = 0) -> bool:
        """Whether ``pos`` may be launched again: not skipped, under ``max_launches`` and ``MAX_FAILURES``."""
        if pos in self.skipped or self.failed.get(pos, 0) >= MAX_FAILURES:
            return False
        return self.counts.get(pos, 0) + pending < self.max_launches

    def values(self, pos: int) -> list[float]:
        return self.raw.get(pos, [])

    def measured_positions(self) -> list[int]:
        return sorted(self.counts)

    def last_order(self, pos: int) -> int:
        orders = self.orders.get(pos)
        return orders[-1] if orders else -1

    def ready(self) -> bool:
        """Whether a model can be fitted: GOOD and BAD measured, and the step's direction known."""
        return 0 in self.counts and self.size - 1 in self.counts and self.sign != 0

    def model(
        self, exclude: tuple[int, int] | None = None, fixed: float | None = None, mask: Mask | str | None = "current"
    ) -> Model:
        """The fitted model over every launch (cached per launch count and mask), or without one launch
        (``exclude``: position and index among its launches), or with its posterior at ``fixed`` times the
        fitted spread; under the current mask, or under ``mask`` (None: none; the check of a named commit)."""
        mask = self.mask if isinstance(mask, str) else mask
        plain = exclude is None and fixed is None and mask is self.mask
        if plain and self._model is not None and self._model_at == self.used and self._model_mask is self.mask:
            return self._model
        pos, x, t = [], [], []
        for p in self.measured_positions():
            for i, (value, order) in enumerate(zip(self.raw[p], self.orders[p], strict=True)):
                if exclude == (p, i):
                    continue
                pos.append(p)
                x.append(math.log(value))
                t.append(order)
        floor = resolution_floor([v for p in self.counts for v in self.raw[p]])
        model = Model.fit(np.array(pos), np.array(x), np.array(t, dtype=float), self.size, self.sign,
                          self.noise, floor, fixed, None if mask is None else mask.rank)  # fmt: skip
        if plain:
            self._model, self._model_at, self._model_mask = model, self.used, self.mask
        return model

    def sides(self, model: Model | None = None) -> list[Side]:
        """Every measured commit as the report shows it: its launches, P(bad) and outlier flags under ``model``
        (the current one when the model can be fitted; none before)."""
        if model is None and self.ready():
            model = self.model()
        out = []
        for p in self.measured_positions():
            flags = model.outlier_flags(p) if model is not None else ()
            p_bad = model.posterior.cdf(p) if model is not None else math.nan
            out.append(Side(p, tuple(self.raw[p]), p_bad, tuple(flags), tuple(self.orders[p])))
        return out
