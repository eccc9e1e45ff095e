"""Real kills: patchkit runs in a subprocess and dies (os._exit(137), as kill -9) at a named point.

``PATCHKIT_TEST_CRASH_AT=<phase>`` is the transaction's test hook
(``patchkit.engine.transaction.crash_point``).  Each test kills one run, then runs
the next command and checks the tree, the record, HEAD and the messages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import Kit, git, head_content, make_repo, run_killed, src, temp_leftovers
from histories import build_model_history, write_manifest

from patchkit.demo.history import Executable

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

TARGET = "pkg/tool.py"
BIG = "x" * 5_000_000  # a 5 MB file: temp files of that size must not be left behind

BEFORE = "#!/usr/bin/env python\nimport os\n\n\nclass Tool:\n    def run(self):\n        return 1\n"
PAYLOAD = "class Tool:\n    def extra(self):\n        return 2\n"


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    """An executable target and a 5 MB one, both patched by one manifest."""
    repo = make_repo(
        tmp_path / "repo",
        {TARGET: Executable(BEFORE), "pkg/big.py": f"DATA = {BIG!r}\n", "README.md": "x\n"},
    )
    kit = Kit(tmp_path / "kit")
    manifest = kit.write(
        [
            {"id": "extra", "op": "add-methods", "file": TARGET, "class": "Tool", "source": src("p.py")},
            {"id": "big", "op": "ensure-import", "file": "pkg/big.py", "import": "import sys"},
        ],
        {"p.py": PAYLOAD},
    )
    return repo, manifest


@pytest.mark.parametrize("phase", ["txn:journal", "txn:temps", "txn:first-rename", "txn:files", "txn:state"])
def test_kill_during_apply_then_recovery_restores_everything(two_files: tuple[Path, Path], phase: str) -> None:
    repo, manifest = two_files
    killed = run_killed(phase, "apply", "-m", manifest, "--repo", repo)
    assert killed.returncode == 137, killed.stderr
    # The next command rolls back: files, modes, record, temp files.
    status = run_killed(None, "status", "-m", manifest, "--repo", repo, "--json")
    data = json.loads(status.stdout)
    assert data["interrupted"] is not None and "killed while writing" in data["interrupted"]["message"]
    assert status.returncode == 1
    reverted = run_killed(None, "revert", "-m", manifest, "--repo", repo)
    assert reverted.returncode == 0, reverted.stderr
    assert "rolled back a patchkit run that was interrupted" in reverted.stdout
    assert "nothing to revert" not in reverted.stdout
    assert (repo / TARGET).read_bytes() == head_content(repo, TARGET)
    assert (repo / "pkg/big.py").read_bytes() == head_content(repo, "pkg/big.py")
    assert (repo / TARGET).stat().st_mode & 0o777 == 0o755
    assert temp_leftovers(repo) == []
    assert not (repo / ".git/patchkit/applied/test.json").exists()
    assert git(repo, "status", "--porcelain").strip() == ""
    # And apply then works normally, with one record for what it wrote.
    again = run_killed(None, "apply", "-m", manifest, "--repo", repo, "--json")
    assert again.returncode == 0 and sorted(json.loads(again.stdout)["written"]) == ["pkg/big.py", TARGET]
    record = json.loads((repo / ".git/patchkit/applied/test.json").read_text())
    assert {f["path"]: f["mode"] for f in record["files"]}[TARGET] == 0o755
    assert (repo / TARGET).stat().st_mode & 0o777 == 0o755


def test_kill_after_the_renames_rolls_back_files_without_record(two_files: tuple[Path, Path]) -> None:
    """The files landed, the record did not: the next apply rolls the files back and applies cleanly."""
    repo, manifest = two_files
    assert run_killed("txn:files", "apply", "-m", manifest, "--repo", repo).returncode == 137
    assert "def extra" in (repo / TARGET).read_text()  # patched, no record: the state the journal must cover
    assert not (repo / ".git/patchkit/applied/test.json").exists()
    again = run_killed(None, "apply", "-m", manifest, "--repo", repo)
    assert again.returncode == 0, again.stderr
    assert "rolled back a patchkit run that was interrupted while writing: restored" in again.stdout
    assert (repo / ".git/patchkit/applied/test.json").exists()
    undone = run_killed(None, "revert", "-m", manifest, "--repo", repo)
    assert undone.returncode == 0 and "REVERTED: 2 files" in undone.stdout
    assert git(repo, "status", "--porcelain").strip() == ""


def test_kill_leaves_no_temp_files_after_recovery(two_files: tuple[Path, Path]) -> None:
    repo, manifest = two_files
    assert run_killed("txn:temps", "apply", "-m", manifest, "--repo", repo).returncode == 137
    assert len(temp_leftovers(repo / "pkg")) == 2  # both temps, the 5 MB one too
    assert run_killed(None, "apply", "-m", manifest, "--repo", repo).returncode == 0
    assert temp_leftovers(repo) == []


# -- apply --commit ------------------------------------------------------------------------


@pytest.fixture
def moving(tmp_path: Path):
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "m")
    repo = history.path
    first = run_killed(None, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"])
    assert first.returncode == 0, first.stderr
    git(repo, "checkout", "-q", "-b", "work")  # the user's branch, at `add`, patched
    return history, manifest, repo


@pytest.mark.parametrize("phase", ["move:journal", "move:reverted", "move:checked-out", "txn:first-rename"])
def test_kill_during_apply_commit_before_anything_lands_rolls_back_the_move(moving, phase: str) -> None:
    history, manifest, repo = moving
    patched = (repo / "pkg/model.py").read_bytes()
    killed = run_killed(phase, "apply", "-m", manifest, "--repo", repo, "--commit", history["fix"])
    assert killed.returncode == 137
    status = run_killed(None, "status", "-m", manifest, "--repo", repo, "--json")
    data = json.loads(status.stdout)
    assert status.returncode == 1 and data["complete"] is False
    assert data["interrupted"]["moved_from"] == {"commit": history["add"], "branch": "work"}
    assert data["interrupted"]["moving_to"] == history["fix"]
    human = run_killed(None, "status", "-m", manifest, "--repo", repo)
    assert "INTERRUPTED: " in human.stdout and "apply --commit" in human.stdout
    # The next command puts everything back: branch, patched file, record.
    again = run_killed(None, "revert", "-m", manifest, "--repo", repo)
    assert again.returncode == 0, again.stderr
    assert "rolled back an interrupted `apply --commit" in again.stdout
    assert "back on branch work" in again.stdout
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "work"
    assert git(repo, "rev-parse", "HEAD").strip() == history["add"]
    # revert then reverted the restored edits (its own job): the record was back for it to use.
    assert "REVERTED: 1 file" in again.stdout
    assert (repo / "pkg/model.py").read_bytes() != patched
    assert git(repo, "status", "--porcelain").strip() == ""
    assert not (repo / ".git/patchkit/move.json").exists()


def test_kill_after_apply_commit_landed_reports_the_move_and_the_way_back(moving) -> None:
    history, manifest, repo = moving
    killed = run_killed("move:applied", "apply", "-m", manifest, "--repo", repo, "--commit", history["fix"])
    assert killed.returncode == 137
    assert git(repo, "rev-parse", "HEAD").strip() == history["fix"]
    nxt = run_killed(None, "apply", "-m", manifest, "--repo", repo)
    assert nxt.returncode == 0, nxt.stderr
    assert "moved this tree from branch work" in nxt.stdout
    assert "git checkout work" in nxt.stdout
    assert not (repo / ".git/patchkit/move.json").exists()
    # The patched tree at `fix` is consistent: nothing left to do.
    assert "OK: nothing to do" in nxt.stdout


def test_status_does_not_call_a_live_run_interrupted(two_files: tuple[Path, Path]) -> None:
    """A journal under a held lock belongs to a run in progress, not a killed one."""
    from patchkit.engine.lock import repo_lock
    from patchkit.engine.record import state_dir
    from patchkit.git import Repo

    repo, manifest = two_files
    assert run_killed("txn:journal", "apply", "-m", manifest, "--repo", repo).returncode == 137
    with repo_lock(state_dir(Repo.discover(repo))):
        live = json.loads(run_killed(None, "status", "-m", manifest, "--repo", repo, "--json").stdout)
    assert live["interrupted"] is None
    dead = json.loads(run_killed(None, "status", "-m", manifest, "--repo", repo, "--json").stdout)
    assert dead["interrupted"] is not None
