"""The `diff` op: zero-fuzz unified diffs on any text file (docs/manifest.md, `diff`).

Every test builds a real git repository, writes the manifest and the diff
payload as files, runs ``patchkit apply --json`` in-process and checks the
verdicts and the exact bytes of every file afterwards.
"""

from __future__ import annotations

import pytest
from helpers import TARGET, head_content, result_of, run_cli, scenario, src, tree_state, verdicts

YAML = "config/serve.yaml"
YAML_BEFORE = "model: kimi\nserve:\n  port: 30000\n  tp: 8\nspec:\n  algo: none\n  steps: 1\n"
YAML_AFTER = "model: kimi\nserve:\n  port: 30000\n  tp: 8\nspec:\n  algo: eagle3\n  steps: 3\n"
YAML_DIFF = (
    "diff --git a/config/serve.yaml b/config/serve.yaml\n"
    "--- a/config/serve.yaml\n"
    "+++ b/config/serve.yaml\n"
    "@@ -3,5 +3,5 @@ serve:\n"
    "   port: 30000\n"
    "   tp: 8\n"
    " spec:\n"
    "-  algo: none\n"
    "-  steps: 1\n"
    "+  algo: eagle3\n"
    "+  steps: 3\n"
)


def diff_patch(pid: str = "yaml", file: str = YAML, payload: str = "y.diff") -> dict:
    return {"id": pid, "op": "diff", "file": file, "source": src(payload)}


def test_diff_applies_exactly_and_then_reads_as_applied(tmp_path, capsys):
    sc = scenario(tmp_path, {YAML: YAML_BEFORE}, [diff_patch()], {"y.diff": YAML_DIFF}, path=YAML)
    r = sc.apply(capsys)
    assert r.code == 0, r.err
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("APPLY", None, 3)
    assert "applies 1 hunk" in res["message"]
    assert sc.text() == YAML_AFTER
    again = sc.apply(capsys)
    assert verdicts(again.json) == [("yaml", "SKIP", "ALREADY_APPLIED")]
    assert again.json["written"] == []


def test_diff_skips_when_its_reverse_applies(tmp_path, capsys):
    sc = scenario(tmp_path, {YAML: YAML_AFTER}, [diff_patch()], {"y.diff": YAML_DIFF}, path=YAML)
    r = sc.apply(capsys)
    assert r.code == 0
    assert verdicts(r.json) == [("yaml", "SKIP", "ALREADY_APPLIED")]
    assert sc.text() == YAML_AFTER


def test_diff_conflict_names_the_first_hunk_that_does_not_match(tmp_path, capsys):
    two_hunks = (
        "--- a/config/serve.yaml\n+++ b/config/serve.yaml\n"
        "@@ -1,2 +1,2 @@\n-model: kimi\n+model: kimi-k2.5\n serve:\n"
        "@@ -5,3 +5,3 @@ serve:\n spec:\n-  algo: none\n+  algo: eagle3\n   steps: 1\n"
    )
    before = YAML_BEFORE.replace("steps: 1", "steps: 2")
    sc = scenario(tmp_path, {YAML: before}, [diff_patch()], {"y.diff": two_hunks}, path=YAML)
    r = sc.apply(capsys)
    assert r.code == 1
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "CONFLICT", 7)
    assert "hunk 2 of 2 (@@ -5,3 +5,3 @@)" in res["message"]
    assert "expected '  steps: 1', found '  steps: 2'" in res["message"]
    assert sc.text() == before


def test_diff_hunks_may_move_but_never_fuzz(tmp_path, capsys):
    shifted = "# added upstream\n# and again\n" + YAML_BEFORE
    sc = scenario(tmp_path, {YAML: shifted}, [diff_patch()], {"y.diff": YAML_DIFF}, path=YAML)
    r = sc.apply(capsys)
    res = r.json["results"][0]
    assert (res["status"], res["line"]) == ("APPLY", 5)
    assert "offset +2" in res["message"]
    assert sc.text() == "# added upstream\n# and again\n" + YAML_AFTER
    # One changed context line is a conflict, not a fuzzy match.
    fuzzy = YAML_BEFORE.replace("  tp: 8", "  tp: 16")
    sc2 = scenario(tmp_path / "b", {YAML: fuzzy}, [diff_patch()], {"y.diff": YAML_DIFF}, path=YAML)
    r2 = sc2.apply(capsys)
    assert verdicts(r2.json) == [("yaml", "FAIL", "CONFLICT")]
    assert "expected '  tp: 8', found '  tp: 16'" in r2.json["results"][0]["message"]


