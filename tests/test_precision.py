"""Issue 24: the defects a new user hit in apply, check, guard, capture and import-diff.

Each test here fails without its fix; real git repositories, real files, the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git, make_repo, porcelain, run_cli

# -- 1. import-diff on something that is not a text patch -------------------------------------


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"", "is empty, not a patch"),
        (b"hello, this is a note\nnot a diff\n", "is not a patch"),
        (b"diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n", "no hunks"),
        (
            b"diff --git a/b.bin b/b.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZQz|\n\nliteral 0\n",
            "is a binary patch",
        ),
        (b"diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n", "binary"),
    ],
    ids=["empty", "not-a-patch", "no-hunks", "git-binary", "binary-files-differ"],
)
def test_import_diff_refuses_what_is_not_a_text_patch(tmp_path, capsys, content, what):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.bin": b"\0\1"})
    patch = tmp_path / "x.patch"
    patch.write_bytes(content)
    r = run_cli(capsys, "import-diff", patch, "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and str(patch) in lines[0] and what in lines[0], r.err
    assert "internal error" not in r.err
    assert not (tmp_path / "kit").exists()
    assert "patchkit-import-diff" not in git(repo, "worktree", "list")


def test_import_diff_refusal_speaks_of_import_diff_not_capture(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    patch = tmp_path / "new.patch"
    patch.write_text(
        "diff --git a/b.txt b/b.txt\nnew file mode 100644\nindex 0000000..1\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n"
    )
    r = run_cli(capsys, "import-diff", patch, "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 1, r.err
    assert "b.txt is a new file" in r.err
    assert "capture again" not in r.err and "import-diff again" in r.err
    assert porcelain(repo) == []


def test_capture_with_only_an_untracked_file_names_it(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    (repo / "pkg").mkdir()
    (repo / "pkg" / "new_model.py").write_text("x = 1\n")
    r = run_cli(capsys, "capture", "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 1
    assert "pkg/new_model.py" in r.err and "1 untracked file " in r.err, r.err
