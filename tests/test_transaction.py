"""Writing several files as one transaction: rollback on error, recovery after a kill."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchkit.engine import transaction
from patchkit.engine.files import sha256
from patchkit.engine.transaction import FileWrite, Transaction
from patchkit.errors import RefusedError, UnwritableError


def setup_files(root: Path) -> dict[str, bytes]:
    files = {"a.py": b"A = 1\r\n", "pkg/b.py": b"B = 2\n", "pkg/c.py": b"C = 3\n"}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    os.chmod(root / "pkg/b.py", 0o755)
    return files


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.patchkit-tmp"))


def test_all_files_written_modes_kept(tmp_path: Path) -> None:
    root, state = tmp_path / "tree", tmp_path / "state"
    files = setup_files(root)
    txn = Transaction(root, state)
    txn.write([FileWrite(n, d, d + b"# patched\n", None) for n, d in files.items()])
    assert all((root / n).read_bytes() == d + b"# patched\n" for n, d in files.items())
    assert (root / "pkg/b.py").stat().st_mode & 0o777 == 0o755
    assert not txn.journal.exists() and leftovers(root) == []


def test_failure_during_renames_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, state = tmp_path / "tree", tmp_path / "state"
    files = setup_files(root)
    real_replace = os.replace
    calls = {"n": 0}

    def failing_replace(src: str, dst: str) -> None:
        # Fault injection: the second rename into the tree fails (e.g. EIO).
        if str(dst).startswith(str(root)):
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(transaction.os, "replace", failing_replace)
    txn = Transaction(root, state)
    with pytest.raises(UnwritableError) as info:  # a refusal naming the file, not a crash
        txn.write([FileWrite(n, d, b"new\n", None) for n, d in files.items()])
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    assert info.value.path == "pkg/b.py" and info.value.reason == "Input/output error"
    assert {n: (root / n).read_bytes() for n in files} == files
    assert leftovers(root) == []


def test_file_changed_under_us_refuses_and_writes_nothing(tmp_path: Path) -> None:
    root, state = tmp_path / "tree", tmp_path / "state"
    files = setup_files(root)
    (root / "pkg/c.py").write_bytes(b"C = 'edited meanwhile'\n")
    txn = Transaction(root, state)
    with pytest.raises(RefusedError) as info:
        txn.write([FileWrite(n, d, b"new\n", None) for n, d in files.items()])
    assert info.value.items == ("pkg/c.py",)
    assert (root / "a.py").read_bytes() == files["a.py"]
    assert leftovers(root) == []


def test_recover_after_a_killed_run(tmp_path: Path) -> None:
    """A run killed between two renames leaves a journal; the next one rolls it back."""
    root, state = tmp_path / "tree", tmp_path / "state"
    files = setup_files(root)
    txn = Transaction(root, state)
    state.mkdir()
    entries = []
    for name, data in files.items():
        mode = (root / name).stat().st_mode & 0o7777  # what Transaction.write journals: the real mode
        entries.append({"path": name, "before": txn.objects.put(data), "after": sha256(b"new\n"), "mode": mode})
    # The killed run had replaced a.py and pkg/b.py, not pkg/c.py.
    (root / "a.py").write_bytes(b"new\n")
    (root / "pkg/b.py").write_bytes(b"new\n")
    txn.journal.write_text(json.dumps({"files": entries}))
    restored = Transaction(root, state).recover()
    assert sorted(restored.restored) == ["a.py", "pkg/b.py"]
    assert {n: (root / n).read_bytes() for n in files} == files
    assert (root / "pkg/b.py").stat().st_mode & 0o777 == 0o755
    assert not txn.journal.exists()


def test_written_content_is_the_one_ownership_test(tmp_path: Path) -> None:
    """revert, status, the guard, the next record and apply --commit all ask ``written_content``:
    the bytes while the file holds what patchkit left; None once edited, deleted, replaced by a
    directory, or reached through a symlinked directory."""
    from patchkit.engine.record import FileRecord, written_content

    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/a.py").write_bytes(b"A = 1\n")
    mine = FileRecord("pkg/a.py", 0o644, sha256(b""), sha256(b"A = 1\n"), True)
    assert written_content(root, mine) == b"A = 1\n"
    (root / "pkg/a.py").write_bytes(b"A = 2\n")
    assert written_content(root, mine) is None
    (root / "pkg/a.py").unlink()
    assert written_content(root, mine) is None
    (root / "pkg/a.py").mkdir()
    assert written_content(root, mine) is None
    (root / "real").mkdir()
    (root / "real/a.py").write_bytes(b"A = 1\n")
    (root / "link").symlink_to(root / "real")
    assert written_content(root, FileRecord("link/a.py", 0o644, sha256(b""), sha256(b"A = 1\n"), True)) is None
