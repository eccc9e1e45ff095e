"""`edit-function`: hunks applied inside one function, found by name (docs/manifest.md).

Each test is a before/after pair of source strings: a real repository holds
``before``, the manifest and its diff payload are real files, ``patchkit
apply`` runs in-process, and the file's bytes afterwards must be ``after``
exactly (or the verdict is the one named).
"""

from __future__ import annotations

import pytest
from helpers import d, git, result_of, run_cli, scenario, src

from patchkit.capture.textdiff import unified_diff

BASE = d(
    '''
    import os


    class Worker:
        def verify(self, batch):
            """Check a batch.

            Args:
                batch: the batch
            """
            logits = self.draft(batch)
            accept = self.accept(logits)
            self.count += 1
            self.total += len(batch)
            self.last = batch
            return accept

        def other(self):
            return 1
    '''
)

EDITED = BASE.replace(
    "        accept = self.accept(logits)\n", "        sync()\n        accept = self.accept(logits)\n"
)


def function_diff(before: str, after: str, first: int, last: int, path: str = "pkg/mod.py") -> str:
    """The payload capture writes: a diff of the function's lines, numbered from its first line."""
    old = "".join(before.splitlines(True)[first - 1 : last])
    new_last = last + after.count("\n") - before.count("\n")
    new = "".join(after.splitlines(True)[first - 1 : new_last])
    return "# edit-function\n" + unified_diff(path, old, new).split("\n", 1)[1]


VERIFY_DIFF = function_diff(BASE, EDITED, 5, 16)


def edit_patch(pid: str = "verify", function: str = "Worker.verify", payload: str = "v.diff") -> dict:
    return {"id": pid, "op": "edit-function", "file": "pkg/mod.py", "function": function, "source": src(payload)}


def apply(tmp_path, capsys, before: str, patches=None, payloads=None):
    sc = scenario(tmp_path, {"pkg/mod.py": before}, patches or [edit_patch()], payloads or {"v.diff": VERIFY_DIFF})
    r = sc.apply(capsys)
    return sc, r


def test_applies_inside_the_function_wherever_it_moved_and_however_else_it_changed(tmp_path, capsys):
    # Upstream moved the class down and edited the function in lines the hunk does not touch.
    before = (
        BASE.replace("import os\n", "import os\nimport sys\n\nX = 1\n")
        .replace("        self.last = batch\n", "        self.last = list(batch)\n        self.seen = True\n")
        .replace("            Args:\n", "            Arguments:\n")
    )
    sc, r = apply(tmp_path, capsys, before)
    assert r.code == 0, r.err
    res = r.json["results"][0]
    assert (res["status"], res["reason"]) == ("APPLY", None)
    assert "inside Worker.verify (lines 8-20)" in res["message"]
    assert sc.text() == before.replace(
        "        accept = self.accept(logits)\n", "        sync()\n        accept = self.accept(logits)\n"
    )
    again = sc.apply(capsys)
    assert again.json["results"][0]["reason"] == "ALREADY_APPLIED"


