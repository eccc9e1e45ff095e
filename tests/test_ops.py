"""Every operation's APPLY / SKIP / FAIL paths, as before/after source text (docs/manifest.md).

Most tests are ``op_cases.assert_op``: one patch table, the text before, the
text after, and the status, reason and line of its verdict, evaluated and
rendered in memory by the engine.  About ten stay end to end: a real git
repository holding ``pkg/mod.py``, a manifest and payload files on disk,
``patchkit apply --json`` (and ``patchkit digest``) in-process, the exit code
and the exact bytes of the file afterwards: hints that read the tree, several
patches on one file, and manifests the loader refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import TARGET, Scenario, d, result_of, run_cli, scenario, src, verdicts
from op_cases import assert_op, digest, run_op


def one(
    tmp_path: Path, before: str, patch: dict, payloads: dict[str, str] | None = None, extra_files: dict | None = None
) -> Scenario:
    patch = {"id": "p", "file": TARGET, **patch}
    return scenario(tmp_path, {TARGET: before, **(extra_files or {})}, [patch], payloads)


def assert_result(res: dict, status: str, reason: str | None, line: int | None) -> None:
    assert (res["status"], res["reason"], res["line"]) == (status, reason, line), res


def run_and_check(
    capsys, sc: Scenario, status: str, reason: str | None, line: int | None, after: str, *, code: int | None = None
) -> dict:
    """Apply, check the single result and the file's text; return the result."""
    before = sc.text()
    r = sc.apply(capsys)
    expected_code = code if code is not None else (1 if status == "FAIL" else 0)
    assert r.code == expected_code, (r.out, r.err)
    res = r.json["results"][0]
    assert_result(res, status, reason, line)
    assert sc.text() == after
    if status != "APPLY":
        assert sc.text() == before
    return res


def reapply_is_skip(capsys, sc: Scenario) -> None:
    again = sc.apply(capsys)
    assert again.code == 0
    assert [(r["status"], r["reason"]) for r in again.json["results"]] == [("SKIP", "ALREADY_APPLIED")] * len(
        again.json["results"]
    )
    assert again.json["written"] == []


# -- ensure-import -----------------------------------------------------------------------------

IMPORT_BEFORE = d('''
    """Module doc."""
    from __future__ import annotations

    import os

    def f():
        return os.sep
''')


def test_ensure_import_apply_adds_one_line_after_import_block():
    after = d('''
        """Module doc."""
        from __future__ import annotations

        import os
        from typing import List, Optional

        def f():
            return os.sep
    ''')
    assert_op(
        {"op": "ensure-import", "import": "from typing import List, Optional"},
        IMPORT_BEFORE,
        after,
        "APPLY",
        None,
        5,
        reapply=True,
    )


def test_ensure_import_adds_only_missing_names_and_never_rewrites_existing_line():
    before = d("""
        from typing import (
            List,
        )

        X = 1
    """)
    after = d("""
        from typing import (
            List,
        )
        from typing import Optional

        X = 1
    """)
    res = assert_op(
        {"op": "ensure-import", "import": "from typing import List, Optional"}, before, after, "APPLY", None, 4
    )
    assert "from typing import Optional" in res["message"]


def test_ensure_import_into_module_without_imports_goes_first():
    assert_op({"op": "ensure-import", "import": "import json"}, "X = 1\n", "import json\nX = 1\n", "APPLY", None, 1)


def test_ensure_import_skip_when_present():
    before = "import os\nfrom typing import List, Optional\n\nX = 1\n"
    assert_op(
        {"op": "ensure-import", "import": "from typing import Optional"}, before, before, "SKIP", "ALREADY_APPLIED", 2
    )


def test_ensure_import_skip_when_present_inside_top_level_try():
    before = d("""
        try:
            import numpy as np
        except ImportError:
            np = None
    """)
    assert_op({"op": "ensure-import", "import": "import numpy as np"}, before, before, "SKIP", "ALREADY_APPLIED", 2)


@pytest.mark.parametrize(
    ("before", "line"),
    [
        ("import os\n\n\ndef Optional():\n    return 1\n", 4),
        ("import os\n\nOptional = 3\n", 3),
        ("from mylib import Optional\n", 1),
    ],
    ids=["def", "assignment", "other-module"],
)
def test_ensure_import_conflict_when_name_bound_otherwise(before, line):
    res = assert_op(
        {"op": "ensure-import", "import": "from typing import Optional"}, before, before, "FAIL", "CONFLICT", line
    )
    assert "Optional" in res["message"]


# -- add-methods ---------------------------------------------------------------------------------

CLASS_BEFORE = d("""
    import os


    class Model:
        def forward(self, x):
            return x


    def helper():
        return os.sep
""")

METHODS_PAYLOAD = d("""
    class Model:
        def get_embed(self):
            return self.embed

        def set_embed(self, embed):
            self.embed = embed
""")


def test_add_methods_apply_appends_at_end_of_class():
    after = d("""
        import os


        class Model:
            def forward(self, x):
                return x

            def get_embed(self):
                return self.embed

            def set_embed(self, embed):
                self.embed = embed


        def helper():
            return os.sep
    """)
    assert_op(
        {"op": "add-methods", "class": "Model", "source": src("m.py")},
        CLASS_BEFORE,
        after,
        "APPLY",
        None,
        4,
        payloads={"m.py": METHODS_PAYLOAD},
        reapply=True,
    )


