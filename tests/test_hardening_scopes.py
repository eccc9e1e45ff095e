"""Definitions inside top-level ``if`` / ``try`` / ``else`` / ``except`` blocks are targets.

SGLang defines classes, functions and imports under ``if _is_cuda:`` and
``try: ... except ImportError:``.  Each op finds them there (analysis on the
ast), edits them there (libcst), and the engine's re-check of its own output
agrees; a name bound in more than one branch is reported with every line.
"""

from __future__ import annotations

from helpers import TARGET, d, result_of, run_cli, scenario, src

CUDA = d("""
    import torch

    _is_cuda = torch.cuda.is_available()

    if _is_cuda:
        from sgl_kernel import fused_add

        class CudaModel:
            def forward(self, x):
                return fused_add(x)

        def helper(x):
            return x + 1

        EntryClass = [CudaModel]
    else:
        fused_add = None

    try:
        from flashinfer import sampling
    except ImportError:
        sampling = None
""")

METHODS = {"m.py": "class CudaModel:\n    def extra(self):\n        return 1\n"}


def apply(capsys, sc, *extra: str):
    return run_cli(capsys, "apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json", *extra)


def test_add_methods_to_a_class_under_if_is_cuda(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [{"id": "m", "op": "add-methods", "file": TARGET, "class": "CudaModel", "source": src("m.py")}],
        METHODS,
    )
    r = apply(capsys, sc)
    assert r.code == 0, r.out + r.err
    res = result_of(r.json, "m")
    assert (res["status"], res["line"]) == ("APPLY", 8)
    assert res["message"] == "adds extra to class CudaModel (line 8)"
    text = sc.text()
    assert (
        "        def forward(self, x):\n            return fused_add(x)\n\n"
        "        def extra(self):\n            return 1\n\n    def helper(x):\n" in text
    ), text
    again = apply(capsys, sc)
    assert result_of(again.json, "m")["status"] == "SKIP" and again.json["written"] == []


def replace_helper(tmp_path, text: str, line: int, payload: str):
    """A replace-function patch on `helper`, expecting the definition patchkit must pick (at ``line``)."""
    from patchkit.operations.code import CodeState
    from patchkit.operations.digests import digest

    helper = CodeState.parse(TARGET, text).find_function("helper")[0]
    assert helper is not None and helper.lineno == line
    patch = {"id": "rf", "op": "replace-function", "file": TARGET, "function": "helper"}
    patch.update(source=src("h.py"), expect=digest(helper))
    return scenario(tmp_path, {TARGET: text}, [patch], {"h.py": payload})


def test_replace_function_under_if(tmp_path, capsys):
    sc = replace_helper(tmp_path, CUDA, 12, "def helper(x):\n    return x + 2\n")
    r = apply(capsys, sc)
    assert r.code == 0, r.out + r.err
    assert result_of(r.json, "rf")["status"] == "APPLY"
    assert sc.text() == CUDA.replace("        return x + 1\n", "        return x + 2\n")
    assert result_of(apply(capsys, sc).json, "rf")["status"] == "SKIP"


def test_insert_into_a_function_under_if(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [
            {
                "id": "ins",
                "op": "insert",
                "file": TARGET,
                "function": "helper",
                "anchor": "return x + 1",
                "position": "before",
                "source": src("h.py"),
                "body_of": "note",
            },
        ],
        {"h.py": "def note():\n    print('helper')\n"},
    )
    r = apply(capsys, sc)
    assert r.code == 0, r.out + r.err
    assert "    def helper(x):\n        print('helper')\n        return x + 1\n" in sc.text()


def test_ensure_list_item_on_a_list_under_if(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [{"id": "reg", "op": "ensure-list-item", "file": TARGET, "target": "EntryClass", "item": "Other"}],
    )
    r = apply(capsys, sc)
    assert r.code == 0, r.out + r.err
    assert result_of(r.json, "reg")["line"] == 15
    assert "    EntryClass = [CudaModel, Other]\n" in sc.text()


