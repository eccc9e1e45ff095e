"""The tests hold patchkit to its public names: a test that imports a private one pins an implementation
detail, and breaks (or worse, keeps passing) when the module is reshaped."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def private_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "patchkit":
            found += [f"from {node.module} import {a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_the_check_sees_a_private_import():
    assert private_imports("from patchkit.bench.stats.verdict import _t, judge\n") == [
        "from patchkit.bench.stats.verdict import _t"
    ]
    assert private_imports("from os import _exit\nfrom patchkit import errors\n") == []


def test_no_test_imports_a_private_name_of_patchkit():
    found = {
        path.name: names
        for path in sorted(TESTS.glob("*.py"))
        if (names := private_imports(path.read_text(encoding="utf-8")))
    }
    assert found == {}