def test_add_methods_subset_and_payload_class():
    payload = d("""
        class Donor:
            def get_embed(self):
                return self.embed

            def unrelated(self):
                return 0
    """)
    table = {
        "op": "add-methods",
        "class": "Model",
        "source": src("m.py"),
        "payload_class": "Donor",
        "methods": ["get_embed"],
    }
    results, text = run_op(table, CLASS_BEFORE, payloads={"m.py": payload})
    assert_result(results[0], "APPLY", None, 4)
    assert "def get_embed(self):\n        return self.embed\n" in text
    assert "unrelated" not in text


def test_add_methods_skip_when_same_code_present():
    before = d("""
        class Model:
            def get_embed(self):
                # upstream comment and spacing differ
                return   self.embed

            def set_embed(self, embed):
                self.embed = embed
    """)
    assert_op(
        {"op": "add-methods", "class": "Model", "source": src("m.py")},
        before,
        before,
        "SKIP",
        "ALREADY_APPLIED",
        2,
        payloads={"m.py": METHODS_PAYLOAD},
    )


CONFLICT_BEFORE = d("""
    class Model:
        def get_embed(self):
            return self.other_embed

        def tail(self):
            return 1
""")


def test_add_methods_on_conflict_fail():
    res = assert_op(
        {"op": "add-methods", "class": "Model", "source": src("m.py")},
        CONFLICT_BEFORE,
        CONFLICT_BEFORE,
        "FAIL",
        "CONFLICT",
        2,
        payloads={"m.py": METHODS_PAYLOAD},
    )
    assert "get_embed" in res["message"]


def test_add_methods_on_conflict_keep_upstream_adds_the_rest():
    after = d("""
        class Model:
            def get_embed(self):
                return self.other_embed

            def tail(self):
                return 1

            def set_embed(self, embed):
                self.embed = embed
    """)
    assert_op(
        {"op": "add-methods", "class": "Model", "source": src("m.py"), "on_conflict": "keep-upstream"},
        CONFLICT_BEFORE,
        after,
        "APPLY",
        None,
        1,
        payloads={"m.py": METHODS_PAYLOAD},
    )


def test_add_methods_keep_upstream_with_nothing_left_is_upstream_provides():
    assert_op(
        {
            "op": "add-methods",
            "class": "Model",
            "source": src("m.py"),
            "methods": ["get_embed"],
            "on_conflict": "keep-upstream",
        },
        CONFLICT_BEFORE,
        CONFLICT_BEFORE,
        "SKIP",
        "UPSTREAM_PROVIDES",
        2,
        payloads={"m.py": METHODS_PAYLOAD},
    )


def test_add_methods_on_conflict_replace_puts_payload_in_place():
    after = d("""
        class Model:
            def get_embed(self):
                return self.embed

            def tail(self):
                return 1
    """)
    assert_op(
        {
            "op": "add-methods",
            "class": "Model",
            "source": src("m.py"),
            "methods": ["get_embed"],
            "on_conflict": "replace",
        },
        CONFLICT_BEFORE,
        after,
        "APPLY",
        None,
        2,
        payloads={"m.py": METHODS_PAYLOAD},
        reapply=True,
    )  # the line of the replaced method


def test_add_methods_nested_class():
    before = d("""
        class Outer:
            class Inner:
                def a(self):
                    return 1

            def outer_method(self):
                return 2
    """)
    payload = d("""
        class Outer:
            class Inner:
                def b(self):
                    return 3
    """)
    after = d("""
        class Outer:
            class Inner:
                def a(self):
                    return 1

                def b(self):
                    return 3

            def outer_method(self):
                return 2
    """)
    assert_op(
        {"op": "add-methods", "class": "Outer.Inner", "source": src("m.py")},
        before,
        after,
        "APPLY",
        None,
        2,
        payloads={"m.py": payload},
        reapply=True,
    )


def test_add_methods_one_line_class_body():
    before = "class A: pass\n\n\nX = 1\n"
    payload = "class A:\n    def g(self):\n        return 2\n"
    after = "class A:\n    pass\n\n    def g(self):\n        return 2\n\n\nX = 1\n"
    assert_op(
        {"op": "add-methods", "class": "A", "source": src("m.py")},
        before,
        after,
        "APPLY",
        None,
        1,
        payloads={"m.py": payload},
        reapply=True,
    )


def test_add_methods_class_not_found_lists_closest_and_hints_other_file(tmp_path, capsys):
    before = "class ModelV2:\n    pass\n\n\nclass Unrelated:\n    pass\n"
    other = "import os\n\n\nclass Model:\n    pass\n"
    sc = one(
        tmp_path,
        before,
        {"op": "add-methods", "class": "Model", "source": src("m.py")},
        {"m.py": METHODS_PAYLOAD},
        extra_files={"pkg/other.py": other},
    )
    res = run_and_check(capsys, sc, "FAIL", "CLASS_NOT_FOUND", None, before)
    assert "ModelV2 (line 1)" in res["message"]
    assert "Unrelated" not in res["message"]
    assert res["hint"] is not None and "pkg/other.py:4" in res["hint"]


# -- replace-function ------------------------------------------------------------------------------

RF_BEFORE = d('''
    class Worker:
        def verify(self, batch):
            """Check a batch."""
            out = self.forward(batch)
            return out

        def other(self):
            return 0
''')

RF_PAYLOAD = d('''
    class Worker:
        def verify(self, batch):
            """Check a batch."""
            self.timer.start()
            out = self.forward(batch)
            self.timer.stop()
            return out
''')

