"""Print patchkit's module import graph (module -> imported patchkit modules) and its package-level cycles.

Reads the source with ast; imports under ``if TYPE_CHECKING:`` count too, because a cycle there still
ties the packages together. Exit status 1 when a package-level cycle exists.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "patchkit"


def module_name(path: Path) -> str:
    parts = ["patchkit", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("patchkit"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("patchkit"))
    return found


def package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def main() -> int:
    graph = {module_name(p): imports(p) for p in sorted(ROOT.rglob("*.py"))}
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
    print(f"{len(cycles)} package-level two-way cycle(s)")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
