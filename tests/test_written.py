"""The CLI's words for an interrupt come from the sink it hands the verb, not from module state."""

from __future__ import annotations

from pathlib import Path

from patchkit.cli import _interrupted
from patchkit.engine.transaction import FileWrite, Transaction
from patchkit.written import Written


def test_a_transaction_tells_its_sink_each_path_once_written(tmp_path: Path) -> None:
    root, state = tmp_path / "tree", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    (root / "a.py").write_bytes(b"old\n")
    sink = Written()
    Transaction(root, state, written=sink).write([FileWrite("a.py", b"old\n", b"new\n", None)])
    assert sink.paths == ["a.py"] and (root / "a.py").read_bytes() == b"new\n"
    Transaction(root, state).write([FileWrite("a.py", b"new\n", b"newer\n", None)])  # no sink: nothing kept
    assert sink.paths == ["a.py"]


def test_the_interrupt_names_what_this_invocation_wrote() -> None:
    sink = Written()
    assert _interrupted(["apply"], sink) == "interrupted (Ctrl-C); nothing was written"
    sink.add(["a.py", "b.py", "a.py"])
    assert _interrupted(["apply"], sink).startswith("interrupted (Ctrl-C) after writing a.py, b.py (whole and")
    assert _interrupted(["check"], sink) == "interrupted (Ctrl-C)"
    published = Written()
    published.add(["m.toml", "patches/m"])
    assert _interrupted(["capture"], published) == (
        "interrupted (Ctrl-C) after writing m.toml and patches/m (whole); nothing else was written"
    )
