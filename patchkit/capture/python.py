"""Map the change of one Python file to structured operations, or say why not.

The base and the edited file are parsed with ``ast`` and their module bodies
aligned statement by statement (``difflib`` over keys: an import by its code,
a def or class by its name, a single-name assignment by its name, anything
else by its code).  Then each difference is matched to an op:

=========================================  ==================================
difference                                 op
=========================================  ==================================
new import statements                      ``ensure-import`` (placed as written)
an import whose module changed             ``move-import`` (+ ``ensure-import``)
any other edit of the import block         ``edit-imports`` (hunks inside it)
new module-level definitions               ``add-definitions``
new methods at the end of a class          ``add-methods``
statements added inside a function         ``insert`` (anchor unique in it)
any other edit inside a function           ``edit-function`` (hunks inside it)
a new signature, or a wholesale rewrite    ``replace-function`` (``expect``)
one item appended to a module-level list   ``ensure-list-item``
=========================================  ==================================

Anything else (a deleted statement, a changed module-level statement, a
method added in the middle of a class, ...) raises ``Unfit`` with the reason,
and the caller carries the whole file with a ``diff`` op.  This module only
proposes: the caller renders the proposal with the engine and keeps it only
if it reproduces the edited file byte for byte.
"""

from __future__ import annotations

import ast
import copy
import difflib
import itertools
import textwrap
from dataclasses import dataclass

from patchkit.capture.textdiff import unified_diff
from patchkit.operations.digests import canon, digest
from patchkit.operations.edit_imports import block_lines
from patchkit.operations.edit_statement import is_main_block, statement_lines
from patchkit.operations.ensure_import import items_of
from patchkit.operations.hunks import function_lines, split_lines
from patchkit.operations.lookup import (
    DEF_KINDS,
    FunctionNode,
    bound_names,
    definition_name,
    is_docstring,
    walk_statements,
)
from patchkit.operations.wording import first_difference


class Unfit(Exception):
    """No structured op fits; ``str()`` says why (shown in capture's summary)."""


@dataclass(frozen=True)
class Proposal:
    """One patch capture proposes, before it has an id."""

    op: str
    file: str
    name: str  # readable part of the id, e.g. "import-os", "eagleworker.verify"
    keys: tuple[tuple[str, object], ...]  # op keys in manifest order, `source` excluded
    payload: str | None  # Python payload text, if the op takes one
    change: str  # what changed, for people
    why: str  # why this op
    payload_suffix: str = ".py"  # the payload file's suffix (".diff" for a diff payload)


def _key(stmt: ast.stmt) -> tuple[str, str]:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return ("import", canon(stmt))
    if isinstance(stmt, DEF_KINDS):
        return ("def", stmt.name)
    name = definition_name(stmt)
    if name is not None:
        return ("assign", name)
    return ("other", canon(stmt))


def _describe(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.ClassDef):
        return f"class {stmt.name} (line {stmt.lineno})"
    if isinstance(stmt, FunctionNode):
        return f"def {stmt.name} (line {stmt.lineno})"
    text = ast.unparse(stmt).splitlines()[0]
    if len(text) > 60:
        text = text[:59] + "…"
    return f"`{text}` (line {stmt.lineno})"


def _same_spot(base: list[ast.stmt], i: int, target: list[ast.stmt], j: int) -> bool:
    """Both the module docstring, or both the `__main__` block: one statement edited in place."""
    if i == 0 and j == 0 and is_docstring(base[0]) and is_docstring(target[0]):
        return True
    return is_main_block(base[i]) and is_main_block(target[j])


def _changes(old: ast.stmt, new: ast.stmt) -> str:
    """ "changes X (line N) into Y (line M)", or, where the two read the same, what differs."""
    before, after = _describe(old), _describe(new)
    if before.rsplit(" (line", 1)[0] != after.rsplit(" (line", 1)[0]:
        return f"changes {before} into {after}"
    a, b = ast.unparse(old), ast.unparse(new)
    moved = f", now at line {new.lineno}" if new.lineno != old.lineno else ""
    if a == b:
        return f"changes only the formatting of {before}{moved}"
    return f"changes {before}{moved}: " + visible(
        first_difference(a, b).replace("the anchor has", "it had").replace("the statement has", "it has")
    )


