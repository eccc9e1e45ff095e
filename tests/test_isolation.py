"""The test suite's own isolation (tests/conftest.py): git never sees the user's config, in any fixture scope."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import git

from patchkit.demo.history import GIT_ENV_DROP, git_isolation


@pytest.fixture(scope="module")
def module_env() -> dict[str, str]:
    """The environment a module-scoped fixture (a history built once per module) runs in."""
    return dict(os.environ)


def _isolated(env: dict[str, str], base: Path) -> None:
    for key, value in git_isolation().items():
        assert env.get(key) == value, key
    for key in GIT_ENV_DROP:
        assert key not in env, key
    assert Path(env["HOME"]).resolve().is_relative_to(base.resolve())


def test_module_scoped_fixtures_run_isolated(module_env, tmp_path_factory: pytest.TempPathFactory) -> None:
    _isolated(module_env, tmp_path_factory.getbasetemp())


def test_each_test_gets_its_own_fresh_home(module_env, tmp_path_factory: pytest.TempPathFactory) -> None:
    _isolated(dict(os.environ), tmp_path_factory.getbasetemp())
    home = Path(os.environ["HOME"])
    assert home != Path(module_env["HOME"])
    assert list(home.iterdir()) == []


def test_git_reads_no_user_config(tmp_path: Path) -> None:
    # A global config planted in HOME is ignored: GIT_CONFIG_GLOBAL points at /dev/null.
    (Path(os.environ["HOME"]) / ".gitconfig").write_text("[user]\n\tname = Someone Else\n")
    try:
        git(tmp_path, "init", "-q", "repo")
        assert "Someone Else" not in git(tmp_path / "repo", "config", "--list")
        assert git(tmp_path / "repo", "var", "GIT_AUTHOR_IDENT").startswith(git_isolation()["GIT_AUTHOR_NAME"])
    finally:
        (Path(os.environ["HOME"]) / ".gitconfig").unlink()