@pytest.mark.parametrize("op", ["edit-function", "edit-imports", "edit-statement"])
def test_lines_in_place_are_already_applied_only_where_patchkit_wrote_them(tmp_path, capsys, op):
    """The scoped-hunk ops' reverse match: ALREADY_APPLIED where this tree's record shows patchkit
    wrote those lines, UPSTREAM_PROVIDES where upstream has them of its own (no record of a write)."""
    if op == "edit-function":
        before, after, patch, payload = BASE, EDITED, edit_patch(), VERIFY_DIFF
    elif op == "edit-imports":
        before, after = "import os\nimport sys\n\nX = 1\n", "import os\n\nX = 1\n"
        payload = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,1 @@\n import os\n-import sys\n"
        patch = {"id": "verify", "op": op, "file": "pkg/mod.py", "source": src("v.diff")}
    else:
        before, after = "EXTS = [\n    'a',\n]\n", "EXTS = [\n    'a',\n    'x',\n]\n"
        payload = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,3 @@\n EXTS = [\n     'a',\n+    'x',\n"
        patch = {"id": "verify", "op": op, "file": "pkg/mod.py", "statement": "EXTS", "source": src("v.diff")}
    # Upstream's tree already holds the change: patchkit never wrote it.
    sc, r = apply(tmp_path / "up", capsys, after, [patch], {"v.diff": payload})
    assert r.code == 0, r.err
    res = r.json["results"][0]
    assert (res["status"], res["reason"]) == ("SKIP", "UPSTREAM_PROVIDES"), res
    assert res["message"].endswith(
        "and no record shows patchkit writing it there: upstream has this change, so the patch is redundant here"
    ), res["message"]
    assert sc.text() == after
    status = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert status.code == 0, status.err  # in place all the same: complete
    assert [p["state"] for p in status.json["results"]] == ["provided by upstream"]
    # Written by patchkit: ALREADY_APPLIED, as status and the next apply say.
    sc, r = apply(tmp_path / "own", capsys, before, [patch], {"v.diff": payload})
    assert r.code == 0, r.err
    assert sc.text() == after
    again = sc.apply(capsys).json["results"][0]
    assert (again["status"], again["reason"]) == ("SKIP", "ALREADY_APPLIED"), again
    status = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert [p["state"] for p in status.json["results"]] == ["applied"]
    # Reverted, the record is gone: the same lines, now committed by upstream, are upstream's.
    assert run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0
    sc.file().write_text(after)
    git(sc.repo, "commit", "-qam", "upstream takes the change")
    assert sc.apply(capsys).json["results"][0]["reason"] == "UPSTREAM_PROVIDES"


def test_a_hunk_that_does_not_match_inside_the_function_is_a_conflict_naming_it(tmp_path, capsys):
    before = BASE.replace("        logits = self.draft(batch)\n", "        logits = self.draft(batch, k=2)\n")
    sc, r = apply(tmp_path, capsys, before)
    assert r.code == 1
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "CONFLICT", 11)
    assert "hunk 1 of 1 (@@ -5,6 +5,7 @@) of ../patches/v.diff does not match inside Worker.verify" in res["message"]
    assert (
        "expected '        logits = self.draft(batch)', found '        logits = self.draft(batch, k=2)'"
        in (res["message"])
    )
    assert sc.text() == before


def test_the_same_lines_elsewhere_in_the_file_do_not_count(tmp_path, capsys):
    # The hunk's lines exist, but in another method: edit-function never looks outside its function.
    before = BASE.replace("        logits = self.draft(batch)\n", "        logits = self.draft(batch, k=2)\n")
    before = before.replace(
        "    def other(self):\n        return 1\n",
        "    def other(self, batch):\n        logits = self.draft(batch)\n        accept = self.accept(logits)\n"
        "        self.count += 1\n        self.total += len(batch)\n        return accept\n",
    )
    sc, r = apply(tmp_path, capsys, before)
    assert r.json["results"][0]["reason"] == "CONFLICT"
    assert sc.text() == before


def test_a_missing_function_is_function_not_found_with_suggestions(tmp_path, capsys):
    before = BASE.replace("def verify(", "def verify_batch(")
    _sc, r = apply(tmp_path, capsys, before)
    res = r.json["results"][0]
    assert (res["status"], res["reason"]) == ("FAIL", "FUNCTION_NOT_FOUND")
    assert "verify_batch" in res["message"]


def test_two_edits_in_one_file_compose_and_keep_every_other_byte(tmp_path, capsys):
    after = EDITED.replace("        return 1\n", "        value = 1\n        return value\n")
    other = function_diff(EDITED, after, 20, 21)
    patches = [edit_patch(), edit_patch("other", "Worker.other", "o.diff")]
    sc, r = apply(tmp_path, capsys, BASE, patches, {"v.diff": VERIFY_DIFF, "o.diff": other})
    assert r.code == 0, r.err
    assert [x["status"] for x in r.json["results"]] == ["APPLY", "APPLY"]
    assert sc.text() == after


