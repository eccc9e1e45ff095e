"""Which commits of a hunt's line could change what the launches ran: the types the pruning rule works on.

The hunt launches only where code that ran changed.  Two inputs, read elsewhere, meet here as plain values:

* ``Footprint``: what one commit changes, read from its blobs with no checkout (``patchkit.footprint``):
  per changed file, the function bodies that changed (by qualified name, as ``co_qualname`` spells it),
  or "module level" (anything outside a function body: imports, class bodies, decorators, defaults,
  constants, all of which run at import), or a non-Python file, or a build or dependency input.
* ``Ran``: what the probed processes of every launch of the hunt so far ran (``patchkit.proof``): the
  functions that started at least once, the tree's modules imported, the tree's other files read, and
  the reasons, if any, that the probe cannot vouch for what ran (``blind``).

The rule that joins them is a pure function of the two (this module), so that a reviewer can read it and a
test can call it with values.  Where in doubt, a commit is relevant.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ChangeKind(str, Enum):
    """What one change of a commit touches."""

    BODY = "body"  # the body of one function (``qualname``), and nothing of the def statement around it
    MODULE = "module"  # anything in a Python file outside a function body (runs at import)
    DATA = "data"  # a non-Python file
    BUILD = "build"  # a build or dependency input: never inert


@dataclass(frozen=True)
class Change:
    """One change a commit makes: the repository-relative ``path``, its ``kind``, and for ``BODY`` the function's
    qualified name (``Class.method``, ``outer.<locals>.inner``: ``co_qualname``'s spelling).  ``detail`` says in a
    few words what changed (``added``, ``removed``, ``body``, ``decorator``, ``import``, ...), for the suspects list."""

    path: str
    kind: ChangeKind
    qualname: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Footprint:
    """Everything one commit changes relative to its first parent, in path order."""

    commit: str
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Ran:
    """What the launches of one hunt ran: the union over every probed process of every launch so far.

    Paths are repository-relative (the launch's worktree root removed); files outside the tree are left out.
    ``granularity`` is the coarsest any process recorded: ``"function"`` (``sys.monitoring``, Python 3.12+) or
    ``"file"`` (older interpreters: which modules ran, not which functions).  ``blind`` holds one sentence per
    reason the probe cannot vouch for what ran (a Python process without the probe, an ``exec`` it did not
    follow, a worker that is not Python); while it is not empty, nothing is inert."""

    granularity: str
    functions: frozenset[tuple[str, str]]
    modules: frozenset[str]
    data_files: frozenset[str]
    blind: tuple[str, ...] = ()
