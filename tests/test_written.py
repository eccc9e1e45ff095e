"""The CLI's words for an interrupt come from the sink it hands the verb, not from module state."""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli

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


def test_the_interrupt_names_what_this_invocation_wrote(monkeypatch, capsys) -> None:
    """The CLI hands each verb a fresh sink; Ctrl-C's words name what that invocation wrote, and nothing of
    an earlier one in the same process."""
    import patchkit.commands.apply as apply_module
    import patchkit.commands.capture as capture_module

    def apply(*, written: Written, **_: object) -> int:
        written.add(["a.py", "b.py", "a.py"])
        raise KeyboardInterrupt

    def capture(*, written: Written, **_: object) -> int:
        written.add(["m.toml", "patches/m"])
        raise KeyboardInterrupt

    monkeypatch.setattr(apply_module, "apply", apply)
    monkeypatch.setattr(capture_module, "capture", capture)
    first = run_cli(capsys, "apply", "-m", "m")
    assert first.code == 130
    assert first.err.strip().startswith("patchkit: interrupted (Ctrl-C) after writing a.py, b.py (whole and recorded")
    second = run_cli(capsys, "capture", "--name", "m")
    assert second.code == 130
    assert second.err.strip() == (
        "patchkit: interrupted (Ctrl-C) after writing m.toml and patches/m (whole); nothing else was written"
    )
