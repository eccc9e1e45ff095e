"""Print patchkit's module import graph and check its shape; exit status 1 on any violation.

Reads the source with ast.  The rules:

1. No package-level two-way cycle (imports under ``if TYPE_CHECKING:`` count
   too: a cycle there still ties the packages together).  A front end that
   lives inside a lower package (``FRONT_ENDS``: the pytest plugin in
   ``guard/``) is a node of its own, at the top of the graph.
2. No arrow back up: the lower layers (``sources/``, ``manifest/``,
   ``guard/``) never import the layers built on them; nothing but the CLI
   imports ``commands/``; inside ``bench/``, the statistics (``stats/``)
   import neither ``records/`` nor ``execution/``, and ``records/`` does not
   import ``execution/``.
3. A function-local import only at a named cold boundary (``BOUNDARIES``):
   anywhere else it hides a dependency, so it goes to the top of the module.
4. The statistics stay pure: every module that ``bench/stats/`` loads (its own
   imports and theirs, through patchkit) imports only the standard library
   less ``PURE_FORBIDS`` (processes, databases, sockets), ``PURE_THIRD_PARTY``
   (numpy, scipy) and patchkit modules that are pure by the same rule, and
   never a view (``PURE_NEVER``: no rendering).
5. The views are printed from the front ends only: ``patchkit.views`` is
   imported by ``FRONT_ENDS`` (the CLI, the verbs, the pytest plugin) and by
   itself, by nothing else.
6. rich is imported only under ``patchkit.views``.
7. A read-only verb (``READ_ONLY_VERBS``: show, runs, compare, report) loads
   nothing of ``bench.execution``, the launch machinery, when it is imported.
8. A library with one home is imported only there (``HOMES``): click only by
   the CLI, submitit only by the Slurm executor and the ledger of scheduled
   jobs (under TYPE_CHECKING and inside functions too).

    python tools/import_graph.py [--quiet]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "patchkit"

UPWARD = {
    "patchkit.sources": ("patchkit.engine", "patchkit.commands", "patchkit.guard", "patchkit.bench", "patchkit.cli"),
    "patchkit.manifest": (
        "patchkit.engine",
        "patchkit.sources",
        "patchkit.commands",
        "patchkit.guard",
        "patchkit.bench",
        "patchkit.capture",
        "patchkit.cli",
    ),
    "patchkit.guard": ("patchkit.commands", "patchkit.bench", "patchkit.cli"),
    # Only the CLI reads the verbs: the engine, the bench and every library part return values to them.
    **dict.fromkeys(
        (
            "patchkit.engine",
            "patchkit.bench",
            "patchkit.views",
            "patchkit.capture",
            "patchkit.port",
            "patchkit.proof",
            "patchkit.report",
            "patchkit.operations",
            "patchkit.demo",
            "patchkit.ci",
        ),
        ("patchkit.commands", "patchkit.cli"),
    ),
    "patchkit.bench.stats": ("patchkit.bench.records", "patchkit.bench.execution", "patchkit.git"),
    "patchkit.bench.records": ("patchkit.bench.execution",),
    # The footprints are one input of the hunt's rule: the bench reads them, never the other way round, and the
    # statistics import only their values (footprint/changes.py).
    "patchkit.footprint": ("patchkit.bench", "patchkit.commands", "patchkit.cli"),
}
"""package -> the packages above it, which it must not import."""

PURE = "patchkit.bench.stats"
PURE_THIRD_PARTY = ("numpy", "scipy")
PURE_FORBIDS = ("subprocess", "sqlite3", "multiprocessing", "concurrent", "socket", "asyncio", "pty", "curses")
PURE_NEVER = ("patchkit.views",)
"""What the statistics may load: the standard library less PURE_FORBIDS, PURE_THIRD_PARTY, and patchkit's own
modules that are pure by the same rule, never PURE_NEVER.  They are functions of numbers, tested by calling
them: no process, no database, no rendering."""

VIEWS = "patchkit.views"
RICH = "rich"
FRONT_ENDS = {
    "patchkit.cli": "the command line: it makes the console every verb prints on",
    "patchkit.commands": "the verbs: each prints its result for a person (or --json)",
    "patchkit.guard.pytest_plugin": "pytest's front end: it stops a session with the guard's report, printed as "
    "`patchkit guard` prints it; it lives in guard/ because its path is the public pytest11 entry point and "
    "the home of REPORT_KEY, and nothing imports it",
}
"""The modules that print for a person, and so may import the views: the top of the graph."""

HOMES = {
    "click": ("patchkit.cli",),
    "submitit": ("patchkit.bench.execution.slurm", "patchkit.bench.execution.scheduled"),
}
"""A third-party library -> the modules that may import it: one place knows its API, so that a change of it (or
leaving it) touches one file, and a verb that never needs it never loads it."""

LAUNCH = "patchkit.bench.execution"
READ_ONLY_VERBS = (
    "patchkit.commands.show",
    "patchkit.commands.runs",
    "patchkit.commands.compare",
    "patchkit.commands.report",
)
"""Verbs that only read the store and the repository: importing one loads nothing of LAUNCH."""

# (importing module or package, imported module or package, why the import waits): a prefix matches
# itself and everything under it; "*" is any patchkit module; "PACKAGE.__init__" names that package's
# own module only (not its submodules).
PROBE_WHY = "the probe runs in every server process at start-up: it imports only at the moment it needs a module"
BOUNDARIES = (
    ("patchkit.cli", "*", "the CLI verbs: a verb's module (and what reports its errors) loads only when it runs"),
    ("patchkit.cli", "traceback", "the CLI's error path"),
    ("patchkit.cli", "atexit", "the CLI's entry point"),
    ("patchkit.cli", "os", "the CLI's entry point"),
    (
        "patchkit.operations.__init__",
        "patchkit.operations",
        "the operations registry: a manifest loads only the ops it uses, an analysis never the libcst helpers",
    ),
    (
        "patchkit.manifest.loader",
        "patchkit.operations",
        "the operations, once the tables are known good and their target files handed on: git lists those "
        "files' changes meanwhile (engine/range_check.py)",
    ),
    ("*", "libcst", "libcst: only what edits a file parses with it; an analysis never does"),
    ("patchkit.views", "rich", "rich: only what prints for a person on a terminal; off one the views print plain text"),
    ("*", "scipy", "scipy: only a comparison of bench runs"),
    ("*", "patchkit.bench.stats.verdict", "the launch verdict loads scipy: only where a comparison is made"),
    (
        "patchkit.commands.bench",
        "patchkit.bench.records.without",
        "bench --without: its verdict loads scipy, only when asked",
    ),
    ("patchkit.commands.bench", "patchkit.commands.compare", "bench --without: the noise priors compare reads"),
    ("*", "plotext", "plotext: only `runs --plot`"),
    ("patchkit.bench.execution.slurm", "submitit", "submitit: only `--executor slurm` (the Slurm executor)"),
    ("patchkit.bench.execution.scheduled", "submitit", "submitit: only `--executor slurm` (a job's spec read back)"),
    ("patchkit.commands.runs", "patchkit.views.plot", "the terminal plot (plotext): only `runs --plot`"),
    (
        "patchkit.commands.runs",
        LAUNCH,
        "`runs --pending` asks Slurm for its jobs' states (the Slurm executor's squeue/sacct): only --pending loads "
        "the launch machinery, plain `runs` reads the store",
    ),
    (
        "patchkit.commands.guard",
        "patchkit.commands.guard_site",
        "`guard --site` (RECORDs, digests, the proof's accounting): the guard of a tree never loads it",
    ),
    ("*", "jsonschema", "jsonschema: only when a manifest's schema verdict is not remembered"),
    ("*", "psutil", "psutil: only a bench run's process tree"),
    ("*", "difflib", "difflib: only closest-name suggestions and mixed line endings, when something is off"),
    (
        "patchkit.manifest.loader",
        "patchkit.manifest.bench",
        "the [bench] table's parser: a manifest with a [bench] table loads it, unless its bytes passed before",
    ),
    (
        "patchkit.engine.abandonable",
        "patchkit.engine.abandon",
        "the fork for a large target (abandonable.in_child): a usual tree's guard and a warm check never load it",
    ),
    ("patchkit.engine.pool", "multiprocessing", "worker processes: only when a cold range check starts them"),
    ("patchkit.engine.pool", "concurrent.futures", "worker processes: only when a cold range check starts them"),
    ("patchkit.git", "fcntl", "growing a pipe: POSIX only, and only for a git process started ahead"),
    ("patchkit.git", "tempfile", "merge_texts' scratch files: only port's three-way merges"),
    (
        "patchkit.commands.check_ci",
        "patchkit.ci",
        "check --junit / --format github|gitlab: the CI formats, only when asked",
    ),
    (
        "patchkit.commands.check_ci",
        "patchkit.engine",
        "check --since and --junit: the engine loads after git has started listing the range (engine/range_check.py)",
    ),
    (
        "patchkit.commands.check_ci",
        "patchkit.manifest",
        "check --since: a bad manifest is reported before a bad --since, as RangeCheck.load does",
    ),
    ("patchkit.commands.guard", "patchkit.guard.combined", "guard -m M --site: the tree and site checks together"),
    ("patchkit.commands.guard", "patchkit.proof.sitecheck", "guard --site: the site scan, only when asked"),
    ("patchkit.proof.site", "time", "the probe's full-disk path: only when a write failed"),
    ("patchkit.proof.site", "errno", "the probe's full-disk path: only when a write failed"),
    (
        "patchkit.engine.range_check",
        "patchkit",
        "RangeCheck's start order: git lists the range before the manifest and the engine load",
    ),
    ("patchkit", "importlib", "the package's public API: `import patchkit` stays light, names load on first use"),
    ("patchkit", "pathlib", "the package's public API: `import patchkit` stays light"),
    ("patchkit", "patchkit.git", "the package's public API: `import patchkit` stays light"),
    ("patchkit.guard", "importlib", "the guard's public API: `import patchkit.guard` stays light"),
    (
        "patchkit.guard.pytest_plugin",
        "*",
        "the pytest plugin: pytest loads it in every session; patchkit loads only when --patchkit asks",
    ),
    ("patchkit.guard.pytest_plugin", "sys", "the pytest plugin: nothing at import time"),
    ("patchkit.guard.api", "patchkit.guard.probe", "the guard's interpreter probe: only with --python / --import"),
    ("patchkit.guard.api", "patchkit.engine.check", "the guard's bisect verdict: only under --bisect, on a failure"),
    ("patchkit.proof.site", "site", PROBE_WHY),
    ("patchkit.proof.site", "functools", PROBE_WHY),
    ("patchkit.proof.site", "atexit", PROBE_WHY),
    ("patchkit.proof.site", "hashlib", PROBE_WHY),
    ("patchkit.proof.site", "_patchkit_probe", "the probe's parts: a process loads a part only when it needs it"),
)


def module_name(path: Path) -> str:
    parts = ["patchkit", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [alias.name for alias in node.names]


def imports(tree: ast.Module) -> set[str]:
    return {name for name in all_imports(tree) if name.startswith("patchkit")}


def all_imports(tree: ast.Module) -> set[str]:
    """Every module ``tree`` imports, patchkit's and others' (``from a.b import c``: ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(imported(node))
    return found


def load_time_imports(tree: ast.Module) -> set[str]:
    """What importing the module runs: its imports outside functions and ``if TYPE_CHECKING:`` blocks."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(imported(node))
                if isinstance(node, ast.ImportFrom) and node.module:  # `from pkg import mod` loads pkg.mod
                    found.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit([n for n in getattr(node, field, []) if isinstance(n, ast.stmt)])
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def loaded(start: str, graph: dict[str, set[str]]) -> set[str]:
    """The patchkit modules importing ``start`` loads (``graph``: load-time imports): its imports, theirs,
    and their packages' ``__init__``."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        parts = mod.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(dep for dep in graph.get(mod, ()) if dep in graph)
    return seen & set(graph)


def impure(trees: dict[str, tuple[Path, ast.Module]], graph: dict[str, set[str]]) -> list[str]:
    """``stats module -> via module -> import`` for every import outside the statistics' allowlist that loading
    a module of theirs runs: a process, a database, an unknown library, a view."""
    at_load = {mod: load_time_imports(tree) for mod, (_path, tree) in trees.items()}
    out = []
    for mod in sorted(m for m in graph if under(m, PURE)):
        for via in sorted(loaded(mod, at_load)):
            bad = {name for name in at_load[via] if not pure_import(name)}
            # `from a import b` loads a and may load a.b: name a, not both
            out.extend(f"{mod} -> {via} -> {name}" for name in sorted(bad) if name.rpartition(".")[0] not in bad)
    return out


def pure_import(name: str) -> bool:
    """Whether the statistics may load ``name``: the standard library less PURE_FORBIDS, numpy, scipy, and
    patchkit's own modules (each checked in its turn, as the closure reaches it) other than PURE_NEVER."""
    if not name:  # `from . import x`: patchkit's own
        return True
    if name == "patchkit" or name.startswith("patchkit."):
        return not any(under(name, never) for never in PURE_NEVER)
    top = name.split(".")[0]
    if top in PURE_THIRD_PARTY:
        return True
    return top in sys.stdlib_module_names and not any(name == bad or name.startswith(bad + ".") for bad in PURE_FORBIDS)


def front_end(module: str) -> bool:
    return any(under(module, front) for front in FRONT_ENDS)


def views_outside(graph: dict[str, set[str]]) -> list[str]:
    """``module -> view`` for every import of the views by a module that is neither a view nor a front end."""
    return [
        f"{mod} -> {dep}"
        for mod, deps in sorted(graph.items())
        if not under(mod, VIEWS) and not front_end(mod)
        for dep in sorted(deps)
        if under(dep, VIEWS)
    ]


def rich_outside(trees: dict[str, tuple[Path, ast.Module]]) -> list[str]:
    """``module -> rich...`` for every import of rich outside the views (under TYPE_CHECKING too)."""
    return [
        f"{mod} -> {name}"
        for mod, (_path, tree) in sorted(trees.items())
        if not under(mod, VIEWS)
        for name in sorted(all_imports(tree))
        if name == RICH or name.startswith(RICH + ".")
    ]


def homeless(trees: dict[str, tuple[Path, ast.Module]]) -> list[str]:
    """``module -> library...`` for every import of a library of ``HOMES`` outside its home."""
    return [
        f"{mod} -> {name}"
        for mod, (_path, tree) in sorted(trees.items())
        for name in sorted(all_imports(tree))
        for lib, homes in HOMES.items()
        if (name == lib or name.startswith(lib + ".")) and mod not in homes
    ]


def read_only_loads(trees: dict[str, tuple[Path, ast.Module]]) -> list[str]:
    """``verb -> module`` for every module of the launch machinery that importing a read-only verb loads."""
    at_load = {mod: load_time_imports(tree) for mod, (_path, tree) in trees.items()}
    return [
        f"{verb} -> {mod}"
        for verb in READ_ONLY_VERBS
        if verb in at_load
        for mod in sorted(loaded(verb, at_load))
        if under(mod, LAUNCH)
    ]


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The package pairs that import each other (a front end inside a package is a node of its own)."""
    edges: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        for dep in deps:
            if package(dep) != package(mod):
                edges.setdefault(package(mod), set()).add(package(dep))
    pairs = {(min(a, b), max(a, b)) for a, bs in edges.items() for b in bs if a in edges.get(b, set())}
    return sorted(pairs)


def local_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every import inside a function body."""
    out: list[tuple[int, str]] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    out.extend((node.lineno, name) for name in imported(node))
    return sorted(set(out))


def under(name: str, prefix: str) -> bool:
    if prefix == "*":
        return name.startswith("patchkit")
    return name == prefix or name.startswith(prefix + ".")


def importer_is(importer: str, who: str) -> bool:
    """Whether a rule's importer ``who`` names module ``importer`` ("patchkit" is patchkit/__init__.py only)."""
    if who == "*":
        return True
    if who.endswith(".__init__"):
        return importer == who.removesuffix(".__init__")
    return importer == who or (who != "patchkit" and under(importer, who))


def boundary(importer: str, name: str) -> str | None:
    for who, what, why in BOUNDARIES:
        if importer_is(importer, who) and under(name, what):
            return why
    return None


def package(module: str) -> str:
    """The node of the package-level graph: ``patchkit.X``, or a front end that lives inside a lower package."""
    for front in FRONT_ENDS:
        if front.count(".") > 1 and under(module, front):
            return front
    return ".".join(module.split(".")[:2])


def main(argv: list[str]) -> int:
    quiet = "--quiet" in argv
    trees = {module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(ROOT.rglob("*.py"))}
    graph = {mod: imports(tree) for mod, (_path, tree) in trees.items()}
    if not quiet:
        for mod, deps in sorted(graph.items()):
            print(f"{mod} -> {', '.join(sorted(deps)) or '-'}")
    found_cycles = cycles(graph)
    for a, b in found_cycles:
        print(f"CYCLE: {a} <-> {b}")
    upward = [
        (mod, dep)
        for mod, deps in sorted(graph.items())
        for dep in sorted(deps)
        for low, above in UPWARD.items()
        if under(mod, low) and any(under(dep, high) for high in above)
    ]
    for mod, dep in upward:
        print(f"UPWARD: {mod} -> {dep}")
    unnamed = []
    for mod, (path, tree) in sorted(trees.items()):
        for line, name in local_imports(tree):
            if boundary(mod, name) is None:
                unnamed.append(f"{path.relative_to(ROOT.parent)}:{line}: {name}")
    for where in unnamed:
        print(f"LOCAL IMPORT outside a named cold boundary: {where}")
    dirty = impure(trees, graph)
    for where in dirty:
        print(f"IMPURE STATISTICS: {where}")
    viewers = views_outside(graph)
    for where in viewers:
        print(f"VIEWS outside a front end: {where}")
    richer = rich_outside(trees)
    for where in richer:
        print(f"RICH outside the views: {where}")
    launching = read_only_loads(trees)
    for where in launching:
        print(f"READ-ONLY VERB loads the launch machinery: {where}")
    strays = homeless(trees)
    for where in strays:
        print(f"LIBRARY outside its home: {where}")
    print(
        f"{len(found_cycles)} package-level two-way cycle(s), {len(upward)} upward import(s), "
        f"{len(unnamed)} function-local import(s) outside a named boundary, "
        f"{len(dirty)} impure import(s) under {PURE}, {len(viewers)} view import(s) outside a front end, "
        f"{len(richer)} rich import(s) outside the views, {len(launching)} launch module(s) a read-only verb loads, "
        f"{len(strays)} import(s) of a library outside its home"
    )
    return 1 if found_cycles or upward or unnamed or dirty or viewers or richer or launching or strays else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
