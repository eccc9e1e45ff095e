"""An SGLang-shaped upstream history, for tests, demos and benchmarks.

``build_sglang_history(path)`` writes a git repository (branch ``main``, plus
the unmerged side branch ``rename-kimi``) whose files follow the layout of
SGLang (sgl-project/sglang) around the Kimi-K2.5 and EAGLE-3 changes of early
2026, and the refactors of EAGLE's verify step up to July 2026.  The dates,
PR numbers and subjects of the key commits follow the real ones.

The history is data, not code (``patchkit/demo/data/sglang/``):

* ``history.toml`` is the one commit table: per commit its label, date,
  author, branch, subject, role (what it is for), tag, the files it adds or
  deletes and the edits it makes.  It drives the build, ``LABELS``, ``TAGS``
  and the tests; the timeline is written nowhere else.
* ``files/<path>.txt`` holds each file as the commit that adds it writes it.
  An edit replaces one exact ``old`` text (which must occur once, or
  everywhere with ``every = true``) with ``new``, or appends text to the file.

The file texts are synthetic, written for patchkit: upstream's names, file
layout and the statements patchkit's manifests match (anchors, classes,
functions, imports), and our own code of the same shape and size everywhere
else.  Every file says so in its header.

What the history is for:

* ``manifests/kimi-k25-eagle3.toml`` adds EAGLE-3 hooks to
  ``KimiK25ForConditionalGeneration`` (python/sglang/srt/models/kimi_k25.py).
  The file appears with ``add-kimi`` (PR #17789, 2026-01-27); upstream adds the
  hooks itself with ``hooks-upstream`` (PR #19689, 2026-03-03), with its own
  code; ``kimi-builtin-generics`` drops ``List`` from the typing import (so the
  manifest's import patch has something to add) until ``hooks-upstream`` puts
  it back; the ``rename-kimi`` branch renames the class.
* ``manifests/eagle3-verify-timing.toml`` times the target forward of EAGLE's
  verify step wherever it is; main ends with upstream's refactors of it, in
  upstream's order, subjects and dates:

  - ``EAGLEWorker.verify`` (speculative/eagle_worker.py, spec v1) from
    ``add-eagle``; ``verify-nvtx`` adds statements above the call and nests
    the (reformatted) call in a ``with`` block, so the anchor still matches,
    at another line;
  - ``spec-v2-overlap`` (#11398) adds ``EAGLEWorkerV2.verify``
    (speculative/eagle_worker_v2.py): both workers are timed from here.
    Upstream merged it on 2025-10-12, before this history's root; it comes
    after the Kimi-K2.5 commits so that every earlier commit keeps its id;
  - ``remove-mwb-indirection`` (#25516) changes both calls,
    ``v2-verify-init-order`` (#26244) and ``v2-attn-plan-marker`` (#27193)
    change v2's, so every call shape of the manifest's variants occurs;
  - ``deprecate-spec-v1`` (#25464) deletes eagle_worker.py;
  - ``common-draft-helpers`` (#31257) adds speculative/eagle_worker_common.py
    without ``run_eagle_verify``, and ``consolidate-verify`` (#31380), the
    tip of main, moves the forward into ``run_eagle_verify`` there.

Build time is well under a second (one ``git fast-import``).
"""

from __future__ import annotations

import textwrap
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from patchkit.demo.history import FileValue, History, HistoryBuilder
from patchkit.errors import InternalError

__all__ = [
    "EAGLE_WORKER",
    "EAGLE_WORKER_COMMON",
    "EAGLE_WORKER_V2",
    "KIMI_K25",
    "LABELS",
    "MAIN",
    "RENAME_BRANCH",
    "TAGS",
    "TIMELINE",
    "DemoCommit",
    "Edit",
    "build_sglang_history",
]

MAIN = "main"
RENAME_BRANCH = "rename-kimi"
KIMI_K25 = "python/sglang/srt/models/kimi_k25.py"
EAGLE_WORKER = "python/sglang/srt/speculative/eagle_worker.py"
EAGLE_WORKER_V2 = "python/sglang/srt/speculative/eagle_worker_v2.py"
EAGLE_WORKER_COMMON = "python/sglang/srt/speculative/eagle_worker_common.py"

DATA: Traversable = files("patchkit.demo") / "data" / "sglang"


