"""apply / revert / status on real work trees: atomicity, idempotence, bytes kept, the record, the lock.

Contract: docs/manifest.md ("Composition and atomicity"), docs/statuses.md
(reasons and exit codes), docs/json.md (the report shapes).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers import (
    TARGET,
    Kit,
    d,
    head_content,
    make_repo,
    porcelain,
    result_of,
    run_cli,
    run_script,
    scenario,
    src,
    temp_leftovers,
    tree_state,
    verdicts,
)

from patchkit.demo.history import Executable, Symlink
from patchkit.engine.lock import repo_lock

MODEL = d('''
    """Upstream model."""
    import torch


    class Model:
        def forward(self, x):
            return x


    EntryClass = Model
''')

WORKER = d("""
    class Worker:
        def verify(self, batch):
            result = self.forward(batch)
            return result
""")

METHODS = d("""
    class Model:
        def get_embed(self):
            return self.embed
""")

TIMING = d("""
    def start_timer(self):
        self.timer.start()
""")


def standard_patches() -> list[dict]:
    return [
        {"id": "imports", "op": "ensure-import", "file": "pkg/model.py", "import": "from typing import Optional"},
        {"id": "hooks", "op": "add-methods", "file": "pkg/model.py", "class": "Model", "source": src("m.py")},
        {
            "id": "timing",
            "op": "insert",
            "file": "pkg/worker.py",
            "function": "Worker.verify",
            "anchor": "result = self.forward(batch)",
            "position": "before",
            "source": src("t.py"),
            "body_of": "start_timer",
        },
        {"id": "register", "op": "ensure-list-item", "file": "pkg/model.py", "target": "EntryClass", "item": "Extra"},
    ]


def standard(tmp_path: Path):
    files = {"pkg/model.py": MODEL, "pkg/worker.py": WORKER, "pkg/__init__.py": "", "README.txt": "upstream\n"}
    return scenario(tmp_path, files, standard_patches(), {"m.py": METHODS, "t.py": TIMING})


# -- idempotence ---------------------------------------------------------------------------------


def test_apply_twice_second_run_is_all_skip_and_writes_nothing(tmp_path, capsys):
    sc = standard(tmp_path)
    first = sc.apply(capsys)
    assert first.code == 0, first.out
    assert [s for _, s, _ in verdicts(first.json)] == ["APPLY"] * 4
    assert sorted(first.json["written"]) == ["pkg/model.py", "pkg/worker.py"]
    state = tree_state(sc.repo)
    mtimes = {p: os.stat(sc.repo / p).st_mtime_ns for p in state}
    second = sc.apply(capsys)
    assert second.code == 0
    assert verdicts(second.json) == [(p, "SKIP", "ALREADY_APPLIED") for p in ("imports", "hooks", "timing", "register")]
    assert second.json["written"] == []
    assert tree_state(sc.repo) == state
    assert {p: os.stat(sc.repo / p).st_mtime_ns for p in state} == mtimes
    human = run_cli(capsys, "apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert human.code == 0
    assert human.out.strip().splitlines()[-1].startswith("OK: nothing to do")


# -- nothing written on refusal --------------------------------------------------------------------


def test_refusal_writes_nothing_and_lists_every_failure(tmp_path, capsys):
    patches = [
        *standard_patches(),
        {
            "id": "missing-class",
            "op": "add-methods",
            "file": "pkg/worker.py",
            "class": "NoSuchClass",
            "source": src("m2.py"),
        },
        {"id": "missing-file", "op": "ensure-import", "file": "pkg/gone.py", "import": "import os"},
        {
            "id": "optional-miss",
            "op": "ensure-list-item",
            "file": "pkg/model.py",
            "target": "Nope",
            "item": "X",
            "required": False,
        },
    ]
    files = {
        "pkg/model.py": MODEL,
        "pkg/worker.py": WORKER,
        "README.txt": "upstream\n",
        "tools/run.sh": Executable("#!/bin/sh\necho hi\n"),
    }
    sc = scenario(
        tmp_path,
        files,
        patches,
        {"m.py": METHODS, "t.py": TIMING, "m2.py": "class NoSuchClass:\n    def f(self):\n        return 1\n"},
    )
    before_tree = tree_state(sc.repo)
    before_git = tree_state(sc.repo / ".git", include_git=True)
    r = sc.apply(capsys)
    assert r.code == 1
    data = r.json
    assert data["refused"] is True
    assert data["written"] == []
    assert verdicts(data) == [
        ("imports", "APPLY", None),
        ("hooks", "APPLY", None),
        ("timing", "APPLY", None),
        ("register", "APPLY", None),
        ("missing-class", "FAIL", "CLASS_NOT_FOUND"),
        ("missing-file", "FAIL", "FILE_NOT_FOUND"),
        ("optional-miss", "WARN", "TARGET_NOT_FOUND"),
    ]
    assert tree_state(sc.repo) == before_tree
    assert temp_leftovers(sc.repo) == []
    assert not (sc.repo / ".git" / "patchkit" / "applied" / "test.json").exists()
    # Nothing in the git dir changed except patchkit's own lock file.
    after_git = tree_state(sc.repo / ".git", include_git=True)
    changed = {p for p in set(before_git) | set(after_git) if before_git.get(p) != after_git.get(p)}
    assert changed <= {"patchkit/lock"}
    assert porcelain(sc.repo) == []

    human = run_cli(capsys, "apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert human.code == 1
    verdict = human.out.strip().splitlines()[-1]
    assert verdict.startswith("REFUSED:")
    assert "missing-class CLASS_NOT_FOUND" in verdict and "missing-file FILE_NOT_FOUND" in verdict
    assert "nothing was written" in verdict
    assert tree_state(sc.repo) == before_tree


# -- bytes, line endings, modes, encodings ----------------------------------------------------------


def test_crlf_file_stays_crlf_and_outside_bytes_unchanged(tmp_path, capsys):
    text = (
        d("""
        import os


        class Model:
            def forward(self, x):
                return x


        def tail():
            return os.sep
    """)
        .replace("\n", "\r\n")
        .encode()
    )
    sc = scenario(
        tmp_path,
        {TARGET: text},
        [{"id": "hooks", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")}],
        {"m.py": METHODS},
    )
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    after = sc.file().read_bytes()
    expected = text.replace(
        b"        return x\r\n",
        b"        return x\r\n\r\n    def get_embed(self):\r\n        return self.embed\r\n",
    )
    assert after == expected
    assert after.count(b"\n") == after.count(b"\r\n")
    cut = text.index(b"        return x\r\n") + len(b"        return x\r\n")
    assert after[:cut] == text[:cut]
    assert after.endswith(text[cut:])


def test_executable_mode_is_kept(tmp_path, capsys):
    script = "#!/usr/bin/env python3\nimport sys\n\n\ndef main():\n    return 0\n"
    sc = scenario(
        tmp_path,
        {"bin/tool.py": Executable(script)},
        [{"id": "imp", "op": "ensure-import", "file": "bin/tool.py", "import": "import os"}],
    )
    assert stat.S_IMODE(os.stat(sc.repo / "bin/tool.py").st_mode) == 0o755
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    assert (sc.repo / "bin/tool.py").read_text() == script.replace("import sys\n", "import sys\nimport os\n")
    assert stat.S_IMODE(os.stat(sc.repo / "bin/tool.py").st_mode) == 0o755
    assert porcelain(sc.repo) == [" M bin/tool.py"]  # content changed, mode did not


def test_utf8_non_ascii_round_trips(tmp_path, capsys):
    text = d('''
        # Modèle — façade für Ünïcode ✓ 模型
        import os


        class Model:
            """Docstring with ½ and é."""

            def forward(self, x):
                return "naïve"  # ça marche
    ''')
    sc = scenario(
        tmp_path,
        {TARGET: text},
        [{"id": "hooks", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")}],
        {"m.py": METHODS},
    )
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    expected = text + "\n    def get_embed(self):\n        return self.embed\n"
    assert sc.file().read_bytes() == expected.encode("utf-8")


def test_utf8_bom_is_kept(tmp_path, capsys):
    text = "\ufeffimport os\n\n\ndef f():\n    return os.sep\n"
    sc = scenario(
        tmp_path,
        {TARGET: text.encode("utf-8")},
        [{"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import sys"}],
    )
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    assert sc.file().read_bytes() == "\ufeffimport os\nimport sys\n\n\ndef f():\n    return os.sep\n".encode("utf-8")


def test_file_without_final_newline(tmp_path, capsys):
    text = "import os\n\nEntryClass = [A]"
    sc = scenario(
        tmp_path,
        {TARGET: text},
        [{"id": "reg", "op": "ensure-list-item", "file": TARGET, "target": "EntryClass", "item": "B"}],
    )
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    assert sc.file().read_bytes() == b"import os\n\nEntryClass = [A, B]"


# -- target files that cannot be analysed --------------------------------------------------------------


def one_import(tmp_path: Path, files: dict, path: str = TARGET, required: bool = True):
    return scenario(
        tmp_path,
        files,
        [{"id": "imp", "op": "ensure-import", "file": path, "import": "import os", "required": required}],
    )


def test_syntax_error_is_parse_error_with_line(tmp_path, capsys):
    text = "import sys\n\n\ndef f(:\n    return 1\n"
    sc = one_import(tmp_path, {TARGET: text})
    r = sc.apply(capsys)
    assert r.code == 1
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "PARSE_ERROR", 4)
    assert r.err == ""
    assert sc.text() == text


def test_non_utf8_is_unsupported_file_with_line(tmp_path, capsys):
    data = b"import sys\n# caf\xe9 in latin-1\nX = 1\n"
    sc = one_import(tmp_path, {TARGET: data})
    r = sc.apply(capsys)
    assert r.code == 1
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "UNSUPPORTED_FILE", 2)
    assert sc.file().read_bytes() == data


def test_symlink_target_is_unsupported_file(tmp_path, capsys):
    sc = one_import(tmp_path, {"pkg/real.py": "X = 1\n", TARGET: Symlink("real.py")})
    assert (sc.repo / TARGET).is_symlink()
    r = sc.apply(capsys)
    assert r.code == 1
    res = r.json["results"][0]
    assert (res["status"], res["reason"]) == ("FAIL", "UNSUPPORTED_FILE")
    assert "symlink" in res["message"]
    assert (sc.repo / TARGET).is_symlink()
    assert (sc.repo / "pkg/real.py").read_text() == "X = 1\n"


def test_missing_file_is_file_not_found_and_optional_is_warn(tmp_path, capsys):
    sc = one_import(tmp_path, {"pkg/other.py": "X = 1\n"})
    r = sc.apply(capsys)
    assert r.code == 1
    res = r.json["results"][0]
    assert (res["status"], res["reason"], res["line"]) == ("FAIL", "FILE_NOT_FOUND", None)
    sc2 = one_import(tmp_path / "opt", {"pkg/other.py": "X = 1\n"}, required=False)
    r2 = sc2.apply(capsys)
    assert r2.code == 0
    assert verdicts(r2.json) == [("imp", "WARN", "FILE_NOT_FOUND")]
    assert r2.json["refused"] is False and r2.json["written"] == []


def test_missing_file_hint_names_file_of_same_name(tmp_path, capsys):
    sc = one_import(tmp_path, {"pkg/models/mod.py": "X = 1\n"})
    r = sc.apply(capsys)
    res = r.json["results"][0]
    assert res["reason"] == "FILE_NOT_FOUND"
    assert res["hint"] is not None and "pkg/models/mod.py" in res["hint"]


def test_manifest_hints_are_printed_with_their_reason(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {"pkg/other.py": "X = 1\n"},
        [
            {
                "id": "imp",
                "op": "ensure-import",
                "file": TARGET,
                "import": "import os",
                "hints": {"FILE_NOT_FOUND": "support starts with PR #17789"},
            }
        ],
    )
    r = sc.apply(capsys)
    assert "support starts with PR #17789" in r.json["results"][0]["hint"]


# -- requires ---------------------------------------------------------------------------------------------


def test_requires_holds_back_dependents_across_files(tmp_path, capsys):
    patches = [
        {
            "id": "base",
            "op": "add-methods",
            "file": "pkg/model.py",
            "class": "Missing",
            "source": src("m.py"),
            "required": False,
        },
        {
            "id": "dependent",
            "op": "ensure-import",
            "file": "pkg/worker.py",
            "import": "import os",
            "requires": ["base"],
            "required": False,
        },
        {"id": "independent", "op": "ensure-import", "file": "pkg/worker.py", "import": "import sys"},
    ]
    sc = scenario(
        tmp_path,
        {"pkg/model.py": MODEL, "pkg/worker.py": WORKER},
        patches,
        {"m.py": "class Missing:\n    def f(self):\n        return 1\n"},
    )
    r = sc.apply(capsys)
    assert r.code == 0, r.out
    assert verdicts(r.json) == [
        ("base", "WARN", "CLASS_NOT_FOUND"),
        ("dependent", "WARN", "DEPENDENCY"),
        ("independent", "APPLY", None),
    ]
    assert "base" in result_of(r.json, "dependent")["message"]
    assert (sc.repo / "pkg/worker.py").read_text() == "import sys\n" + WORKER


# -- --strict ---------------------------------------------------------------------------------------------


def test_strict_turns_warn_into_refusal(tmp_path, capsys):
    patches = [
        {"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import os"},
        {"id": "opt", "op": "ensure-list-item", "file": TARGET, "target": "Missing", "item": "X", "required": False},
    ]
    sc = scenario(tmp_path, {TARGET: "X = 1\n"}, patches)
    state = tree_state(sc.repo)
    strict = sc.apply(capsys, "--strict")
    assert strict.code == 1
    assert strict.json["refused"] is True and strict.json["strict"] is True
    assert verdicts(strict.json) == [("imp", "APPLY", None), ("opt", "WARN", "TARGET_NOT_FOUND")]
    assert tree_state(sc.repo) == state
    human = run_cli(capsys, "apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--strict")
    assert human.code == 1
    assert human.out.strip().splitlines()[-1].startswith("REFUSED:")
    assert tree_state(sc.repo) == state
    loose = sc.apply(capsys)
    assert loose.code == 0
    assert loose.json["written"] == [TARGET]
    assert sc.text() == "import os\nX = 1\n"


# -- the record ---------------------------------------------------------------------------------------------


def test_record_lives_in_git_dir_and_git_status_shows_only_patched_files(tmp_path, capsys):
    sc = standard(tmp_path)
    r = sc.apply(capsys)
    assert r.code == 0
    assert sorted(porcelain(sc.repo)) == [" M pkg/model.py", " M pkg/worker.py"]
    record = json.loads((sc.repo / ".git" / "patchkit" / "applied" / "test.json").read_text())
    assert sorted(f["path"] for f in record["files"]) == ["pkg/model.py", "pkg/worker.py"]
    assert temp_leftovers(sc.repo) == []


# -- revert ---------------------------------------------------------------------------------------------------


def test_revert_restores_head_content_exactly(tmp_path, capsys):
    sc = standard(tmp_path)
    pristine = tree_state(sc.repo)
    assert sc.apply(capsys).code == 0
    assert tree_state(sc.repo) != pristine
    r = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert r.code == 0, r.err
    assert sorted((x["path"], x["from"]) for x in r.json["restored"]) == [
        ("pkg/model.py", "HEAD"),
        ("pkg/worker.py", "HEAD"),
    ]
    assert r.json["forced"] == [] and r.json["nothing_recorded"] is False
    assert tree_state(sc.repo) == pristine
    for path in ("pkg/model.py", "pkg/worker.py"):
        assert (sc.repo / path).read_bytes() == head_content(sc.repo, path)
    assert porcelain(sc.repo) == []
    assert not (sc.repo / ".git" / "patchkit" / "applied" / "test.json").exists()
    again = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert again.code == 0 and again.json["nothing_recorded"] is True and again.json["restored"] == []


def test_revert_restores_pre_patch_local_edits_from_backup(tmp_path, capsys):
    sc = standard(tmp_path)
    local = MODEL.replace("return x", "return x  # my local edit")
    (sc.repo / "pkg/model.py").write_text(local)
    assert sc.apply(capsys).code == 0
    r = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert r.code == 0
    assert {x["path"]: x["from"] for x in r.json["restored"]} == {
        "pkg/model.py": "backup",
        "pkg/worker.py": "HEAD",
    }
    assert (sc.repo / "pkg/model.py").read_text() == local
    assert (sc.repo / "pkg/worker.py").read_bytes() == head_content(sc.repo, "pkg/worker.py")


def test_revert_refuses_files_edited_after_patching_unless_forced(tmp_path, capsys):
    sc = standard(tmp_path)
    assert sc.apply(capsys).code == 0
    edited = (sc.repo / "pkg/worker.py").read_text() + "\n# edited by hand\n"
    (sc.repo / "pkg/worker.py").write_text(edited)
    state = tree_state(sc.repo)
    r = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 1
    assert r.err.startswith("patchkit: error: ")
    assert "pkg/worker.py" in r.err and "pkg/model.py" not in r.err
    assert "Traceback" not in r.err
    assert tree_state(sc.repo) == state  # nothing reverted, not even the unedited file
    forced = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--force", "--json")
    assert forced.code == 0, forced.err
    assert forced.json["forced"] == ["pkg/worker.py"]
    assert porcelain(sc.repo) == []


# -- status ------------------------------------------------------------------------------------------------------


def test_status_per_patch_state_and_exit_code(tmp_path, capsys):
    patches = [
        *standard_patches(),
        {
            "id": "upstream-has-it",
            "op": "add-methods",
            "file": "pkg/model.py",
            "class": "Model",
            "source": src("m3.py"),
            "on_conflict": "keep-upstream",
        },
        {"id": "opt", "op": "ensure-import", "file": "pkg/gone.py", "import": "import os", "required": False},
    ]
    files = {"pkg/model.py": MODEL, "pkg/worker.py": WORKER}
    sc = scenario(
        tmp_path,
        files,
        patches,
        {"m.py": METHODS, "t.py": TIMING, "m3.py": "class Model:\n    def forward(self, x):\n        return -x\n"},
    )
    before = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert before.code == 1
    assert before.json["complete"] is False
    assert [(r["patch"], r["state"]) for r in before.json["results"]] == [
        ("imports", "not applied"),
        ("hooks", "not applied"),
        ("timing", "not applied"),
        ("register", "not applied"),
        ("upstream-has-it", "provided by upstream"),
        ("opt", "cannot apply"),
    ]
    assert before.json["record"] is None
    human = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert human.code == 1
    assert human.out.strip().splitlines()[-1].startswith("INCOMPLETE:")

    assert sc.apply(capsys).code == 0
    after = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert after.code == 0
    assert after.json["complete"] is True
    assert [r["state"] for r in after.json["results"]] == ["applied"] * 4 + ["provided by upstream", "cannot apply"]
    assert sorted(after.json["record"]["files"]) == ["pkg/model.py", "pkg/worker.py"]
    assert after.json["edited_after_apply"] == []
    human = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert human.code == 0
    assert human.out.strip().splitlines()[-1].startswith("COMPLETE:")

    (sc.repo / "pkg/worker.py").write_text(WORKER)  # someone undid the patch by hand
    undone = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert undone.code == 1
    assert result_of(undone.json, "timing")["state"] == "not applied"
    assert undone.json["edited_after_apply"] == ["pkg/worker.py"]


def test_manifest_by_name_resolves_in_cwd(tmp_path, capsys, monkeypatch):
    sc = standard(tmp_path)
    monkeypatch.chdir(sc.kit.root)
    r = run_cli(capsys, "apply", "-m", "test", "--repo", sc.repo, "--json")
    assert r.code == 0, r.err
    assert r.json["manifest"]["name"] == "test"
    assert Path(r.json["manifest"]["path"]) == Path("manifests/test.toml")
    st = run_cli(capsys, "status", "-m", "test", "--repo", sc.repo)
    assert st.code == 0
    missing = run_cli(capsys, "status", "-m", "tset", "--repo", sc.repo)
    assert missing.code == 2
    assert missing.err.startswith("patchkit: error: ") and "'test'" in missing.err


def test_apply_inside_subdirectory_uses_repo_root(tmp_path, capsys, monkeypatch):
    sc = standard(tmp_path)
    monkeypatch.chdir(sc.repo / "pkg")
    r = run_cli(capsys, "apply", "-m", sc.kit.manifest, "--json")
    assert r.code == 0, r.err
    assert Path(r.json["target"]) == sc.repo.resolve()
    assert sorted(r.json["written"]) == ["pkg/model.py", "pkg/worker.py"]


# -- repositories that cannot be used -------------------------------------------------------------------------------


def test_apply_on_bare_repo_is_exit_2(tmp_path, capsys):
    bare = make_repo(tmp_path / "bare.git", {TARGET: "X = 1\n"}, bare=True)
    kit = Kit(tmp_path / "kit")
    kit.write([{"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import os"}])
    state = tree_state(bare, include_git=True)
    r = run_cli(capsys, "apply", "-m", kit.manifest, "--repo", bare)
    assert r.code == 2
    assert r.err.startswith("patchkit: error: ") and "bare" in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert tree_state(bare, include_git=True) == state


def test_apply_outside_a_repo_is_exit_2(tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    kit = Kit(tmp_path / "kit")
    kit.write([{"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import os"}])
    r = run_cli(capsys, "apply", "-m", kit.manifest, "--repo", tmp_path / "plain")
    assert r.code == 2
    assert r.err.startswith("patchkit: error: ") and "not a git repository" in r.err


# -- the lock ---------------------------------------------------------------------------------------------------------


def test_second_concurrent_apply_is_busy_exit_4(tmp_path):
    sc = standard(tmp_path)
    state = tree_state(sc.repo)
    with repo_lock(sc.repo / ".git" / "patchkit", what="test holder"):
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
        rv = run_script("revert", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 4, (r.out, r.err)
    assert r.err.startswith("patchkit: error: ") and "another patchkit" in r.err
    assert "test holder" in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert tree_state(sc.repo) == state
    assert rv.code == 4
    after = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert after.code == 0, after.err
    assert "Traceback" not in after.err


def test_dry_run_writes_nothing(tmp_path, capsys):
    sc = standard(tmp_path)
    state = tree_state(sc.repo)
    r = sc.apply(capsys, "--dry-run")
    assert r.code == 0
    assert r.json["dry_run"] is True
    assert sorted(r.json["would_write"]) == ["pkg/model.py", "pkg/worker.py"]
    assert r.json["written"] == []
    assert tree_state(sc.repo) == state
    assert not (sc.repo / ".git" / "patchkit" / "applied" / "test.json").exists()


@pytest.mark.parametrize("verb", ["apply", "status"])
def test_unknown_manifest_path_is_exit_2(tmp_path, capsys, verb):
    repo = make_repo(tmp_path / "repo", {TARGET: "X = 1\n"})
    r = run_cli(capsys, verb, "-m", tmp_path / "nope.toml", "--repo", repo)
    assert r.code == 2
    assert r.err.startswith("patchkit: error: ") and "nope.toml" in r.err


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning", "error::ResourceWarning")
def test_verbs_close_the_repository_they_open(tmp_path, capsys):
    """apply, status and revert open the repo, so they close it: no cat-file reader is left running."""
    import gc

    sc = standard(tmp_path)
    assert sc.apply(capsys).code == 0
    assert run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json").code == 0
    assert run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--json").code == 0
    gc.collect()