def test_diff_keeps_crlf_and_a_missing_final_newline(tmp_path, capsys):
    before = b"a = 1\r\nb = 2\r\nc = 3"
    payload = (
        b"--- a/cfg.ini\n+++ b/cfg.ini\n@@ -1,3 +1,3 @@\n a = 1\r\n-b = 2\r\n+b = 20\r\n c = 3\n"
        b"\\ No newline at end of file\n"
    )
    sc = scenario(
        tmp_path, {"cfg.ini": before}, [diff_patch("ini", "cfg.ini", "i.diff")], {"i.diff": payload}, path="cfg.ini"
    )
    r = sc.apply(capsys)
    assert verdicts(r.json) == [("ini", "APPLY", None)], r.json
    assert sc.file().read_bytes() == b"a = 1\r\nb = 20\r\nc = 3"
    # An LF diff does not match a CRLF file: line endings are content.
    lf = payload.replace(b"\r\n", b"\n")
    sc2 = scenario(
        tmp_path / "b", {"cfg.ini": before}, [diff_patch("ini", "cfg.ini", "i.diff")], {"i.diff": lf}, path="cfg.ini"
    )
    assert verdicts(sc2.apply(capsys).json) == [("ini", "FAIL", "CONFLICT")]


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (
            "diff --git a/config/serve.yaml b/config/serve.yaml\nindex 1..2 100644\n"
            "GIT binary patch\nliteral 3\nKcmZ?wbN>JU\n",
            "is a binary diff",
        ),
        ("Binary files a/config/serve.yaml and b/config/serve.yaml differ\n", "is a binary diff"),
        (
            "diff --git a/config/old.yaml b/config/serve.yaml\nrename from config/old.yaml\n"
            "rename to config/serve.yaml\n",
            "renames a file",
        ),
        (YAML_DIFF.replace("config/serve.yaml", "config/other.yaml"), "is a diff of 'config/other.yaml'"),
        ("--- a/config/serve.yaml\n+++ b/config/serve.yaml\n", "holds no hunks"),
    ],
    ids=["git-binary", "binary-files-differ", "rename", "other-file", "no-hunks"],
)
def test_bad_diff_payloads_are_manifest_errors(tmp_path, capsys, payload, words):
    sc = scenario(tmp_path, {YAML: YAML_BEFORE}, [diff_patch()], {"y.diff": payload}, path=YAML)
    r = sc.apply(capsys)
    assert r.code == 2
    assert r.err.startswith("patchkit: error: ") and r.err.count("\n") == 1, r.err
    assert "patch[1].source" in r.err and words in r.err
    assert sc.text() == YAML_BEFORE


def test_binary_target_is_refused(tmp_path, capsys):
    data = b"\x89PNG\r\n\x1a\n\x00\x00"
    sc = scenario(
        tmp_path,
        {"logo.png": data},
        [diff_patch("png", "logo.png")],
        {"y.diff": YAML_DIFF.replace("config/serve.yaml", "logo.png")},
        path="logo.png",
    )
    r = sc.apply(capsys)
    res = r.json["results"][0]
    assert (res["status"], res["reason"]) == ("FAIL", "UNSUPPORTED_FILE")
    assert sc.file().read_bytes() == data


def test_diff_is_all_or_nothing_with_other_ops(tmp_path, capsys):
    files = {YAML: YAML_BEFORE, TARGET: "import os\n\nX = 1\n"}
    patches = [
        {"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import sys"},
        diff_patch(),
    ]
    bad = YAML_BEFORE.replace("algo: none", "algo: ngram")
    sc = scenario(tmp_path, {**files, YAML: bad}, patches, {"y.diff": YAML_DIFF}, path=YAML)
    snapshot = tree_state(sc.repo)
    r = sc.apply(capsys)
    assert r.code == 1
    assert verdicts(r.json) == [("imp", "APPLY", None), ("yaml", "FAIL", "CONFLICT")]
    assert tree_state(sc.repo) == snapshot

    ok = scenario(tmp_path / "ok", files, patches, {"y.diff": YAML_DIFF}, path=YAML)
    r = ok.apply(capsys)
    assert r.code == 0 and sorted(r.json["written"]) == sorted([TARGET, YAML])
    assert ok.text() == YAML_AFTER and ok.text(TARGET) == "import os\nimport sys\n\nX = 1\n"
    # Recorded like every other op: revert restores both files.
    back = run_cli(capsys, "revert", "-m", ok.kit.manifest, "--repo", ok.repo, "--json")
    assert back.code == 0, back.err
    assert ok.file().read_bytes() == head_content(ok.repo, YAML)
    assert ok.file(TARGET).read_bytes() == head_content(ok.repo, TARGET)


def test_diff_and_structured_ops_cannot_share_a_file(tmp_path, capsys):
    py_diff = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
    patches = [
        {"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import sys"},
        {"id": "d", "op": "diff", "file": TARGET, "source": src("p.diff")},
    ]
    sc = scenario(tmp_path, {TARGET: "X = 1\n"}, patches, {"p.diff": py_diff})
    r = sc.apply(capsys)
    assert r.code == 2
    assert "patch[2]" in r.err and "both a text patch (op diff) and a structured patch" in r.err