# How a summary line shows whitespace that would otherwise break it or hide (Unicode's control pictures).
_MARKS = {"\n": "⏎", "\r": "␍", "\t": "␉"}


def visible(text: str) -> str:
    """``text`` on one line with its whitespace made visible: a newline as ⏎, a carriage return as ␍, a
    tab as ␉, any other unprintable character as its Python escape; every other character as it is."""
    return "".join(
        _MARKS.get(ch) or (ch if ch.isprintable() else repr(ch)[1:-1])  # repr gives \x0c, \u2028, ...
        for ch in text
    )


def _header(node: ast.stmt) -> str:
    """canon() of a def or class without its body: name, arguments, bases, decorators."""
    clone = copy.copy(node)
    clone.body = []  # type: ignore[attr-defined]
    return canon(clone)


class _File:
    def __init__(
        self, path: str, base: str, target: str, *, hunks: bool = False, import_hunks: str | None = None
    ) -> None:
        self.path = path
        self.hunks = hunks  # carry every in-function edit as edit-function (no insert)
        self.import_hunks = import_hunks  # why import edits go to edit-imports (None: ensure/move-import first)
        try:
            self.base = ast.parse(base)
        except SyntaxError as exc:
            raise Unfit(f"the base version is not valid Python ({exc.msg}, line {exc.lineno})") from None
        try:
            self.target = ast.parse(target)
        except SyntaxError as exc:
            raise Unfit(f"the edited version is not valid Python ({exc.msg}, line {exc.lineno})") from None
        self.lines = split_lines(target)
        self.base_text = base
        self.out: list[Proposal] = []

    # -- source text of the edited file ------------------------------------------------

    def source(self, first: ast.stmt, last: ast.stmt, *, comments: bool = True) -> str:
        """The edited file's lines from ``first`` (its decorators and the comment lines
        right above it) to the end of ``last``, dedented."""
        start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
        if comments:
            while start > 0 and self.lines[start - 1].strip().startswith("#"):
                start -= 1
        end = last.end_lineno or last.lineno
        return textwrap.dedent("".join(self.lines[start:end]))

    def raw_source(self, first: ast.stmt, last: ast.stmt) -> str:
        """``source`` without the dedent: every line at its own column in the edited file."""
        start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
        while start > 0 and self.lines[start - 1].strip().startswith("#"):
            start -= 1
        return "".join(self.lines[start : last.end_lineno or last.lineno])

    def nested(self, owners: list[str], first: ast.stmt, last: ast.stmt) -> str:
        """The edited lines inside ``class`` headers for ``owners``, at their own column.

        A payload written at another indentation than its target would be re-indented on
        apply, and a multi-line string's continuation lines (a docstring's) are not code
        lines: its value would change.  Kept at the target's column, every string keeps it."""
        column = first.col_offset
        step = max(column // len(owners), 1) if owners else 0
        head = "".join(f"{' ' * (step * i)}class {name}:\n" for i, name in enumerate(owners))
        return head + self.raw_source(first, last)

    def base_source(self, stmt: ast.stmt) -> str:
        return ast.get_source_segment(self.base_text, stmt) or ast.unparse(stmt)

    def add(
        self,
        op: str,
        name: str,
        keys: dict[str, object],
        payload: str | None,
        change: str,
        why: str,
        suffix: str = ".py",
    ) -> None:
        self.out.append(Proposal(op, self.path, name, tuple(keys.items()), payload, change, why, suffix))

    # -- module level ------------------------------------------------------------------

    def module(self) -> list[Proposal]:
        base, target = self.base.body, self.target.body
        matcher = difflib.SequenceMatcher(None, [_key(s) for s in base], [_key(s) for s in target], autojunk=False)
        imports_unfit: Unfit | None = None  # an import edit ensure-import / move-import cannot say
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            only_imports = all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in [*base[i1:i2], *target[j1:j2]])
            try:
                if only_imports and tag != "equal" and self.import_hunks is not None:
                    raise Unfit(self.import_hunks)
                if tag == "equal":
                    for old, new in zip(base[i1:i2], target[j1:j2], strict=True):
                        self.changed(old, new, "")
                elif tag == "insert":
                    self.inserted(i1, target[j1:j2])
                elif tag == "delete":
                    self.deleted(base[i1:i2], None)
                elif only_imports:
                    self.imports_changed(base[i1:i2], target[j1:j2])
                elif i2 - i1 == 1 and j2 - j1 == 1 and _same_spot(base, i1, target, j1):
                    self.statement_edited(base[i1], target[j1], "__doc__" if i1 == 0 else "__main__")
                else:
                    raise Unfit(_changes(base[i1], target[j1]))
            except Unfit as exc:
                if not only_imports or tag == "equal":
                    raise
                imports_unfit = imports_unfit or exc
        if imports_unfit is not None:
            self.import_block_edit(imports_unfit)
        if not self.out:
            raise Unfit(
                "only formatting or comments changed outside any function (a `diff` carries that exactly; "
                "inside a function it would be an edit-function)"
            )
        return self.out

    def statement_edited(self, old: ast.stmt, new: ast.stmt, name: str) -> None:
        """A changed named module-level statement as ``edit-statement`` (hunks inside it)."""
        base_lines = split_lines(self.base_text)
        a_first, a_last = statement_lines(self.base.body, self.base.body.index(old), self.base_text.split("\n"))
        b_first, b_last = statement_lines(
            self.target.body, self.target.body.index(new), [line.rstrip("\r\n") for line in self.lines]
        )
        diff = unified_diff(
            self.path, "".join(base_lines[a_first - 1 : a_last]), "".join(self.lines[b_first - 1 : b_last])
        )
        if not diff:
            raise Unfit(_changes(old, new))
        label = {"__doc__": "the module docstring", "__main__": "the `__main__` block"}.get(name, name)
        self.add(
            "edit-statement",
            f"statement-{name.strip('_') or name}",
            {"statement": name},
            f"# edit-statement {name}: hunk line numbers count from the statement's first line (line 1)\n"
            + diff.split("\n", 1)[1],
            f"{label} edited",
            "a changed module-level statement with a name: hunks inside it only",
            ".diff",
        )

    def import_block_edit(self, why: Unfit) -> None:
        """Every import change of the file as one ``edit-imports`` (hunks inside the import block)."""
        base_span = block_lines(self.base.body, self.base_text.split("\n"))
        target_span = block_lines(self.target.body, [line.rstrip("\r\n") for line in self.lines])
        if base_span is None or target_span is None:
            raise why
        base_lines = split_lines(self.base_text)[base_span[0] - 1 : base_span[1]]
        target_lines = self.lines[target_span[0] - 1 : target_span[1]]
        diff = unified_diff(self.path, "".join(base_lines), "".join(target_lines))
        if not diff:  # the edit is outside the block: nothing here can say it
            raise why
        self.out = [p for p in self.out if p.op not in ("ensure-import", "move-import")]
        head = "# edit-imports: hunk line numbers count from the import block's first line (line 1)\n"
        self.add(
            "edit-imports",
            "imports",
            {},
            head + diff.split("\n", 1)[1],
            "the import block edited",
            f"an import edit that ensure-import / move-import cannot say ({why}): hunks inside the import block",
            ".diff",
        )

    def import_block_end(self) -> int:
        end = 0
        for index, stmt in enumerate(self.base.body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or (
                index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            ):
                end = index + 1
            else:
                break
        return end

    def inserted(self, at: int, stmts: list[ast.stmt]) -> None:
        if all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmts):
            self.imports_inserted(at, stmts)
            return
        names = [definition_name(s) for s in stmts]
        if any(n is None for n in names):
            bad = stmts[names.index(None)]
            raise Unfit(f"adds {_describe(bad)}, which is not a definition")
        keys: dict[str, object] = {"names": names}
        where = "at the end of the module"
        if at < len(self.base.body):
            following = self.base.body[at]
            bound = sorted(bound_names(following))
            if at == self.import_block_end():
                keys["position"] = "after-imports"
                where = "after the imports"
            elif len(bound) == 1:
                keys["before"] = bound[0]
                where = f"before {bound[0]}"
            else:
                raise Unfit(f"adds {_describe(stmts[0])} before {_describe(following)}, which binds no single name")
        self.add(
            "add-definitions",
            f"defs-{names[0]}",
            keys,
            self.source(stmts[0], stmts[-1]),
            f"added {', '.join(str(n) for n in names)} {where}",
            "new module-level definitions",
        )

    def gap(self, lines: list[str], above: ast.stmt | None, below: ast.stmt | None) -> list[str]:
        """The lines between two statements of ``lines`` (the base's or the edit's): blank lines and
        comments, without their line endings; ``above`` None: from the top of the file."""
        start = (above.end_lineno or above.lineno) if above is not None else 0
        end = _first_line(below) - 1 if below is not None else len(lines)
        return [line.rstrip("\r\n") for line in lines[start:end]]

    def imports_inserted(self, at: int, stmts: list[ast.stmt]) -> None:
        """New import statements at index ``at`` of the base body: placed as they were written.

        The lines around the new ones decide, byte for byte.  An import placed *below* the statement
        above it keeps the lines that were below that statement under itself: after an import
        (``after``; the default place at the end of the block, or under the docstring of a module
        with no import yet).  One placed *above* the statement below it takes the lines that were
        above that statement: before an import (``before``; ``position = "top"`` for the block's
        first; the default place at the very top of a module with neither imports nor docstring).
        A blank line on the other side is ``new_group``.  Every other layout, or a place away from
        the block, no placement says."""
        body = self.base.body
        previous = body[at - 1] if at > 0 else None
        following = body[at] if at < len(body) else None
        index = next(i for i, t in enumerate(self.target.body) if t is stmts[0])
        above = self.target.body[index - 1] if index > 0 else None
        end = index + len(stmts)
        below = self.target.body[end] if end < len(self.target.body) else None
        was = self.gap(split_lines(self.base_text), previous, following)
        over, under = self.gap(self.lines, above, stmts[0]), self.gap(self.lines, stmts[-1], below)
        block_end = self.import_block_end()
        is_import = (ast.Import, ast.ImportFrom)
        keys: dict[str, object] = {}
        if any(self.gap(self.lines, a, b) for a, b in itertools.pairwise(stmts)):
            raise Unfit(f"adds {_describe(stmts[0])} and imports after it with blank lines or comments between them")
        placed_after = isinstance(previous, is_import) or (previous is not None and at == block_end)
        placed_before = isinstance(following, is_import) or (previous is None and following is not None)
        if placed_after and under == was and over in ([], [""]):
            group = over == [""]
            if at != block_end:
                keys["after"] = self.base_source(previous)  # type: ignore[arg-type]
                why = "a new import inside the import block, placed with `after`"
            elif isinstance(previous, is_import):
                why = "a new import after the import block"
            else:
                why = "a new import right after the module docstring, in a module with no import yet"
        elif placed_before and over == was and under in ([], [""]):
            group = under == [""]
            start = 1 if body and is_docstring(body[0]) else 0
            if not isinstance(following, is_import):
                why = "a new import at the top of a module with neither imports nor a docstring"
            elif at == start:
                keys["position"] = "top"
                why = 'a new import at the top of the import block, placed with `position = "top"`'
            else:
                keys["before"] = self.base_source(following)
                why = "a new import right before an existing one, placed with `before`"
        elif placed_after or placed_before:
            raise Unfit(
                f"adds {_describe(stmts[0])} with {_shown_gap(over)} above it and {_shown_gap(under)} below it, "
                f"where the file had {_shown_gap(was)}: no placement of ensure-import writes that layout"
            )
        else:
            where = f"after {_describe(previous)}" if previous is not None else "at the top of the module"
            nxt = f" and before {_describe(following)}" if following is not None else ""
            raise Unfit(
                f"adds {_describe(stmts[0])} {where}{nxt}, away from the import block; "
                "ensure-import places imports in or at the edge of the block only"
            )
        if group:
            keys["new_group"] = True
            why += ", as a group of its own (a blank line between: `new_group`)"
        for stmt in stmts:
            code = self.source(stmt, stmt, comments=False).strip()
            if any(alias.name == "*" for alias in stmt.names):  # type: ignore[attr-defined]
                raise Unfit(
                    f"adds {_describe(stmt)}, a star import: ensure-import adds named imports only "
                    "(import each name it needs)"
                )
            first = items_of(stmt)[0]  # type: ignore[arg-type]
            self.add(
                "ensure-import",
                f"import-{first.binds}",
                {"import": code, **keys},
                None,
                f"added `{code}`" if "\n" not in code else f"added an import of {first.binds}",
                why,
            )
            if keys:  # the next statement of the run goes right after this one
                keys = {"after": code}

    def imports_changed(self, old: list[ast.stmt], new: list[ast.stmt]) -> None:
        def items(stmts: list[ast.stmt]) -> dict[tuple[str, str | None], tuple[int, str | None, str | None]]:
            out = {}
            for stmt in stmts:
                for item in items_of(stmt):  # type: ignore[arg-type]
                    out[(item.binds, item.name)] = (item.level, item.module, item.asname)
            return out

        before, after = items(old), items(new)
        moved = False
        for key, (level, module, asname) in before.items():
            if key in after and after[key] == (level, module, asname):
                continue
            if key not in after or key[1] is None or after[key][2] != asname:
                raise Unfit(f"removes or renames the import of {key[0]} ({_describe(old[0])})")
            _level, to_module, _ = after[key]
            src = "." * level + (module or "")
            dest = "." * after[key][0] + (to_module or "")
            keys: dict[str, object] = {"name": key[1], "from": src, "to": dest}
            placed = self.moved_placement(old, new, key[1], (level, module), (after[key][0], to_module))
            keys.update(placed)
            above = placed.get("position") == "before"
            group = ", a blank line between them (`new_group`)" if placed.get("new_group") else ""
            self.add(
                "move-import",
                f"move-{key[1]}",
                keys,
                None,
                f"{key[1]} now imported from {dest} instead of {src}" + (", above the old import" if above else ""),
                "the same name imported from another module"
                + ('; written above the old import, kept there with `position = "before"`' if above else "")
                + group,
            )
            moved = True
        extra = [k for k in after if k not in before]
        if extra:
            raise Unfit(f"adds the import of {extra[0][0]} while changing other imports ({_describe(new[0])})")
        if not moved:
            raise Unfit(f"rewrites imports without changing what they import ({_describe(new[0])})")

    def moved_placement(
        self,
        old: list[ast.stmt],
        new: list[ast.stmt],
        name: str,
        source: tuple[int, str | None],
        dest: tuple[int, str | None],
    ) -> dict[str, object]:
        """The ``move-import`` keys that place the name's new import as the edit wrote it.

        Where the old statement kept other names, the new line stands right below what is left of
        it (the default) or right above it (``position = "before"``), the lines that were on that
        side of the old import staying there, and one blank line between the two or none
        (``new_group``).  Anything else no placement says."""

        def find(stmts: list[ast.stmt], module: tuple[int, str | None], with_name: bool) -> ast.stmt | None:
            for stmt in stmts:
                same = isinstance(stmt, ast.ImportFrom) and (stmt.level, stmt.module) == module
                if same and with_name == any(a.name == name for a in stmt.names):  # type: ignore[attr-defined]
                    return stmt
            return None

        moved, rest, was = find(new, dest, True), find(new, source, False), find(old, source, True)
        if moved is None or rest is None or was is None:
            return {}  # the old statement held only the name: rewritten in place, no new line
        target, base, base_lines = self.target.body, self.base.body, split_lines(self.base_text)
        n, r, o = target.index(moved), target.index(rest), base.index(was)

        def near(body: list[ast.stmt], i: int) -> ast.stmt | None:
            return body[i] if 0 <= i < len(body) else None

        if n + 1 == r:  # above what is left of the old import, under the lines that were above it
            keys: dict[str, object] = {"position": "before"}
            between = self.gap(self.lines, moved, rest)
            kept = self.gap(self.lines, near(target, n - 1), moved) == self.gap(base_lines, near(base, o - 1), was)
        elif r + 1 == n:  # below it, over the lines that were below it
            keys = {}
            between = self.gap(self.lines, rest, moved)
            kept = self.gap(self.lines, moved, near(target, n + 1)) == self.gap(base_lines, was, near(base, o + 1))
        else:
            raise Unfit(
                f"imports {name} from its new module at line {moved.lineno}, away from the old import "
                f"(line {rest.lineno}); move-import writes the new line next to the old one"
            )
        if not kept or between not in ([], [""]):
            raise Unfit(
                f"moves the import of {name} with blank lines or comments around the new line (line "
                f"{moved.lineno}) that no placement of move-import writes"
            )
        if between:
            keys["new_group"] = True
        return keys

    # -- definitions -------------------------------------------------------------------

    def changed(self, old: ast.stmt, new: ast.stmt, owner: str) -> None:
        qual = f"{owner}{getattr(new, 'name', '')}"
        if canon(old) == canon(new):
            # The same code; only formatting or comments may differ.  Inside a function that is
            # an edit-function (its hunks carry any text); in a class, look at its members.
            if isinstance(old, FunctionNode) and self.text_differs(old, new):
                self.formatting(qual, old, new)
            elif isinstance(old, ast.ClassDef) and isinstance(new, ast.ClassDef) and self.text_differs(old, new):
                for a, b in zip(old.body, new.body, strict=True):
                    self.changed(a, b, qual + ".")
            return
        if isinstance(old, FunctionNode) and type(old) is type(new):
            self.function(qual, old, new)  # type: ignore[arg-type]
        elif isinstance(old, ast.ClassDef) and isinstance(new, ast.ClassDef):
            self.klass(qual, old, new)
        elif (
            not owner and isinstance(old, (ast.Assign, ast.AnnAssign)) and isinstance(new, (ast.Assign, ast.AnnAssign))
        ):
            try:
                self.list_item(old, new)
            except Unfit:
                if definition_name(old) is None:
                    raise
                self.statement_edited(old, new, str(definition_name(old)))
        else:
            raise Unfit(_changes(old, new))

    def function(self, qual: str, old: ast.FunctionDef, new: ast.FunctionDef) -> None:
        runs = _insertions(old.body, new.body) if _header(old) == _header(new) and not self.hunks else None
        if runs is not None and all(self._unique_anchor(old, anchor) for anchor, _, _ in runs):
            for number, (anchor, position, stmts) in enumerate(runs, start=1):
                body = self.raw_source(stmts[0], stmts[-1])  # at its own column: strings keep their value
                noun = "statement" if len(stmts) == 1 else "statements"
                self.add(
                    "insert",
                    f"{qual.lower()}-insert" + (f"-{number}" if len(runs) > 1 else ""),
                    {"function": qual, "anchor": ast.unparse(anchor), "position": position, "body_of": "inserted"},
                    f"def inserted():\n{body}",
                    f"{len(stmts)} {noun} added {position} line {anchor.lineno} in {qual}",
                    "statements added inside an otherwise unchanged function; the anchor is unique in it",
                )
            return
        if _header(old) == _header(new):
            scoped = self.function_hunks(qual, old, new)
            if scoped is not None:
                diff, _kept, total, changed = scoped
                self.edit_function(
                    qual,
                    diff,
                    f"{qual} edited inside ({changed} of {total} lines changed)",
                    "an edit inside the function: its hunks are matched inside it only, so upstream's edits "
                    "elsewhere in the function, or the function moving, do not block it",
                )
                return
            why = "the function is rewritten wholesale (fewer than half its lines kept); expect pins the base version"
            what = "rewritten"
        else:
            why = "its signature or decorators changed; expect pins the base version"
            what = "signature"
        self.add(
            "replace-function",
            qual.lower(),
            {"function": qual, "expect": digest(old)},
            self.nested(qual.split(".")[:-1], new, new) if "." in qual else self.source(new, new),
            f"{qual} changed ({what})",
            why,
        )

    def text_differs(self, old: ast.stmt, new: ast.stmt) -> bool:
        base_lines = split_lines(self.base_text)
        a_first, a_last = function_lines(old, base_lines)
        b_first, b_last = function_lines(new, self.lines)
        return base_lines[a_first - 1 : a_last] != self.lines[b_first - 1 : b_last]

    def formatting(self, qual: str, old: ast.stmt, new: ast.stmt) -> None:
        scoped = self.function_hunks(qual, old, new, wholesale=False)
        assert scoped is not None
        diff, _kept, total, changed = scoped
        self.edit_function(
            qual,
            diff,
            f"{qual}: formatting or comments only ({changed} of {total} lines changed)",
            "the same code with other formatting or comments, inside a function: hunks carry text exactly",
        )

    def edit_function(self, qual: str, diff: str, change: str, why: str) -> None:
        self.add("edit-function", f"{qual.lower()}-edit", {"function": qual}, diff, change, why, ".diff")

    def function_hunks(
        self, qual: str, old: ast.stmt, new: ast.stmt, *, wholesale: bool = True
    ) -> tuple[str, int, int, int] | None:
        """(diff payload, lines kept, lines in the base function, changed lines), or None when
        the function is rewritten wholesale (fewer than half of its lines kept)."""
        base_lines = split_lines(self.base_text)
        a_first, a_last = function_lines(old, base_lines)
        b_first, b_last = function_lines(new, self.lines)
        before = base_lines[a_first - 1 : a_last]
        after = self.lines[b_first - 1 : b_last]
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        kept = sum(block.size for block in matcher.get_matching_blocks())
        if wholesale and kept * 2 < len(before):
            return None
        changed = len(before) - kept + len(after) - kept
        diff = unified_diff(self.path, "".join(before), "".join(after))
        head = f"# edit-function {qual}: hunk line numbers count from the function's first line (line 1)\n"
        body = diff.split("\n", 1)[1]  # without the `diff --git` line: this is not a diff of the file
        return head + body, kept, len(before), changed

    @staticmethod
    def _unique_anchor(fn: ast.FunctionDef, anchor: ast.stmt) -> bool:
        return sum(1 for m in walk_statements(fn.body) if canon(m.node) == canon(anchor)) == 1

    def klass(self, qual: str, old: ast.ClassDef, new: ast.ClassDef) -> None:
        if _header(old) != _header(new):
            raise Unfit(f"changes the header of class {qual} (bases, keywords or decorators)")
        base, target = old.body, new.body
        matcher = difflib.SequenceMatcher(None, [_key(s) for s in base], [_key(s) for s in target], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for a, b in zip(base[i1:i2], target[j1:j2], strict=True):
                    self.changed(a, b, qual + ".")
            elif tag == "insert":
                self.methods_added(qual, base, i1, target[j1:j2])
            elif tag == "delete":
                self.deleted(base[i1:i2], qual)
            else:
                raise Unfit(f"replaces {_describe(base[i1])} in class {qual} with {_describe(target[j1])}")

    def deleted(self, stmts: list[ast.stmt], owner: str | None) -> None:
        """Definitions deleted from the module (``owner`` None) or from class ``owner``."""
        names = [_member_name(s) for s in stmts]
        where = f" from class {owner}" if owner else ""
        if any(n is None for n in names) or any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmts):
            bad = next(s for s, n in zip(stmts, names, strict=True) if n is None or isinstance(s, ast.Import))
            raise Unfit(
                f"deletes {_describe(bad)}{where}, which is not a definition (remove-definitions removes those)"
            )
        keys: dict[str, object] = {"names": names, "expect": [digest(s) for s in stmts]}
        if owner:
            keys = {"class": owner, **keys}
        self.add(
            "remove-definitions",
            f"remove-{names[0]}",
            keys,
            None,
            f"deleted {', '.join(str(n) for n in names)}{where}",
            "definitions deleted; expect pins the code removed, so an upstream change to it is a CONFLICT",
        )

    def methods_added(self, qual: str, base: list[ast.stmt], at: int, added: list[ast.stmt]) -> None:
        """Methods added to class ``qual`` before index ``at`` of its base body: ``add-methods``,
        at the end, or ``after`` the member above them (``before`` the one below, when the
        member above binds no single name)."""
        if not all(isinstance(s, FunctionNode) for s in added):
            bad = next(s for s in added if not isinstance(s, FunctionNode))
            raise Unfit(f"adds {_describe(bad)} to class {qual}, which is not a method")
        names = [s.name for s in added]  # type: ignore[attr-defined]
        keys: dict[str, object] = {"class": qual, "methods": names}
        where, why = "", "new methods at the end of an existing class"
        if at < len(base):
            above = _member_name(base[at - 1]) if at > 0 else None
            below = _member_name(base[at])
            if above is not None:
                keys["after"], where = above, f" after {above}"
            elif below is not None:
                keys["before"], where = below, f" before {below}"
            else:
                raise Unfit(
                    f"adds {_describe(added[0])} in the middle of class {qual}, between statements that bind "
                    "no single name, so `after` / `before` cannot place it"
                )
            side = "after" if "after" in keys else "before"
            why = f"new methods between two members of an existing class, placed with `{side}`"
        self.add(
            "add-methods",
            f"{qual.lower()}-methods",
            keys,
            self.nested(qual.split("."), added[0], added[-1]),
            f"added {', '.join(names)} to class {qual}{where}",
            why,
        )

    def list_item(self, old: ast.Assign | ast.AnnAssign, new: ast.Assign | ast.AnnAssign) -> None:
        name = definition_name(old)
        a, b = old.value, new.value
        same_shape = type(a) is type(b) and isinstance(a, (ast.List, ast.Tuple))
        if not same_shape or _header_of_assign(old) != _header_of_assign(new):
            raise Unfit(_changes(old, new))
        olds, news = a.elts, b.elts  # type: ignore[union-attr]
        if len(news) != len(olds) + 1 or canon(olds) != canon(news[: len(olds)]):
            raise Unfit(f"changes {_describe(old)} other than by appending one item")
        item = ast.get_source_segment("".join(self.lines), news[-1]) or ast.unparse(news[-1])
        self.add(
            "ensure-list-item",
            f"{str(name).lower()}-item",
            {"target": name, "item": item},
            None,
            f"{item} appended to {name}",
            "one item appended to a module-level list or tuple",
        )


