"""A work tree's commit is read in one git process (the guard's warm path starts every one it needs)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from patchkit.git import Repo
from patchkit.sources.worktree import WorktreeSource
from tests.helpers import git, head_sha, make_repo


def _count_git(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record every process started (real git still runs)."""
    started: list[Any] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        started.append(args)
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    return started


def test_worktree_commit_is_head_in_one_git_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path / "r", {"a.py": "x = 1\n"}, message="the subject")
    repo = Repo.discover(root)
    started = _count_git(monkeypatch)
    commit = WorktreeSource(repo, root).commit
    assert len(started) == 1
    assert commit is not None and commit.sha == head_sha(root) and commit.subject == "the subject"
    assert commit == repo.commit("HEAD")


def test_worktree_commit_of_an_empty_repository_is_none(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q")
    repo = Repo.discover(root)
    assert repo.head_commit() is None
    assert WorktreeSource(repo, root).commit is None
