"""Which functions of a Python file two versions of it differ in: compared as CPython compiles them.

Each version is compiled (``compile``, no import, nothing run) and its code objects walked.  A code
object is named by ``co_qualname``, the spelling the probe records for the functions that ran
(``Class.method``, ``outer.<locals>.inner``), so the names here and there cannot disagree.  Three
kinds of code object:

* the module's, and each class body's: they run at import;
* each named function's (``def``, ``async def``): it runs when the function is called;
* lambdas and comprehensions (names in angle brackets): folded into the code that contains them, which
  must run for them to exist (Python 3.12 inlines comprehensions, so the probe cannot name them).

Every code object is fingerprinted without its line numbers (``co_firstlineno``, the line table) and with
each nested function or class replaced by its name, so a comment, a blank line or code moving down the
file changes nothing, and a change inside a nested function is that function's alone.  What a ``def``
statement evaluates (decorators, default values, annotations) is code of the enclosing scope, and so is
binding the name: adding, removing or re-decorating a method changes its class body, which runs at import.
The parameter list and the docstring are the function's own (its code object holds them).

A function's body is charged to itself, except where something other than calling it may use it: a
function with a decorator that is not known to leave the body alone (``triton.jit`` compiles it from its
source and never runs it as Python; ``torch.compile`` traces it), or one inside a class with such a
decorator, or inside such a function, is charged to the scope where the decorator runs (module level,
or the enclosing function).  The known decorators (``KEEPS_BODY``) call the function as Python, where
the probe sees it start.

Where a version cannot be compiled (a syntax error, for this interpreter's grammar; a null byte; an
encoding other than UTF-8 declared by a ``coding`` cookie), the file is changed at module level: the
answer that is never too small.  This module is pure (bytes in, values out); ``patchkit.footprint.line``
reads the blobs.
"""

from __future__ import annotations
import __future__

import dis
import hashlib
import marshal
import re
import types
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from patchkit.footprint.changes import Change, ChangeKind

MODULE_NAME = "<module>"

KEEPS_BODY = frozenset(
    {
        "property",
        "staticmethod",
        "classmethod",
        "functools.wraps",
        "functools.lru_cache",
        "functools.cache",
        "functools.cached_property",
        "functools.total_ordering",
        "functools.singledispatch",
        "functools.singledispatchmethod",
        "abc.abstractmethod",
        "contextlib.contextmanager",
        "contextlib.asynccontextmanager",
        "typing.overload",
        "typing.override",
        "typing.final",
        "typing.no_type_check",
        "typing_extensions.overload",
        "typing_extensions.override",
        "typing_extensions.final",
        "dataclasses.dataclass",
        "enum.unique",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
    }
)
"""Decorators, by the module they come from, known to call the function as Python (or only to wrap,
register or mark it), never to read or compile its code: a body under them is still charged to the
function, whose start the probe sees.  A name used bare (``@lru_cache``) counts only where the file
imports it from that module (``from functools import lru_cache``); ``@name.setter``, ``.getter`` and
``.deleter`` are a property's."""

