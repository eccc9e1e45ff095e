"""Test isolation: git never reads the user's config, nothing writes to $HOME."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@patchkit.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@patchkit.invalid")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(key, raising=False)
    yield
    # Nothing may have been written to the real home directory's git config.
    assert not (home / ".gitconfig").exists()


@pytest.fixture
def project_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sglang_history(tmp_path_factory: pytest.TempPathFactory):
    """The SGLang-shaped history of patchkit.demo.sglang, built once per module."""
    from patchkit.demo.sglang import build_sglang_history

    return build_sglang_history(tmp_path_factory.mktemp("sglang") / "repo")


@pytest.fixture(scope="module")
def sglang_repo(sglang_history):
    from patchkit.git import Repo

    repo = Repo.discover(sglang_history.path)
    yield repo
    repo.close()
