"""Shared logic of the two operations that add named definitions.

``add-methods`` adds defs to a class body, ``add-definitions`` adds functions,
classes and assignments to a module body.  Both decide per name: add it,
leave it (already identical), keep upstream's (different code,
``on_conflict = "keep-upstream"``), replace it (``"replace"``) or stop
(``"fail"``); and both word their outcome the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from patchkit.operations.base import REPLACES_PREVIOUS, LoadContext, OnConflict, Outcome
from patchkit.operations.digests import canon, digest_of_canon, payload_canon
from patchkit.operations.lookup import replace_statement
from patchkit.results import Reason


@dataclass(frozen=True)
class NamedDef:
    """One definition an add op brings: the name it binds and its statement in the payload."""

    name: str
    node: ast.stmt  # from the payload


def select(
    ctx: LoadContext,
    available: Mapping[str, ast.stmt],
    wanted: Sequence[str] | None,
    *,
    key: str,
    empty: str,
    missing: Callable[[str], str],
    listed: str,
) -> tuple[NamedDef, ...]:
    """The payload definitions a patch names under ``key`` (all of them when it names none).

    ``empty`` is the error when the payload has nothing to add, ``missing(name)``
    the error for a name it lacks, and ``listed`` the hint's lead-in before what
    it does have (e.g. "it has").
    """
    if wanted is None:
        if not available:
            ctx.error("source", empty)
        return tuple(NamedDef(n, available[n]) for n in available)
    for index, name in enumerate(wanted):
        if name not in available:
            ctx.error(f"{key}[{index + 1}]", missing(name), hint=f"{listed}: {', '.join(available) or 'none'}")
    return tuple(NamedDef(n, available[n]) for n in wanted)


@dataclass
class DefPlan:
    """What one add op does at one target, name by name (``classify``): add, replace, already the same, keep upstream's,
    or conflict.  ``updated``: the names replaced because the code there is an older version patchkit wrote, and when.
    """

    add: list[NamedDef] = field(default_factory=list)
    replace: list[tuple[NamedDef, ast.stmt]] = field(default_factory=list)  # (payload, existing)
    same: list[tuple[NamedDef, ast.stmt]] = field(default_factory=list)
    kept: list[tuple[NamedDef, ast.stmt]] = field(default_factory=list)
    conflicts: list[tuple[NamedDef, ast.stmt]] = field(default_factory=list)
    # names in ``replace`` because the current code is an older version patchkit wrote -> when
    updated: dict[str, str] = field(default_factory=dict)


def classify(
    defs: Sequence[NamedDef],
    existing: Callable[[str], ast.stmt | None],
    on_conflict: OnConflict,
    previous: Mapping[str, str] | None = None,
    canon_of: Callable[[str, ast.stmt], str] = lambda _name, node: canon(node),
) -> DefPlan:
    """``previous``: digests of code patchkit wrote before (its own, never upstream's) -> when.
    ``canon_of(name, node)``: ``canon`` of the code there now (``CodeState.def_canon``)."""
    plan = DefPlan()
    previous = previous or {}
    for item in defs:
        current = existing(item.name)
        if current is None:
            plan.add.append(item)
            continue
        there = canon_of(item.name, current)
        if there == payload_canon(item.node):
            plan.same.append((item, current))
        elif previous and digest_of_canon(there) in previous:
            plan.replace.append((item, current))
            plan.updated[item.name] = previous[digest_of_canon(there)]
        elif on_conflict is OnConflict.KEEP_UPSTREAM:
            plan.kept.append((item, current))
        elif on_conflict is OnConflict.REPLACE:
            plan.replace.append((item, current))
        else:
            plan.conflicts.append((item, current))
    return plan


def _listed(pairs: Sequence[tuple[NamedDef, ast.stmt]]) -> str:
    return ", ".join(f"{d.name} (line {node.lineno})" for d, node in pairs)


def outcome_for(
    plan: DefPlan,
    *,
    where: str,
    where_line: int,
    payload: str,
    kind: str,
) -> Outcome[DefPlan]:
    """Word the verdict.  ``where`` is e.g. "class Foo (line 12)" or "the module"."""
    if plan.conflicts:
        first = plan.conflicts[0][1]
        return Outcome.fail(
            Reason.CONFLICT,
            first.lineno,
            f"{where} already defines {_listed(plan.conflicts)} with code that differs from {payload}. "
            'Compare them, then set on_conflict = "keep-upstream" to use upstream\'s '
            'or "replace" to use the patch\'s',
        )
    if not plan.add and not plan.replace:
        if plan.same:
            message = f"{kind} {', '.join(d.name for d, _ in plan.same)} already in {where} with the patch's code"
            if plan.kept:
                message += f"; keeps upstream's {_listed(plan.kept)}"
            return Outcome.skip(Reason.ALREADY_APPLIED, plan.same[0][1].lineno, message)
        return Outcome.skip(
            Reason.UPSTREAM_PROVIDES,
            plan.kept[0][1].lineno,
            f"upstream already defines {_listed(plan.kept)} in {where} with its own code "
            '(on_conflict = "keep-upstream"): this patch is redundant at this commit',
        )
    parts = []
    if plan.add:
        parts.append(f"adds {', '.join(d.name for d in plan.add)}")
    replaced = [(d, node) for d, node in plan.replace if d.name not in plan.updated]
    if replaced:
        parts.append(f"replaces {_listed(replaced)}")
    updated = [(d, node) for d, node in plan.replace if d.name in plan.updated]
    if updated:
        parts.append(f"{REPLACES_PREVIOUS} {_listed(updated)}")
    message = f"{' and '.join(parts)} {'to' if plan.add and not plan.replace else 'in'} {where}"
    if plan.same:
        message += f"; {', '.join(d.name for d, _ in plan.same)} already present"
    if plan.kept:
        message += f"; keeps upstream's {_listed(plan.kept)}"
    if updated:
        when = plan.updated[updated[0][0].name]
        message += f" (patchkit wrote that version {when}; the new code is from {payload})"
    # The line of the first change: where additions go, or the replaced definition.
    line = where_line if plan.add else plan.replace[0][1].lineno
    return Outcome.apply(line, message, plan=plan, replaces_previous=bool(updated))


def splice_defs(
    body: list[ast.stmt],
    plan: DefPlan,
    *,
    insert_at: int,
    insert_line: int,
    splice: Callable[[Sequence[ast.stmt], int], list[ast.stmt]],
) -> None:
    """Simulate the plan on an ast body (replacements in place, additions at ``insert_at``)."""
    for item, current in plan.replace:
        # In place, also when the definition sits in a top-level if / try branch.
        replace_statement(body, current, splice([item.node], current.lineno)[0])
    body[insert_at:insert_at] = splice([d.node for d in plan.add], insert_line)
