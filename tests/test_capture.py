"""`patchkit capture` and `patchkit import-diff`: the round trip is the acceptance test.

Every scenario builds a real git repository at a base commit, edits its work
tree by hand (or applies a patch file), captures, resets the tree to the base
and applies the captured manifest: every byte of every file must come back.
The captured manifest must also say APPLY for every patch in `patchkit check`
at the base, and capturing twice must give the same bytes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from capture_trees import BASE, CMAKE, DEEPSEEK, EAGLE, KIMI, REGISTRY, RUNNER, SERVER_ARGS, YAML, edited
from helpers import git, head_sha, make_repo, porcelain, run_cli, tree_state

from patchkit.demo.history import FileValue


def write_tree(repo: Path, files: dict[str, str | bytes]) -> None:
    for path, content in files.items():
        full = repo / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        out[rel.as_posix()] = path.read_bytes()
    return out


def capture(capsys, repo: Path, out: Path, *extra: str, name: str = "captured"):
    return run_cli(capsys, "capture", "--repo", repo, "--name", name, "--out", out, *extra)


def round_trip(capsys, tmp_path: Path, base: dict[str, FileValue], edit: dict[str, str | bytes]) -> dict:
    """Capture ``edit`` over ``base``, reset, apply, and compare every byte; returns capture's JSON."""
    repo = make_repo(tmp_path / "repo", base)
    write_tree(repo, edit)
    wanted = snapshot_bytes(repo)
    out = tmp_path / "kit"
    r = capture(capsys, repo, out, "--json")
    assert r.code == 0, r.err
    report = r.json
    manifest = out / "manifests" / "captured.toml"

    checked = run_cli(capsys, "check", "-m", manifest, "--repo", repo, "--commit", "HEAD", "--json")
    assert checked.code == 0, checked.err
    assert {(x["status"], x["reason"]) for x in checked.json["commits"][0]["results"]} == {("APPLY", None)}

    git(repo, "checkout", "--", ".")
    assert porcelain(repo) == []
    applied = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    assert applied.code == 0, applied.err
    assert snapshot_bytes(repo) == wanted  # every byte of every file
    return report


def test_hand_edited_kimi_tree_round_trips_with_structured_ops_and_diffs(tmp_path, capsys):
    report = round_trip(capsys, tmp_path, BASE, edited())
    ops = {(p["file"], p["op"]) for p in report["patches"]}
    assert (KIMI, "add-methods") in ops and (KIMI, "ensure-import") in ops
    assert (EAGLE, "insert") in ops and (EAGLE, "add-definitions") in ops
    assert (EAGLE, "replace-function") in ops  # the changed default
    assert (DEEPSEEK, "move-import") in ops
    assert (REGISTRY, "ensure-list-item") in ops
    for path in (CMAKE, YAML, SERVER_ARGS):
        assert [p["op"] for p in report["patches"] if p["file"] == path] == ["diff"]
    # The import added in the middle of the block: ensure-import placed with `after`.
    assert [(p["op"], p["why"]) for p in report["patches"] if p["file"] == RUNNER] == [
        ("ensure-import", "a new import inside the import block, placed with `after`")
    ]
    why = {p["file"]: p["why"] for p in report["patches"] if p["op"] == "diff"}
    assert why[CMAKE] == why[YAML] == "not a Python file"
    assert "deletes `os.environ.setdefault" in why[SERVER_ARGS]
    replace = next(p for p in report["patches"] if p["op"] == "replace-function")
    assert replace["file"] == EAGLE and "EAGLEWorker.draft" in replace["change"]
    assert set(report) == {"version", "command", "name", "base", "manifest", "payloads", "patches", "untracked"}
    assert set(report["patches"][0]) == {"id", "op", "file", "change", "why"}