def test_diff_on_a_python_file_alone_is_fine_and_check_sees_it(tmp_path, capsys):
    py_diff = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1 @@\n X = 1\n-Y = 2\n"
    sc = scenario(
        tmp_path,
        {TARGET: "X = 1\nY = 2\n"},
        [{"id": "d", "op": "diff", "file": TARGET, "source": src("p.diff")}],
        {"p.diff": py_diff},
    )
    r = run_cli(capsys, "check", "-m", sc.kit.manifest, "--repo", sc.repo, "--commit", "HEAD", "--json")
    assert r.code == 0, r.err
    assert [(x["status"], x["reason"]) for x in r.json["commits"][0]["results"]] == [("APPLY", None)]
    assert sc.apply(capsys).code == 0
    assert sc.text() == "X = 1\n"


def test_non_python_file_needs_op_diff(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {YAML: YAML_BEFORE},
        [{"id": "i", "op": "ensure-import", "file": YAML, "import": "import os"}],
        path=YAML,
    )
    r = sc.apply(capsys)
    assert r.code == 2
    assert "patch[1].file" in r.err and ".py" in r.err


def test_diff_result_names_its_op(tmp_path, capsys):
    sc = scenario(tmp_path, {YAML: YAML_BEFORE}, [diff_patch()], {"y.diff": YAML_DIFF}, path=YAML)
    assert result_of(sc.apply(capsys).json, "yaml")["op"] == "diff"


@pytest.mark.parametrize(
    ("before", "payload", "after"),
    [
        ("a\nb\nc\nd\n", "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,2 @@\n b\n c\n-d\n", "a\nb\nc\n"),
        ("a\nb\nc\n", "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n a\n b\n c\n+d\n", "a\nb\nc\nd\n"),
        ("a\nb\nc\n", "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n+z\n a\n b\n c\n", "z\na\nb\nc\n"),
    ],
    ids=["delete-at-end", "add-at-end", "add-at-start"],
)
def test_one_sided_hunks_apply_once(tmp_path, capsys, before, payload, after):
    sc = scenario(tmp_path, {"f.txt": before}, [diff_patch("f", "f.txt")], {"y.diff": payload}, path="f.txt")
    assert verdicts(sc.apply(capsys).json) == [("f", "APPLY", None)]
    assert sc.text() == after
    assert verdicts(sc.apply(capsys).json) == [("f", "SKIP", "ALREADY_APPLIED")]
    assert sc.text() == after


def test_a_deletion_applied_at_an_offset_is_applied_even_where_the_file_holds_its_lines_twice(tmp_path, capsys):
    # Real case (SpecForge docs/conf.py, 157745d4e1 replayed at older commits): the deleted
    # line's block is there twice, the nearer copy 6 lines below the header's line.
    block = "items = [\n    'a',\n    'b',\n    'x',\n    'c',\n]\n"
    before = "# top\n" * 6 + block + "\n" + block
    payload = (
        "--- a/config/serve.yaml\n+++ b/config/serve.yaml\n@@ -1,6 +1,5 @@\n"
        " items = [\n     'a',\n     'b',\n-    'x',\n     'c',\n ]\n"
    )
    sc = scenario(tmp_path, {YAML: before}, [diff_patch()], {"y.diff": payload}, path=YAML)
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    assert sc.text() == "# top\n" * 6 + block.replace("    'x',\n", "") + "\n" + block
    again = sc.apply(capsys)
    assert verdicts(again.json) == [("yaml", "SKIP", "ALREADY_APPLIED")]


def test_explain_shows_the_hunks_of_a_text_file_that_touch_the_diff(tmp_path, capsys):
    """A diff's file is text to it: explain picks the upstream hunks near the diff's own, also in a file
    that does not parse as Python (a YAML file), and leaves out an edit far away in the same commit."""
    from helpers import Kit

    from patchkit.demo.history import HistoryBuilder

    filler = "".join(f"# note {i}\n" for i in range(40))
    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "base", {YAML: YAML_BEFORE + filler + "tail: 1\n"})
    builder.commit(
        "break", "spec steps and tail", {YAML: YAML_BEFORE.replace("steps: 1", "steps: 2") + filler + "tail: 2\n"}
    )
    history = builder.build()
    kit = Kit(tmp_path / "kit")
    kit.write([diff_patch()], {"y.diff": YAML_DIFF})
    r = run_cli(capsys, "explain", "-m", kit.manifest, "yaml", "--repo", tmp_path / "repo", "--json")
    assert r.code == 0, r.err
    (introduced,) = r.json["introduced_by"]
    assert introduced["commit"] == history["break"]
    assert "+  steps: 2" in introduced["diff"] and "tail: 2" not in introduced["diff"]


def test_a_payload_named_like_the_out_of_date_wording_is_not_out_of_date(tmp_path, capsys):
    """status used to find "out of date" by searching each APPLY's message for "replaces the previous
    version of"; a diff's message names its payload, so a payload file with those words in its name made
    a patch never applied read as out of date.  The op now says it in the outcome itself."""
    name = "replaces the previous version of serve.diff"
    sc = scenario(tmp_path, {YAML: YAML_BEFORE}, [diff_patch(payload=name)], {name: YAML_DIFF}, path=YAML)
    st = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert "replaces the previous version of" in st.json["results"][0]["message"]
    assert st.json["out_of_date"] == [] and st.json["results"][0]["state"] == "not applied"