def test_ensure_import_sees_imports_under_if_and_try(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [
            {"id": "k", "op": "ensure-import", "file": TARGET, "import": "from sgl_kernel import fused_add"},
            {"id": "f", "op": "ensure-import", "file": TARGET, "import": "from flashinfer import sampling"},
        ],
    )
    r = apply(capsys, sc)
    assert r.code == 0, r.out + r.err
    k, f = (result_of(r.json, i) for i in ("k", "f"))
    assert (k["status"], k["reason"]) == ("SKIP", "ALREADY_APPLIED")
    assert (
        k["message"]
        == "`from sgl_kernel import fused_add` is already imported (line 6, under `if _is_cuda:` at line 5)"
    )
    assert f["message"] == "`from flashinfer import sampling` is already imported (line 20, under `try:` at line 19)"
    assert r.json["written"] == []


def test_a_name_bound_in_two_branches_is_reported_with_every_line(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [
            {"id": "add", "op": "ensure-list-item", "file": TARGET, "target": "sampling", "item": "x"},
            {"id": "k", "op": "ensure-import", "file": TARGET, "import": "from other import fused_add"},
        ],
    )
    r = apply(capsys, sc)
    assert r.code == 1
    add = result_of(r.json, "add")
    assert (add["status"], add["reason"]) == ("FAIL", "UNSUPPORTED_TARGET")
    assert add["message"].startswith(
        "sampling is defined in more than one branch: line 20 (under `try:` at line 19), "
        "line 22 (under `except ImportError:` at line 21); "
    ), add["message"]
    assert "does not guess" in add["message"]
    k = result_of(r.json, "k")
    assert k["reason"] == "CONFLICT" and "line 6" in k["message"]  # the name is bound under `if _is_cuda:`


def test_class_in_if_and_else_is_ambiguous_for_every_op(tmp_path, capsys):
    both = d("""
        import os

        if os.environ.get("X"):
            class Model:
                pass
        else:
            class Model:
                def forward(self):
                    return 1
    """)
    sc = scenario(
        tmp_path,
        {TARGET: both},
        [{"id": "m", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")}],
        {"m.py": "class Model:\n    def extra(self):\n        return 1\n"},
    )
    r = apply(capsys, sc)
    res = result_of(r.json, "m")
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "UNSUPPORTED_TARGET", 7)
    assert (
        "line 4 (under `if os.environ.get('X'):` at line 3), line 7 (under the `else:` of the if at line 3)"
        in (res["message"])
    )
    assert sc.text() == both


def test_a_later_top_level_definition_wins_over_a_conditional_one(tmp_path, capsys):
    text = d("""
        import os

        if os.environ.get("X"):
            def helper():
                return 1


        def helper():
            return 2
    """)
    sc = replace_helper(tmp_path, text, 8, "def helper():\n    return 3\n")
    r = apply(capsys, sc)
    assert r.code == 0, r.out
    assert sc.text() == text.replace("    return 2\n", "    return 3\n")


def test_add_definitions_replaces_in_its_branch_and_inserts_before_the_block(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [
            {
                "id": "defs",
                "op": "add-definitions",
                "file": TARGET,
                "source": src("defs.py"),
                "on_conflict": "replace",
                "before": "helper",
            }
        ],
        {"defs.py": "def helper(x):\n    return x + 3\n\n\ndef new_one():\n    return 0\n"},
    )
    r = apply(capsys, sc)
    assert r.code == 0, r.out + r.err
    text = sc.text()
    assert "    def helper(x):\n        return x + 3\n" in text
    assert text.index("def new_one():") < text.index("if _is_cuda:")  # before the block holding `helper`
    again = apply(capsys, sc)
    assert again.json["written"] == []


def test_check_and_apply_agree_on_scoped_targets(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {TARGET: CUDA},
        [{"id": "m", "op": "add-methods", "file": TARGET, "class": "CudaModel", "source": src("m.py")}],
        METHODS,
    )
    check = run_cli(capsys, "check", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert check.code == 0
    applied = apply(capsys, sc, "--dry-run")
    checked = check.json["commits"][0]["results"][0]
    assert (checked["status"], checked["line"], checked["message"]) == (
        "APPLY",
        result_of(applied.json, "m")["line"],
        result_of(applied.json, "m")["message"],
    )