_ACCESSORS = (".setter", ".getter", ".deleter")
_MARKS = ("pytest.mark.", "unittest.skip", "unittest.expectedFailure")  # test markers: they never read the body
_BUILTIN_DECORATORS = frozenset({"property", "staticmethod", "classmethod"})
_KEEPS_MODULES = frozenset(name.rsplit(".", 1)[0] for name in KEEPS_BODY if "." in name)
_FROM_IMPORT = re.compile(
    rb"^[ \t]*from[ \t]+(" + b"|".join(re.escape(m.encode()) for m in sorted(_KEEPS_MODULES)) + rb")[ \t]+import[ \t]+"
    rb"(\([^)]*\)|[^\n]*)",
    re.M,
)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_DECORATOR = re.compile(r"@\s*([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)")
_DEF = re.compile(r"(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
_NEWLOCALS = 0x2  # CO_NEWLOCALS: a function's code (a class body's and the module's have not)


@dataclass(frozen=True, slots=True)
class Unit:
    """One module, class body or named function of a compiled version: its ``co_qualname``, what it is,
    its fingerprint, where a change to it is charged (``charge``: the function whose body it is, or None
    for module level; ``why``: the decorator that moved it there; ``opaque``: a decorator around it, or
    around a class or function it is in, may read its code), and its lines (``first``: the first
    decorator's or the ``def``/``class`` line; ``last``: the last line with code, nested code included)."""

    qualname: str
    kind: str  # "module", "class" or "function"
    fingerprint: bytes
    charge: str | None
    why: str
    opaque: bool
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A version that could not be compiled, and why (it is changed at module level)."""

    why: str


@dataclass(frozen=True, slots=True)
class Summary:
    """One version of a Python file, compiled: its units, and what ``patchkit.footprint.regions`` needs to
    compare the next version without compiling all of it.

    ``future``: the ``__future__`` flags its module code carries, and ``imports``: the names its module
    level binds by ``import`` (a part compiled alone needs both: CPython 3.11 compiles ``mod.f()`` one way
    where ``mod`` is an imported name, another where it is not);
    ``covered``: the line spans of module and class code that run over several lines and are not a whole
    ``def`` or ``class`` (a string, a bracketed literal: a comment-looking line there is code);
    ``stale``: line spans whose units are not known (a summary derived from an older one, where a
    module-level change was not compiled); ``exact``: every fingerprint is the whole file's, as a full
    compile gives it (a derived summary knows its functions exactly, not always its module and class code).
    """

    units: tuple[Unit, ...]
    future: int
    imports: tuple[str, ...]
    covered: tuple[tuple[int, int], ...]
    stale: tuple[tuple[int, int], ...] = ()
    exact: bool = True


_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag
_CACHE = dis.opmap["CACHE"]
_LINE = itemgetter(2)
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]
_STORE_NAME = dis.opmap["STORE_NAME"]
_STORE_GLOBAL = dis.opmap["STORE_GLOBAL"]
_LOAD_NAME = dis.opmap["LOAD_NAME"]
_LOAD_ATTR = dis.opmap["LOAD_ATTR"]
_LOAD_METHOD = dis.opmap["LOAD_METHOD"]
_IMPORT_STEPS = frozenset(
    dis.opmap[name] for name in ("IMPORT_FROM", "STORE_NAME", "STORE_GLOBAL", "SWAP", "POP_TOP") if name in dis.opmap
)


def coding_problem(source: bytes) -> str | None:
    """Why the file cannot be read as UTF-8 (an encoding declared by a ``coding`` cookie), or None."""
    for line in source.split(b"\n", 2)[:2]:
        cookie = _CODING.match(line)
        if cookie and cookie.group(1).decode("ascii", "replace").lower().replace("_", "-") not in ("utf-8", "utf8"):
            return f"declares the encoding {cookie.group(1).decode('ascii', 'replace')}"
    return None


def compile_source(source: bytes, path: str, flags: int = 0) -> types.CodeType | Unreadable:
    """``compile`` with nothing inherited from this module and no warnings; a failure is ``Unreadable``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: the file's business, not ours
            return compile(source, path, "exec", flags=flags, dont_inherit=True, optimize=0)
    except SyntaxError as exc:
        return Unreadable(f"does not compile (line {exc.lineno}: {exc.msg})")
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return Unreadable(f"does not compile ({type(exc).__name__}: {exc})")


def summarize(source: bytes, path: str) -> Summary | Unreadable:
    """Compile one version of a file and fingerprint its code objects (``path`` only names it in errors)."""
    problem = coding_problem(source)
    if problem is not None:
        return Unreadable(problem)
    code = compile_source(source, path)
    if isinstance(code, Unreadable):
        return code
    walker = Walker(source)
    walker.walk(code, "module", Context(None, False, ""))
    return Summary(tuple(walker.units), code.co_flags & _FUTURE_FLAGS, import_names(code), merge_spans(walker.covered))


def import_names(code: types.CodeType) -> tuple[str, ...]:
    """The names module code binds by ``import`` (``import a.b`` binds ``a``; ``from m import x as y``, ``y``),
    read from its instructions: each ``STORE_NAME`` that follows an ``IMPORT_NAME`` within one statement."""
    names: set[str] = set()
    raw = code.co_code
    arg = 0
    importing = False
    for i in range(0, len(raw), 2):
        op = raw[i]
        arg = arg << 8 | raw[i + 1]
        if op in (_EXTENDED_ARG, _CACHE):
            continue
        if op == _IMPORT_NAME:
            importing = True
        elif importing and op in (_STORE_NAME, _STORE_GLOBAL):
            names.add(code.co_names[arg])
        elif op not in _IMPORT_STEPS:
            importing = False
        arg = 0
    return tuple(sorted(names))


def merge_spans(spans: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Line spans (first, last; inclusive) sorted, with overlapping and touching ones merged."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Context:
    """Where the code being walked is charged: the function (None: module level), whether a decorator
    around it may read it, and which."""

    charge: str | None
    opaque: bool
    why: str


class Walker:
    """Walks a compiled version's code objects into ``units`` (and ``covered``)."""

    def __init__(self, text: bytes, source: bytes | None = None) -> None:
        """``text``: what was compiled; ``source``: the file whose imports name its decorators (``text``'s own
        where it is the whole file)."""
        self.source = text if source is None else source
        self.lines = text.decode("utf-8", "replace").split("\n")  # as the compiler counts lines
        self._imported: dict[str, str] | None = None
        self.units: list[Unit] = []
        self.covered: list[tuple[int, int]] = []

    @property
    def consulted_imports(self) -> bool:
        return self._imported is not None

    def imported(self) -> dict[str, str]:
        if self._imported is None:
            self._imported = keeps_imports(self.source)
        return self._imported

    def walk(self, code: types.CodeType, kind: str, ctx: Context) -> int:
        """Add ``code``'s unit and its nested classes' and functions' (charged from ``ctx``); return its last line."""
        consts: list[Any] = []
        children: list[tuple[types.CodeType, str]] = []
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                child_kind = _kind(const)
                if child_kind is None:
                    consts.append(("<fold>", _fingerprint(const)))
                    continue
                consts.append((f"<{child_kind}>", const.co_qualname))
                children.append((const, child_kind))
            else:
                consts.append(_const(const))
        index = len(self.units)
        self.units.append(Unit("", kind, b"", None, "", False, 0, 0))  # filled in below, in walk order
        last = _last_line(code)
        spans = []
        for child, child_kind in children:
            child_ctx = self.child_context(child, child_kind, ctx)
            if child_kind == "function" and not child_ctx.opaque and loads_name(code, child.co_name):
                # The code around it uses the function object itself, not only binds it: it may pass it to a
                # compiler (``torch.compile(f)``, ``triton.jit(f)``) that never runs it as Python.
                where = "at import" if kind != "function" else f"by {code.co_qualname}"
                child_ctx = Context(ctx.charge, True, f"used {where} (passed, wrapped or aliased)")
            child_last = self.walk(child, child_kind, child_ctx)
            spans.append((child.co_firstlineno, child_last))
            last = max(last, child_last)
        if kind != "function":
            self._cover(code, spans)
        qualname = code.co_qualname if kind != "module" else MODULE_NAME
        first = code.co_firstlineno if kind != "module" else 1
        self.units[index] = Unit(qualname, kind, _digest(code, consts), ctx.charge, ctx.why, ctx.opaque, first, last)
        return last

    def child_context(self, child: types.CodeType, child_kind: str, ctx: Context) -> Context:
        """A nested class or function's context: a class runs where its statement runs; a function's body is
        its own, unless a decorator around it (or around a class or function it is in) may read its code."""
        unknown = list(dict.fromkeys(unknown_decorators(child, self.lines, self.imported)))
        why = f"decorated with {', '.join(f'@{d}' for d in unknown)}" if unknown else ctx.why
        opaque = ctx.opaque or bool(unknown)
        if child_kind == "class" or opaque:
            return Context(ctx.charge, opaque, why)
        return Context(child.co_qualname, False, "")

    def _cover(self, code: types.CodeType, spans: list[tuple[int, int]]) -> None:
        """Module or class code's multi-line spans, but for the instructions that build a ``def`` or ``class``
        (which run from its keyword to its last line: the function's own lines are compared as its own)."""
        op = code.co_code
        for i, (start, end, _col, _end_col) in enumerate(code.co_positions()):
            if start is None or end is None or start < 1 or end <= start or op[2 * i] == _CACHE:
                continue
            if not any(first <= start and end == last for first, last in spans):
                self.covered.append((start, end))  # not the statement that builds a def or class


def loads_name(code: types.CodeType, name: str) -> bool:
    """Whether ``code`` loads ``name`` (a function defined in it), other than as ``name.setter`` and the like
    (a property's next accessor)."""
    if code.co_flags & _NEWLOCALS:
        if name in code.co_cellvars:
            return True  # another nested function uses it
        if name not in code.co_varnames:
            return False
        return any(i.opname == "LOAD_FAST" and i.argval == name for i in dis.get_instructions(code))
    if name not in code.co_names:
        return False
    index = code.co_names.index(name)
    if index > 0xFFFF:
        return True
    pattern = bytes([_LOAD_NAME, index & 0xFF])
    if index > 0xFF:
        pattern = bytes([_EXTENDED_ARG, index >> 8]) + pattern
    raw = code.co_code
    at = raw.find(pattern)
    while at != -1:
        if at % 2 == 0 and (index > 0xFF or at == 0 or raw[at - 2] != _EXTENDED_ARG):
            after = at + len(pattern)
            while after < len(raw) and raw[after] == _CACHE:
                after += 2
            accessor = (
                after < len(raw)
                and raw[after] in (_LOAD_ATTR, _LOAD_METHOD)
                and code.co_names[raw[after + 1]] in ("setter", "getter", "deleter")
            )
            if not accessor:
                return True
        at = raw.find(pattern, at + 1)
    return False


def _last_line(code: types.CodeType) -> int:
    return max(filter(None, map(_LINE, code.co_lines())), default=code.co_firstlineno)


def _kind(code: types.CodeType) -> str | None:
    """ "function", "class", or None for a code object folded into its parent (a lambda, a comprehension)."""
    if code.co_name.startswith("<"):
        return None
    return "function" if code.co_flags & _NEWLOCALS else "class"


def _fingerprint(code: types.CodeType) -> tuple[Any, ...]:
    """A folded code object's whole content (its own nested code included), line numbers left out."""
    consts = tuple(("<fold>", _fingerprint(c)) if isinstance(c, types.CodeType) else _const(c) for c in code.co_consts)
    return _content(code, consts)


def _content(code: types.CodeType, consts: tuple[Any, ...]) -> tuple[Any, ...]:
    return (
        code.co_name,
        code.co_code,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_flags,
        code.co_exceptiontable,
        consts,
    )


def _digest(code: types.CodeType, consts: list[Any]) -> bytes:
    # marshal version 2 writes no back-references, so equal content gives equal bytes whatever the refcounts.
    return hashlib.blake2b(marshal.dumps(_content(code, tuple(consts)), 2), digest_size=16).digest()


def _const(value: object) -> Any:
    """A constant as a marshal-able value that keeps its type (``1``, ``1.0`` and ``True`` are equal in Python)."""
    if isinstance(value, tuple):
        return ("<tuple>", *(_const(v) for v in value))
    if isinstance(value, frozenset):
        return ("<frozenset>", *sorted(marshal.dumps(_const(v), 2) for v in value))
    if isinstance(value, str | bytes):
        return value
    return (type(value).__name__, repr(value))


def keeps_imports(source: bytes) -> dict[str, str]:
    """Names the file imports from the modules of ``KEEPS_BODY`` (``from functools import cache``), to their
    module-qualified names."""
    found: dict[str, str] = {}
    for match in _FROM_IMPORT.finditer(source):
        module = match.group(1).decode()
        for item in match.group(2).decode("utf-8", "replace").strip("()").split(","):
            parts = item.split("#", 1)[0].split()
            if len(parts) == 1:
                found[parts[0]] = f"{module}.{parts[0]}"
            elif len(parts) == 3 and parts[1] == "as":
                found[parts[2]] = f"{module}.{parts[0]}"
    return found


def unknown_decorators(code: types.CodeType, lines: list[str], imported: Callable[[], dict[str, str]]) -> list[str]:
    """The decorators of the ``def`` or ``class`` whose code this is that are not known to leave its body
    alone, read from the source lines from its ``co_firstlineno`` (a decorated definition's first line is
    its first decorator's) down to the ``def``/``class`` line, which must name it.  One that cannot be
    read is unknown ("?"), and so is every decorator where that line is not found."""
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines):
        return ["?"]
    head = lines[first]
    indent = len(head) - len(head.lstrip())
    unknown: list[str] = []
    for line in lines[first : first + 400]:
        text = line.strip()
        if len(line) - len(line.lstrip()) != indent or not text:
            continue  # a decorator's arguments on lines of their own, a blank line
        defined = _DEF.match(text)
        if defined:
            return unknown if defined.group(1) == code.co_name else [*unknown, "?"]
        if not text.startswith("@"):
            if text.startswith((")", "]", "}", "#")):
                continue
            return [*unknown, "?"]
        match = _DECORATOR.match(text)
        name = re.sub(r"\s+", "", match.group(1)) if match else "?"
        if not _keeps_body(name, imported):
            unknown.append(name)
    return [*unknown, "?"]


def _keeps_body(name: str, imported: Callable[[], dict[str, str]]) -> bool:
    if name in _BUILTIN_DECORATORS or name.endswith(_ACCESSORS) or name.startswith(_MARKS):
        return True
    head, _, rest = name.partition(".")
    if "." in name and name in KEEPS_BODY:
        return True
    table = imported()
    return head in table and f"{table[head]}.{rest}".rstrip(".") in KEEPS_BODY


def compare(path: str, old: Summary | Unreadable | None, new: Summary | Unreadable | None) -> tuple[Change, ...]:
    """The changes from ``old`` to ``new`` of the Python file ``path`` (None: the file is absent on that side).
    Both summaries must be exact (``summarize``'s)."""
    if old is None and new is None:
        return ()
    for side in (old, new):
        if isinstance(side, Unreadable):
            return (Change(path, ChangeKind.MODULE, None, side.why),)
    if old is None:
        return (Change(path, ChangeKind.MODULE, None, "file added"),)
    if new is None:
        return (Change(path, ChangeKind.MODULE, None, "file deleted"),)
    assert isinstance(old, Summary) and isinstance(new, Summary) and old.exact and new.exact
    return changes_of(path, diff_units(old.units, new.units))


def diff_units(before: Sequence[Unit], after: Sequence[Unit]) -> list[tuple[ChangeKind, str | None, str]]:
    """(kind, qualname, detail) of every change between two lists of units, matched by kind and qualname
    (units of one name in order: a second ``def`` of a name is a unit of its own)."""
    was_by, now_by = _by_name(before), _by_name(after)
    found: dict[tuple[ChangeKind, str | None, str], None] = {}
    for key in sorted(was_by.keys() | now_by.keys(), key=lambda k: (k[1] != MODULE_NAME, k[1], k[0])):
        was, now = was_by.get(key, []), now_by.get(key, [])
        if [u.fingerprint for u in was] == [u.fingerprint for u in now]:
            continue
        state = "added" if not was else "removed" if not now else "changed"
        # Charged on each side: where a decorator was added or removed, both places count.
        for unit in (*was, *now):
            found[_change(unit, state)] = None
    return list(found)


def changes_of(path: str, found: Sequence[tuple[ChangeKind, str | None, str]]) -> tuple[Change, ...]:
    """``diff_units``' findings as changes of ``path``; none is a file that compiles to the same code."""
    if not found:
        return (Change(path, ChangeKind.FORMAT, None, "same code: comments, blank lines or layout"),)
    return tuple(Change(path, kind, qualname, detail) for kind, qualname, detail in dict.fromkeys(found))


def _by_name(units: Sequence[Unit]) -> dict[tuple[str, str], list[Unit]]:
    out: dict[tuple[str, str], list[Unit]] = {}
    for unit in units:
        out.setdefault((unit.kind, unit.qualname), []).append(unit)
    return out


_STATES = {"changed": "body changed", "added": "added", "removed": "removed"}


def _change(unit: Unit, state: str) -> tuple[ChangeKind, str | None, str]:
    """(kind, qualname, detail) of a change to ``unit``: a body charged to itself or to an enclosing
    function, or module level."""
    if unit.kind == "module":
        return ChangeKind.MODULE, None, "module statements"
    if unit.kind == "function" and unit.charge == unit.qualname:
        return ChangeKind.BODY, unit.qualname, "body" if state == "changed" else state
    what = f"class {unit.qualname} body" if unit.kind == "class" else f"{unit.qualname}: {_STATES[state]}"
    if unit.why:
        what = f"{what}, {unit.why}"
    if unit.charge is None:
        return ChangeKind.MODULE, unit.qualname, what
    return ChangeKind.BODY, unit.charge, what


def python_changes(path: str, old: bytes | None, new: bytes | None) -> tuple[Change, ...]:
    """The changes between two versions of a Python file (None: absent on that side), each compiled whole:
    ``summarize`` both, then ``compare``.  ``patchkit.footprint.line`` gets the same answer compiling only
    the functions a change is in, where it can (``patchkit.footprint.regions``)."""
    return compare(path, None if old is None else summarize(old, path), None if new is None else summarize(new, path))