RF_AFTER = d('''
    class Worker:
        def verify(self, batch):
            """Check a batch."""
            self.timer.start()
            out = self.forward(batch)
            self.timer.stop()
            return out

        def other(self):
            return 0
''')


def digest_of(capsys, path: Path, qualname: str) -> str:
    r = run_cli(capsys, "digest", path, qualname, "--json")
    assert r.code == 0, r.err
    value = r.json["digest"]
    assert value.startswith("sha256:") and len(value) == len("sha256:") + 64
    return value


def test_replace_function_apply_when_expect_matches(tmp_path, capsys):
    sc = one(
        tmp_path,
        RF_BEFORE,
        {"op": "replace-function", "function": "Worker.verify", "source": src("v.py"), "expect": "sha256:" + "0" * 64},
        {"v.py": RF_PAYLOAD},
    )
    expect = digest_of(capsys, sc.file(), "Worker.verify")
    sc.kit.write(
        [
            {
                "id": "p",
                "file": TARGET,
                "op": "replace-function",
                "function": "Worker.verify",
                "source": src("v.py"),
                "expect": [expect],
            }
        ]
    )
    run_and_check(capsys, sc, "APPLY", None, 2, RF_AFTER)
    reapply_is_skip(capsys, sc)


def test_replace_function_skip_when_already_replaced():
    assert_op(
        {"op": "replace-function", "function": "Worker.verify", "source": src("v.py"), "expect": "sha256:" + "1" * 64},
        RF_AFTER,
        RF_AFTER,
        "SKIP",
        "ALREADY_APPLIED",
        2,
        payloads={"v.py": RF_PAYLOAD},
    )


def test_replace_function_drift_gives_both_digests():
    # The replacement was written against RF_BEFORE; upstream has since changed the body.
    expect = digest(RF_BEFORE, "Worker.verify")
    changed = RF_BEFORE.replace("return out", "return out or None")
    table = {"op": "replace-function", "function": "Worker.verify", "source": src("v.py"), "expect": expect}
    found = digest(changed, "Worker.verify")
    assert found != expect
    res = assert_op(table, changed, changed, "FAIL", "DRIFT", 2, payloads={"v.py": RF_PAYLOAD})
    assert expect[: len("sha256:") + 12] in res["message"]
    assert found in res["message"]


def test_replace_function_reformatted_upstream_is_not_drift():
    expect = digest(RF_BEFORE, "Worker.verify")
    reformatted = RF_BEFORE.replace("out = self.forward(batch)", "out = self.forward(  # comment\n            batch)")
    table = {"op": "replace-function", "function": "Worker.verify", "source": src("v.py"), "expect": expect}
    assert digest(reformatted, "Worker.verify") == expect
    assert_op(table, reformatted, RF_AFTER, "APPLY", None, 2, payloads={"v.py": RF_PAYLOAD})


def test_replace_function_docstring_change_is_drift():
    expect = digest(RF_BEFORE, "Worker.verify")
    changed = RF_BEFORE.replace('"""Check a batch."""', '"""Check a batch (v2)."""')
    table = {"op": "replace-function", "function": "Worker.verify", "source": src("v.py"), "expect": expect}
    assert_op(table, changed, changed, "FAIL", "DRIFT", 2, payloads={"v.py": RF_PAYLOAD})


def test_replace_function_module_level_from_module_level_payload(tmp_path, capsys):
    before = "def f(a):\n    return a\n\n\ndef g():\n    return 0\n"
    sc = one(tmp_path, before, {"op": "ensure-import", "import": "import os"})
    expect = digest_of(capsys, sc.file(), "f")
    sc.kit.write(
        [
            {
                "id": "p",
                "file": TARGET,
                "op": "replace-function",
                "function": "f",
                "source": src("f.py"),
                "expect": expect,
            }
        ],
        {"f.py": "def f(a):\n    return a * 2\n"},
    )
    run_and_check(capsys, sc, "APPLY", None, 1, "def f(a):\n    return a * 2\n\n\ndef g():\n    return 0\n")


def test_replace_function_missing_method_is_function_not_found():
    before = RF_BEFORE.replace("def verify(", "def verify_batch(")
    res = assert_op(
        {"op": "replace-function", "function": "Worker.verify", "source": src("v.py"), "expect": "sha256:" + "2" * 64},
        before,
        before,
        "FAIL",
        "FUNCTION_NOT_FOUND",
        1,
        payloads={"v.py": RF_PAYLOAD},
    )
    assert "verify_batch (line 2)" in res["message"]


# -- insert ------------------------------------------------------------------------------------------

INSERT_BEFORE = d("""
    class Worker:
        def verify(self, batch):
            prepared = self.prepare(batch)
            result = self.target.forward(prepared, is_verify=True)
            return result
""")

INSERT_PAYLOAD = d('''
    def before_forward(self):
        """Docstring: not inserted."""
        self.timer.start()
        self.count += 1


    def after_forward(self):
        self.timer.stop()
''')


def insert_patch(anchor: str, position: str, body_of: str = "before_forward", function: str = "Worker.verify") -> dict:
    return {
        "op": "insert",
        "function": function,
        "anchor": anchor,
        "position": position,
        "source": src("ins.py"),
        "body_of": body_of,
    }


def test_insert_before():
    after = d("""
        class Worker:
            def verify(self, batch):
                prepared = self.prepare(batch)
                self.timer.start()
                self.count += 1
                result = self.target.forward(prepared, is_verify=True)
                return result
    """)
    assert_op(
        insert_patch("result = self.target.forward(prepared, is_verify=True)", "before"),
        INSERT_BEFORE,
        after,
        "APPLY",
        None,
        4,
        payloads={"ins.py": INSERT_PAYLOAD},
        reapply=True,
    )


