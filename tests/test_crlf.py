"""Every line an op inserts into a CRLF file ends with CRLF (no bare LF)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import Kit, make_repo, run_cli, src

TARGET = "pkg/mod.py"

BASE = (
    '"""Upstream module."""\n'
    "import os\n"
    "\n"
    "ITEMS = [\n"
    "    'a',\n"
    "]\n"
    "\n"
    "\n"
    "class Worker:\n"
    "    def run(self, x):\n"
    "        y = os.getpid()\n"
    "        return x + y\n"
    "\n"
    "\n"
    "def helper(a):\n"
    "    return a\n"
    "\n"
    "\n"
    "EntryClass = Worker\n"
)

# Multi-line strings are where libcst would copy the payload's LF verbatim.
PAYLOAD = '''import os


def new_helper(a):
    """Docstring
    over three
    lines."""
    text = """one
two"""
    return (a,
            text)


class Worker:
    def extra(self):
        """Extra.

        More.
        """
        return """x
y"""


def helper(a):
    """Replaced.

    Still the helper.
    """
    return (a,
            2)


def before_run():
    note = """start
of run"""
    print(note,
          flush=True)
'''

OPS: dict[str, dict[str, Any]] = {
    "add-methods": {"op": "add-methods", "class": "Worker", "source": src("p.py")},
    "add-definitions": {"op": "add-definitions", "names": ["new_helper"], "source": src("p.py")},
    "insert": {
        "op": "insert",
        "function": "Worker.run",
        "anchor": "y = os.getpid()",
        "position": "after",
        "source": src("p.py"),
        "body_of": "before_run",
    },
    "replace-function": {"op": "replace-function", "function": "helper", "source": src("p.py"), "expect": ""},
    "ensure-import": {"op": "ensure-import", "import": "from typing import (\n    List,\n    Optional,\n)"},
    "ensure-list-item": {"op": "ensure-list-item", "target": "ITEMS", "item": "(\n    'b'\n)"},
}


def bare_lf(data: bytes) -> int:
    return data.count(b"\n") - data.count(b"\r\n")


@pytest.mark.parametrize("op", sorted(OPS))
def test_inserted_lines_carry_crlf(tmp_path: Path, capsys: Any, op: str) -> None:
    crlf = BASE.replace("\n", "\r\n").encode()
    repo = make_repo(tmp_path / "repo", {TARGET: crlf})
    patch = {"id": "p", "file": TARGET, **OPS[op]}
    kit = Kit(tmp_path / "kit")
    if op == "replace-function":
        kit.write([], {"p.py": PAYLOAD})
        digest = run_cli(capsys, "digest", repo / TARGET, "helper", "--json").json["digest"]
        patch["expect"] = digest
    kit.write([patch], {"p.py": PAYLOAD})
    r = run_cli(capsys, "apply", "-m", kit.manifest, "--repo", repo, "--json")
    assert r.code == 0 and r.json["written"] == [TARGET], r.out + r.err
    after = (repo / TARGET).read_bytes()
    assert len(after) > len(crlf)
    assert bare_lf(after) == 0, after.decode()
    again = run_cli(capsys, "apply", "-m", kit.manifest, "--repo", repo, "--json")
    assert again.json["written"] == [] and again.json["results"][0]["reason"] == "ALREADY_APPLIED"


def test_lf_files_stay_lf(tmp_path: Path, capsys: Any) -> None:
    repo = make_repo(tmp_path / "repo", {TARGET: BASE})
    kit = Kit(tmp_path / "kit")
    kit.write([{"id": "p", "file": TARGET, **OPS["add-methods"]}], {"p.py": PAYLOAD})
    assert run_cli(capsys, "apply", "-m", kit.manifest, "--repo", repo).code == 0
    assert b"\r" not in (repo / TARGET).read_bytes()


def test_mixed_file_keeps_its_own_bare_lf_lines(tmp_path: Path, capsys: Any) -> None:
    """A CRLF file with one LF line of its own: that line stays LF, the added ones get CRLF."""
    mixed = BASE.replace("\n", "\r\n").replace("EntryClass = Worker\r\n", "EntryClass = Worker\n").encode()
    repo = make_repo(tmp_path / "repo", {TARGET: mixed})
    kit = Kit(tmp_path / "kit")
    kit.write([{"id": "p", "file": TARGET, **OPS["add-methods"]}], {"p.py": PAYLOAD})
    assert run_cli(capsys, "apply", "-m", kit.manifest, "--repo", repo).code == 0
    after = (repo / TARGET).read_bytes()
    assert bare_lf(after) == 1 and after.endswith(b"EntryClass = Worker\n")
