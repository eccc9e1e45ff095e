"""tools/import_graph.py is the layering's check: it passes on the tree, and each rule fires on a violation."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "import_graph.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tree_keeps_its_layers():
    proc = subprocess.run([sys.executable, str(TOOL), "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_statistics_may_not_reach_a_process_records_or_execution():
    tool = load_tool()
    sources = {
        "patchkit.bench.stats.fit": "import math\nfrom patchkit.bench.stats import helper\n",
        "patchkit.bench.stats.helper": "import subprocess\n",
        "patchkit.bench.stats.lazy": "def f():\n    import sqlite3\n",  # at call time: not loaded with it
        "patchkit.bench.stats.typed": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import psutil\n",
    }
    trees = {mod: (Path(mod), ast.parse(src)) for mod, src in sources.items()}
    graph = {mod: tool.imports(tree) for mod, (_path, tree) in trees.items()}
    assert tool.impure(trees, graph) == [
        "patchkit.bench.stats.fit -> patchkit.bench.stats.helper -> subprocess",
        "patchkit.bench.stats.helper -> patchkit.bench.stats.helper -> subprocess",
    ]
    upward = tool.UPWARD
    assert "patchkit.bench.records" in upward["patchkit.bench.stats"]
    assert "patchkit.bench.execution" in upward["patchkit.bench.records"]
    assert "patchkit.commands" in upward["patchkit.engine"] and "patchkit.commands" in upward["patchkit.bench"]