def test_a_second_edit_reads_the_lines_as_the_first_edit_left_them(tmp_path, capsys):
    """The second function's region starts at the comment above it, found in the file's lines: after the
    first edit (a line added above it), those are the edited lines, not the lines as read."""
    base = "def f():\n    a = 1\n    return a\n\n\n# the helper\ndef g():\n    b = 2\n    return b\n"
    edited = base.replace("    a = 1\n", "    a = 1\n    a += 1\n").replace("b = 2", "b = 3")
    patches = [edit_patch("f", "f", "f.diff"), edit_patch("g", "g", "g.diff")]
    payloads = {
        "f.diff": function_diff(base, base.replace("    a = 1\n", "    a = 1\n    a += 1\n"), 1, 3),
        "g.diff": function_diff(base, base.replace("b = 2", "b = 3"), 6, 9),
    }
    assert "# the helper" in payloads["g.diff"]
    sc, r = apply(tmp_path, capsys, base, patches, payloads)
    assert r.code == 0, r.out
    assert [x["status"] for x in r.json["results"]] == ["APPLY", "APPLY"]
    assert sc.text() == edited


def test_an_insert_after_an_edit_in_the_same_file_sees_the_edited_lines(tmp_path, capsys):
    patches = [
        edit_patch(),
        {
            "id": "ins",
            "op": "insert",
            "file": "pkg/mod.py",
            "function": "Worker.other",
            "anchor": "return 1",
            "position": "before",
            "source": src("i.py"),
            "body_of": "inserted",
        },
    ]
    sc, r = apply(tmp_path, capsys, BASE, patches, {"v.diff": VERIFY_DIFF, "i.py": "def inserted():\n    log()\n"})
    assert r.code == 0, r.err
    assert sc.text() == EDITED.replace("        return 1\n", "        log()\n        return 1\n")


def test_docstrings_and_crlf_keep_their_bytes(tmp_path, capsys):
    before = BASE.replace("\n", "\r\n")
    payload = function_diff(before, EDITED.replace("\n", "\r\n"), 5, 16)
    sc, r = apply(tmp_path, capsys, before, payloads={"v.diff": payload})
    assert r.code == 0, r.err
    assert sc.file().read_bytes() == EDITED.replace("\n", "\r\n").encode()


def test_revert_puts_the_function_back(tmp_path, capsys):
    sc, r = apply(tmp_path, capsys, BASE)
    assert r.code == 0
    back = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert back.code == 0, back.err
    assert sc.text() == BASE
    assert git(sc.repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ("--- a/other.py\n+++ b/other.py\n@@ -1,1 +1,2 @@\n x\n+y\n", "is a diff of 'other.py'"),
        ("--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -0,0 +1,1 @@\n+y\n", "has no line of the function to anchor it"),
        ("just text\n", "holds no hunks"),
    ],
)
def test_bad_payloads_are_one_line_manifest_errors(tmp_path, capsys, payload, says):
    _sc, r = apply(tmp_path, capsys, BASE, payloads={"v.diff": payload})
    assert r.code == 2
    assert says in r.err
    assert "patch[1].source" in r.err
    assert "Traceback" not in r.err


def test_check_range_says_upstream_took_the_change_and_then_changed_it(tmp_path, capsys):
    from helpers import Kit

    from patchkit.demo.history import HistoryBuilder

    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "upstream base", {"pkg/mod.py": BASE})
    builder.commit("other", "unrelated work", {"pkg/mod.py": BASE.replace("import os\n", "import os\nimport re\n")})
    took = EDITED.replace("import os\n", "import os\nimport re\n")
    builder.commit("took", "sync before accepting", {"pkg/mod.py": took})
    builder.commit("changed", "sync(stream) before accepting", {"pkg/mod.py": took.replace("sync()", "sync(stream)")})
    history = builder.build()
    kit = Kit(tmp_path / "kit")
    kit.write([edit_patch()], {"v.diff": VERIFY_DIFF})
    r = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main", "--json")
    assert r.code == 1
    windows = [(w["status"], w["reason"], w["count"]) for w in r.json["windows"]]
    # Upstream's own lines (a commit has no record of patchkit writing them): UPSTREAM_PROVIDES.
    assert windows == [("APPLY", None, 2), ("SKIP", "UPSTREAM_PROVIDES", 1), ("FAIL", "CONFLICT", 1)]
    [item] = r.json["upstreamed"]
    took_sha, changed_sha = history["took"], history["changed"]
    assert (item["patch"], item["taken"]["commit"], item["changed"]["commit"]) == ("verify", took_sha, changed_sha)
    assert item["removed"] is None
    assert item["message"] == (
        f"upstream took this change at {took_sha[:10]} (sync before accepting) and changed it at "
        f"{changed_sha[:10]} (sync(stream) before accepting): drop the patch, or rebase it on {changed_sha[:10]}"
    )
    text = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main")
    assert f"UPSTREAMED: upstream took this change at {took_sha[:10]}" in text.out.replace("\n", " ")