def _first_line(stmt: ast.stmt) -> int:
    """A statement's first line: its first decorator's, for a decorated def or class."""
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])


def _shown_gap(lines: list[str]) -> str:
    """How the summary names the lines between two statements."""
    if not lines:
        return "no line"
    if all(not line.strip() for line in lines):
        return "1 blank line" if len(lines) == 1 else f"{len(lines)} blank lines"
    return f"{len(lines)} lines of blank lines and comments" if len(lines) > 1 else f"the line {lines[0]!r}"


def _member_name(stmt: ast.stmt) -> str | None:
    """The one name a class-body statement binds (a def, a class, a single-name assignment)."""
    if isinstance(stmt, DEF_KINDS):
        return stmt.name
    return definition_name(stmt)


def _header_of_assign(stmt: ast.Assign | ast.AnnAssign) -> str:
    clone = copy.copy(stmt)
    clone.value = None
    return canon(clone)


def _insertions(old: list[ast.stmt], new: list[ast.stmt]) -> list[tuple[ast.stmt, str, list[ast.stmt]]] | None:
    """[(anchor in ``old``, "before"/"after", inserted statements)] when ``new`` is
    ``old`` plus runs of statements, all in one block at any depth; else None."""
    if len(new) > len(old):
        matcher = difflib.SequenceMatcher(None, [canon(s) for s in old], [canon(s) for s in new], autojunk=False)
        runs: list[tuple[ast.stmt, str, list[ast.stmt]]] = []
        for tag, i1, _i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            if tag != "insert":
                return None
            if i1 > 0:
                runs.append((old[i1 - 1], "after", new[j1:j2]))
            elif old:
                runs.append((old[0], "before", new[j1:j2]))
            else:
                return None
        return runs or None
    if len(new) != len(old):
        return None
    differing = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if canon(a) != canon(b)]
    if len(differing) != 1:
        return None
    a, b = old[differing[0]], new[differing[0]]
    if type(a) is not type(b) or isinstance(a, DEF_KINDS):
        return None
    for field in ("body", "orelse", "finalbody"):
        sub_a, sub_b = getattr(a, field, None), getattr(b, field, None)
        if not isinstance(sub_a, list) or not isinstance(sub_b, list):
            continue
        if canon(sub_a) == canon(sub_b):
            continue
        rest_a, rest_b = copy.copy(a), copy.copy(b)
        setattr(rest_a, field, [])
        setattr(rest_b, field, [])
        if canon(rest_a) != canon(rest_b):
            return None
        return _insertions(sub_a, sub_b)
    return None


def propose(
    path: str, base: str, target: str, *, hunks: bool = False, import_hunks: str | None = None
) -> list[Proposal]:
    """The structured patches that express ``base`` -> ``target``; raises Unfit.

    ``hunks``: statements added inside a function become ``edit-function`` too, not
    ``insert`` (whose inserted lines cannot carry the blank lines around them): the
    second proposal capture tries when the first does not reproduce the file.
    ``import_hunks``: why the import edits go to ``edit-imports`` rather than
    ``ensure-import`` / ``move-import`` (which did not reproduce the file)."""
    return _File(path, base, target, hunks=hunks, import_hunks=import_hunks).module()
