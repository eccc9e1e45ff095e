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


def synthetic(tool, sources: dict[str, str]):
    """A small package tree from source texts: (trees, graph) as the tool builds them from files."""
    trees = {mod: (Path(mod.replace(".", "/") + ".py"), ast.parse(src)) for mod, src in sources.items()}
    return trees, {mod: tool.imports(tree) for mod, (_path, tree) in trees.items()}


def test_the_statistics_load_only_the_allowlist_and_pure_patchkit_modules():
    """numpy, scipy and the standard library pass; an unknown library, a socket, a view, and a patchkit module
    that is impure through its own imports do not."""
    tool = load_tool()
    trees, graph = synthetic(
        tool,
        {
            "patchkit.bench.stats.fit": "import numpy\nimport scipy.stats\nfrom patchkit.wording import plural\n"
            "from patchkit.bench.stats import draw\n",
            "patchkit.bench.stats.draw": "import math\nfrom patchkit.views.grid import Grid\n",
            "patchkit.bench.stats.net": "import socket\nimport requests\n",
            "patchkit.wording": "import re\nfrom patchkit import helpers\n",
            "patchkit.helpers": "import subprocess\n",
            "patchkit.views.grid": "",
        },
    )
    assert tool.impure(trees, graph) == [
        "patchkit.bench.stats.draw -> patchkit.bench.stats.draw -> patchkit.views.grid",
        "patchkit.bench.stats.fit -> patchkit.bench.stats.draw -> patchkit.views.grid",
        "patchkit.bench.stats.fit -> patchkit.helpers -> subprocess",
        "patchkit.bench.stats.net -> patchkit.bench.stats.net -> requests",
        "patchkit.bench.stats.net -> patchkit.bench.stats.net -> socket",
    ]


def test_the_views_are_imported_only_by_the_front_ends():
    """The CLI, the verbs and the pytest plugin may import a view; the engine or the guard's API may not.  The
    plugin is a node of its own, so its import of the guard's view is no guard <-> views cycle, while the
    guard's API importing it is one."""
    tool = load_tool()
    sources = {
        "patchkit.cli": "from patchkit.views.console import make_console\n",
        "patchkit.commands.guard": "from patchkit.views.guard import show\n",
        "patchkit.guard.pytest_plugin": "def render():\n    from patchkit.views.guard import show\n",
        "patchkit.views.guard": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from patchkit.guard.report import GuardReport\n",
        "patchkit.guard.report": "",
        "patchkit.engine.apply": "from patchkit.views.console import say\n",
    }
    _trees, graph = synthetic(tool, sources)
    assert tool.views_outside(graph) == ["patchkit.engine.apply -> patchkit.views.console"]
    assert tool.cycles(graph) == []
    _trees, graph = synthetic(tool, {**sources, "patchkit.guard.api": "from patchkit.views.guard import show\n"})
    assert tool.views_outside(graph)[0] == "patchkit.engine.apply -> patchkit.views.console"
    assert "patchkit.guard.api -> patchkit.views.guard" in tool.views_outside(graph)
    assert tool.cycles(graph) == [("patchkit.guard", "patchkit.views")]


def test_rich_is_imported_only_by_the_views():
    """At load time, under TYPE_CHECKING or inside a function: anywhere outside patchkit.views it is reported."""
    tool = load_tool()
    trees, _graph = synthetic(
        tool,
        {
            "patchkit.commands.apply": "from rich.console import Console\n",
            "patchkit.commands.check": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from rich.progress import Progress\n",
            "patchkit.engine.status": "def f():\n    import rich.text\n",
            "patchkit.views.console": "def make():\n    from rich.console import Console\n",
            "patchkit.commands.status": "from patchkit.views.console import Console\n",
        },
    )
    assert tool.rich_outside(trees) == [
        "patchkit.commands.apply -> rich.console",
        "patchkit.commands.check -> rich.progress",
        "patchkit.engine.status -> rich.text",
    ]


def test_click_and_submitit_are_imported_only_in_their_homes():
    """click outside the CLI and submitit outside the Slurm modules are reported, wherever the import sits; their
    homes are not, and the tree itself has none."""
    tool = load_tool()
    trees, _graph = synthetic(
        tool,
        {
            "patchkit.cli": "import click\n",
            "patchkit.commands.apply": "import click.testing\n",
            "patchkit.bench.execution.slurm": "def f():\n    import submitit\n",
            "patchkit.bench.execution.job": "def f():\n    from submitit.core.utils import FailedJobError\n",
        },
    )
    assert tool.homeless(trees) == [
        "patchkit.bench.execution.job -> submitit.core.utils",
        "patchkit.commands.apply -> click.testing",
    ]


def test_a_read_only_verb_loads_no_launch_machinery():
    """runs loading the executor through the store is reported; show importing it only inside a function (a
    named cold boundary) and bench (not a read-only verb) loading it are not."""
    tool = load_tool()
    trees, _graph = synthetic(
        tool,
        {
            "patchkit.commands.runs": "from patchkit.bench.records import store\n",
            "patchkit.commands.show": "def pending():\n    from patchkit.bench.execution import executor\n",
            "patchkit.commands.bench": "import patchkit.bench.execution.executor\n",
            "patchkit.bench.records.store": "from patchkit.bench.execution.executor import slurm_states\n",
            "patchkit.bench.execution": "",
            "patchkit.bench.execution.executor": "import subprocess\n",
        },
    )
    assert tool.read_only_loads(trees) == [
        "patchkit.commands.runs -> patchkit.bench.execution",
        "patchkit.commands.runs -> patchkit.bench.execution.executor",
    ]
    assert tool.LAUNCH in tool.UPWARD["patchkit.bench.records"]
