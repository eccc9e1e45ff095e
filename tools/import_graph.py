"""Print patchkit's module import graph and check its shape; exit status 1 on any violation.

Reads the source with ast.  Four rules:

1. No package-level two-way cycle (imports under ``if TYPE_CHECKING:`` count
   too: a cycle there still ties the packages together).
2. No arrow back up: the lower layers (``sources/``, ``manifest/``,
   ``guard/``) never import the layers built on them; nothing but the CLI
   imports ``commands/``; inside ``bench/``, the statistics (``stats/``)
   import neither ``records/`` nor ``execution/``, and ``records/`` does not
   import ``execution/``.
3. A function-local import only at a named cold boundary (``BOUNDARIES``):
   anywhere else it hides a dependency, so it goes to the top of the module.
4. The statistics stay pure: no module that ``bench/stats/`` loads (its own
   imports and theirs, through patchkit) imports a process, a database or a
   scheduler (``PURE_FORBIDS``).

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
            "patchkit.capture",
            "patchkit.port",
            "patchkit.proof",
            "patchkit.report",
            "patchkit.operations",
            "patchkit.demo",
        ),
        ("patchkit.commands", "patchkit.cli"),
    ),
    "patchkit.bench.stats": ("patchkit.bench.records", "patchkit.bench.execution", "patchkit.git"),
    "patchkit.bench.records": ("patchkit.bench.execution",),
}
"""package -> the packages above it, which it must not import."""

PURE = "patchkit.bench.stats"
PURE_FORBIDS = ("subprocess", "psutil", "sqlite3", "submitit", "multiprocessing")
"""What nothing the statistics load may import: they are functions of numbers, tested by calling them."""

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
    ("*", "rich", "rich: only what prints a table for a person"),
    ("*", "scipy", "scipy: only a comparison of bench runs"),
    ("*", "patchkit.bench.stats.verdict", "the launch verdict loads scipy: only where a comparison is made"),
    (
        "patchkit.commands.bench",
        "patchkit.bench.records.without",
        "bench --without: its verdict loads scipy, only when asked",
    ),
    ("patchkit.commands.bench", "patchkit.commands.compare", "bench --without: the noise priors compare reads"),
    ("*", "plotext", "plotext: only `runs --plot`"),
    ("*", "submitit", "submitit: only `--executor slurm`"),
    ("patchkit.commands.runs", "patchkit.report.terminal", "the terminal plot (plotext): only `runs --plot`"),
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
    """``stats module -> via module -> forbidden import`` for every way the statistics reach a process."""
    at_load = {mod: load_time_imports(tree) for mod, (_path, tree) in trees.items()}
    out = []
    for mod in sorted(m for m in graph if under(m, PURE)):
        for via in sorted(loaded(mod, at_load)):
            out.extend(
                f"{mod} -> {via} -> {name}"
                for name in sorted(at_load[via])
                if any(name == bad or name.startswith(bad + ".") for bad in PURE_FORBIDS)
            )
    return out


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
    return ".".join(module.split(".")[:2])


def main(argv: list[str]) -> int:
    quiet = "--quiet" in argv
    trees = {module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(ROOT.rglob("*.py"))}
    graph = {mod: imports(tree) for mod, (_path, tree) in trees.items()}
    if not quiet:
        for mod, deps in sorted(graph.items()):
            print(f"{mod} -> {', '.join(sorted(deps)) or '-'}")
    edges: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        for dep in deps:
            if package(dep) != package(mod):
                edges.setdefault(package(mod), set()).add(package(dep))
    cycles = sorted({tuple(sorted((a, b))) for a, bs in edges.items() for b in bs if a in edges.get(b, set())})
    for a, b in cycles:
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
    print(
        f"{len(cycles)} package-level two-way cycle(s), {len(upward)} upward import(s), "
        f"{len(unnamed)} function-local import(s) outside a named boundary, "
        f"{len(dirty)} impure import(s) under {PURE}"
    )
    return 1 if cycles or upward or unnamed or dirty else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