@dataclass(frozen=True)
class Edit:
    """One change to one file: ``old`` -> ``new`` (once, or ``every`` occurrence), or ``append``."""

    file: str
    old: str = ""
    new: str = ""
    every: bool = False
    append: str = ""

    def to(self, text: str, where: str) -> str:
        if self.append:
            return text + self.append
        count = text.count(self.old)
        if count == 0 or (count > 1 and not self.every):
            raise InternalError(
                f"demo history data: {where} expects {'' if self.every else 'one '}{self.old[:70]!r} "
                f"in {self.file}, found {count}"
            )
        return text.replace(self.old, self.new)


@dataclass(frozen=True)
class DemoCommit:
    """One row of the commit table (``history.toml``)."""

    label: str
    when: datetime
    author: tuple[str, str]
    subject: str
    branch: str = MAIN
    parent: str | None = None  # the first commit of a side branch: the label it starts from
    body: str = ""
    role: str = ""
    tag: str | None = None
    add: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    texts: Mapping[str, str] = field(default_factory=dict)  # files written with this text (a commit outside the table)

    @property
    def message(self) -> str:
        return self.subject + ("\n\n" + self.body if self.body else "") + "\n"

    def changes(self, before: Mapping[str, FileValue]) -> dict[str, FileValue]:
        """The files this commit writes (``None``: deletes), given the tree it starts from."""
        changed: dict[str, FileValue] = {name: file_text(name) for name in self.add}
        changed.update(self.texts)
        for name in self.delete:
            if name not in before:
                raise InternalError(f"demo history data: {self.label} deletes {name}, which it does not have")
            changed[name] = None
        for edit in self.edits:
            text = changed.get(edit.file, before.get(edit.file))
            if not isinstance(text, str):
                raise InternalError(f"demo history data: {self.label} edits {edit.file}, which it does not have")
            changed[edit.file] = edit.to(text, self.label)
        return changed


def _load_timeline() -> tuple[DemoCommit, ...]:
    table = tomllib.loads((DATA / "history.toml").read_text(encoding="utf-8"))
    authors = {key: (value["name"], value["email"]) for key, value in table["authors"].items()}
    rows = []
    for row in table["commit"]:
        fields: dict[str, Any] = dict(row)
        fields["author"] = authors[fields["author"]]
        fields["when"] = fields.pop("date")
        fields["add"] = tuple(fields.get("add", ()))
        fields["delete"] = tuple(fields.get("delete", ()))
        fields["edits"] = tuple(Edit(**edit) for edit in fields.pop("edit", ()))
        rows.append(DemoCommit(**fields))
    return tuple(rows)


def _labels_text(timeline: tuple[DemoCommit, ...]) -> str:
    lines = [
        "Commit labels of build_sglang_history (dates are author dates, UTC).",
        "",
        f"{'label':<22} {'date':<11} {'branch':<12} subject / role",
        f"{'-' * 22} {'-' * 11} {'-' * 12} {'-' * 60}",
    ]
    for c in timeline:
        lines.append(f"{c.label:<22} {c.when:%Y-%m-%d}  {c.branch:<12} {c.subject}")
        lines.extend(f"{'':<48}{line}" for line in textwrap.wrap(c.role, 64))
    return "\n".join(lines) + "\n"


TIMELINE: tuple[DemoCommit, ...] = _load_timeline()
"""The commit table, in commit order."""

LABELS: str = _labels_text(TIMELINE)
"""Every commit label with its date, branch, subject and role, as a table for people."""

TAGS: dict[str, str] = {c.tag: c.label for c in TIMELINE if c.tag}


def file_text(path: str) -> str:
    """The text of ``path`` as the commit that adds it writes it."""
    return (DATA / "files" / f"{path}.txt").read_text(encoding="utf-8")


def build_sglang_history(path: Path, *, extra: Sequence[DemoCommit] = ()) -> History:
    """Write the SGLang-shaped repository at ``path`` (non-bare, ``main`` checked out).

    Commit ids are the same on every build (fixed authors, dates and
    contents).  ``LABELS`` documents every label of the returned ``History``.
    ``extra``: commits after the table's (the demo's own side branches), which
    change none of the table's commit ids.
    """
    builder = HistoryBuilder(Path(path))
    tips: dict[str, str] = {}
    for c in (*TIMELINE, *extra):
        if c.parent is not None:
            builder.start_branch(c.branch, c.parent)
        base = c.parent or tips.get(c.branch)
        before: Mapping[str, FileValue] = builder.tree(base) if base else {}
        changes = c.changes(before)
        builder.commit(c.label, c.message, changes, branch=c.branch, when=c.when, author=c.author)
        tips[c.branch] = c.label
    for name, label in TAGS.items():
        builder.tag(name, label)
    return builder.build(checkout=MAIN)
