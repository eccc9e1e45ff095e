"""Exit codes, one-line errors, crash reports, git's environment, unwrapped output.

Every test here runs real git repositories and, where the test is about what a
user sees, the installed ``patchkit`` console script writing to a pipe.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import TARGET, d, git, make_repo, porcelain, run_cli, run_script, scenario, src

MODEL = d("""
    class Model:
        def forward(self, x):
            return x


    EntryClass = Model
""")

METHODS = {"m.py": "class Model:\n    def extra(self):\n        return 1\n"}
ADD_EXTRA = [{"id": "extra", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")}]


def one_error_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("patchkit: error: "), err
    assert "Traceback" not in err
    return err


# -- 12. --repo at a regular file: exit 2, one line, for every command ---------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["apply"],
        ["apply", "--commit", "HEAD"],
        ["revert"],
        ["status"],
        ["check"],
        ["explain", "extra"],
    ],
)
def test_repo_pointing_at_a_regular_file_is_bad_input(tmp_path, argv):
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("hello\n")
    r = run_script(*argv, "-m", sc.kit.manifest, "--repo", not_a_dir)
    assert r.code == 2, r.err
    line = one_error_line(r.err)
    assert str(not_a_dir) in line and "not a directory" in line
    assert "internal error" not in line


def test_digest_repo_pointing_at_a_regular_file_is_bad_input(tmp_path):
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("hello\n")
    r = run_script("digest", "--repo", not_a_dir, "--commit", "HEAD", TARGET, "Model")
    assert r.code == 2, r.err
    one_error_line(r.err)


# -- 17. click's usage errors are the documented single line --------------------------------


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["apply", "--no-such-option"], "--no-such-option"),
        (["apply"], "--manifest"),
        (["no-such-command"], "no-such-command"),
        (["check", "-m", "x", "--progress", "--json", "--commit"], "--commit"),
        (["apply", "-m", "x", "--wait", "soon"], "soon"),
    ],
)
def test_click_usage_errors_are_one_line(argv, wanted):
    r = run_script(*argv)
    assert r.code == 2
    line = one_error_line(r.err)
    assert wanted in line
    assert "Usage:" not in line and "Try '" not in line
    assert "--help" in line  # what to do next


# -- 16. off a terminal, nothing is hard-wrapped ------------------------------------------------


def test_long_messages_are_not_wrapped_in_a_pipe(tmp_path, monkeypatch):
    long_name = "Model" + "VeryLong" * 40  # a message far wider than any terminal
    sc = scenario(
        tmp_path,
        {TARGET: MODEL},
        [
            {
                "id": "gone",
                "op": "add-methods",
                "file": TARGET,
                "class": long_name,
                "source": src("m.py"),
                "hints": {"CLASS_NOT_FOUND": "point `class` at the new name " + "and read this " * 30 + "end"},
            }
        ],
        {"m.py": f"class {long_name}:\n    def extra(self):\n        return 1\n"},
    )
    monkeypatch.setenv("COLUMNS", "80")  # ignored off a terminal
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 1
    lines = r.out.splitlines()
    row = [line for line in lines if line.startswith("1  gone")]
    assert len(row) == 1, r.out
    assert row[0].endswith(f"class {long_name} is not defined in {TARGET}; classes in this file: Model (line 1)")
    hint = [line for line in lines if "hint: " in line]
    assert len(hint) == 1 and hint[0].endswith("and read this end"), r.out
    assert all(len(line) == len(line.rstrip()) for line in lines)
    assert len(lines) == 5  # header, column titles, row, hint, verdict: nothing folded onto extra lines
    verdict = lines[-1]
    assert verdict.startswith("REFUSED: ") and verdict.endswith("nothing was written."), r.out


# -- 19. crash reports ----------------------------------------------------------------------------


def _crash_in_status(monkeypatch):
    import patchkit.commands.status as status_cmd

    def boom(*args, **kwargs):
        raise RuntimeError("boom in status")

    monkeypatch.setattr(status_cmd, "status_worktree", boom)


def test_internal_error_writes_a_crash_log_under_the_git_dir(tmp_path, capsys, monkeypatch):
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    _crash_in_status(monkeypatch)
    r = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 3
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert "--debug" not in r.err
    match = re.search(r"are in (\S+\.log);", r.err)
    assert match, r.err
    log = Path(match.group(1))
    assert log.parent == (sc.repo / ".git" / "patchkit")
    text = log.read_text()
    assert f"command: patchkit status -m {sc.kit.manifest} --repo {sc.repo}" in text
    for name in ("patchkit:", "python:", "libcst:", "git: git version", "platform:"):
        assert name in text
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom in status" in text
    assert porcelain(sc.repo) == []  # the log is in the git dir, not in the work tree


def test_crash_log_follows_a_relative_repo_and_falls_back_to_the_cache_dir(tmp_path, capsys, monkeypatch):
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    _crash_in_status(monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    nowhere = tmp_path / "not-a-repo"
    nowhere.mkdir()
    monkeypatch.chdir(nowhere)
    # status discovers the repo; the crash happens after; --repo names no repository here
    r = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", "../repo")
    assert r.code == 3
    log = Path(re.search(r"are in (\S+\.log);", r.err).group(1))
    assert log.parent == sc.repo / ".git" / "patchkit"
    r = run_cli(capsys, "--debug", "status", "-m", sc.kit.manifest, "--repo", str(sc.repo))
    assert "Traceback" in r.err, r.err  # --debug still shows it
    from patchkit.crash import write_report

    try:
        raise ValueError("no repo here")
    except ValueError as exc:
        path = write_report(exc, ["status", "-m", "x"])
    assert path is not None and path.parent == cache / "patchkit"
    assert "ValueError: no repo here" in path.read_text()


# -- 20. git runs with an allowlisted environment ---------------------------------------------


def test_git_environment_keeps_only_allowlisted_git_variables():
    from patchkit.git import git_environment

    env = git_environment(
        {
            "PATH": "/bin",
            "HOME": "/h",
            "LANG": "de_DE.UTF-8",
            "SSH_AUTH_SOCK": "/s",
            "https_proxy": "http://p",
            "XDG_CONFIG_HOME": "/x",
            "GIT_SSH_COMMAND": "ssh -i k",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/g",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.x",
            "GIT_CONFIG_VALUE_0": "y",
            "GIT_DIR": "/other/.git",
            "GIT_WORK_TREE": "/other",
            "GIT_INDEX_FILE": "/other/index",
            "GIT_OBJECT_DIRECTORY": "/other/objects",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/other/objects",
            "GIT_NAMESPACE": "ns",
            "GIT_CEILING_DIRECTORIES": "/",
            "GIT_COMMON_DIR": "/other/.git",
        }
    )
    assert set(env) == {
        "PATH",
        "HOME",
        "LANG",
        "SSH_AUTH_SOCK",
        "https_proxy",
        "XDG_CONFIG_HOME",
        "GIT_SSH_COMMAND",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
    }


@pytest.mark.slow
@pytest.mark.parametrize("variables", [("GIT_DIR", "GIT_WORK_TREE"), ("GIT_OBJECT_DIRECTORY",), ("GIT_INDEX_FILE",)])
def test_git_variables_of_another_repository_do_not_redirect_patchkit(tmp_path, variables):
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    other = make_repo(tmp_path / "other", {"unrelated.py": "x = 1\n"})
    values = {
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects"),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
    }
    env = {name: values[name] for name in variables}
    before_other = git(other, "status", "--porcelain")
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        check = run_script("check", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
        applied = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
        status = run_script("status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert check.code == 0, check.err
    assert [r["status"] for r in check.json["commits"][0]["results"]] == ["APPLY"]
    assert applied.code == 0, applied.err
    assert applied.json["written"] == [TARGET]
    assert status.code == 0 and status.json["complete"] is True, status.out
    assert "def extra" in (sc.repo / TARGET).read_text()
    assert git(other, "status", "--porcelain") == before_other


# -- 17. smaller items -------------------------------------------------------------------------------


def test_worktree_creation_held_by_another_run_is_busy(tmp_path):
    from patchkit.engine.commit_apply import worktree_lock_dir
    from patchkit.engine.lock import repo_lock
    from patchkit.git import Repo

    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    wt = tmp_path / "wt"
    repo = Repo.discover(sc.repo)
    with repo_lock(worktree_lock_dir(repo, wt.resolve()), what="patchkit apply --worktree (test holder)"):
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--commit", "HEAD", "--worktree", wt)
    assert r.code == 4, r.err
    line = one_error_line(r.err)
    assert "test holder" in line and "--wait" in line
    assert not wt.exists()


@pytest.mark.slow
def test_two_worktree_runs_racing_for_one_new_dir_never_exit_2(tmp_path):
    import subprocess

    from helpers import patchkit_script

    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    for attempt in range(3):
        wt = tmp_path / f"wt{attempt}"
        argv = [patchkit_script(), "apply", "-m", str(sc.kit.manifest), "--repo", str(sc.repo)]
        argv += ["--commit", "HEAD", "--worktree", str(wt)]
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        results = [(p.wait(), p.stderr.read().decode()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        codes = sorted(code for code, _ in results)
        assert codes in ([0, 0], [0, 4]), results
        assert "def extra" in (wt / TARGET).read_text()


def test_bare_repository_hints_name_only_options_the_command_has(tmp_path):
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(sc.repo), str(bare))
    for verb in ("status", "revert"):
        r = run_script(verb, "-m", sc.kit.manifest, "--repo", bare)
        assert r.code == 2
        line = one_error_line(r.err)
        assert "is a bare repository" in line
        assert "--commit" not in line and "--worktree" not in line, line
        assert "--repo DIR" in line
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", bare)
    assert "--worktree DIR" in one_error_line(r.err)


@pytest.mark.slow
def test_refusal_in_a_worktree_does_not_suggest_worktree(tmp_path):
    sc = scenario(tmp_path, {TARGET: MODEL, "README.md": "hi\n"}, ADD_EXTRA, METHODS)
    wt = tmp_path / "wt"
    first = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--commit", "HEAD", "--worktree", wt)
    assert first.code == 0, first.err
    (wt / "README.md").write_text("my own edit\n")
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--commit", "HEAD", "--worktree", wt)
    assert r.code == 1
    first_line = r.err.splitlines()[0]
    assert first_line.startswith("patchkit: error: ") and f"the work tree {wt}" in first_line
    assert "use --worktree DIR" not in r.err and "give --worktree a new directory" in first_line
    main = run_script("apply", "-m", sc.kit.manifest, "--repo", wt, "--commit", "HEAD")
    assert main.code == 1 and "use --worktree DIR" in main.err  # without --worktree the suggestion stays


def test_manifest_that_is_a_directory_says_so(tmp_path):
    folder = tmp_path / "some_dir.toml"
    folder.mkdir()
    r = run_script("validate", "-m", folder)
    assert r.code == 2
    line = one_error_line(r.err)
    assert "is a directory" in line and "does not exist" not in line


def test_digest_honours_repo(tmp_path):
    repo = make_repo(tmp_path / "repo", {TARGET: MODEL})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_script("digest", "--repo", repo, TARGET, "Model.forward", cwd=elsewhere)
    assert r.code == 0, r.err
    at_commit = run_script("digest", "--repo", repo, "--commit", "HEAD", TARGET, "Model.forward", cwd=elsewhere)
    assert r.out == at_commit.out and r.out.startswith("sha256:")
    missing = run_script("digest", "--repo", repo, "pkg/nope.py", "f", cwd=elsewhere)
    assert missing.code == 2 and str(repo / "pkg/nope.py") in missing.err


def test_explain_does_not_say_applies_for_upstream_provides(tmp_path):
    upstream = MODEL.replace("        return x\n", "        return x\n\n    def extra(self):\n        return 2\n")
    sc = scenario(
        tmp_path,
        {TARGET: upstream},
        [dict(ADD_EXTRA[0], on_conflict="keep-upstream")],
        METHODS,
    )
    r = run_script("explain", "-m", sc.kit.manifest, "extra", "--repo", sc.repo)
    assert r.code == 0, r.err
    assert "SKIP UPSTREAM_PROVIDES" in r.out
    assert " applies at " not in r.out
    assert r.out.rstrip().endswith(
        "is not needed (upstream provides it) at "
        + git(sc.repo, "rev-parse", "--short=10", "HEAD").strip()
        + ": there is no failure to explain."
    )


def test_status_of_an_all_optional_manifest_says_what_is_left_out(tmp_path):
    patches = [
        {"id": f"opt{i}", "op": "ensure-import", "file": TARGET, "import": f"import mod{i}", "required": False}
        for i in range(7)
    ]
    sc = scenario(tmp_path, {TARGET: "import mod0\nimport mod1\n\n" + MODEL}, patches)
    r = run_script("status", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 0
    verdict = r.out.rstrip().splitlines()[-1]
    assert verdict == (
        "COMPLETE: the manifest has no required patches; 5 of 7 optional patches not in place: "
        "opt2 (not applied), opt3 (not applied), opt4 (not applied), opt5 (not applied), opt6 (not applied)."
    ), verdict


# -- 12. a file that cannot be written is a refusal, not a crash ---------------------------------


@contextmanager
def read_only(folder: Path) -> Iterator[str]:
    """A directory nobody can create files in: chmod for a user, the immutable flag for root."""
    import shutil
    import subprocess

    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield "Permission denied"
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("running as root without chattr +i: no way to make a directory read-only")
    try:
        yield "Operation not permitted"
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.slow
def test_read_only_directory_is_a_refusal_with_the_table_and_the_path(tmp_path):
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    before = (sc.repo / TARGET).read_bytes()
    with read_only(sc.repo / "pkg") as why:
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
        js = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert r.code == 1, r.err
    assert r.err == ""
    lines = r.out.splitlines()
    assert any(line.startswith("1  extra") and " APPLY " in line for line in lines), r.out
    assert lines[-1].startswith(f"REFUSED: cannot write {TARGET}: {why}; nothing was written; ")
    assert js.code == 1 and js.json["refused"] is True and js.json["written"] == []
    assert js.json["unwritable"] == f"{TARGET}: {why}"
    assert (sc.repo / TARGET).read_bytes() == before
    assert porcelain(sc.repo) == []
    assert run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0  # writable again: it applies


def test_report_output_that_cannot_be_a_file_is_bad_input_with_its_cause(tmp_path, capsys):
    """#47 item 10: `report -o /nonexistent/dir/r.html` and `-o <a directory>` exited 1 advising permissions."""
    sc = scenario(tmp_path, {TARGET: MODEL}, ADD_EXTRA, METHODS)
    common = ["report", "-m", sc.kit.manifest, "--repo", sc.repo, "--store", tmp_path / "none.sqlite"]
    folder = tmp_path / "out"
    folder.mkdir()
    blocker = tmp_path / "a-file"
    blocker.write_text("x\n")
    cases = {
        tmp_path / "missing" / "dir" / "r.html": f"the directory {tmp_path / 'missing' / 'dir'} does not exist",
        folder: f"-o {folder} is a directory; give a file path, e.g. -o {folder / 'report.html'}",
        blocker / "r.html": f"{blocker} is a file, not a directory",
    }
    for output, cause in cases.items():
        r = run_cli(capsys, *common, "-o", output)
        line = one_error_line(r.err)
        assert r.code == 2 and cause in line, line
        assert "permission" not in line and "writable" not in line
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in {"repo", "kit"}) == ["a-file", "out"]
    assert list(folder.iterdir()) == []
    good = run_cli(capsys, *common, "-o", folder / "r.html")
    assert good.code == 0 and (folder / "r.html").exists(), good.err