def _took_then_reverted(tmp_path, then_edit: bool):
    """base -> takes the change -> reverts it -> (edits a context line of the change)."""
    from helpers import Kit

    from patchkit.demo.history import HistoryBuilder

    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "upstream base", {"pkg/mod.py": BASE})
    builder.commit("took", "sync before accepting", {"pkg/mod.py": EDITED})
    builder.commit("reverted", 'Revert "sync before accepting"', {"pkg/mod.py": BASE})
    if then_edit:
        drafted = BASE.replace("self.draft(batch)", "self.draft(batch, k=2)")
        builder.commit("edited", "draft with k=2", {"pkg/mod.py": drafted})
    history = builder.build()
    kit = Kit(tmp_path / "kit")
    kit.write([edit_patch()], {"v.diff": VERIFY_DIFF})
    return history, kit


def test_check_range_after_upstream_reverted_the_change_and_edited_it_says_rebase_not_drop(tmp_path, capsys):
    history, kit = _took_then_reverted(tmp_path, then_edit=True)
    r = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main", "--json")
    assert r.code == 1
    windows = [(w["status"], w["reason"], w["count"]) for w in r.json["windows"]]
    taken = ("SKIP", "UPSTREAM_PROVIDES", 1)
    assert windows == [("APPLY", None, 1), taken, ("APPLY", None, 1), ("FAIL", "CONFLICT", 1)]
    [item] = r.json["upstreamed"]
    took, reverted, edited = history["took"], history["reverted"], history["edited"]
    assert (item["taken"]["commit"], item["removed"]["commit"], item["changed"]["commit"], item["reason"]) == (
        took,
        reverted,
        edited,
        "CONFLICT",
    )
    assert item["message"] == (
        f"upstream had this change from {took[:10]} (sync before accepting), until {reverted[:10]} "
        '(Revert "sync before accepting"), where it is gone and the patch applies again; from '
        f"{edited[:10]} (draft with k=2) the patch reads CONFLICT: upstream does not have the change there, "
        f"so rebase the patch on {edited[:10]} rather than drop it"
    )
    assert "took this change" not in item["message"] and "drop the patch" not in item["message"]
    text = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main")
    assert f"UPSTREAMED, THEN REMOVED: upstream had this change from {took[:10]}" in text.out.replace("\n", " ")
    assert "drop the patch," not in text.out


def test_check_range_after_upstream_reverted_the_change_says_keep_the_patch(tmp_path, capsys):
    history, kit = _took_then_reverted(tmp_path, then_edit=False)
    r = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main", "--json")
    assert r.code == 0
    [item] = r.json["upstreamed"]
    assert (item["removed"]["commit"], item["changed"], item["reason"]) == (history["reverted"], None, None)
    assert item["message"].endswith(
        "where it is gone and the patch applies again: upstream does not have the change at the range's end, "
        "so keep the patch"
    )


def test_check_range_says_nothing_while_the_change_is_still_upstream_at_the_end(tmp_path, capsys):
    from helpers import Kit

    from patchkit.demo.history import HistoryBuilder

    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "upstream base", {"pkg/mod.py": BASE})
    builder.commit("took", "sync before accepting", {"pkg/mod.py": EDITED})
    builder.commit("reverted", 'Revert "sync before accepting"', {"pkg/mod.py": BASE})
    builder.commit("again", "sync before accepting, again", {"pkg/mod.py": EDITED})
    history = builder.build()
    kit = Kit(tmp_path / "kit")
    kit.write([edit_patch()], {"v.diff": VERIFY_DIFF})
    r = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main", "--json")
    assert r.code == 0 and r.json["upstreamed"] == []