def test_insert_after():
    after = d("""
        class Worker:
            def verify(self, batch):
                prepared = self.prepare(batch)
                result = self.target.forward(prepared, is_verify=True)
                self.timer.stop()
                return result
    """)
    assert_op(
        insert_patch("result = self.target.forward(prepared, is_verify=True)", "after", "after_forward"),
        INSERT_BEFORE,
        after,
        "APPLY",
        None,
        4,
        payloads={"ins.py": INSERT_PAYLOAD},
        reapply=True,
    )


def test_insert_anchor_reformatted_across_lines_still_matches():
    before = d("""
        class Worker:
            def verify(self, batch):
                prepared = self.prepare(batch)
                result = self.target.forward(
                    prepared,  # the batch
                    is_verify=True,
                )
                return result
    """)
    after = before.replace("        )\n", "        )\n        self.timer.stop()\n")
    assert_op(
        insert_patch("result = self.target.forward(prepared, is_verify=True)", "after", "after_forward"),
        before,
        after,
        "APPLY",
        None,
        4,
        payloads={"ins.py": INSERT_PAYLOAD},
    )


def test_insert_anchor_nested_in_with_and_if():
    before = d("""
        class Worker:
            def verify(self, batch):
                with self.lock:
                    if batch:
                        result = self.target.forward(batch)
                return result
    """)
    after = d("""
        class Worker:
            def verify(self, batch):
                with self.lock:
                    if batch:
                        self.timer.start()
                        self.count += 1
                        result = self.target.forward(batch)
                return result
    """)
    assert_op(
        insert_patch("result = self.target.forward(batch)", "before"),
        before,
        after,
        "APPLY",
        None,
        5,
        payloads={"ins.py": INSERT_PAYLOAD},
        reapply=True,
    )


def test_insert_anchor_in_nested_function_is_not_a_target():
    before = d("""
        def verify(batch):
            def inner():
                result = forward(batch)
                return result
            return inner()
    """)
    assert_op(
        insert_patch("result = forward(batch)", "before", function="verify"),
        before,
        before,
        "FAIL",
        "ANCHOR_NOT_FOUND",
        1,
        payloads={"ins.py": INSERT_PAYLOAD},
    )


def test_insert_anchor_not_found_shows_closest_statement():
    res = assert_op(
        insert_patch("result = self.target.forward(prepared, is_verify=False)", "before"),
        INSERT_BEFORE,
        INSERT_BEFORE,
        "FAIL",
        "ANCHOR_NOT_FOUND",
        2,
        payloads={"ins.py": INSERT_PAYLOAD},
    )
    assert "line 4:" in res["message"]
    assert "self.target.forward(prepared, is_verify=True)" in res["message"]


def test_insert_anchor_ambiguous_lists_every_line():
    before = d("""
        def verify(batch):
            x = step(batch)
            if batch:
                x = step(batch)
            x = step(batch)
            return x
    """)
    res = assert_op(
        insert_patch("x = step(batch)", "after", "after_forward", function="verify"),
        before,
        before,
        "FAIL",
        "ANCHOR_AMBIGUOUS",
        2,
        payloads={"ins.py": INSERT_PAYLOAD},
    )
    assert "2, 4, 5" in res["message"]


@pytest.mark.parametrize(
    ("before", "line"),
    [
        ("def verify(batch):\n    prepared = 1; result = forward(batch)\n    return result\n", 2),
        ("def verify(batch):\n    if batch: result = forward(batch)\n    return result\n", 2),
    ],
    ids=["semicolon", "one-line-if"],
)
def test_insert_anchor_sharing_its_line_is_unsupported_target(before, line):
    assert_op(
        insert_patch("result = forward(batch)", "before", function="verify"),
        before,
        before,
        "FAIL",
        "UNSUPPORTED_TARGET",
        line,
        payloads={"ins.py": INSERT_PAYLOAD},
    )


def test_insert_function_missing():
    res = assert_op(
        insert_patch("x = 1", "before", function="Worker.verifyy"),
        INSERT_BEFORE,
        INSERT_BEFORE,
        "FAIL",
        "FUNCTION_NOT_FOUND",
        1,
        payloads={"ins.py": INSERT_PAYLOAD},
    )
    assert "verify (line 2)" in res["message"]


# -- add-definitions ------------------------------------------------------------------------------------

DEFS_BEFORE = d('''
    """Doc."""
    import os


    class Model:
        pass


    EntryClass = Model
''')

DEFS_PAYLOAD = d("""
    import sys


    def helper():
        return sys.platform


    LIMIT = 4
""")


def test_add_definitions_at_end():
    after = DEFS_BEFORE + "\n\ndef helper():\n    return sys.platform\n\n\nLIMIT = 4\n"
    assert_op(
        {"op": "add-definitions", "source": src("defs.py")},
        DEFS_BEFORE,
        after,
        "APPLY",
        None,
        10,
        payloads={"defs.py": DEFS_PAYLOAD},
        reapply=True,
    )


def test_add_definitions_after_imports():
    after = d('''
        """Doc."""
        import os


        LIMIT = 4


        class Model:
            pass


        EntryClass = Model
    ''')
    assert_op(
        {"op": "add-definitions", "source": src("defs.py"), "names": ["LIMIT"], "position": "after-imports"},
        DEFS_BEFORE,
        after,
        "APPLY",
        None,
        5,
        payloads={"defs.py": DEFS_PAYLOAD},
        reapply=True,
    )