def test_captured_manifest_pins_the_base_and_describes_every_patch(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", BASE)
    write_tree(repo, edited())
    r = capture(capsys, repo, tmp_path / "kit")
    assert r.code == 0, r.err
    assert "file" in r.out and "chosen op" in r.out and "why" in r.out
    data = tomllib.loads((tmp_path / "kit" / "manifests" / "captured.toml").read_text())
    assert data["name"] == "captured"
    for patch in data["patch"]:
        assert patch["description"].startswith("Captured: ")
    mid_block = next(p for p in data["patch"] if p["file"] == RUNNER)
    assert (mid_block["import"], mid_block["after"]) == ("import json", "import logging")
    replace = next(p for p in data["patch"] if p["op"] == "replace-function")
    digest = run_cli(capsys, "digest", EAGLE, "EAGLEWorker.draft", "--repo", repo, "--commit", "HEAD", "--json")
    assert replace["expect"] == digest.json["digest"]


def test_capture_twice_gives_identical_bytes(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", BASE)
    write_tree(repo, edited())
    assert capture(capsys, repo, tmp_path / "one").code == 0
    assert capture(capsys, repo, tmp_path / "two").code == 0
    one, two = snapshot_bytes(tmp_path / "one"), snapshot_bytes(tmp_path / "two")
    assert one == two and len(one) > 5


def test_crlf_files_round_trip(tmp_path, capsys):
    base = {
        "pkg/win.py": b"import os\r\n\r\n\r\ndef f(x=1):\r\n    return x\r\n",
        "conf/win.ini": b"[a]\r\nx = 1\r\ny = 2\r\n",
    }
    edit = {
        "pkg/win.py": b"import os\r\n\r\n\r\ndef f(x=2):\r\n    return x\r\n",
        "conf/win.ini": b"[a]\r\nx = 1\r\ny = 3\r\n",
    }
    report = round_trip(capsys, tmp_path, base, edit)
    assert [p["op"] for p in report["patches"]] == ["diff", "replace-function"]


def test_structured_ops_that_would_not_reproduce_the_bytes_fall_back_to_diff(tmp_path, capsys):
    base = {"pkg/m.py": "import os\n\n\ndef f():\n    return 1\n"}
    # One blank line before the new def: add-definitions would put two.
    edit = {"pkg/m.py": "import os\n\n\ndef f():\n    return 1\n\ndef g():\n    return 2\n"}
    report = round_trip(capsys, tmp_path, base, edit)
    assert [p["op"] for p in report["patches"]] == ["diff"]
    assert "would not reproduce it byte for byte" in report["patches"][0]["why"]


def test_comment_only_change_and_missing_final_newline_round_trip(tmp_path, capsys):
    base = {"pkg/m.py": "X = 1  # one\n", "notes.txt": "a\nb"}
    edit = {"pkg/m.py": "X = 1  # uno\n", "notes.txt": "a\nc"}
    report = round_trip(capsys, tmp_path, base, edit)
    assert [p["op"] for p in report["patches"]] == ["diff", "diff"]
    why = {p["file"]: p["why"] for p in report["patches"]}
    assert "only formatting or comments changed" in why["pkg/m.py"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda repo: (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x01"), "logo.png is binary"),
        (lambda repo: git(repo, "mv", "conf/a.yaml", "conf/b.yaml"), "conf/a.yaml renamed to conf/b.yaml"),
        (lambda repo: (repo / "conf/a.yaml").unlink(), "conf/a.yaml is deleted"),
        (lambda repo: (repo / "conf/a.yaml").chmod(0o755), "changes mode 100644 -> 100755"),
    ],
    ids=["binary", "rename", "delete", "mode"],
)
def test_changes_capture_cannot_carry_are_refused_and_nothing_is_written(tmp_path, capsys, change, words):
    repo = make_repo(tmp_path / "repo", {"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00", "conf/a.yaml": "a: 1\n"})
    change(repo)
    r = capture(capsys, repo, tmp_path / "kit")
    assert r.code == 1
    assert r.err.startswith("patchkit: error: capture carries edits of existing text files only")
    assert words in r.err and r.err.count("\n") == 1
    assert not (tmp_path / "kit" / "manifests").exists()


def test_capture_refuses_to_overwrite_without_force_and_a_clean_tree(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    r = capture(capsys, repo, tmp_path / "kit")
    assert r.code == 1 and "no changes against" in r.err
    (repo / "a.txt").write_text("b\n")
    assert capture(capsys, repo, tmp_path / "kit").code == 0
    before = snapshot_bytes(tmp_path / "kit")
    (repo / "a.txt").write_text("c\n")
    again = capture(capsys, repo, tmp_path / "kit")
    assert again.code == 1 and "--force" in again.err
    assert snapshot_bytes(tmp_path / "kit") == before
    assert capture(capsys, repo, tmp_path / "kit", "--force").code == 0
    assert snapshot_bytes(tmp_path / "kit") != before
    assert not [p for p in (tmp_path / "kit").iterdir() if p.name.startswith(".patchkit-capture-")]


def test_capture_against_an_older_base_and_bad_name(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    base = head_sha(repo)
    (repo / "a.txt").write_text("b\n")
    git(repo, "commit", "-qam", "local change")
    r = capture(capsys, repo, tmp_path / "kit", "--base", base, "--json")
    assert r.code == 0, r.err
    assert r.json["base"]["commit"] == base
    bad = capture(capsys, repo, tmp_path / "kit", "--base", base, name="Bad_Name")
    assert bad.code == 2 and "--name 'Bad_Name'" in bad.err


# -- import-diff ---------------------------------------------------------------------------


def make_patch(tmp_path: Path, base: dict[str, FileValue], edit: dict[str, str]) -> tuple[Path, Path]:
    """A repo at ``base`` and a `git diff` of ``edit`` made in a copy of it."""
    repo = make_repo(tmp_path / "repo", base)
    other = make_repo(tmp_path / "other", base)
    write_tree(other, edit)
    patch = tmp_path / "change.patch"
    patch.write_bytes(git(other, "diff").encode("utf-8"))
    return repo, patch


def test_import_diff_captures_without_touching_the_tree(tmp_path, capsys):
    repo, patch = make_patch(tmp_path, BASE, edited())
    before = tree_state(repo, include_git=False)
    worktrees = git(repo, "worktree", "list")
    r = run_cli(
        capsys, "import-diff", patch, "--repo", repo, "--name", "from-patch", "--out", tmp_path / "kit", "--json"
    )
    assert r.code == 0, r.err
    assert r.json["command"] == "import-diff"
    assert tree_state(repo, include_git=False) == before
    assert git(repo, "worktree", "list") == worktrees
    applied = run_cli(capsys, "apply", "-m", tmp_path / "kit/manifests/from-patch.toml", "--repo", repo, "--json")
    assert applied.code == 0, applied.err
    for path, text in edited().items():
        assert (repo / path).read_text() == text


def test_import_diff_names_the_hunk_that_does_not_apply(tmp_path, capsys):
    repo, patch = make_patch(tmp_path, {YAML: BASE[YAML]}, {YAML: BASE[YAML].replace("tp: 8", "tp: 16")})
    (tmp_path / "repo" / YAML).write_text(BASE[YAML].replace("tp: 8", "tp: 4"))
    git(repo, "commit", "-qam", "upstream moved on")
    r = run_cli(capsys, "import-diff", patch, "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 1
    assert f"{YAML}: hunk 1 (@@ -1,6 +1,6 @@) does not match at line 3: expected '  tp: 8', found '  tp: 4'" in r.err
    assert not (tmp_path / "kit" / "manifests").exists()


def test_import_diff_with_a_renamed_file_is_refused_clearly(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"conf/a.yaml": "a: 1\nb: 2\nc: 3\n"})
    patch = tmp_path / "rename.patch"
    patch.write_text(
        "diff --git a/conf/a.yaml b/conf/b.yaml\nsimilarity index 100%\n"
        "rename from conf/a.yaml\nrename to conf/b.yaml\n"
    )
    r = run_cli(capsys, "import-diff", patch, "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 1
    assert "conf/a.yaml renamed to conf/b.yaml" in r.err
    assert porcelain(repo) == []


def test_import_diff_of_a_missing_file_is_bad_input(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    r = run_cli(capsys, "import-diff", tmp_path / "nope.patch", "--repo", repo, "--name", "x")
    assert r.code == 2 and "nope.patch does not exist" in r.err


def test_a_proposal_the_loader_refuses_is_proposed_again_as_edit_function(tmp_path, capsys):
    # An added `pass` is an insert whose payload has "no statements to insert": the loader
    # refuses it, and the second proposal carries the edit inside f as hunks.
    base = {"pkg/m.py": "def f():\n    x = 1\n"}
    edit = {"pkg/m.py": "def f():\n    x = 1\n    pass\n"}
    report = round_trip(capsys, tmp_path, base, edit)
    assert [p["op"] for p in report["patches"]] == ["edit-function"]


def test_an_unwritable_out_is_bad_input(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    (repo / "a.txt").write_text("b\n")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    r = capture(capsys, repo, blocker / "kit")
    assert r.code == 2 and r.err.startswith("patchkit: error: cannot write to --out") and r.err.count("\n") == 1


def test_a_moved_import_written_above_the_old_one_is_captured_as_move_import(tmp_path, capsys):
    base = {"pkg/m.py": "import os\n\nfrom sglang.srt.utils import DeepEPMode, get_bool_env_var\n\nX = 1\n"}
    edit = {
        "pkg/m.py": "import os\n\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n"
        "from sglang.srt.utils import get_bool_env_var\n\nX = 1\n"
    }
    report = round_trip(capsys, tmp_path, base, edit)
    [patch] = report["patches"]
    assert patch["op"] == "move-import"
    assert "above the old import" in patch["change"]
    text = (tmp_path / "kit" / "manifests" / "captured.toml").read_text()
    assert 'position = "before"' in text


@pytest.mark.parametrize(
    ("edited", "placed"),
    [
        ('"""Doc."""\n\nimport copy\nimport os\nimport sys\n\n# first party\nfrom a import b\n\nX = 1\n', "position"),
        (
            '"""Doc."""\n\nimport os\nimport sys\n\n# first party\nfrom a import a0\nfrom a import b\n\nX = 1\n',
            "before",
        ),
        ('"""Doc."""\n\nimport os\nimport re\nimport sys\n\n# first party\nfrom a import b\n\nX = 1\n', "after"),
    ],
    ids=["sorts-first", "under-a-comment", "inside"],
)
def test_an_import_added_anywhere_in_the_block_round_trips_as_ensure_import(tmp_path, capsys, edited, placed):
    base = {"pkg/m.py": '"""Doc."""\n\nimport os\nimport sys\n\n# first party\nfrom a import b\n\nX = 1\n'}
    report = round_trip(capsys, tmp_path, base, {"pkg/m.py": edited})
    assert [p["op"] for p in report["patches"]] == ["ensure-import"]
    text = (tmp_path / "kit" / "manifests" / "captured.toml").read_text()
    assert f"\n{placed} = " in text


@pytest.mark.parametrize(
    ("base", "edited", "placed"),
    [
        ('"""Doc."""\n\nX = 1\n', '"""Doc."""\n\nimport copy\n\nX = 1\n', None),
        ("import os\n\nimport torch\n\nX = 1\n", "import os\n\nimport torch\n\nfrom a import b\n\nX = 1\n", None),
        ("import os\n\nfrom a import b\n\nX = 1\n", "import os\n\nimport torch\n\nfrom a import b\n\nX = 1\n", "after"),
        ("import os\nfrom a import b\n\nX = 1\n", "import os\nimport torch\n\nfrom a import b\n\nX = 1\n", "before"),
        ("# Copyright\n\nX = 1\n", "# Copyright\n\nimport copy\n\nX = 1\n", None),
        (
            '"""Doc."""\n\n# stdlib\nimport os\n\nX = 1\n',
            '"""Doc."""\n\n# stdlib\nimport abc\n\nimport os\n\nX = 1\n',
            "position",
        ),
    ],
    ids=["under-the-docstring-no-imports", "new-group-at-the-end", "new-group-between-two", "new-group-splitting-one",
         "at-the-top-under-a-comment", "new-group-at-the-top"],
)  # fmt: skip
def test_an_import_written_as_a_new_group_round_trips_as_ensure_import(tmp_path, capsys, base, edited, placed):
    report = round_trip(capsys, tmp_path, {"pkg/m.py": base}, {"pkg/m.py": edited})
    assert [p["op"] for p in report["patches"]] == ["ensure-import"], report["patches"]
    assert "as a group of its own" in report["patches"][0]["why"]
    text = (tmp_path / "kit" / "manifests" / "captured.toml").read_text()
    assert "\nnew_group = true\n" in text
    if placed:
        assert f"\n{placed} = " in text


def test_a_moved_import_written_as_its_own_group_is_captured_as_move_import(tmp_path, capsys):
    base = {
        "pkg/m.py": "import torch\n\nfrom sglang.srt.distributed import get_tp_group\n"
        "from sglang.srt.utils import DeepEPMode, add_prefix, is_cuda\n\n_is_cuda = is_cuda()\n"
    }
    edit = {
        "pkg/m.py": "import torch\n\nfrom sglang.srt.distributed import get_tp_group\n"
        "from sglang.srt.layers.moe.utils import DeepEPMode\n\n"
        "from sglang.srt.utils import add_prefix, is_cuda\n\n_is_cuda = is_cuda()\n"
    }
    report = round_trip(capsys, tmp_path, base, edit)
    [patch] = report["patches"]
    assert patch["op"] == "move-import"
    text = (tmp_path / "kit" / "manifests" / "captured.toml").read_text()
    assert 'position = "before"\nnew_group = true\n' in text


def test_an_import_layout_no_placement_writes_is_an_edit_imports(tmp_path, capsys):
    # A blank line on both sides of a new line inside one group: neither `after` nor `before` writes that.
    base = {"pkg/m.py": "import os\nimport sys\n\nX = 1\n"}
    report = round_trip(capsys, tmp_path, base, {"pkg/m.py": "import os\n\nimport re\n\nimport sys\n\nX = 1\n"})
    assert [p["op"] for p in report["patches"]] == ["edit-imports"]
    assert (
        "adds `import re` (line 3) with 1 blank line above it and 1 blank line below it, where the file had no "
        "line: no placement of ensure-import writes that layout" in report["patches"][0]["why"]
    )


def test_an_import_proposal_that_does_not_verify_is_proposed_again_as_edit_imports(tmp_path, capsys):
    # `after = "import os"` names the last such import: the proposal lands after the second one, so the
    # import edits are proposed again as hunks inside the block (before, the file fell back to diff).
    base = {"pkg/m.py": "import os\nimport sys\nimport os\n\nX = 1\n"}
    edit = {"pkg/m.py": "import os\nimport re\nimport sys\nimport os\n\nX = 1\n"}
    report = round_trip(capsys, tmp_path, base, edit)
    assert [p["op"] for p in report["patches"]] == ["edit-imports"]
    assert "the structured ops would not reproduce it byte for byte" in report["patches"][0]["why"]


def test_an_import_away_from_the_block_says_where_it_is(tmp_path, capsys):
    base = {"pkg/m.py": "import os\n\nX = 1\nY = 2\n"}
    report = round_trip(capsys, tmp_path, base, {"pkg/m.py": "import os\n\nX = 1\nimport re\nY = 2\n"})
    assert [p["op"] for p in report["patches"]] == ["diff"]
    assert report["patches"][0]["why"] == (
        "no structured op fits: adds `import re` (line 4) after `X = 1` (line 3) and before `Y = 2` (line 4), "
        "away from the import block; ensure-import places imports in or at the edge of the block only"
    )


@pytest.mark.parametrize("unit", [2, 4])
@pytest.mark.parametrize("depth", [1, 2])
def test_a_method_with_a_multi_line_docstring_keeps_its_value_at_any_depth(tmp_path, capsys, depth, unit):
    """At class depth 1 and 2, in files indented 2 and 4 spaces a level: the round trip is exact, and
    `validate` (on the payload alone, and reading the target) has nothing to warn about."""
    one = " " * unit
    pad = one * depth
    head = "class A:\n" if depth == 1 else f"class A:\n{one}class B:\n"
    method = (
        f'{pad}def m(self):\n{pad}{one}"""Doc.\n\n{pad}{one}Args:\n{pad}{one}{one}x: y\n{pad}{one}"""\n'
        f"{pad}{one}return 1\n"
    )
    base = {"pkg/m.py": head + f"{pad}def f(self):\n{pad}{one}return 0\n"}
    # At the end of the class (add-methods), and between two methods (add-methods with after=).
    edit = {"pkg/m.py": head + f"{pad}def f(self):\n{pad}{one}return 0\n\n" + method}
    report = round_trip(capsys, tmp_path / "end", base, edit)
    assert [p["op"] for p in report["patches"]] == ["add-methods"]
    manifest = tmp_path / "end" / "kit" / "manifests" / "captured.toml"
    assert run_cli(capsys, "validate", "-m", manifest, "--json").json["warnings"] == []
    repo = tmp_path / "end" / "repo"
    assert run_cli(capsys, "validate", "-m", manifest, "--repo", repo, "--json").json["warnings"] == []
    base2 = {"pkg/m.py": head + f"{pad}def f(self):\n{pad}{one}return 0\n\n{pad}def g(self):\n{pad}{one}return 2\n"}
    edit2 = {
        "pkg/m.py": base2["pkg/m.py"].replace(f"{pad}def g(self):", method.rstrip("\n") + f"\n\n{pad}def g(self):")
    }
    report = round_trip(capsys, tmp_path / "mid", base2, edit2)
    assert [p["op"] for p in report["patches"]] == ["add-methods"]
    assert "placed with `after`" in report["patches"][0]["why"]


def test_formatting_inside_a_function_is_edit_function_and_outside_is_a_diff_that_says_so(tmp_path, capsys):
    base = {"pkg/m.py": "X = 1\n\n\ndef f():\n    a = 1\n    return a\n"}
    report = round_trip(
        capsys, tmp_path / "in", base, {"pkg/m.py": base["pkg/m.py"].replace("    a = 1\n", "    a = 1\n\n")}
    )
    assert [p["op"] for p in report["patches"]] == ["edit-function"]
    assert "formatting or comments only" in report["patches"][0]["change"]
    report = round_trip(
        capsys, tmp_path / "out", base, {"pkg/m.py": "X = 1  # one\n\n\ndef f():\n    a = 1\n    return a\n"}
    )
    assert [p["op"] for p in report["patches"]] == ["diff"]
    assert (
        "only formatting or comments changed outside any function (a `diff` carries that exactly"
        in (report["patches"][0]["why"])
    )


# -- the messages of the diff fallback ------------------------------------------------------------


def test_a_byte_difference_shows_whitespace_and_says_what_differs():
    from patchkit.capture.core import first_line_difference

    got = b"class A:\n    def f(self):\n        '''Doc.\n\n    Args:\n'''\n"
    want = b"class A:\n    def f(self):\n        '''Doc.\n\n        Args:\n'''\n"
    assert first_line_difference(got, want) == (
        "line 5: the edit has '        Args:', the ops would write '    Args:' "
        "(the same text, indented 8 columns in the edit and 4 by the ops)"
    )
    assert first_line_difference(b"x = 1\r\n", b"x = 1\n").endswith("(the same text with another line ending)")
    assert first_line_difference(b"x = 1 \n", b"x = 1\n").endswith("(the same text with other trailing whitespace)")
    assert first_line_difference(b"a\n", b"a\nb\n") == "line 2: the edit has 'b', the ops would write ''"
    assert first_line_difference(b"a\n", b"a\n\n") == "line 3: the files differ in length (the edit has more lines)"


def test_a_changed_statement_that_reads_the_same_says_what_differs_never_x_into_x():
    from patchkit.capture.python import Unfit, propose

    call = "REGISTRY.register(name='deepseek-r1-distill', template=Template(system='s', user='{}'))\n"
    base = "def f():\n    pass\n\n" + call.format("a")
    target = "def f():\n    pass\n    pass\n\n" + call.format("b")
    with pytest.raises(Unfit) as info:
        propose("m.py", base, target)
    message = str(info.value)
    assert message.startswith("changes `REGISTRY.register(name='deepseek-r1-distill'")
    assert "(line 4), now at line 5: they first differ at character" in message
    assert " into " not in message


def test_a_changed_multi_line_statement_shows_its_newlines_on_one_line(tmp_path, capsys):
    """The "changes `try:`" fallback quoted the code with its raw newlines, breaking the summary table."""
    base = {"pkg/m.py": "import warnings\n\ntry:\n    from fla import f\nexcept:\n    warnings.warn('no fla')\n"}
    edit = {"pkg/m.py": base["pkg/m.py"].replace("except:", "except ImportError:")}
    report = round_trip(capsys, tmp_path, base, edit)
    [patch] = report["patches"]
    assert patch["op"] == "diff"
    assert "\n" not in patch["why"], patch["why"]
    assert patch["why"] == (
        "no structured op fits: changes `try:` (line 3): they first differ at character 34: "
        "it had `…ort f⏎except:⏎    warnings.warn('no …`, it has `…ort f⏎except ImportError:⏎    warnin…`"
    )
    text = capture(capsys, make_repo(tmp_path / "again", base), tmp_path / "kit2")  # nothing to capture there
    assert text.code == 1
    write_tree(tmp_path / "again", edit)
    text = capture(capsys, tmp_path / "again", tmp_path / "kit2")
    row = next(line for line in text.out.splitlines() if line.startswith("pkg/m.py"))
    assert row.rstrip().endswith("it has `…ort f⏎except ImportError:⏎    warnin…`"), text.out


def test_visible_marks_whitespace_and_keeps_other_text():
    from patchkit.capture.python import visible

    assert visible("a\n\tb\r\n c\x0c é…") == "a⏎␉b␍⏎ c\\x0c é…"
    assert visible(visible("x\ny")) == "x⏎y"


def test_a_star_import_is_carried_as_the_import_block_and_never_names_a_staging_path(tmp_path, capsys):
    base = {"pkg/m.py": "import os\n\nX = 1\n"}
    report = round_trip(capsys, tmp_path, base, {"pkg/m.py": "import os\nfrom os.path import *\n\nX = 1\n"})
    [patch] = report["patches"]
    assert patch["op"] == "edit-imports", patch
    assert "adds `from os.path import *` (line 2), a star import: ensure-import adds named imports only" in patch["why"]
    assert ".patchkit-capture" not in patch["why"] and "would not load" not in patch["why"]


def test_a_proposal_the_loader_refuses_names_the_users_file_not_the_staged_manifest(tmp_path):
    """The loader's words reach the summary with the edited file, never the temporary manifest's path."""
    from patchkit.capture.core import CapturedPatch, verify_staged
    from patchkit.git import Repo

    repo = make_repo(tmp_path / "repo", {"pkg/m.py": "import os\n"})
    staged = tmp_path / "kit" / ".patchkit-capture-x" / "manifests" / "c.toml"
    staged.parent.mkdir(parents=True)
    staged.write_text(
        'schema = 1\nname = "c"\n\n[[patch]]\nid = "m-import-x"\nop = "ensure-import"\nfile = "pkg/m.py"\n'
        'import = "from os.path import *"\n'
    )
    patches = [CapturedPatch("m-import-x", "ensure-import", "pkg/m.py", "added", "why")]
    with Repo.discover(repo) as opened:
        bad = verify_staged(opened, opened.commit("HEAD"), staged, {}, patches)
    assert list(bad) == ["pkg/m.py"]
    assert bad["pkg/m.py"].startswith("the manifest would not load (the patch for pkg/m.py, patch[1].import: star")
    assert ".patchkit-capture" not in bad["pkg/m.py"] and str(staged.parent) not in bad["pkg/m.py"]


def test_deleted_definitions_are_remove_definitions_and_a_deleted_import_is_a_diff_that_says_why(tmp_path, capsys):
    base = {
        "pkg/m.py": "import os\n\n\ndef keep():\n    return 1\n\n\ndef old():\n    return 2\n\n\n"
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
    }
    edit = {"pkg/m.py": "import os\n\n\ndef keep():\n    return 1\n\n\nclass A:\n    def f(self):\n        return 1\n"}
    report = round_trip(capsys, tmp_path / "defs", base, edit)
    assert [p["op"] for p in report["patches"]] == ["remove-definitions", "remove-definitions"]
    assert [p["change"] for p in report["patches"]] == ["deleted old", "deleted g from class A"]
    report = round_trip(capsys, tmp_path / "imp", base, {"pkg/m.py": base["pkg/m.py"].replace("import os\n\n\n", "")})
    assert [p["op"] for p in report["patches"]] == ["diff"]
    assert "deletes `import os` (line 1), which is not a definition" in report["patches"][0]["why"]


@pytest.mark.parametrize(
    "edited",
    [
        '"""Doc."""\n\nimport os\nfrom a import (\n    b,\n    c,\n)\n\nX = 1\n',
        '"""Doc."""\n\nimport os\nimport sys\nfrom a import (\n    b,\n    d,\n)\n\nX = 1\n',
        '"""Doc."""\n\nimport os\nimport re\nimport sys\nfrom a import (\n    b,\n    c,\n    d,\n)\n\nX = 1\n',
    ],
    ids=["deleted", "renamed", "name-added-to-a-list"],
)
def test_any_edit_inside_the_import_block_round_trips_as_edit_imports(tmp_path, capsys, edited):
    base = {"pkg/m.py": '"""Doc."""\n\nimport os\nimport sys\nfrom a import (\n    b,\n    c,\n)\n\nX = 1\n'}
    report = round_trip(capsys, tmp_path, base, {"pkg/m.py": edited})
    assert [p["op"] for p in report["patches"]] == ["edit-imports"]
    assert "ensure-import / move-import cannot say" in report["patches"][0]["why"]


@pytest.mark.parametrize(
    ("base", "edited", "statement"),
    [
        ('"""Doc."""\n\nX = 1\n', '"""Doc, version 2.\n\nMore.\n"""\n\nX = 1\n', "__doc__"),
        ("EXTS = [\n    'a',\n    'b',\n    'c',\n]\n", "EXTS = [\n    'a',\n    'c',\n]\n", "EXTS"),
        (
            'def main():\n    pass\n\n\nif __name__ == "__main__":\n    main()\n',
            'def main():\n    pass\n\n\nif __name__ == "__main__":\n    # run it\n    main()\n    main()\n',
            "__main__",
        ),
    ],
    ids=["module-docstring", "list-item-removed", "main-block"],
)
def test_a_changed_named_module_statement_round_trips_as_edit_statement(tmp_path, capsys, base, edited, statement):
    report = round_trip(capsys, tmp_path, {"pkg/m.py": base}, {"pkg/m.py": edited})
    assert [p["op"] for p in report["patches"]] == ["edit-statement"]
    text = (tmp_path / "kit" / "manifests" / "captured.toml").read_text()
    assert f'statement = "{statement}"' in text
