"""Where a def or a class went between two versions of upstream, and three-way merges of one def.

``port`` asks these questions of the two commits of one step (the last commit
where a patch applied, and the one where it stopped):

* a function or method is gone from its file (``FUNCTION_NOT_FOUND``, or a
  ``FILE_NOT_FOUND`` git does not call a rename): which def of the files this
  step changed is it now?  The same code (its canonical form, as digests
  compare it) wins outright; otherwise the most alike text, when it is alike
  enough and no other candidate comes as close (then nothing is guessed);
* a class is gone (``CLASS_NOT_FOUND``): which class that the file did not
  define before has the most alike body (a renamed class keeps its methods)?
* upstream edited a def the patch rewrites: ``git merge-file`` of upstream's
  old version (the base), the payload's (ours) and upstream's new one
  (theirs), on the defs' lines at column 0, then put back at the payload's
  column.

Everything here reads text and returns values; the walk (``walk.py``) and
the manifest edits (``carry.py``, ``merge.py``) are the rest of ``port``'s.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from patchkit.git import merge_texts
from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon
from patchkit.operations.hunks import function_lines, split_lines

# How alike two defs' texts must be (difflib's ratio over their lines) to be called the same def moved,
# and by how much the best candidate must beat the next one: below either, port names the candidates
# and changes nothing.
SIMILAR = 0.6
MARGIN = 0.1


@dataclass(frozen=True)
class Def:
    """A def or class in one version of a file: its qualified name, its lines (1-based, inclusive, with the
    comment lines that belong to it), its column, and its text at column 0."""

    file: str
    qualname: str
    is_class: bool
    first: int
    last: int
    col: int
    text: str
    canon: str  # the normalised form digests are taken over (ignores formatting and comments)
    raw: str  # the lines exactly as in the file, endings included

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def body_text(self) -> str:
        """The text without its ``def`` / ``class`` line: what two versions of a renamed def share."""
        lines = self.text.splitlines()
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("def ", "async def ", "class ")):
                return "\n".join(lines[i + 1 :])
        return self.text


def parse(path: str, text: str) -> CodeState | None:
    try:
        return CodeState.parse(path, text)
    except (SyntaxError, ValueError):
        return None


def defs_in(path: str, text: str) -> list[Def]:
    """Every def and class of a file: module level (top-level ``if`` / ``try`` branches included, as every
    op looks them up) and, recursively, in class bodies; in source order."""
    state = parse(path, text)
    if state is None:
        return []
    out: list[Def] = []

    def visit(nodes: Iterable[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualname = prefix + node.name
                out.append(_def(path, state, node, qualname))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, qualname + ".")

    visit((item.node for item in state.module_statements()), "")
    return out


def _def(path: str, state: CodeState, node: ast.stmt, qualname: str) -> Def:
    first, last = function_lines(node, state.lines)
    col = node.col_offset
    lines = state.lines[first - 1 : last]
    raw = "".join(split_lines(state.text)[first - 1 : last])
    return Def(path, qualname, isinstance(node, ast.ClassDef), first, last, col, dedent(lines, col), canon(node), raw)


def find_def(path: str, text: str, qualname: str) -> Def | None:
    """The def or class ``qualname`` in the file (the last one of that name, as Python binds it)."""
    found = [d for d in defs_in(path, text) if d.qualname == qualname]
    return found[-1] if found else None


def dedent(lines: Sequence[str], col: int) -> str:
    """The lines (without their endings) with ``col`` columns taken off each (a blank line stays blank)."""
    return "".join(line.rstrip("\r\n")[col:] + "\n" if line.strip() else "\n" for line in lines)


def indent(text: str, col: int, newline: str = "\n") -> list[str]:
    """``text`` (at column 0) as lines at column ``col``, each ending with ``newline``."""
    pad = " " * col
    return [(pad + line if line.strip() else "") + newline for line in text.splitlines()]


def taken(base: str, ours: str, theirs: str) -> tuple[int, int]:
    """(of the lines ours adds or rewrites, how many upstream's version added too; how many ours adds or
    rewrites): upstream taking part of a patch is what makes port ask whether the rest still earns its place."""

    def added(new: str) -> list[str]:
        old = [line.strip() for line in base.splitlines()]
        lines = [line.strip() for line in new.splitlines()]
        opcodes = difflib.SequenceMatcher(None, old, lines, autojunk=False).get_opcodes()
        return [x for tag, _i1, _i2, j1, j2 in opcodes if tag in ("replace", "insert") for x in lines[j1:j2] if x]

    ours_added, theirs_added = added(ours), set(added(theirs))
    return sum(1 for line in ours_added if line in theirs_added), len(ours_added)


def similarity(a: str, b: str) -> float:
    """How alike two texts are, line by line (leading spaces ignored): difflib's ratio."""
    left = [line.strip() for line in a.splitlines() if line.strip()]
    right = [line.strip() for line in b.splitlines() if line.strip()]
    if not left and not right:
        return 1.0
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()


@dataclass(frozen=True)
class Match:
    """The answer to "where did this def go": the def found, how alike it is (1.0: the same code), and, when
    nothing is chosen, the candidates that came closest (for the message)."""

    found: Def | None
    score: float
    runners_up: tuple[tuple[Def, float], ...] = ()


def follow(old: Def, candidates: Sequence[Def]) -> Match:
    """Which of ``candidates`` is ``old``, moved (same kind of definition; a def keeps its name)."""
    pool = [c for c in candidates if c.is_class == old.is_class and (old.is_class or c.name == old.name)]
    same = [c for c in pool if c.canon == old.canon]
    if len(same) == 1:
        return Match(same[0], 1.0)
    scored = sorted(
        (
            (c, similarity(old.body_text() if old.is_class else old.text, c.body_text() if old.is_class else c.text))
            for c in (same or pool)
        ),
        key=lambda item: -item[1],
    )
    if not scored:
        return Match(None, 0.0)
    best, score = scored[0]
    second = scored[1][1] if len(scored) > 1 else 0.0
    if score >= SIMILAR and score - second >= MARGIN:
        return Match(best, score)
    return Match(None, score, tuple(scored[:3]))


@dataclass(frozen=True)
class Merge:
    """A three-way merge of one def: the merged text (column 0), or the first conflict's two sides."""

    text: str | None  # None: a conflict
    ours: tuple[str, ...] = ()  # the conflict's lines on our side (the payload's)
    upstream: tuple[str, ...] = ()  # ... and on upstream's
    upstream_line: int = 0  # 0-based line of the upstream side in upstream's text (where it is found)
    conflicts: int = 0


def merge(base: str, ours: str, theirs: str) -> Merge:
    """``git merge-file`` of one def's three versions (``base``: upstream's version the patch was written
    against; ``ours``: the patch's; ``theirs``: upstream's new one)."""
    merged, conflicts = merge_texts(base, ours, theirs, ("ours (the patch)", "base", "upstream"))
    if conflicts == 0:
        return Merge(merged)
    ours_side: list[str] = []
    theirs_side: list[str] = []
    side = None
    for line in merged.splitlines():
        if line.startswith("<<<<<<< "):
            side = ours_side
        elif line == "=======" and side is ours_side:
            side = theirs_side
        elif line.startswith(">>>>>>> ") and side is theirs_side:
            break
        elif side is not None:
            side.append(line)
    lines = theirs.splitlines()
    at = 0
    if theirs_side:
        at = next(
            (i for i in range(len(lines)) if lines[i : i + len(theirs_side)] == theirs_side),
            0,
        )
    return Merge(None, tuple(ours_side), tuple(theirs_side), at, conflicts)