def test_add_definitions_before_name():
    after = d('''
        """Doc."""
        import os


        class Model:
            pass


        def helper():
            return sys.platform


        EntryClass = Model
    ''')
    assert_op(
        {"op": "add-definitions", "source": src("defs.py"), "names": ["helper"], "before": "EntryClass"},
        DEFS_BEFORE,
        after,
        "APPLY",
        None,
        9,
        payloads={"defs.py": DEFS_PAYLOAD},
        reapply=True,
    )


def test_add_definitions_before_missing_name_is_target_not_found():
    res = assert_op(
        {"op": "add-definitions", "source": src("defs.py"), "names": ["helper"], "before": "EntryClasses"},
        DEFS_BEFORE,
        DEFS_BEFORE,
        "FAIL",
        "TARGET_NOT_FOUND",
        None,
        payloads={"defs.py": DEFS_PAYLOAD},
    )
    assert "EntryClass (line 9)" in res["message"]


def test_add_definitions_conflict():
    before = DEFS_BEFORE + "\n\nLIMIT = 8\n"
    res = assert_op(
        {"op": "add-definitions", "source": src("defs.py"), "names": ["LIMIT"]},
        before,
        before,
        "FAIL",
        "CONFLICT",
        12,
        payloads={"defs.py": DEFS_PAYLOAD},
    )
    assert "LIMIT" in res["message"]


def test_add_definitions_keep_upstream_and_replace(tmp_path, capsys):
    before = DEFS_BEFORE + "\n\nLIMIT = 8\n"
    sc = one(
        tmp_path,
        before,
        {"op": "add-definitions", "source": src("defs.py"), "names": ["LIMIT"], "on_conflict": "keep-upstream"},
        {"defs.py": DEFS_PAYLOAD},
    )
    run_and_check(capsys, sc, "SKIP", "UPSTREAM_PROVIDES", 12, before)
    sc.kit.write(
        [
            {
                "id": "p",
                "file": TARGET,
                "op": "add-definitions",
                "source": src("defs.py"),
                "names": ["LIMIT"],
                "on_conflict": "replace",
            }
        ]
    )
    run_and_check(capsys, sc, "APPLY", None, 12, DEFS_BEFORE + "\n\nLIMIT = 4\n")


def test_add_definitions_skip_when_identical():
    before = DEFS_BEFORE + "\n\ndef helper():\n    return sys.platform  # same code\n"
    assert_op(
        {"op": "add-definitions", "source": src("defs.py"), "names": ["helper"]},
        before,
        before,
        "SKIP",
        "ALREADY_APPLIED",
        12,
        payloads={"defs.py": DEFS_PAYLOAD},
    )


# -- ensure-list-item ----------------------------------------------------------------------------------------


def list_patch(item: str = "KimiK25", target: str = "EntryClass") -> dict:
    return {"op": "ensure-list-item", "target": target, "item": item}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("EntryClass = [Foo, Bar]\n", "EntryClass = [Foo, Bar, KimiK25]\n"),
        ("EntryClass = [\n    Foo,\n    Bar,\n]\n", "EntryClass = [\n    Foo,\n    Bar,\n    KimiK25,\n]\n"),
        ("EntryClass = [\n    Foo,\n]\n", "EntryClass = [\n    Foo,\n    KimiK25,\n]\n"),
        ("EntryClass = (Foo, Bar)\n", "EntryClass = (Foo, Bar, KimiK25)\n"),
        ("EntryClass = Foo\n", "EntryClass = [Foo, KimiK25]\n"),
    ],
    ids=["one-line-list", "multi-line-trailing-comma", "one-item-multi-line", "tuple", "single-name"],
)
def test_ensure_list_item_apply(before, after):
    prefix = "class Foo: ...\nclass Bar: ...\nclass KimiK25: ...\n\n\n"
    assert_op(list_patch(), prefix + before, prefix + after, "APPLY", None, 6, reapply=True)


def test_ensure_list_item_already_present():
    before = "EntryClass = [\n    Foo,\n    KimiK25,  # ours\n]\n"
    assert_op(list_patch(), before, before, "SKIP", "ALREADY_APPLIED", 1)


def test_ensure_list_item_target_not_found():
    before = "EntryClasses = [Foo]\n"
    res = assert_op(list_patch(), before, before, "FAIL", "TARGET_NOT_FOUND", None)
    assert "EntryClasses (line 1)" in res["message"]


def test_ensure_list_item_call_is_unsupported_target():
    before = "EntryClass = make_list(Foo)\n"
    assert_op(list_patch(), before, before, "FAIL", "UNSUPPORTED_TARGET", 1)


# -- composition on one file ----------------------------------------------------------------------------------


