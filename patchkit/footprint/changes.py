"""The values a commit's footprint is made of: one ``Change`` per thing it changes, a ``Footprint`` per commit.

They live here, standard library only, so that the pure rule that judges them
(``patchkit.bench.stats.relevance``) and the git side that reads them (``line``) share
one definition without either importing the other's package.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ChangeKind(str, Enum):
    """What one change of a commit touches."""

    BODY = "body"  # the body of one function (``qualname``), and nothing of the def statement around it
    MODULE = "module"  # anything in a Python file outside a function body (runs at import)
    DATA = "data"  # a non-Python file
    BUILD = "build"  # a build or dependency input (or a submodule, a symbolic link): never inert
    FORMAT = "format"  # a Python file that compiles to the same code: comments, blank lines, layout


@dataclass(frozen=True)
class Change:
    """One change a commit makes: the repository-relative ``path``, its ``kind``, and for ``BODY`` the function's
    qualified name (``Class.method``, ``outer.<locals>.inner``: ``co_qualname``'s spelling).  ``detail`` says in a
    few words what changed (``added``, ``removed``, ``body``, ``decorator``, ``import``, ...), for the suspects list.
    A ``MODULE`` change may name the class or function it is in (``qualname``), for the reader only: the rule
    goes by the path."""

    path: str
    kind: ChangeKind
    qualname: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Footprint:
    """Everything one commit changes relative to its first parent, in path order."""

    commit: str
    changes: tuple[Change, ...]
