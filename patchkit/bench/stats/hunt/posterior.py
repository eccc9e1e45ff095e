"""The posterior over the first bad position, as the model hands it to the policy: a mass per gap between
consecutive measured positions, spread evenly over the gap's commits, or, while the hunt is pruned, over the
gap's *relevant* commits only (``rank``): an inert commit holds no mass of its own and takes its relevant
predecessor's side, so its P(bad) is that commit's.

Everything the policy and the answer read from the model's belief goes through these few questions (the mass
of one commit, P(bad) at a position, a quantile, the credible range), so they do not depend on how the
masses were computed.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Posterior:
    """Posterior of the first bad position: mass per gap between consecutive measured positions."""

    marks: tuple[int, ...]  # measured positions, ascending (0 and size-1 among them once measured)
    masses: tuple[float, ...]  # mass of gap j: first bad in (marks[j], marks[j+1]]
    cum: tuple[float, ...] = ()  # mass of the gaps before gap j
    rank: tuple[int, ...] = ()  # pruned: rank[p] = relevant positions in 1..p (a gap's mass is theirs); () = every one

    def count(self, a: int, b: int) -> int:
        """The positions in ``(a, b]`` that can hold mass: all of them, or the relevant ones while pruned."""
        return b - a if not self.rank else self.rank[b] - self.rank[a]

    def nth(self, a: int, i: int) -> int:
        """The ``i``-th position after ``a`` that can hold mass (``i >= 1``)."""
        return a + i if not self.rank else bisect.bisect_left(self.rank, self.rank[a] + i)

    def __post_init__(self) -> None:
        if not self.cum:
            object.__setattr__(self, "cum", tuple(itertools.accumulate(self.masses, initial=0.0)))

    def holds(self, p: int) -> bool:
        """Whether position ``p`` can hold mass: any, or while pruned a relevant one."""
        return not self.rank or self.rank[p] > self.rank[p - 1]

    def best_single(self) -> tuple[int, float] | None:
        """The single position with the most mass, among gaps one commit wide."""
        best: tuple[int, float] | None = None
        for j, mass in enumerate(self.masses):
            a = self.marks[j]
            if self.count(a, self.marks[j + 1]) == 1 and (best is None or mass > best[1]):
                best = (self.nth(a, 1), mass)
        return best

    def single(self, k: int) -> float:
        """The mass of position ``k`` alone."""
        return self.mass_between(k, k)

    def cdf(self, pos: int) -> float:
        """P(first bad <= pos): the posterior that position ``pos`` is bad."""
        j = bisect.bisect_right(self.marks, pos) - 1  # pos lies in gap j: (marks[j], marks[j+1]]
        if pos <= self.marks[0]:
            return 0.0
        if j >= len(self.masses):
            return 1.0
        if pos == self.marks[j]:
            return self.cum[j]
        a, b = self.marks[j], self.marks[j + 1]
        if self.rank:
            width = self.count(a, b)
            return min(self.cum[j] + self.masses[j] * self.count(a, pos) / width, 1.0) if width else self.cum[j]
        return min(self.cum[j] + self.masses[j] * (pos - a) / (b - a), 1.0)

    def quantile(self, q: float) -> int | None:
        """The smallest position whose cdf reaches ``q``."""
        cum = 0.0
        for j, mass in enumerate(self.masses):
            if mass > 0 and cum + mass >= q:
                a, b = self.marks[j], self.marks[j + 1]
                width = self.count(a, b)
                return self.nth(a, min(width, max(1, round((q - cum) / mass * width))))
            cum += mass
        return None

    def credible(self, alpha: float) -> tuple[int, int]:
        """The equal-tailed ``1 - alpha`` range of the first bad position."""
        lo = self._first_reaching(alpha / 2, strictly=True)
        hi = self._first_reaching(1 - alpha / 2, strictly=False)
        return (lo if lo is not None else self.marks[0] + 1), (hi if hi is not None else self.marks[-1])

    def _first_reaching(self, q: float, *, strictly: bool) -> int | None:
        """The first position whose cdf exceeds ``q`` (``strictly``) or reaches it."""
        for j, mass in enumerate(self.masses):
            a, b = self.marks[j], self.marks[j + 1]
            top = self.cum[j] + mass
            if (top > q) if strictly else (top >= q):
                if mass <= 0:
                    return b
                # cdf(a + i) = cum + mass * i / w: the least i in 1..w past q (the i-th relevant one while pruned).
                width = self.count(a, b)
                i = (q - self.cum[j]) / mass * width
                step = math.floor(i) + 1 if strictly else math.ceil(i - 1e-12)
                pos = self.nth(a, min(width, max(1, step)))
                while pos > a + 1 and ((self.cdf(pos - 1) > q) if strictly else (self.cdf(pos - 1) >= q)):
                    pos -= 1
                while pos < b and not ((self.cdf(pos) > q) if strictly else (self.cdf(pos) >= q)):
                    pos += 1
                return pos
        return None

    def mass_between(self, lo: int, hi: int) -> float:
        return self.cdf(hi) - self.cdf(lo - 1)