def test_patches_on_one_file_compose_in_manifest_order(tmp_path, capsys):
    """Each patch sees the file as the patches before it leave it: the insert
    anchors on code of upstream's, next to a method an earlier patch added."""
    before = d("""
        class Model:
            def forward(self, x):
                y = self.layer(x)
                return y


        EntryClass = [Model]
    """)
    methods = d("""
        class Model:
            def capture(self, layers):
                self.layers = layers
                return self.layers
    """)
    ins = d("""
        def log_layers(self):
            print(self.layers)
    """)
    patches = [
        {"id": "imports", "op": "ensure-import", "file": TARGET, "import": "import logging"},
        {"id": "methods", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")},
        {
            "id": "log",
            "op": "insert",
            "file": TARGET,
            "function": "Model.forward",
            "anchor": "y = self.layer(x)",
            "position": "after",
            "source": src("ins.py"),
            "body_of": "log_layers",
            "requires": ["methods"],
        },
        {"id": "register", "op": "ensure-list-item", "file": TARGET, "target": "EntryClass", "item": "Extra"},
    ]
    sc = scenario(tmp_path, {TARGET: before}, patches, {"m.py": methods, "ins.py": ins})
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    assert verdicts(r.json) == [
        ("imports", "APPLY", None),
        ("methods", "APPLY", None),
        ("log", "APPLY", None),
        ("register", "APPLY", None),
    ]
    assert result_of(r.json, "register")["line"] == 7
    assert sc.text() == d("""
        import logging
        class Model:
            def forward(self, x):
                y = self.layer(x)
                print(self.layers)
                return y

            def capture(self, layers):
                self.layers = layers
                return self.layers


        EntryClass = [Model, Extra]
    """)
    assert r.json["written"] == [TARGET]
    reapply_is_skip(capsys, sc)


@pytest.mark.parametrize(
    "patches, payloads, clash",
    [
        (  # an insert into a method an earlier patch adds
            [
                {"id": "methods", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")},
                {
                    "id": "log",
                    "op": "insert",
                    "file": TARGET,
                    "function": "Model.capture",
                    "anchor": "self.layers = layers",
                    "position": "after",
                    "source": src("i.py"),
                    "body_of": "g",
                },
            ],
            {
                "m.py": "class Model:\n    def capture(self, layers):\n        self.layers = layers\n",
                "i.py": "def g():\n    print(1)\n",
            },
            "edits Model.capture, which patch[1] ('methods') adds",
        ),
        (  # an insert into a function an earlier patch replaces
            [
                {
                    "id": "replace",
                    "op": "replace-function",
                    "file": TARGET,
                    "function": "f",
                    "source": src("r.py"),
                    "expect": "sha256:" + "0" * 64,
                },
                {
                    "id": "log",
                    "op": "insert",
                    "file": TARGET,
                    "function": "f",
                    "anchor": "b = 2",
                    "position": "after",
                    "source": src("i.py"),
                    "body_of": "g",
                },
            ],
            {"r.py": "def f():\n    b = 2\n", "i.py": "def g():\n    print(b)\n"},
            "edits f, which patch[1] ('replace') adds",
        ),
        (  # a list item on a list an earlier patch adds
            [
                {"id": "defs", "op": "add-definitions", "file": TARGET, "source": src("d.py")},
                {"id": "reg", "op": "ensure-list-item", "file": TARGET, "target": "Registry", "item": "Extra"},
            ],
            {"d.py": "Registry = [Base]\n"},
            "edits Registry, which patch[1] ('defs') adds",
        ),
        (  # two inserts at the same place
            [
                {
                    "id": "one",
                    "op": "insert",
                    "file": TARGET,
                    "function": "f",
                    "anchor": "a = 1",
                    "position": "after",
                    "source": src("i.py"),
                    "body_of": "g",
                },
                {
                    "id": "two",
                    "op": "insert",
                    "file": TARGET,
                    "function": "f",
                    "anchor": "a  =  1",
                    "position": "after",
                    "source": src("i.py"),
                    "body_of": "h",
                },
            ],
            {"i.py": "def g():\n    print(1)\n\n\ndef h():\n    print(2)\n"},
            "inserts at the same anchor and position as patch[1] ('one')",
        ),
    ],
)
def test_a_patch_cannot_edit_code_an_earlier_patch_supplies(tmp_path, capsys, patches, payloads, clash):
    """On the next run the earlier patch would see "its" code changed and
    report a conflict, so such manifests are refused when they load."""
    before = "def f():\n    a = 1\n    return a\n\n\nclass Model:\n    pass\n"
    sc = scenario(tmp_path, {TARGET: before}, patches, payloads)
    r = sc.apply(capsys)
    assert r.code == 2
    assert "patch[2]" in r.err and clash in r.err and r.err.count("\n") == 1
    assert sc.text() == before


def test_insert_into_method_not_yet_added_fails_when_order_is_reversed(tmp_path, capsys):
    before = "class Model:\n    def forward(self, x):\n        return x\n"
    methods = "class Model:\n    def capture(self, layers):\n        self.layers = layers\n"
    ins = "def log_layers(self):\n    print(self.layers)\n"
    patches = [
        {
            "id": "log",
            "op": "insert",
            "file": TARGET,
            "function": "Model.capture",
            "anchor": "self.layers = layers",
            "position": "after",
            "source": src("ins.py"),
            "body_of": "log_layers",
        },
        {"id": "methods", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")},
    ]
    sc = scenario(tmp_path, {TARGET: before}, patches, {"m.py": methods, "ins.py": ins})
    r = sc.apply(capsys)
    assert r.code == 1
    assert verdicts(r.json) == [("log", "FAIL", "FUNCTION_NOT_FOUND"), ("methods", "APPLY", None)]
    assert sc.text() == before


def test_ensure_list_item_keeps_comment_on_its_item():
    before = "EntryClass = [\n    Foo,\n    Bar,  # bar is special\n]\n"
    after = "EntryClass = [\n    Foo,\n    Bar,  # bar is special\n    KimiK25,\n]\n"
    assert_op(list_patch(), before, after, "APPLY", None, 1)


def test_add_definitions_keep_upstream_adds_the_rest():
    before = "LIMIT = 8\n"
    assert_op(
        {"op": "add-definitions", "source": src("defs.py"), "on_conflict": "keep-upstream"},
        before,
        before + "\n\ndef helper():\n    return sys.platform\n",
        "APPLY",
        None,
        2,
        payloads={"defs.py": DEFS_PAYLOAD},
    )


# -- move-import ----------------------------------------------------------------------------------------------


def move_patch(**extra: str) -> dict:
    return {
        "op": "move-import",
        "name": "DeepEPMode",
        "from": "sglang.srt.utils",
        "to": "sglang.srt.layers.moe.utils",
    } | extra


def test_move_import_alone_rewrites_the_module_in_place():
    before = d("""
        import torch
        from sglang.srt.utils import DeepEPMode  # deepep
        from sglang.srt.layers import Linear

        X = DeepEPMode.auto
    """)
    after = before.replace(
        "from sglang.srt.utils import DeepEPMode", "from sglang.srt.layers.moe.utils import DeepEPMode"
    )
    assert_op(move_patch(), before, after, "APPLY", None, 2, reapply=True)


def test_move_import_keeps_alias_and_parentheses():
    before = "from sglang.srt.utils import (\n    DeepEPMode as Mode,\n)\n\nX = Mode\n"
    after = "from sglang.srt.layers.moe.utils import (\n    DeepEPMode as Mode,\n)\n\nX = Mode\n"
    assert_op(move_patch(), before, after, "APPLY", None, 1, reapply=True)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "from sglang.srt.utils import DeepEPMode, is_cuda\n",
            "from sglang.srt.utils import is_cuda\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n",
        ),
        (
            "from sglang.srt.utils import is_cuda, DeepEPMode as M\n",
            "from sglang.srt.utils import is_cuda\nfrom sglang.srt.layers.moe.utils import DeepEPMode as M\n",
        ),
        (
            "from sglang.srt.utils import (\n    is_cuda,\n    DeepEPMode,\n    get_bool_env_var,\n)\nX = 1\n",
            "from sglang.srt.utils import (\n    is_cuda,\n    get_bool_env_var,\n)\n"
            "from sglang.srt.layers.moe.utils import DeepEPMode\nX = 1\n",
        ),
        (
            "from sglang.srt.utils import (\n    is_cuda,\n    DeepEPMode,\n)\n",
            "from sglang.srt.utils import (\n    is_cuda,\n)\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n",
        ),
    ],
    ids=["first-of-two", "last-with-alias", "middle-of-block", "last-of-block"],
)
def test_move_import_keeps_the_other_names_and_their_layout(before, after):
    assert_op(move_patch(), before, after, "APPLY", None, 1, reapply=True)