@pytest.mark.parametrize("op", ["edit-function", "replace-function"])
def test_a_cached_verdict_names_this_manifests_payload_not_anothers(tmp_path, capsys, op):
    """The same commit captured under two names: same patch id and payload bytes, another payload path.
    The second check's verdicts come from the cache, and must still name its own payload."""
    from helpers import Kit

    from patchkit.demo.history import HistoryBuilder

    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "upstream base", {"pkg/mod.py": BASE})
    builder.commit("other", "unrelated work", {"pkg/mod.py": BASE.replace("import os\n", "import os\nimport re\n")})
    history = builder.build()
    if op == "edit-function":
        payload, patch = VERIFY_DIFF, edit_patch()
    else:
        method = "".join(EDITED.splitlines(True)[4:16])
        payload = "class Worker:\n" + method
        patch = {
            "id": "verify",
            "op": "replace-function",
            "file": "pkg/mod.py",
            "function": "Worker.verify",
            "expect": ["sha256:" + "0" * 64],  # not upstream's: DRIFT, whose message names the payload
        }
    messages, hits = {}, {}
    for name in ("first", "second", "second"):
        kit = Kit(tmp_path / "kit", name=name)
        written = f"{name}/v{'.diff' if op == 'edit-function' else '.py'}"
        kit.write([patch | {"source": src(written)}], {written: payload})
        r = run_cli(capsys, "check", "-m", kit.manifest, "--repo", history.path, "--range", "main", "--json")
        messages[name] = [w["message"] for w in r.json["windows"]]
        hits[name] = r.json["stats"]["cache_hits"]
    assert hits["second"] > 0  # its second check read its verdicts from the cache
    assert all("../patches/first/v" in m for m in messages["first"]), messages
    assert all("../patches/second/v" in m and "first" not in m for m in messages["second"]), messages


def test_validate_warns_when_a_payload_docstring_would_change_value(tmp_path, capsys):
    from helpers import Kit

    method = '    def m(self):\n        """Doc.\n\n        Args:\n            x: y\n        """\n        return 1\n'
    kit = Kit(tmp_path / "kit")
    patch = {"id": "m", "op": "add-methods", "file": "pkg/mod.py", "class": "A.B", "source": src("m.py")}
    # Written one level too shallow for A.B (column 4, the target's is 8): the docstring's lines would change.
    kit.write([patch | {"payload_class": "B"}], {"m.py": "class B:\n" + method})
    r = run_cli(capsys, "validate", "-m", kit.manifest, "--json")
    assert r.code == 0
    [warning] = r.json["warnings"]
    assert (warning["patch"], warning["line"]) == ("m", 3)
    assert "the multi-line string in method m would change value on apply" in warning["message"]
    assert "column 4, the target at column 8" in warning["message"]
    text = run_cli(capsys, "validate", "-m", kit.manifest)
    assert "warning: patch m:" in text.out
    # At the target's column (inside both classes), no warning.
    nested = "class A:\n    class B:\n" + "".join(
        "    " + line if line.strip() else line for line in method.splitlines(True)
    )
    kit.write([patch | {"payload_class": "A.B"}], {"m.py": nested})
    assert run_cli(capsys, "validate", "-m", kit.manifest, "--json").json["warnings"] == []


TWO_SPACE_METHOD = '  def m(self):\n    """Doc.\n\n    Args:\n      x: y\n    """\n    return 1\n'
FOUR_SPACE_METHOD = (
    '    def m(self):\n        """Doc.\n\n        Args:\n            x: y\n        """\n        return 1\n'
)


def test_validate_reads_the_payloads_own_indentation_not_four_spaces_a_level(tmp_path, capsys):
    """A 2-space payload for a class at depth 1 writes its method at column 2: where a 2-space target
    puts it.  Without the target, validate assumes the target indents as the payload does."""
    from helpers import Kit

    kit = Kit(tmp_path / "kit")
    patch = {"id": "m", "op": "add-methods", "file": "pkg/mod.py", "class": "A", "source": src("m.py")}
    kit.write([patch], {"m.py": "class A:\n" + TWO_SPACE_METHOD})
    assert run_cli(capsys, "validate", "-m", kit.manifest, "--json").json["warnings"] == []
    # Too shallow at its own unit (column 2 for A.B, whose members stand at column 4): warned.
    kit.write([patch | {"class": "A.B", "payload_class": "A"}], {"m.py": "class A:\n" + TWO_SPACE_METHOD})
    [warning] = run_cli(capsys, "validate", "-m", kit.manifest, "--json").json["warnings"]
    assert "the payload writes method m at column 2, the target at column 4" in warning["message"]
    assert "(assuming the target indents by the payload's 2)" in warning["message"]


