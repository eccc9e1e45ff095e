"""patchkit guard and the patchkit.guard API on real repositories, real interpreters and real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers import git, head_sha, make_repo, porcelain, run_cli, run_killed, run_script
from histories import MODEL_BROKEN, MODEL_V1, build_model_history, edit_payload, write_manifest

from patchkit.errors import GuardError, PartialApplicationError, PatchkitError, RefusedError

GUARD_KEYS = {
    "version", "command", "manifest", "target", "commit", "subject", "branch", "detached", "ok", "strict",
    "allow_dirty", "bisect", "verdict", "exit_code", "checks", "results", "commit_results", "interpreter",
}  # fmt: skip
CHECK_KEYS = {"check", "ok", "message", "details", "severity"}
RESULT_KEYS = {"patch", "op", "status", "reason", "required", "file", "line", "message", "hint", "state"}
INTERPRETER_KEYS = {"python", "executable", "version", "prefix", "packages", "torch"}
PACKAGE_KEYS = {"location", "locations", "version"}
DETAIL_KEYS = {
    "commit": {"commit", "subject", "branch", "detached"},
    "patches": {"required_not_in_place", "optional_not_in_place", "out_of_date"},
    "record": {"recorded", "files", "edited", "manifest_digest", "applied_at", "interrupted"},
    "clean": {"changes", "allow_dirty", "patchkit_files", "other_manifests"},
    "import": {"package", "python", "location", "in_tree", "expected", "version"},
}


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """An upstream checkout with pkg/model.py (namespace package ``pkg``) and the two-patch hooks manifest."""
    repo = make_repo(tmp_path / "repo", {"README.md": "upstream\n", "pkg/model.py": MODEL_V1})
    manifest = write_manifest(tmp_path / "kit")
    return repo, manifest


def guard(capsys, repo: Path, manifest: Path, *extra: str):
    return run_cli(capsys, "guard", "-m", manifest, "--repo", repo, *extra)


def apply(capsys, repo: Path, manifest: Path) -> None:
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0


def check_of(data: dict, name: str) -> dict:
    return next(c for c in data["checks"] if c["check"] == name)


def failed(data: dict) -> list[str]:
    return [c["check"] for c in data["checks"] if not c["ok"]]


# -- the checks ----------------------------------------------------------------------------------


def test_unpatched_tree_fails_listing_the_patches(tree, capsys) -> None:
    repo, manifest = tree
    r = guard(capsys, repo, manifest)
    assert r.code == 1
    assert "patches  FAIL    required patches not in place: typing (not applied), hook (not applied)" in r.out
    assert f"run `patchkit apply -m {manifest} --repo {repo}`" in r.out
    assert "GUARD FAILED: 1 check failed (patches)." in r.out
    data = guard(capsys, repo, manifest, "--json").json
    assert failed(data) == ["patches"]
    assert check_of(data, "patches")["details"]["required_not_in_place"] == ["typing", "hook"]
    assert [(x["patch"], x["state"]) for x in data["results"]] == [("typing", "not applied"), ("hook", "not applied")]


def test_advice_names_the_tree_only_where_it_is_not_the_working_directory(tree, capsys, monkeypatch) -> None:
    """Advice is pasted as printed: after `guard --repo DIR` from elsewhere, its commands carry --repo DIR; in the
    tree itself they do not need it."""
    repo, manifest = tree
    assert f"run `patchkit apply -m {manifest} --repo {repo}`" in guard(capsys, repo, manifest).out
    monkeypatch.chdir(repo)
    here = run_cli(capsys, "guard", "-m", manifest).out
    assert f"run `patchkit apply -m {manifest}`" in here and "--repo" not in here


def test_patched_tree_passes_with_the_full_sha(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    r = guard(capsys, repo, manifest)
    assert r.code == 0, r.out
    sha = head_sha(repo)
    assert f"HEAD is {sha} 'upstream base' (on branch main)" in r.out
    assert "GUARD OK" in r.out
    git(repo, "checkout", "-q", "--detach")
    data = guard(capsys, repo, manifest, "--json").json
    assert data["ok"] and data["commit"] == sha and data["detached"] and data["branch"] is None
    assert data["verdict"] == "good" and data["exit_code"] == 0


def test_json_keys_are_pinned(tree, capsys, tmp_path) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    venv = make_venv(tmp_path / "venv", repo)
    data = guard(capsys, repo, manifest, "--json", "--python", venv, "--import", "pkg").json
    assert set(data) == GUARD_KEYS
    assert data["version"] == 1 and data["command"] == "guard"
    assert [c["check"] for c in data["checks"]] == ["commit", "patches", "record", "clean", "import:pkg"]
    for item in data["checks"]:
        assert set(item) == CHECK_KEYS
        kind = item["check"].split(":")[0]
        assert DETAIL_KEYS[kind] <= set(item["details"]), kind
    assert all(set(x) == RESULT_KEYS for x in data["results"])
    assert set(data["interpreter"]) == INTERPRETER_KEYS
    assert set(data["interpreter"]["packages"]["pkg"]) == PACKAGE_KEYS


def test_json_md_documents_the_guard_object() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "json.md").read_text(encoding="utf-8")
    section = text.split("## `guard --json`", 1)[1].split("\n## ", 1)[0]
    for key in GUARD_KEYS | CHECK_KEYS | INTERPRETER_KEYS | PACKAGE_KEYS:
        assert f'"{key}"' in section, key


def test_patched_file_edited_afterwards_fails(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    target = repo / "pkg/model.py"
    target.write_text(target.read_text() + "\n# tuned by hand\n")
    data = guard(capsys, repo, manifest, "--json").json
    assert data["exit_code"] == 1
    assert failed(data) == ["record"]
    record = check_of(data, "record")
    assert record["details"]["edited"] == ["pkg/model.py"]
    assert "edited after patchkit wrote them: pkg/model.py" in record["message"]
    assert f"patchkit revert -m {manifest} --repo {repo} --force" in record["message"]


def test_manifest_changed_after_apply_fails(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    manifest.write_text(manifest.read_text().replace('name = "hooks"', 'name = "hooks"\nsummary = "v2"'))
    data = guard(capsys, repo, manifest, "--json").json
    assert data["exit_code"] == 1 and failed(data) == ["record"]
    message = check_of(data, "record")["message"]
    assert "the tree was patched on" in message and "by another version of manifest hooks" in message
    again = f"patchkit revert -m {manifest} --repo {repo} && patchkit apply -m {manifest} --repo {repo}"
    assert message.endswith(f"re-apply: `{again}`")
    # Re-applying as told makes it pass.
    assert run_cli(capsys, "revert", "-m", manifest, "--repo", repo).code == 0
    apply(capsys, repo, manifest)
    assert guard(capsys, repo, manifest).code == 0


def test_dirty_tree_fails_then_passes_with_allow_dirty(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    (repo / "README.md").write_text("edited\n")
    data = guard(capsys, repo, manifest, "--json").json
    assert data["exit_code"] == 1 and failed(data) == ["clean"]
    assert check_of(data, "clean")["details"]["changes"] == [{"path": "README.md", "change": "modified"}]
    assert check_of(data, "clean")["details"]["patchkit_files"] == ["pkg/model.py"]
    allowed = guard(capsys, repo, manifest, "--json", "--allow-dirty").json
    assert allowed["exit_code"] == 0 and check_of(allowed, "clean")["severity"] == "warning"

    git(repo, "checkout", "--", "README.md")
    (repo / "notes.txt").write_text("scratch\n")
    r = guard(capsys, repo, manifest)
    assert r.code == 1
    assert "1 change outside patchkit's edits: notes.txt (untracked)" in r.out
    assert "or pass --allow-dirty" in r.out
    assert guard(capsys, repo, manifest, "--allow-dirty").code == 0

    # Ignored files do not count; staged and deleted files do, each listed.
    (repo / ".git/info/exclude").write_text("notes.txt\n")
    assert guard(capsys, repo, manifest).code == 0
    git(repo, "rm", "-q", "README.md")
    data = guard(capsys, repo, manifest, "--json").json
    assert check_of(data, "clean")["details"]["changes"] == [{"path": "README.md", "change": "deleted (staged)"}]


def test_local_edits_patched_over_are_dirty(tree, capsys) -> None:
    """A patched file that had the user's edits before patching is not patchkit's alone."""
    repo, manifest = tree
    target = repo / "pkg/model.py"
    target.write_text(target.read_text() + "\nTUNED = True\n")
    apply(capsys, repo, manifest)
    data = guard(capsys, repo, manifest, "--json").json
    assert failed(data) == ["clean"]
    assert check_of(data, "clean")["details"]["changes"][0]["path"] == "pkg/model.py"
    assert "local edits patched over" in check_of(data, "clean")["message"]


def test_optional_patch_not_in_place_warns_unless_strict(tmp_path, capsys) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/model.py": MODEL_V1})
    manifest = write_manifest(tmp_path / "kit")
    manifest.write_text(
        manifest.read_text()
        + '\n[[patch]]\nid = "gone"\nop = "ensure-import"\nfile = "pkg/missing.py"\n'
        + 'import = "import os"\nrequired = false\n'
    )
    apply(capsys, repo, manifest)
    data = guard(capsys, repo, manifest, "--json").json
    assert data["exit_code"] == 0 and check_of(data, "patches")["severity"] == "warning"
    assert check_of(data, "patches")["details"]["optional_not_in_place"] == ["gone"]
    strict = guard(capsys, repo, manifest, "--json", "--strict").json
    assert strict["exit_code"] == 1 and failed(strict) == ["patches"]


def test_every_failed_check_is_listed(tree, capsys) -> None:
    repo, manifest = tree
    (repo / "stray.py").write_text("x = 1\n")
    data = guard(capsys, repo, manifest, "--json").json
    assert failed(data) == ["patches", "clean"]


def test_head_not_a_commit(tmp_path, capsys) -> None:
    repo = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    manifest = write_manifest(tmp_path / "kit")
    data = guard(capsys, repo, manifest, "--json").json
    assert "commit" in failed(data)
    assert "HEAD is not a commit" in check_of(data, "commit")["message"]
    assert guard(capsys, repo, manifest, "--bisect").code == 128


def test_bad_input_is_one_line_exit_2_and_128_under_bisect(tree, capsys, tmp_path) -> None:
    repo, manifest = tree
    r = guard(capsys, repo, manifest, "--import", "pkg")
    assert r.code == 2 and r.err.startswith("patchkit: error: --import pkg needs --python PY;")
    r = guard(capsys, repo, manifest, "--python", tmp_path / "nope" / "python")
    assert r.code == 2 and "no such file" in r.err and len(r.err.splitlines()) == 1
    r = guard(capsys, repo, tmp_path / "missing.toml", "--bisect")
    assert r.code == 128 and "reported as 128 to stop git bisect" in r.err


# -- the import probe -------------------------------------------------------------------------------


def make_venv(path: Path, *pth_entries: Path) -> Path:
    """A real venv (no pip) whose site-packages holds one .pth file with ``pth_entries``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "guard_test.pth").write_text("".join(f"{p}\n" for p in pth_entries))
    return python