@pytest.mark.parametrize(
    ("extra", "after"),
    [
        (
            {"position": "before"},
            "import os\n\n# sglang\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n"
            "from sglang.srt.utils import get_bool_env_var\nimport torch\n",
        ),
        (
            {"after": "import torch"},
            "import os\n\n# sglang\nfrom sglang.srt.utils import get_bool_env_var\nimport torch\n"
            "from sglang.srt.layers.moe.utils import DeepEPMode\n",
        ),
        # new_group: a blank line between the new line and the old import, on the side it is placed.
        (
            {"position": "before", "new_group": True},
            "import os\n\n# sglang\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n\n"
            "from sglang.srt.utils import get_bool_env_var\nimport torch\n",
        ),
        (
            {"new_group": True},
            "import os\n\n# sglang\nfrom sglang.srt.utils import get_bool_env_var\n\n"
            "from sglang.srt.layers.moe.utils import DeepEPMode\nimport torch\n",
        ),
    ],
    ids=["before-the-old-one", "after-a-named-import", "new-group-before", "new-group-after"],
)
def test_move_import_keeps_the_placement_it_is_given(extra, after):
    before = "import os\n\n# sglang\nfrom sglang.srt.utils import DeepEPMode, get_bool_env_var\nimport torch\n"
    assert_op(move_patch(**extra), before, after, "APPLY", None, 4, reapply=True)


def test_move_import_only_drops_the_old_one_when_the_new_one_exists():
    before = "from sglang.srt.utils import DeepEPMode\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n"
    assert_op(move_patch(), before, "from sglang.srt.layers.moe.utils import DeepEPMode\n", "APPLY", None, 1)


def test_move_import_skip_when_already_moved():
    before = "import os\nfrom sglang.srt.layers.moe.utils import DeepEPMode\n"
    assert_op(move_patch(), before, before, "SKIP", "ALREADY_APPLIED", 2)


def test_move_import_target_not_found_when_neither_import_exists():
    before = "from sglang.srt.utils import is_cuda\n"
    res = assert_op(move_patch(), before, before, "FAIL", "TARGET_NOT_FOUND", None)
    assert "neither from sglang.srt.utils nor from sglang.srt.layers.moe.utils" in res["message"]


@pytest.mark.parametrize(
    ("before", "line"),
    [
        ("from sglang.srt.utils import DeepEPMode\n\n\nclass DeepEPMode:\n    pass\n", 4),
        ("from other.place import DeepEPMode\n", 1),
        ("DeepEPMode = None\n", 1),
    ],
    ids=["def-after-import", "third-module", "assignment"],
)
def test_move_import_conflict_when_name_bound_otherwise(before, line):
    res = assert_op(move_patch(), before, before, "FAIL", "CONFLICT", line)
    assert "DeepEPMode" in res["message"]


