"""``Memo``: the one kind of process-wide memo the analysis keeps, with a bound.

A range check reads hundreds of versions of each target file, and most of
what an op computes depends on a piece of source text alone (a statement, a
def's lines, a payload's node), not on the version it came from.  Those
values are kept across versions in a ``Memo``: a ``dict`` that never holds
more than its ``bound`` entries, however many versions a process reads (a
long check, the guard's pytest plugin in a long session).

Reading is a plain dict lookup (``get``, ``in``, ``[]``), with no
bookkeeping: the analysis reads a memo far more often than it adds to one.
Adding an entry to a full memo first drops the older half, in the order the
entries were added, so what the latest versions shared is kept.  ``clear()``
empties one (tests start from an empty memo that way).  Entries are added
with ``memo[key] = value`` only: ``update`` and ``setdefault`` would bypass
the bound.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(dict[K, V]):
    """A dict of at most ``bound`` entries; ``name`` says what it remembers (for a reader, and repr)."""

    def __init__(self, name: str, bound: int) -> None:
        if bound < 2:
            raise ValueError(f"a memo's bound must be 2 or more, not {bound}")
        super().__init__()
        self.name = name
        self.bound = bound

    def __setitem__(self, key: K, value: V) -> None:
        if len(self) >= self.bound and key not in self:
            kept = list(self.items())[len(self) - self.bound // 2 :]
            super().clear()
            super().update(kept)
        super().__setitem__(key, value)

    def __repr__(self) -> str:
        return f"Memo({self.name!r}, {len(self)} of {self.bound})"