@pytest.mark.parametrize(("payload", "target", "warned"), [
    (FOUR_SPACE_METHOD, "class A:\n  def f(self):\n    return 0\n", True),
    (TWO_SPACE_METHOD, "class A:\n  def f(self):\n    return 0\n", False),
    (TWO_SPACE_METHOD, "class A:\n    def f(self):\n        return 0\n", True),
    (FOUR_SPACE_METHOD, "class A:\n    def f(self):\n        return 0\n", False),
], ids=["4-into-2", "2-into-2", "2-into-4", "4-into-4"])  # fmt: skip
def test_validate_with_the_target_warns_where_the_string_really_lands_elsewhere(
    tmp_path, capsys, payload, target, warned
):
    """With --repo the target file says where the method and its blocks land: a 4-space payload in a
    2-space class lands 2 columns left, its docstring's lines staying where they were."""
    patch = {"id": "m", "op": "add-methods", "file": "pkg/mod.py", "class": "A", "source": src("m.py")}
    sc = scenario(tmp_path, {"pkg/mod.py": target}, [patch], {"m.py": "class A:\n" + payload})
    warnings = run_cli(capsys, "validate", "-m", sc.kit.manifest, "--repo", sc.repo, "--json").json["warnings"]
    assert bool(warnings) is warned, warnings
    r = sc.apply(capsys)
    assert r.code == 0, r.err
    docstring = sc.text().split('"""')[1]
    code_column = next(len(line) - len(line.lstrip()) for line in sc.text().splitlines() if "return 1" in line)
    doc_column = next(len(line) - len(line.lstrip()) for line in docstring.splitlines() if "Args:" in line)
    assert (doc_column != code_column) is warned  # what the warning foretold
    if warned:
        assert (warnings[0]["patch"], warnings[0]["line"]) == ("m", 3)
        assert "(assuming" not in warnings[0]["message"]


# -- remove-definitions (kept with the other scoped ops' tests) ------------------------------------


def test_remove_definitions_removes_what_it_expects_and_refuses_what_upstream_changed(tmp_path, capsys):
    from patchkit.operations.digests import digest

    base = "import os\n\n\ndef keep():\n    return 1\n\n\n# old helper\ndef old():\n    return 2\n\n\nX = 3\n"
    expect = digest(__import__("ast").parse(base).body[2])
    patch = {"id": "rm", "op": "remove-definitions", "file": "pkg/mod.py", "names": ["old"], "expect": [expect]}
    sc, r = apply(tmp_path / "a", capsys, base, [patch], {})
    assert r.code == 0, r.out
    assert sc.text() == "import os\n\n\ndef keep():\n    return 1\n\n\nX = 3\n"
    assert sc.apply(capsys).json["results"][0]["reason"] == "ALREADY_APPLIED"
    changed = base.replace("return 2", "return 22")
    sc, r = apply(tmp_path / "b", capsys, changed, [patch], {})
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "CONFLICT", 9)
    assert "old (line 9) in the module changed upstream since its removal was written" in res["message"]
    assert sc.text() == changed