def test_move_import_relative_modules():
    before = "from ..utils import DeepEPMode\n"
    assert_op(
        move_patch(**{"from": "..utils", "to": "..layers.moe.utils"}),
        before,
        "from ..layers.moe.utils import DeepEPMode\n",
        "APPLY",
        None,
        1,
        reapply=True,
    )


def test_move_import_bad_module_path_is_a_manifest_error(tmp_path, capsys):
    sc = one(tmp_path, "X = 1\n", move_patch(to="sglang..x"))
    r = sc.apply(capsys)
    assert r.code == 2
    assert "patch[1].to" in r.err and "dotted module path" in r.err


# -- ensure-import with `after` -------------------------------------------------------------------------------

MID_BLOCK_BEFORE = "import logging\nimport os\nfrom typing import Optional\n\nX = 1\n"


def test_ensure_import_after_puts_the_line_inside_the_import_block():
    after = "import logging\nimport json\nimport os\nfrom typing import Optional\n\nX = 1\n"
    res = assert_op(
        {"op": "ensure-import", "import": "import json", "after": "import logging"},
        MID_BLOCK_BEFORE,
        after,
        "APPLY",
        None,
        2,
        reapply=True,
    )
    assert "after line 1 (`import logging`)" in res["message"]


def test_ensure_import_after_an_import_added_by_an_earlier_patch(tmp_path, capsys):
    patches = [
        {"id": "json", "op": "ensure-import", "file": TARGET, "import": "import json", "after": "import logging"},
        {"id": "re", "op": "ensure-import", "file": TARGET, "import": "import re", "after": "import json"},
    ]
    sc = scenario(tmp_path, {TARGET: MID_BLOCK_BEFORE}, patches)
    r = sc.apply(capsys)
    assert verdicts(r.json) == [("json", "APPLY", None), ("re", "APPLY", None)]
    assert sc.text() == "import logging\nimport json\nimport re\nimport os\nfrom typing import Optional\n\nX = 1\n"
    reapply_is_skip(capsys, sc)


def test_ensure_import_after_missing_anchor_is_target_not_found():
    res = assert_op(
        {"op": "ensure-import", "import": "import json", "after": "import sys"},
        MID_BLOCK_BEFORE,
        MID_BLOCK_BEFORE,
        "FAIL",
        "TARGET_NOT_FOUND",
        None,
    )
    assert "`after`: no module-level import statement is `import sys`" in res["message"]


@pytest.mark.parametrize(
    ("before", "extra", "after", "line", "says"),
    [
        (
            '"""Doc."""\n\nX = 1\n',
            {},
            '"""Doc."""\n\nimport copy\n\nX = 1\n',
            2,
            "after the module docstring (the module has no import yet), as a group of its own",
        ),
        (
            "import os\n\nimport torch\n\nX = 1\n",
            {},
            "import os\n\nimport torch\n\nimport copy\n\nX = 1\n",
            4,
            "after the import block, as a group of its own",
        ),
        (
            "import os\n\nfrom sglang.a import b\n\nX = 1\n",
            {"after": "import os"},
            "import os\n\nimport copy\n\nfrom sglang.a import b\n\nX = 1\n",
            2,
            "after line 1 (`import os`), as a group of its own",
        ),
        (
            "import os\nfrom sglang.a import b\n",
            {"before": "from sglang.a import b"},
            "import os\nimport copy\n\nfrom sglang.a import b\n",
            2,
            "before line 2 (`from sglang.a import b`), as a group of its own",
        ),
        (
            '"""Doc."""\n\n# stdlib\nimport os\n',
            {"position": "top"},
            '"""Doc."""\n\n# stdlib\nimport copy\n\nimport os\n',
            4,
            "before line 4 (the first import), as a group of its own",
        ),
        (
            "# Copyright\n\nX = 1\n",
            {},
            "# Copyright\n\nimport copy\n\nX = 1\n",
            3,
            "at the top of the module (it has no import yet), as a group of its own",
        ),
    ],
    ids=["under-the-docstring", "after-the-block", "after", "before", "top", "no-docstring-no-import"],
)
def test_ensure_import_new_group_puts_one_blank_line_between_it_and_its_anchor(before, extra, after, line, says):
    table = {"op": "ensure-import", "import": "import copy", "new_group": True} | extra
    res = assert_op(table, before, after, "APPLY", None, line, reapply=True)
    assert says in res["message"], res["message"]


def test_ensure_import_in_a_module_without_imports_says_where_it_goes():
    res = assert_op(
        {"op": "ensure-import", "import": "import copy"},
        '"""Doc."""\nX = 1\n',
        '"""Doc."""\nimport copy\nX = 1\n',
        "APPLY",
        None,
        2,
    )
    assert res["message"] == "adds `import copy` after the module docstring (the module has no import yet)"


@pytest.mark.parametrize(
    ("after", "says"), [("X = 1", "'X = 1' is not an import statement"), ("import (", "'import (' is not valid Python")]
)
@pytest.mark.parametrize("op", ["ensure-import", "move-import"])
def test_an_after_import_is_read_the_same_way_by_both_import_ops(tmp_path, capsys, op, after, says):
    table = {"op": "ensure-import", "import": "import json"} if op == "ensure-import" else move_patch()
    sc = one(tmp_path, MID_BLOCK_BEFORE, table | {"after": after})
    r = sc.apply(capsys)
    assert r.code == 2 and "patch[1].after" in r.err and says in r.err, r.err
