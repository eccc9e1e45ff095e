"""A caller's GIT_* variables, exported for another repository: what GitPython does with them, and patchkit.git.

Why patchkit runs git itself instead of through GitPython (docs/concepts/architecture.md, "Why not
GitPython"): reading blobs, both are as fast (``benchmarks/bench_gitpython.py``: the same persistent
``git cat-file --batch``), but GitPython hands git the caller's environment.  Here repository B's variables
are exported while repository A is read.  GitPython 3.2 sets its own ``GIT_DIR`` (a stray one is harmless),
but passes ``GIT_WORK_TREE`` and ``GIT_INDEX_FILE`` on, so A's status is B's tree or index against A, and
``GIT_OBJECT_DIRECTORY`` (which it forwards explicitly), so A's own blobs cannot be read.  patchkit.git
drops every GIT_* variable not on its allowlist, so A is read as A whatever the caller exported.  If a
GitPython release stops passing them on, the GitPython test fails: then the decision is worth redoing.
"""

from __future__ import annotations

import pytest
from helpers import git, make_repo

from patchkit.git import Repo

STRAY = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


def _stray_value(b, name: str) -> str:
    return str({"GIT_DIR": b / ".git", "GIT_WORK_TREE": b, "GIT_INDEX_FILE": b / ".git" / "index",
                "GIT_OBJECT_DIRECTORY": b / ".git" / "objects"}[name])  # fmt: skip


@pytest.fixture
def two_repos(tmp_path):
    a = make_repo(tmp_path / "a", {"f.txt": "a\n"}, message="repository A")
    b = make_repo(tmp_path / "b", {"f.txt": "b\n"}, message="repository B")
    return a, b, git(a, "rev-parse", "HEAD:f.txt").strip(), git(a, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("name", STRAY)
def test_patchkit_git_reads_the_repository_it_was_given_whatever_the_caller_exported(two_repos, monkeypatch, name):
    a, b, blob, head = two_repos
    monkeypatch.setenv(name, _stray_value(b, name))
    with Repo.discover(a) as repo:
        assert repo.root == a.resolve() and repo.head() == head
        assert repo.read_blob(blob) == b"a\n"
        assert repo.changed_tracked_files() == []


@pytest.mark.parametrize("name", STRAY)
def test_what_gitpython_does_with_a_stray_git_variable(two_repos, monkeypatch, name):
    git_python = pytest.importorskip("git", reason="GitPython is not installed (the test extra has it)")
    a, b, blob, head = two_repos
    monkeypatch.setenv(name, _stray_value(b, name))
    repo = git_python.Repo(a, odbt=git_python.GitCmdObjectDB)
    try:
        assert repo.git.rev_parse("HEAD") == head  # HEAD is found through GIT_DIR, which GitPython sets itself
        if name == "GIT_OBJECT_DIRECTORY":  # forwarded: A's objects are looked for in B's store
            with pytest.raises(ValueError, match="could not be resolved"):
                repo.odb.stream(bytes.fromhex(blob)).read()
            return
        assert repo.odb.stream(bytes.fromhex(blob)).read() == b"a\n"
        status = repo.git.status("--porcelain")
        if name == "GIT_DIR":  # GitPython exports its own GIT_DIR over the stray one
            assert status == ""
        else:  # B's work tree (or index) against A's: a clean A reads as modified
            assert "f.txt" in status, status
    finally:
        repo.close()
