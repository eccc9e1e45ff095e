"""apply --commit (in place and --worktree), the lock, and explain."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import git
from histories import build_model_history, write_manifest

from patchkit.cli import main
from patchkit.engine.lock import repo_lock
from patchkit.engine.record import load_record, state_dir
from patchkit.git import Repo


def tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts or not path.is_file():
            continue
        out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def setup(tmp_path: Path):
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "m")
    return history, str(manifest), history.path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_apply_at_commit_moves_and_patches(setup, capsys) -> None:
    history, manifest, repo = setup
    code, out, _ = run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["add"])
    assert code == 0
    assert git(repo, "rev-parse", "HEAD").strip() == history["add"]
    assert f"at {history['add']} 'Add the model'" in out
    assert "def hook(self)" in (repo / "pkg/model.py").read_text()
    # Only patchkit's own edits in the tree: moving again reverts and re-applies them.
    code, out, _ = run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["fix"], "--json")
    data = json.loads(out)
    assert code == 0 and data["commit"] == history["fix"] and data["moved_from"]["commit"] == history["add"]
    assert set(data["moved_from"]) == {"commit", "branch"}
    assert git(repo, "rev-parse", "HEAD").strip() == history["fix"]
    assert git(repo, "status", "--porcelain").strip() == "M pkg/model.py"
    record = load_record(Repo.discover(repo), "hooks")
    assert record is not None and record.base_commit == history["fix"]


def test_apply_at_failing_commit_changes_nothing(setup, capsys) -> None:
    history, manifest, repo = setup
    assert run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["add"])[0] == 0
    before = tree_digest(repo)
    record_before = (state_dir(Repo.discover(repo)) / "applied" / "hooks.json").read_bytes()
    code, out, _ = run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["broken"])
    assert code == 1
    assert "REFUSED" in out and "PARSE_ERROR" in out and "nothing was moved or written" in out
    assert git(repo, "rev-parse", "HEAD").strip() == history["add"]
    assert tree_digest(repo) == before
    assert (state_dir(Repo.discover(repo)) / "applied" / "hooks.json").read_bytes() == record_before


def test_foreign_changes_refuse_and_are_listed(setup, capsys) -> None:
    history, manifest, repo = setup
    assert run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["add"])[0] == 0
    (repo / "README.md").write_text("my local notes\n")
    before = tree_digest(repo)
    code, _out, err = run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["fix"])
    assert code == 1
    assert "uncommitted changes that are not patchkit's own" in err and "M README.md" in err
    assert "pkg/model.py" not in err  # patchkit's own edit is not "foreign"
    assert git(repo, "rev-parse", "HEAD").strip() == history["add"] and tree_digest(repo) == before
    # a patched file edited by hand afterwards is no longer patchkit's own either
    git(repo, "checkout", "--", "README.md")
    with open(repo / "pkg/model.py", "a") as fh:
        fh.write("# my tweak\n")
    code, _, err = run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["fix"])
    assert code == 1 and "M pkg/model.py" in err


def test_never_stashes(setup, capsys) -> None:
    history, manifest, repo = setup
    run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["add"])
    run(capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["fix"])
    assert git(repo, "stash", "list").strip() == ""


def test_worktree_leaves_main_tree_byte_identical(setup, tmp_path: Path, capsys) -> None:
    history, manifest, repo = setup
    (repo / "notes.txt").write_text("untracked, must survive\n")
    with open(repo / "README.md", "a") as fh:
        fh.write("a local edit\n")
    before = tree_digest(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    wt = tmp_path / "wt-add"
    code, out, _ = run(
        capsys,
        "apply",
        "-m",
        manifest,
        "--repo",
        str(repo),
        "--commit",
        history["add"],
        "--worktree",
        str(wt),
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["worktree"] == str(wt) and data["written"] == ["pkg/model.py"]
    assert tree_digest(repo) == before and git(repo, "rev-parse", "HEAD").strip() == head
    assert git(wt, "rev-parse", "HEAD").strip() == history["add"]
    assert "def hook(self)" in (wt / "pkg/model.py").read_text()
    # reuse: move the same worktree to another commit
    code, out, _ = run(
        capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["fix"], "--worktree", str(wt)
    )
    assert code == 0 and git(wt, "rev-parse", "HEAD").strip() == history["fix"]
    assert tree_digest(repo) == before


def test_worktree_not_created_when_refused(setup, tmp_path: Path, capsys) -> None:
    history, manifest, repo = setup
    wt = tmp_path / "wt-broken"
    code, _, _ = run(
        capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["broken"], "--worktree", str(wt)
    )
    assert code == 1 and not wt.exists()
    assert str(wt) not in git(repo, "worktree", "list")


def test_worktree_dir_that_is_not_a_worktree(setup, tmp_path: Path, capsys) -> None:
    history, manifest, repo = setup
    other = tmp_path / "somewhere"
    other.mkdir()
    code, _, err = run(
        capsys, "apply", "-m", manifest, "--repo", str(repo), "--commit", history["add"], "--worktree", str(other)
    )
    assert code == 2 and "is not a worktree" in err


def test_bare_repo_with_worktree(setup, tmp_path: Path, capsys) -> None:
    history, manifest, repo = setup
    bare = tmp_path / "bare.git"
    git(repo, "clone", "-q", "--bare", str(repo), str(bare))
    wt = tmp_path / "from-bare"
    code, _, _ = run(
        capsys, "apply", "-m", manifest, "--repo", str(bare), "--commit", history["fix"], "--worktree", str(wt)
    )
    assert code == 0 and "def hook(self)" in (wt / "pkg/model.py").read_text()


def test_second_apply_is_refused_while_first_holds_the_lock(setup, capsys) -> None:
    _history, manifest, repo = setup
    with repo_lock(state_dir(Repo.discover(repo)), what="test holder"):
        proc = subprocess.run(
            [sys.executable, "-m", "patchkit", "apply", "-m", manifest, "--repo", str(repo)],
            capture_output=True,
            text=True,
            env={**os.environ},
        )
    assert proc.returncode == 4
    assert "another patchkit is working on this repository" in proc.stderr and "test holder" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert git(repo, "status", "--porcelain").strip() == ""


def test_explain_names_the_breaking_commit_and_hunk(setup, capsys) -> None:
    history, manifest, repo = setup
    code, out, _ = run(
        capsys, "explain", "-m", manifest, "hook", "--repo", str(repo), "--commit", history["merge"], "--json"
    )
    data = json.loads(out)
    assert code == 0
    assert set(data) == {
        "version",
        "command",
        "manifest",
        "patch",
        "commit",
        "subject",
        "result",
        "introduced_by",
        "reason_changes",
        "never_applied",
        "where",
        "ancestors_checked",
    }
    assert data["result"]["reason"] == "FILE_NOT_FOUND"
    assert [i["commit"] for i in data["introduced_by"]] == [history["rename"]]
    intro = data["introduced_by"][0]
    assert set(intro) == {
        "commit",
        "subject",
        "author",
        "date",
        "parent",
        "result_before",
        "result_after",
        "renamed_to",
        "diff",
    }
    result_keys = {"patch", "op", "status", "reason", "required", "file", "line", "message", "hint"}
    assert set(data["result"]) == set(intro["result_before"]) == set(intro["result_after"]) == result_keys
    assert set(data["manifest"]) == {"name", "path", "digest"}
    assert set(data["reason_changes"][0]) == {"commit", "subject", "author", "date", "from", "to"}
    assert intro["result_before"]["status"] == "APPLY" and intro["result_after"]["reason"] == "CLASS_NOT_FOUND"
    assert "-class Model:" in intro["diff"] and "+class LanguageModelWrapper:" in intro["diff"]
    assert [c["commit"] for c in data["reason_changes"]] == [history["move"]]
    assert "renamed to pkg/models/model.py" in data["where"]


def test_explain_file_rename_and_applies(setup, capsys) -> None:
    history, manifest, repo = setup
    code, out, _ = run(capsys, "explain", "-m", manifest, "typing", "--repo", str(repo), "--commit", history["merge"])
    assert code == 0
    assert f"introduced by {history['move']}" in out
    assert "was renamed to pkg/models/model.py in this commit" in out
    code, out, _ = run(capsys, "explain", "-m", manifest, "hook", "--repo", str(repo), "--commit", history["fix"])
    assert code == 0 and "there is no failure to explain" in out
    code, _, err = run(capsys, "explain", "-m", manifest, "hookk", "--repo", str(repo))
    assert code == 2 and "did you mean 'hook'" in err
