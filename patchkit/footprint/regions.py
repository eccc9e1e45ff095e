"""The next version of a Python file compared with the last, compiling only the functions a change is in.

Compiling a whole file costs about as much as the whole file, and upstream's largest files change most
often (SGLang's ``server_args.py``: 4,600 lines, changed in one commit of six).  But a change inside
one function leaves every other line as it was, so only that function needs compiling, and CPython
still does all the reading.

Given the last version's ``Summary`` (a full compile, or one derived by ``update`` itself), the line diff
(git's hunks) and both texts, ``update`` places each hunk:

* inside a *root* function (one defined at module level or in classes only: no ``<locals>`` in its
  name), from its first decorator to its last line: that function, old and new, is compiled alone,
  wrapped in ``class`` lines that give it the same qualified name and name mangling, with the file's
  ``__future__`` flags and an ``import`` of the names its module level imports (CPython 3.11 compiles
  ``mod.f()`` one way where ``mod`` is an imported name, another where it is not).  The old one must
  compile to exactly the fingerprints the full compile gave (else the fast path gives up); the two are
  then compared as ``code.compare`` compares whole files, the wrapper's own code standing for the
  ``def`` statement (decorators, defaults, the name it binds);
* on comment or blank lines only, outside every multi-line module or class statement: nothing;
* anywhere else: module level, with nothing compiled (never too small an answer: a module that no launch
  imported ran none of its functions either).

Why compiling a root function alone is exact: every line before it is the same in both versions and
ends where a statement ends (the full compile of the old version says where its ``def`` starts), so the
new function text starts in the same state; if it compiles alone, it ends with every bracket and string
closed, so the lines after it read as they did.  What it binds and evaluates at ``def`` time is in the
wrapper's code, compared too.  What the code around it does with the function (``torch.compile(f)``) is
carried over from the last summary; a function that a module-level change names, or whose ``def``
statement changed, is forgotten (its lines ``stale``) until it is compiled again.

``update`` returns the changes and a *derived* summary of the new version (the functions' fingerprints
and lines exact; module and class code stale where a module-level change was not compiled, and the
lines of such a change ``stale``), or None where it cannot tell (a hunk in a stale span, a change to a
``__future__`` import, tab indentation, a function that does not compile alone): then the caller
compiles the whole file.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from patchkit.footprint.changes import Change, ChangeKind
from patchkit.footprint.code import (
    MODULE_NAME,
    Context,
    Summary,
    Unit,
    Unreadable,
    Walker,
    changes_of,
    coding_problem,
    compile_source,
    diff_units,
    merge_spans,
)

Hunk = tuple[int, int, int, int]
"""(i1, i2, j1, j2): old lines [i1, i2) became new lines [j1, j2), 0-based (git's ``@@ -l,s +l,s @@``)."""

_BOM = b"\xef\xbb\xbf"
_NAME = re.compile(rb"[A-Za-z_][A-Za-z_0-9]*")


@dataclass(eq=False)
class _Region:
    """A root function's lines in the old version, and the hunks inside them."""

    root: Unit
    start: int  # 0-based, first line (the first decorator's)
    end: int  # 0-based, exclusive
    hunks: list[Hunk]


RegionMemo = dict[bytes, tuple[tuple[bytes, ...], tuple[Unit, ...]]]
"""Compiled regions by the digest of their text: the new version of a function that changed is the old one
the next time it changes."""


def update(
    path: str,
    old: Summary,
    texts: tuple[bytes, bytes],
    hunks: Sequence[Hunk],
    memo: RegionMemo | None = None,
) -> tuple[tuple[Change, ...], Summary] | None:
    """The changes from the version ``old`` summarizes to the next (``texts``: both versions' bytes), and a
    summary of the next; None where only a full compile can tell."""
    old_source, new_source = texts
    if coding_problem(new_source) or old_source.startswith(_BOM) or new_source.startswith(_BOM):
        return None
    a = old_source.split(b"\n")
    b = new_source.split(b"\n")
    hunks = sorted(hunks)
    regions = _regions(old, a)
    if regions is None:
        return None
    starts = [r.start for r in regions]
    module_hunks: list[Hunk] = []
    for hunk in hunks:
        i1, i2, j1, j2 = hunk
        if any(_meets(i1, i2, first, last) for first, last in old.stale):
            return None
        region = _region_of(regions, starts, i1, i2)
        if region is not None:
            region.hunks.append(hunk)
        elif not _quiet(a, b, hunk, old.covered):
            if any(b"__future__" in line for line in (*a[i1:i2], *b[j1:j2])):
                return None
            module_hunks.append(hunk)
    if sum(max(i2 - i1, j2 - j1) for i1, i2, j1, j2 in module_hunks) * 4 > len(a):
        return None  # most of the file rewritten (reformatted?): a whole compile says whether the code changed
    found = [_module_change(old, hunk) for hunk in module_hunks]
    overlapped = [r for r in regions if any(_meets(h[0], h[1], r.start + 1, r.end) for h in module_hunks)]
    compiler = _RegionCompiler(path, old, (a, b), texts, memo if memo is not None else {})
    compared: dict[int, list[Unit]] = {}
    rebound: list[_Region] = []
    spans: dict[int, tuple[int, int]] = {}  # a compared region's lines in the new version (1-based, inclusive)
    # A function that module-level code new in this version names may be used there now (``torch.compile(f)``):
    # what is known of it does not hold any more.  That code is in the module hunks, in the functions they cut
    # into (``def main():`` become ``if __name__ == "__main__":`` turns its body into module code), and in the
    # regions whose ``def`` statement or surroundings changed (an insertion just after a function is compiled
    # with it).
    new_code = [line for _i1, _i2, j1, j2 in module_hunks for line in b[j1:j2]]
    for region in overlapped:
        new_code.extend(b[_new_line(hunks, region.start) : _new_line(hunks, max(region.end - 1, region.start)) + 1])
    wrapper_changed = False
    for region in regions:
        if not region.hunks or region in overlapped:
            continue
        done = compiler.compare(region, hunks)
        if done is None:
            return None
        region_found, units, changed, (start, end) = done
        found.extend(region_found)
        compared[id(region)] = units
        spans[id(region)] = (start + 1, end)
        if changed:
            # What binds the function changed (a rename, a decorator, a function added next to it): whether the
            # code around it uses it is not in the region: compiled again when it next changes.
            wrapper_changed = True
            new_code.extend(b[start:end])
            rebound.append(region)
    named = set(_NAME.findall(b"\n".join(new_code)))
    dropped = [
        r for r in regions if r in overlapped or r in rebound or r.root.qualname.rsplit(".", 1)[-1].encode() in named
    ]
    replaced = [r for r in regions if id(r) in compared and r not in dropped]
    new_units = [u for r in replaced for u in compared[id(r)]]
    unknown = [spans.get(id(r), (_move(hunks, r.start + 1), _move(hunks, r.end))) for r in dropped]
    summary = _derive(old, hunks, module_hunks, (*replaced, *dropped), unknown, new_units, wrapper_changed)
    return changes_of(path, found), summary


def _module_change(old: Summary, hunk: Hunk) -> tuple[ChangeKind, str | None, str]:
    """A hunk at module level, named by the innermost class whose body it is in (for the reader)."""
    i1, i2 = hunk[0], hunk[1]
    inside = [u for u in old.units if u.kind == "class" and u.first <= i1 and max(i2, i1 + 1) <= u.last]
    if inside and "<locals>" not in inside[-1].qualname:
        cls = max(inside, key=lambda u: u.first)
        return ChangeKind.MODULE, cls.qualname, f"class {cls.qualname} body"
    return ChangeKind.MODULE, None, "module statements"


def _regions(old: Summary, a: list[bytes]) -> list[_Region] | None:
    """The root functions' line spans in the old version, in order; None where two overlap."""
    out: list[_Region] = []
    for unit in sorted(
        (u for u in old.units if u.kind == "function" and "<locals>" not in u.qualname), key=lambda u: u.first
    ):
        start = unit.first - 1
        base = _indent(a[start]) if start < len(a) else 0
        end = unit.last
        # Lines after the last one with code that are blank or indented deeper (a closing bracket, a comment)
        # are the function's too; a region too long is still exact, one too short fails the check.
        while end < len(a) and (not a[end].strip() or _indent(a[end]) > base):
            end += 1
        if out and start < out[-1].end:
            return None
        out.append(_Region(unit, start, end, []))
    return out


def _region_of(regions: list[_Region], starts: list[int], i1: int, i2: int) -> _Region | None:
    """The region a hunk lies in: its old lines inside the span, or an insertion after the span's first line
    and no later than just after its last."""
    k = bisect.bisect_right(starts, i1) - 1
    for region in regions[max(k - 1, 0) : k + 1] if k >= 0 else ():
        if i1 < i2 and region.start <= i1 and i2 <= region.end:
            return region
        if i1 == i2 and region.start < i1 <= region.end:
            return region
    return None


def _meets(i1: int, i2: int, first: int, last: int) -> bool:
    """Whether old lines [i1, i2) (0-based; an insertion point where i1 == i2) touch lines first..last (1-based)."""
    if i1 == i2:
        return first <= i1 < last  # inserted between two lines of the span
    return i1 + 1 <= last and first <= i2


def _quiet(a: list[bytes], b: list[bytes], hunk: Hunk, covered: Sequence[tuple[int, int]]) -> bool:
    """Whether a hunk outside every function changes only comments, blank lines and trailing blanks: the same
    code lines in the same order on both sides, none of them inside a multi-line module or class statement
    (where a comment-looking line is part of a string), no ``coding`` cookie, no backslash continuation."""
    i1, i2, j1, j2 = hunk
    if any(_meets(i1, i2, first, last) for first, last in covered):
        return False
    if i1 > 0 and a[i1 - 1].rstrip().endswith(b"\\"):
        return False
    if min(i1, j1) < 2 and any(b"coding" in line for line in (*a[i1:i2], *b[j1:j2])):
        return False  # a coding cookie is a comment that changes how the file reads
    before, after = _code_lines(a[i1:i2]), _code_lines(b[j1:j2])
    return before is not None and before == after


def _code_lines(lines: list[bytes]) -> list[bytes] | None:
    """The code of lines that are code, comments removed and blanks dropped; None where a code line has a quote
    (a ``#`` there may be in a string) or ends in a backslash."""
    out = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(b"#"):
            continue
        if b"'" in line or b'"' in line:
            return None
        code = line.split(b"#", 1)[0].rstrip()
        if code.endswith(b"\\"):
            return None
        out.append(code)
    return out


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _new_line(hunks: Sequence[Hunk], x: int) -> int:
    """Where old line ``x`` (0-based) is in the new version (a line a hunk replaced: the line it became, or
    the hunk's first new line)."""
    shift = 0
    for i1, i2, j1, j2 in hunks:
        if i1 > x:
            break
        if i1 < i2 and x < i2:
            return j1 + min(x - i1, max(j2 - j1 - 1, 0))
        shift += (j2 - j1) - (i2 - i1)
    return x + shift


class _RegionCompiler:
    """Compiles root functions alone, old and new, for one ``update``."""

    def __init__(
        self,
        path: str,
        old: Summary,
        lines: tuple[list[bytes], list[bytes]],
        texts: tuple[bytes, bytes],
        memo: RegionMemo,
    ) -> None:
        self.path = path
        self.old = old
        self.lines = lines
        self.texts = texts
        self.memo = memo

    def compare(
        self, region: _Region, hunks: Sequence[Hunk]
    ) -> tuple[list[tuple[ChangeKind, str | None, str]], list[Unit], bool, tuple[int, int]] | None:
        """(changes, the new units at their lines in the file, whether the ``def`` statement itself changed, the
        region's new lines), or None where that cannot be done exactly."""
        a, b = self.lines
        chain = region.root.qualname.split(".")[:-1]
        context = Context(None, False, "")
        for depth in range(1, len(chain) + 1):
            outer = [u for u in self.old.units if u.kind == "class" and u.qualname == ".".join(chain[:depth])]
            if len(outer) != 1:
                return None  # a class defined twice, or a qualified name that is not a chain of classes
            context = Context(outer[0].charge, outer[0].opaque, outer[0].why)
        head = a[region.start]
        base = head[: _indent(head)]
        if b"\t" in base or len(base) < len(chain):
            return None
        wrapper = [b"import " + ", ".join(self.old.imports).encode()] if self.old.imports else []
        wrapper.extend(b" " * depth + b"class " + name.encode() + b":" for depth, name in enumerate(chain))
        if not chain and base:
            wrapper.append(b"if 1:")
        new_start = _new_line(hunks, region.start)
        new_end = (
            new_start + (region.end - region.start) + sum((j2 - j1) - (i2 - i1) for i1, i2, j1, j2 in region.hunks)
        )
        before = self.compile(wrapper, a[region.start : region.end], base, chain, context, self.texts[0])
        after = self.compile(wrapper, b[new_start:new_end], base, chain, context, self.texts[1])
        if before is None or after is None:
            return None
        (old_wrap, old_units), (new_wrap, new_units) = before, after
        root = region.root.qualname
        alone = [u for u in old_units if u.kind == "function" and u.qualname == root]
        if region.root.opaque and alone and not alone[0].opaque:
            # Opaque for what the code around it does with it (``torch.compile(f)`` below it): not in the region.
            old_units, new_units = _as_used(old_units, region.root), _as_used(new_units, region.root)
        expected = sorted(
            _sig(u, 0)
            for u in self.old.units
            if u.kind != "module"
            and region.start < u.first <= region.end
            and (u.qualname == root or u.qualname.startswith(root + "."))
        )
        if expected != sorted(_sig(u, region.start - len(wrapper)) for u in old_units):
            return None  # alone, the function does not compile to what the whole file did: compile the file
        found = diff_units(old_units, new_units)
        changed = old_wrap != new_wrap
        if changed:
            where = ".".join(chain)
            found.append((ChangeKind.MODULE, where or None, f"class {where} body" if where else "module statements"))
        offset = new_start - len(wrapper)
        placed = [
            Unit(u.qualname, u.kind, u.fingerprint, u.charge, u.why, u.opaque, u.first + offset, u.last + offset)
            for u in new_units
        ]
        return found, placed, changed, (new_start, new_end)

    def compile(
        self,
        wrapper: list[bytes],
        lines: list[bytes],
        base: bytes,
        chain: list[str],
        context: Context,
        source: bytes,
    ) -> tuple[tuple[bytes, ...], tuple[Unit, ...]] | None:
        """Compile the wrapper and a region's lines: (the fingerprints of the wrapper's own code, which holds
        what the ``def`` statements evaluate and bind; the region's units, charged as in the whole file)."""
        text = b"\n".join([*wrapper, *lines, base + b"pass"]) + b"\n"
        key = hashlib.blake2b(text + b"\0%d" % self.old.future + repr(context).encode(), digest_size=16).digest()
        known = self.memo.get(key)
        if known is not None:
            return known
        code = compile_source(text, self.path, self.old.future)
        if isinstance(code, Unreadable):
            return None
        walker = Walker(text, source)  # the whole file's imports name the decorators
        walker.walk(code, "module", Context(None, False, ""))
        outer = {MODULE_NAME, *(".".join(chain[: k + 1]) for k in range(len(chain)))}
        wrap = tuple(u.fingerprint for u in walker.units if u.kind != "function" and u.qualname in outer)
        units = tuple(u for u in walker.units if u.kind == "function" or u.qualname not in outer)
        if context.opaque:
            # A decorator around the class may read every method: charged where the class statement runs.
            units = tuple(
                Unit(u.qualname, u.kind, u.fingerprint, context.charge, u.why or context.why, True, u.first, u.last)
                for u in units
            )
        if not walker.consulted_imports:
            self.memo[key] = (wrap, units)
        return wrap, units


def _as_used(units: Sequence[Unit], root: Unit) -> tuple[Unit, ...]:
    """A region's units where the root function is used by the code around it: charged where it is."""
    out = []
    for u in units:
        if u.qualname == root.qualname or u.qualname.startswith(root.qualname + "."):
            u = Unit(
                u.qualname, u.kind, u.fingerprint, root.charge, u.why if u.opaque else root.why, True, u.first, u.last
            )
        out.append(u)
    return tuple(out)


def _sig(u: Unit, offset: int) -> tuple[object, ...]:
    return (u.kind, u.qualname, u.fingerprint, u.charge or "", u.why, u.opaque, u.first + offset, u.last + offset)


def _derive(
    old: Summary,
    hunks: Sequence[Hunk],
    module_hunks: Sequence[Hunk],
    gone: Sequence[_Region],
    unknown: Sequence[tuple[int, int]],
    new_units: Sequence[Unit],
    wrapper_changed: bool,
) -> Summary:
    """The new version's summary: the old one's units moved to their new lines, but for the regions ``gone``
    (compiled again: their new units are ``new_units``; or no longer known: their new lines ``unknown``), and
    the lines of module-level changes not compiled stale."""
    spans = [(r.start + 1, r.end) for r in gone]
    units: list[Unit] = []
    for u in old.units:
        if u.kind != "module" and any(first <= u.first <= last for first, last in spans):
            continue
        moved = (_move(hunks, u.first), _move(hunks, u.last))
        units.append(Unit(u.qualname, u.kind, u.fingerprint, u.charge, u.why, u.opaque, *moved))
    units.extend(new_units)
    stale = [(_move(hunks, first), _move(hunks, last)) for first, last in old.stale]
    stale.extend((j1 + 1, j2) for _i1, _i2, j1, j2 in module_hunks if j2 > j1)
    stale.extend(unknown)
    covered = [
        (_move(hunks, first), _move(hunks, last))
        for first, last in old.covered
        if not any(_meets(h[0], h[1], first, last) for h in module_hunks)
    ]
    return Summary(
        tuple(units),
        old.future,
        old.imports,
        merge_spans(covered),
        merge_spans(stale),
        old.exact and not module_hunks and not wrapper_changed,
    )


def _move(hunks: Sequence[Hunk], line: int) -> int:
    """A 1-based old line's number in the new version."""
    return _new_line(hunks, line - 1) + 1