def test_edit_imports_applies_inside_the_block_wherever_upstream_grew_it(tmp_path, capsys):
    before = '"""Doc."""\n\nimport os\nimport sys\nimport re\n\nX = 1\n'
    payload = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,3 +1,2 @@\n import os\n-import sys\n import re\n"
    patch = {"id": "imp", "op": "edit-imports", "file": "pkg/mod.py", "source": src("i.diff")}
    grown = before.replace("import os\n", "import abc\nimport copy\nimport os\n")
    sc, r = apply(tmp_path / "a", capsys, grown, [patch], {"i.diff": payload})
    assert r.code == 0, r.out
    assert "inside the import block (lines 3-7), offset +2 line(s) within it" in r.json["results"][0]["message"]
    assert sc.text() == grown.replace("import sys\n", "")
    assert sc.apply(capsys).json["results"][0]["reason"] == "ALREADY_APPLIED"
    sc, r = apply(
        tmp_path / "b", capsys, before.replace("import sys", "import sys as system"), [patch], {"i.diff": payload}
    )
    res = r.json["results"][0]
    assert (res["status"], res["reason"]) == ("FAIL", "CONFLICT")
    assert "expected 'import sys', found 'import sys as system'" in res["message"]
    sc, r = apply(tmp_path / "c", capsys, "X = 1\n", [patch], {"i.diff": payload})
    assert r.json["results"][0]["reason"] == "TARGET_NOT_FOUND"


def test_edit_statement_follows_the_named_statement_and_names_what_does_not_match(tmp_path, capsys):
    payload = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,4 +1,5 @@\n EXTS = [\n     'a',\n+    'x',\n     'b',\n ]\n"
    patch = {"id": "ex", "op": "edit-statement", "file": "pkg/mod.py", "statement": "EXTS", "source": src("e.diff")}
    before = "import os\n\nY = 2\n\nEXTS = [\n    'a',\n    'b',\n]\n"
    sc, r = apply(tmp_path / "a", capsys, before, [patch], {"e.diff": payload})
    assert r.code == 0, r.out
    assert sc.text() == before.replace("    'a',\n", "    'a',\n    'x',\n")
    assert sc.apply(capsys).json["results"][0]["reason"] == "ALREADY_APPLIED"
    _sc, r = apply(tmp_path / "b", capsys, before.replace("'b'", "'c'"), [patch], {"e.diff": payload})
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "CONFLICT", 7)
    assert "inside the statement that binds EXTS (lines 5-8) at line 7: expected \"    'b',\"" in res["message"]
    _sc, r = apply(tmp_path / "c", capsys, "EXT = [1]\n", [patch], {"e.diff": payload})
    res = r.json["results"][0]
    assert res["reason"] == "TARGET_NOT_FOUND"
    assert res["message"] == (
        "pkg/mod.py has no module-level statement that binds EXTS; "
        "closest module-level names in this file: EXT (line 1)"
    )


def test_a_region_an_earlier_patch_rewrote_is_refused_naming_the_order_to_use(tmp_path, capsys):
    """edit-function and edit-statement need the file's own lines: after an earlier patch spliced code
    into the function (an insert) or the statement (a list item), each says to put itself first."""
    insert = {
        "id": "ins", "op": "insert", "file": "pkg/mod.py", "function": "Worker.verify",
        "anchor": "return accept", "position": "before", "source": src("i.py"), "body_of": "inserted",
    }  # fmt: skip
    _sc, r = apply(tmp_path / "a", capsys, BASE, [insert, edit_patch()], {"v.diff": VERIFY_DIFF, "i.py": INSERTED})
    res = result_of(r.json, "verify")
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "UNSUPPORTED_TARGET", 5)
    assert res["message"] == (
        "Worker.verify (line 5) was rewritten by an earlier patch of this manifest; "
        "edit-function needs the function's own lines: put this patch before that one"
    )
    item = {"id": "item", "op": "ensure-list-item", "file": "pkg/mod.py", "target": "EXTS", "item": "'z'"}
    payload = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,3 +1,4 @@\n EXTS = [\n     'a',\n+    'x',\n     'b',\n"
    patch = {"id": "ex", "op": "edit-statement", "file": "pkg/mod.py", "statement": "EXTS", "source": src("e.diff")}
    before = "import os\n\nEXTS = [\n    'a',\n    'b',\n]\n"
    _sc, r = apply(tmp_path / "b", capsys, before, [item, patch], {"e.diff": payload})
    res = result_of(r.json, "ex")
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "UNSUPPORTED_TARGET", 3)
    assert res["message"] == (
        "the statement that binds EXTS (line 3) was rewritten by an earlier patch of this manifest; "
        "edit-statement needs its own lines: put this patch before that one"
    )


INSERTED = "def inserted():\n    log()\n"