def test_shadowed_import_fails_naming_both_paths(tree, capsys, tmp_path) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    shadow = tmp_path / "site" / "pkg"
    shadow.mkdir(parents=True)
    marker = tmp_path / "executed"
    (shadow / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (shadow / "model.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    python = make_venv(tmp_path / "venv", tmp_path / "site")
    r = guard(capsys, repo, manifest, "--python", python, "--import", "pkg", "--import", "pkg.model", "--json")
    assert r.code == 1
    assert check_of(r.json, "import:pkg")["message"].startswith(
        f"pkg is shadowed: {python} imports it from {shadow.resolve()}, not from this tree (pkg); uninstall that copy"
    )
    assert check_of(r.json, "import:pkg.model")["message"].startswith(
        f"pkg.model is shadowed: {python} imports it from {(shadow / 'model.py').resolve()}, "
        "not from this tree (pkg/model.py)"
    )
    assert not marker.exists(), "the probe ran the package's code"
    data = guard(capsys, repo, manifest, "--json", "--python", python, "--import", "pkg").json
    details = check_of(data, "import:pkg")["details"]
    assert details["location"] == str(shadow.resolve()) and details["in_tree"] is None and details["expected"] == "pkg"
    assert data["interpreter"]["executable"] == str(python)
    assert guard(capsys, repo, manifest, "--bisect", "--python", python, "--import", "pkg").code == 128


def test_import_from_the_tree_passes(tree, capsys, tmp_path) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    python = make_venv(tmp_path / "venv", repo)
    r = guard(capsys, repo, manifest, "--python", python, "--import", "pkg", "--import", "pkg.model")
    assert r.code == 0, r.out
    assert f"{python} imports pkg from this tree (pkg)" in r.out
    assert f"{python} imports pkg.model from this tree (pkg/model.py)" in r.out
    assert "torch (not installed)" in r.out


def test_missing_package_fails_with_what_to_do(tree, capsys, tmp_path) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    python = make_venv(tmp_path / "venv")
    data = guard(capsys, repo, manifest, "--json", "--python", python, "--import", "pkg").json
    message = check_of(data, "import:pkg")["message"]
    assert message.startswith(f"pkg is not importable by {python}; ")
    assert f"put {repo} first on PYTHONPATH" in message


def test_distribution_versions_come_from_metadata(tree, capsys, tmp_path) -> None:
    """Versions of PKG and torch are read from dist-info metadata, without importing either."""
    repo, manifest = tree
    apply(capsys, repo, manifest)
    site = tmp_path / "site"
    marker = tmp_path / "executed"
    for name, version in (("torch", "2.10.0+cu128"), ("pkg", "0.5.9")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    python = make_venv(tmp_path / "venv", repo, site)
    data = guard(capsys, repo, manifest, "--json", "--python", python, "--import", "pkg").json
    assert data["ok"], failed(data)
    assert data["interpreter"]["torch"] == "2.10.0+cu128"
    assert data["interpreter"]["packages"]["pkg"]["version"] == "0.5.9"
    assert not marker.exists()


# -- bisect mode ------------------------------------------------------------------------------------


def two_models(tmp_path: Path, first: tuple[str, str], second: tuple[str, str]) -> tuple[dict[str, str], Path, Path]:
    """Two commits of pkg/model.py, (label, text) each, checked out at the first; and the manifest."""
    from patchkit.demo.history import HistoryBuilder

    b = HistoryBuilder(tmp_path / "repo")
    b.commit(first[0], f"Model {first[0]}", {"pkg/model.py": first[1]})
    b.commit(second[0], f"Model {second[0]}", {"pkg/model.py": second[1]})
    history = b.build()
    git(history.path, "checkout", "-q", history[first[0]])
    return history.shas, history.path, write_manifest(tmp_path / "kit")


def test_bisect_exit_codes(tmp_path, capsys) -> None:
    history, repo, manifest = two_models(tmp_path, ("good", MODEL_V1), ("broken", MODEL_BROKEN))
    # Unpatched but patchable: the setup is wrong, not the commit.
    assert guard(capsys, repo, manifest, "--bisect").code == 128
    apply(capsys, repo, manifest)
    assert guard(capsys, repo, manifest, "--bisect").code == 0
    # Tampered: a patched file edited by hand.
    target = repo / "pkg/model.py"
    target.write_text(target.read_text().replace("return self.language_model.hook()", "return None"))
    data = guard(capsys, repo, manifest, "--bisect", "--json").json
    assert data["exit_code"] == 128 and data["verdict"] == "abort"
    assert all(r["status"] != "FAIL" for r in data["commit_results"])
    assert run_cli(capsys, "revert", "-m", manifest, "--repo", repo, "--force").code == 0
    # A commit where a required patch FAILs (read from its blobs): skip.
    git(repo, "checkout", "-q", history["broken"])
    r = guard(capsys, repo, manifest, "--bisect")
    assert r.code == 125
    assert "exit 125: a required patch cannot apply at this commit, git bisect skips it" in r.out
    # Without --bisect the same tree is a plain refusal.
    assert guard(capsys, repo, manifest).code == 1
    # Dirty at a FAIL commit is still a skip: the commit cannot be measured whatever the setup.
    (repo / "x.txt").write_text("x\n")
    assert guard(capsys, repo, manifest, "--bisect").code == 125


# -- the API ----------------------------------------------------------------------------------------------


def test_require_raises_and_passes_as_documented(tree, capsys, tmp_path) -> None:
    from patchkit import load_manifest, open_repo
    from patchkit.guard import GuardReport, evaluate_guard, require

    repo, manifest = tree
    with pytest.raises(PartialApplicationError) as caught:
        require(repo, manifest)
    assert isinstance(caught.value, GuardError) and isinstance(caught.value, PatchkitError)
    assert isinstance(caught.value, RefusedError) and caught.value.exit_code == 1
    report = caught.value.report
    assert isinstance(report, GuardReport) and not report.ok
    assert [c.check for c in report.failed] == ["patches"]
    assert "required patches not in place: typing (not applied), hook (not applied)" in str(caught.value)

    apply(capsys, repo, manifest)
    ok = require(str(repo), str(manifest))
    assert ok.ok and ok.commit is not None and ok.commit.sha == head_sha(repo)
    assert require(open_repo(repo), load_manifest(manifest)).ok

    (repo / "stray.txt").write_text("x\n")
    with pytest.raises(GuardError) as caught:
        require(repo, manifest)
    assert not isinstance(caught.value, PartialApplicationError)
    assert [c.check for c in caught.value.report.failed] == ["clean"]
    assert require(repo, manifest, allow_dirty=True).ok
    assert not evaluate_guard(repo, manifest).ok  # never raises for a failed check

    python = make_venv(tmp_path / "venv", tmp_path)  # pkg is not importable there
    with pytest.raises(GuardError) as caught:
        require(repo, manifest, python=str(python), imports=["pkg"], allow_dirty=True)
    assert [c.check for c in caught.value.report.failed] == ["import:pkg"]


def test_require_is_exported_from_patchkit_guard() -> None:
    import patchkit.guard as guard_module

    assert set(guard_module.__all__) == {
        "Check", "GuardError", "GuardReport", "PartialApplicationError", "evaluate_guard", "require",
    }  # fmt: skip
    for name in guard_module.__all__:
        assert getattr(guard_module, name) is not None
    assert "require(repo, manifest, *, python=None, imports=(), allow_dirty=False" in (guard_module.__doc__ or "")


def test_guard_script_runs_as_a_subprocess(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    r = run_script("guard", "-m", manifest, "--repo", repo, "--json")
    assert r.code == 0 and json.loads(r.out)["ok"]
    assert porcelain(repo) == [" M pkg/model.py"]


def test_sys_executable_probe_for_api_without_python(tree, capsys) -> None:
    from patchkit.guard import evaluate_guard

    repo, manifest = tree
    report = evaluate_guard(repo, manifest, imports=["json"])
    assert report.interpreter is not None and report.interpreter.python == sys.executable
    assert not report.check("import:json").ok  # the stdlib's json is not in this tree
    assert sysconfig.get_paths()["stdlib"] in (report.check("import:json").details["location"] or "")


def test_tree_patched_at_another_commit_is_not_clean(tmp_path, capsys) -> None:
    """HEAD moved under a patched file (git reset --soft): the file is not HEAD's content plus the patches."""
    from histories import MODEL_V2

    history, repo, manifest = two_models(tmp_path, ("v1", MODEL_V1), ("v2", MODEL_V2))
    apply(capsys, repo, manifest)
    git(repo, "reset", "-q", "--soft", history["v2"])
    data = guard(capsys, repo, manifest, "--json").json
    assert failed(data) == ["clean"]
    assert check_of(data, "clean")["details"]["changes"] == [
        {"path": "pkg/model.py", "change": f"patched at {history['v1'][:10]}, not at HEAD"}
    ]


def test_schema_check_is_remembered_per_manifest_bytes(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    probe = (
        "import sys\nfrom patchkit.cli import main\n"
        f"code = main(['guard', '-m', {str(manifest)!r}, '--repo', {str(repo)!r}])\n"
        "print('JSONSCHEMA', 'jsonschema' in sys.modules, code)\n"
    )

    def run_guard() -> str:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
        return out.splitlines()[-1]

    assert run_guard() == "JSONSCHEMA True 0"  # first run: validated, remembered
    assert run_guard() == "JSONSCHEMA False 0"  # same bytes: the schema check is not repeated
    assert list((repo / ".git/patchkit/schema-checked").iterdir())
    # Other bytes are validated again: a schema error is still reported.
    manifest.write_text(manifest.read_text().replace('op = "add-methods"', 'op = "add-methodz"'))
    r = guard(capsys, repo, manifest)
    assert r.code == 2 and "add-methodz" in r.err


def test_files_of_another_applied_manifest_warn_and_edits_to_them_fail(tmp_path, capsys) -> None:
    from helpers import Kit

    repo = make_repo(tmp_path / "repo", {"pkg/model.py": MODEL_V1, "pkg/util.py": "X = 1\n"})
    manifest = write_manifest(tmp_path / "kit")
    extra = Kit(tmp_path / "kit2", name="extra").write(
        [{"id": "os", "op": "ensure-import", "file": "pkg/util.py", "import": "import os"}]
    )
    apply(capsys, repo, manifest)
    apply(capsys, repo, extra)
    data = guard(capsys, repo, manifest, "--json").json
    assert data["exit_code"] == 0
    clean = check_of(data, "clean")
    assert clean["severity"] == "warning" and clean["details"]["other_manifests"] == {"extra": ["pkg/util.py"]}
    assert "also patched by other manifests (extra: pkg/util.py)" in clean["message"]
    (repo / "pkg/util.py").write_text("import os\nX = 2\n")
    data = guard(capsys, repo, manifest, "--json").json
    assert failed(data) == ["clean"]
    assert check_of(data, "clean")["details"]["changes"] == [
        {"path": "pkg/util.py", "change": "edited after manifest extra patched it"}
    ]


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_discover_reads_the_object_format_in_its_one_process(tmp_path, object_format) -> None:
    from patchkit.git import Repo

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", f"--object-format={object_format}", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "a")
    found = Repo.discover(repo / ".git")
    assert found.object_format == object_format and found.root is None
    found = Repo.discover(repo)
    assert found.object_format == object_format and found.root == repo.resolve()
    assert found.hash_blob(b"a\n") == git(repo, "rev-parse", "HEAD:a.txt").strip()


def test_a_builtin_module_is_never_inside_the_tree(tree, capsys, monkeypatch) -> None:
    """A built-in module's origin is "built-in", not a path: even with a file of that name in cwd."""
    from patchkit.guard import evaluate_guard

    repo, manifest = tree
    monkeypatch.chdir(repo)
    (repo / "built-in").write_text("")
    report = evaluate_guard(repo, manifest, imports=["sys"], allow_dirty=True)
    check = report.check("import:sys")
    assert not check.ok and check.details["location"] == "built-in" and check.details["in_tree"] is None


# -- what the hardened engine reports: interrupted runs, out-of-date payloads ------------------------


def test_interrupted_run_fails_saying_how_to_recover(tree, capsys) -> None:
    """Killed after every file and the record landed, before the journal went: the tree looks patched."""
    repo, manifest = tree
    assert run_killed("txn:state", "apply", "-m", manifest, "--repo", repo).returncode == 137
    data = guard(capsys, repo, manifest, "--json").json
    assert data["exit_code"] == 1 and failed(data) == ["record"]
    record = check_of(data, "record")
    assert record["details"]["interrupted"]["files"] == ["pkg/model.py"]
    assert "a patchkit run was killed while writing pkg/model.py" in record["message"]
    assert record["message"].endswith(f"run `patchkit apply -m {manifest} --repo {repo}` to recover, then guard again")
    assert guard(capsys, repo, manifest, "--bisect").code == 128  # the setup, not the commit
    # Recovering as told makes the guard pass.
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    assert guard(capsys, repo, manifest).code == 0


def test_interrupted_move_fails_naming_the_way_back(tmp_path, capsys) -> None:
    """`apply --commit` killed after patching the new commit: HEAD moved off the user's branch."""
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "kit")
    repo = history.path
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"]).code == 0
    git(repo, "checkout", "-q", "-b", "work")
    killed = run_killed("move:applied", "apply", "-m", manifest, "--repo", repo, "--commit", history["fix"])
    assert killed.returncode == 137
    data = guard(capsys, repo, manifest, "--json", "--bisect").json
    assert failed(data) == ["record"] and data["exit_code"] == 128
    moved = check_of(data, "record")
    assert moved["details"]["interrupted"]["moved_from"] == {"commit": history["add"], "branch": "work"}
    assert (
        "`git checkout work`" in moved["message"]
        and f"`patchkit apply -m {manifest} --repo {repo}` to recover" in moved["message"]
    )


def test_out_of_date_payload_fails_run_apply_to_update(tree, capsys) -> None:
    repo, manifest = tree
    apply(capsys, repo, manifest)
    edit_payload(manifest)
    data = guard(capsys, repo, manifest, "--json").json
    assert failed(data) == ["patches", "record"]  # and the record is of the older manifest
    patches = check_of(data, "patches")
    assert patches["details"]["out_of_date"] == ["hook"]
    assert patches["message"] == (
        "out of date: hook holds an older version of its payload that patchkit wrote; "
        f"run `patchkit apply -m {manifest} --repo {repo}` to update it"
    )
    assert check_of(data, "record")["message"].endswith(
        f"`patchkit apply -m {manifest} --repo {repo}` updates it"
    )  # not revert first
    assert guard(capsys, repo, manifest, "--bisect").code == 128
    apply(capsys, repo, manifest)
    assert guard(capsys, repo, manifest).code == 0


def test_out_of_date_optional_patch_fails_too(tree, capsys) -> None:
    """An optional patch not in place is a warning; one holding a stale payload is not: that code runs."""
    repo, manifest = tree
    manifest.write_text(
        manifest.read_text().replace('on_conflict = "keep-upstream"', 'on_conflict = "keep-upstream"\nrequired = false')
    )
    apply(capsys, repo, manifest)
    edit_payload(manifest)
    data = guard(capsys, repo, manifest, "--json").json
    assert "patches" in failed(data) and check_of(data, "patches")["details"]["out_of_date"] == ["hook"]
    status = run_cli(capsys, "status", "-m", manifest, "--repo", repo, "--json")
    assert status.code == 1 and status.json["complete"] is False and status.json["out_of_date"] == ["hook"]


def test_guard_off_a_terminal_never_imports_rich(capsys, tree: tuple[Path, Path]) -> None:
    """The guard runs before every benchmark: off a terminal it prints its tables without loading rich
    (``patchkit.views.grid.Grid``, whose plain lines tests/test_render.py holds to rich's)."""
    repo, manifest = tree
    apply(capsys, repo, manifest)
    probe = (
        "import sys\n"
        "from patchkit.cli import main\n"
        "code = main(['guard', '-m', sys.argv[1], '--repo', sys.argv[2]])\n"
        "rich = sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.'))\n"
        "site = sorted(m for m in sys.modules if m.startswith(('patchkit.proof', 'patchkit.commands.guard_site')))\n"
        "sys.stderr.write(f'code={code} rich={rich} site={site}')\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(manifest), str(repo)], capture_output=True, text=True)
    # Nor the site verification of `guard --site` (RECORDs, digests, the proof's accounting).
    assert proc.stderr == "code=0 rich=[] site=[]", proc.stderr
    assert "GUARD OK" in proc.stdout and "check    result  message" in proc.stdout
