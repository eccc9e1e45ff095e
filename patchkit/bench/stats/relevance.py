"""Which commits of a hunt's line could change what the launches ran: the types the pruning rule works on.

The hunt launches only where code that ran changed.  Two inputs, read elsewhere, meet here as plain values:

* ``Footprint``: what one commit changes, read from its blobs with no checkout (``patchkit.footprint``):
  per changed file, the function bodies that changed (by qualified name, as ``co_qualname`` spells it),
  or "module level" (anything outside a function body: imports, class bodies, decorators, defaults,
  constants, all of which run at import), or a non-Python file, or a build or dependency input.
* ``Ran``: what the probed processes of every launch of the hunt so far ran (``patchkit.proof``): the
  functions that started at least once, the tree's modules imported, the tree's other files read, and
  the reasons, if any, that the probe cannot vouch for what ran (``blind``).

The rule that joins them is a pure function of the two (``judge``, and ``suspects`` for the list a user
reads), so that a reviewer can read it and a test can call it with values.  Where in doubt, a commit is
relevant.

A commit is *inert* when every change it makes is one of these (``Reason``):

* the body of a function that no probed process ran (matched by file and qualified name), or, where the
  probe recorded only files (``granularity == "file"``), a body in a module that did not run;
* a change in a module that no launch imported (nor read as a file);
* a non-Python file that no launch read (nor imported: an extension module), that is not a build input;
* a Python file that compiles to the same code (comments, blank lines, layout), and that no launch read as a
  file.

Any change to a file a launch read is relevant, whatever kind of change it is: a read sees the file's bytes,
comments and layout included (a server that parses a module's source, ``inspect.getsource`` for a JIT compiler),
so "the same code" vouches only for a file that was imported, never for one that was read.

A build or dependency input is never inert, and nothing is inert while ``Ran.blind`` is not empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from patchkit.footprint.changes import Change, ChangeKind, Footprint


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


class Reason(str, Enum):
    """Why one change is inert or relevant (stable words: the hunt's ``--json`` lists them)."""

    # inert
    NOT_RUN = "not-run"  # a function body that no probed process ran
    NOT_IMPORTED = "not-imported"  # a change in a module that no launch imported
    NOT_READ = "not-read"  # a non-Python file that no launch read
    SAME_CODE = "same-code"  # the file compiles to the same code, and no launch read it as a file
    # relevant
    RAN = "ran"  # a function that ran
    IMPORTED = "imported"  # module-level code of a module a launch imported
    READ = "read"  # a file a launch read (a data file, or a Python file read as a file)
    BUILD = "build"  # a build or dependency input
    FILE_GRANULARITY = "file-granularity"  # a body in a module that ran, where only files were recorded
    BLIND = "blind"  # the probe cannot vouch for what ran
    UNKNOWN = "unknown"  # the change names no function: where in doubt, relevant


INERT_REASONS = frozenset({Reason.NOT_RUN, Reason.NOT_IMPORTED, Reason.NOT_READ, Reason.SAME_CODE})


@dataclass(frozen=True)
class Judgement:
    """One change and the reason it is inert or relevant."""

    change: Change
    reason: Reason

    @property
    def relevant(self) -> bool:
        return self.reason not in INERT_REASONS


@dataclass(frozen=True)
class Relevance:
    """A commit's verdict: relevant when any of its changes is, with every change's judgement in path order."""

    commit: str
    judgements: tuple[Judgement, ...]

    @property
    def relevant(self) -> bool:
        return any(j.relevant for j in self.judgements)

    @property
    def inert(self) -> bool:
        return not self.relevant

    @property
    def why(self) -> tuple[Judgement, ...]:
        """The judgements that make it relevant; for an inert commit, all of them (each with its rule)."""
        return tuple(j for j in self.judgements if j.relevant) if self.relevant else self.judgements


def judge_change(change: Change, ran: Ran) -> Reason:
    """The rule for one change (the module docstring says it in words)."""
    if change.kind is ChangeKind.BUILD:
        return Reason.BUILD
    if ran.blind:
        return Reason.BLIND
    path = change.path
    if path in ran.data_files:  # before "same code": a file read is its bytes, comments and layout included
        return Reason.READ  # a data file, or a Python file read as a file (a template, a source read back)
    if change.kind is ChangeKind.FORMAT:
        return Reason.SAME_CODE
    if change.kind is ChangeKind.DATA:
        return Reason.IMPORTED if path in ran.modules else Reason.NOT_READ
    if change.kind is ChangeKind.MODULE:
        return Reason.IMPORTED if path in ran.modules else Reason.NOT_IMPORTED
    if change.kind is ChangeKind.BODY and change.qualname:
        if ran.granularity != "function":
            return Reason.FILE_GRANULARITY if path in ran.modules else Reason.NOT_IMPORTED
        if (path, change.qualname) in ran.functions:
            return Reason.RAN
        return Reason.NOT_RUN if path in ran.modules else Reason.NOT_IMPORTED
    return Reason.UNKNOWN


def judge(footprint: Footprint, ran: Ran) -> Relevance:
    """Whether one commit is inert or relevant given what the launches ran, and why, change by change.

    A commit that changes nothing (an empty commit, a merge that brings nothing new) is inert."""
    return Relevance(footprint.commit, tuple(Judgement(c, judge_change(c, ran)) for c in footprint.changes))


def suspects(footprints: Sequence[Footprint], ran: Ran) -> tuple[Relevance, ...]:
    """The commits of a line that changed code that ran, in line order, each with the changes that make it
    relevant: functions that ran, modules imported, files read, build inputs.

    This is the evidence, so a blind probe does not make every commit a suspect here (``judge`` does, for
    the search): with ``Ran.blind`` set, the list is read as if the probe saw everything, and is a lower
    bound."""
    seeing = replace(ran, blind=()) if ran.blind else ran
    out = []
    for footprint in footprints:
        verdict = judge(footprint, seeing)
        if verdict.relevant:
            out.append(Relevance(verdict.commit, verdict.why))
    return tuple(out)
