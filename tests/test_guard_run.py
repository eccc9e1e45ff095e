"""patchkit run, a real `git bisect run` through it, and the pytest plugin (through pytester)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from helpers import git, head_sha, make_repo, patchkit_script, porcelain, run_script
from histories import MODEL_BROKEN, MODEL_V1, MODEL_V2, write_manifest

from patchkit.demo.history import HistoryBuilder
from patchkit.engine.record import load_record
from patchkit.git import Repo

pytest_plugins = ["pytester"]

ENV_SCRIPT = """import json, os, sys
print("bench out")
print("bench err", file=sys.stderr)
keys = ("PATCHKIT_COMMIT", "PATCHKIT_MANIFEST", "PATCHKIT_MANIFEST_DIGEST", "PATCHKIT_GUARD")
with open(sys.argv[1], "w") as f:
    json.dump({k: os.environ.get(k) for k in keys} | {"hooked": "def hook" in open("pkg/model.py").read()}, f)
sys.exit(int(sys.argv[2]))
"""


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", {"README.md": "upstream\n", "pkg/model.py": MODEL_V1})
    return repo, write_manifest(tmp_path / "kit")


def run(repo: Path, manifest: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """`patchkit run` as a real subprocess, from inside the repository."""
    return subprocess.run(
        [patchkit_script(), "run", "-m", str(manifest), *map(str, args)],
        cwd=repo,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_run_passes_output_exit_code_and_environment(tree, tmp_path) -> None:
    repo, manifest = tree
    script, seen = tmp_path / "bench.py", tmp_path / "seen.json"
    script.write_text(ENV_SCRIPT)
    proc = run(repo, manifest, "--apply", "--", sys.executable, script, seen, "7")
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout == "bench out\n"
    assert "bench err\n" in proc.stderr
    assert proc.stderr.startswith(f"patchkit run: guard ok (manifest hooks at {head_sha(repo)}); running in {repo}: ")
    from patchkit.manifest import load_manifest

    assert json.loads(seen.read_text()) == {
        "PATCHKIT_COMMIT": head_sha(repo),
        "PATCHKIT_MANIFEST": "hooks",
        "PATCHKIT_MANIFEST_DIGEST": load_manifest(manifest).digest,
        "PATCHKIT_GUARD": "ok",
        "hooked": True,  # the command ran on the patched tree
    }
    # What --apply wrote is reverted once the command exits: the tree is clean again.
    assert porcelain(repo) == []
    assert load_record(Repo.discover(repo), "hooks") is None


def test_the_command_runs_in_the_tree_repo_names_not_where_patchkit_started(tree, tmp_path) -> None:
    """#47 item 4: `run --repo WT -- sh -c 'pwd; git status'` ran in the caller's directory (`fatal: not a git
    repository`), where --help says the command runs in the tree."""
    repo, manifest = tree
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [patchkit_script(), "run", "-m", str(manifest), "--repo", str(repo), "--apply", "--",
         "sh", "-c", "pwd; git status --porcelain"],
        cwd=elsewhere, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(repo.resolve()), " M pkg/model.py"]  # in the tree, patched
    assert f"running in {repo.resolve()}: sh -c " in proc.stderr
    assert porcelain(repo) == []
    # A relative command is looked up in the tree too, and a missing one says where it was looked for.
    (repo / "bench.sh").write_text("#!/bin/sh\npwd\n")
    (repo / "bench.sh").chmod(0o755)
    git(repo, "add", "bench.sh")
    git(repo, "commit", "-qm", "bench script")
    proc = subprocess.run(
        [patchkit_script(), "run", "-m", str(manifest), "--repo", str(repo), "--apply", "--", "./bench.sh"],
        cwd=elsewhere, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == f"{repo.resolve()}\n", proc.stderr
    proc = subprocess.run(
        [patchkit_script(), "run", "-m", str(manifest), "--repo", str(repo), "--apply", "--", "./missing.sh"],
        cwd=elsewhere, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2
    assert f"command not found: ./missing.sh (a relative path is looked up in {repo.resolve()}" in proc.stderr


@pytest.mark.slow
def test_keep_keeps_the_edits(tree, tmp_path) -> None:
    repo, manifest = tree
    script, seen = tmp_path / "bench.py", tmp_path / "seen.json"
    script.write_text(ENV_SCRIPT)
    assert run(repo, manifest, "--apply", "--keep", "--", sys.executable, script, seen, "0").returncode == 0
    assert porcelain(repo) == [" M pkg/model.py"]
    # Already patched: a second --apply writes nothing, so it reverts nothing either.
    assert run(repo, manifest, "--apply", "--", sys.executable, script, seen, "0").returncode == 0
    assert porcelain(repo) == [" M pkg/model.py"]


@pytest.mark.slow
def test_failed_guard_never_starts_the_command(tree, tmp_path) -> None:
    repo, manifest = tree
    marker = tmp_path / "ran"
    proc = run(repo, manifest, "--", "touch", marker)  # not patched, no --apply
    assert proc.returncode == 1
    assert not marker.exists()
    assert "GUARD FAILED: 1 check failed (patches)." in proc.stderr
    assert f"patchkit run: the command was not started: touch {marker}" in proc.stderr
    assert proc.stdout == ""
    # With --apply but a dirty tree: the guard fails, the command does not run, the apply is undone.
    (repo / "notes.txt").write_text("x\n")
    proc = run(repo, manifest, "--apply", "--bisect", "--", "touch", marker)
    assert proc.returncode == 128 and not marker.exists()
    assert porcelain(repo) == ["?? notes.txt"]


@pytest.mark.slow
def test_run_without_a_command_is_bad_input(tree) -> None:
    repo, manifest = tree
    proc = run(repo, manifest)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "patchkit: error: no command to run; give it after --, e.g. patchkit run -m M -- ./bench.sh"
    )
    proc = run(repo, manifest, "--apply", "--", "no-such-command-here")
    assert proc.returncode == 2 and "command not found: no-such-command-here" in proc.stderr
    assert porcelain(repo) == []


def test_apply_refused_exits_125_under_bisect(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/model.py": MODEL_BROKEN})
    manifest = write_manifest(tmp_path / "kit")
    marker = tmp_path / "ran"
    proc = run(repo, manifest, "--apply", "--bisect", "--", "touch", marker)
    assert proc.returncode == 125
    assert "REFUSED: 2 required patches cannot apply (typing PARSE_ERROR, hook PARSE_ERROR)" in proc.stderr
    assert proc.stderr.endswith(
        f"patchkit run: the command was not started; exit 125: this commit cannot be patched, "
        f"git bisect skips it: touch {marker}\n"
    )
    assert run(repo, manifest, "--apply", "--", "touch", marker).returncode == 1
    assert not marker.exists() and porcelain(repo) == []


def test_ctrl_c_reverts_what_apply_wrote(tree, tmp_path) -> None:
    repo, manifest = tree
    started = tmp_path / "started"
    script = tmp_path / "slow.py"
    script.write_text(
        f"import time\nopen({str(started)!r}, 'w').close()\ntry:\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n    raise SystemExit(130)\n"
    )
    proc = subprocess.Popen(
        [patchkit_script(), "run", "-m", str(manifest), "--apply", "--", sys.executable, str(script)],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert porcelain(repo) == [" M pkg/model.py"]  # patched while the command runs
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert porcelain(repo) == []
    assert load_record(Repo.discover(repo), "hooks") is None


def test_sigterm_is_forwarded_and_the_tree_reverted(tree, tmp_path) -> None:
    repo, manifest = tree
    started = tmp_path / "started"
    script = tmp_path / "slow.py"
    script.write_text(f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(60)\n")
    proc = subprocess.Popen(
        [patchkit_script(), "run", "-m", str(manifest), "--apply", "--", sys.executable, str(script)],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.terminate()  # patchkit only: it forwards to the command
    proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert porcelain(repo) == []


# -- a real git bisect run ------------------------------------------------------------------------------------

BENCH = """#!/bin/sh
# The benchmark: refuses to measure an unguarded or unpatched tree, then "measures".
[ "$PATCHKIT_GUARD" = ok ] || exit 200
grep -q "def hook" pkg/model.py || exit 201
echo "measuring $PATCHKIT_COMMIT" >> "$LOG"
if grep -q "SLOW = True" pkg/speed.py; then exit 1; fi
exit 0
"""


def build_bisect_history(path: Path) -> tuple[dict[str, str], list[str]]:
    """13 commits: the model is added at c00; c06 breaks the patch target (syntax error, fixed at
    c07); c09 plants the slowdown.  Both halves have other churn, so bisect must search."""
    b = HistoryBuilder(path)
    b.commit("c00", "Add the model", {"pkg/model.py": MODEL_V1, "pkg/speed.py": "SLOW = False\n"})
    labels = ["c00"]
    for i in range(1, 13):
        label = f"c{i:02d}"
        files: dict[str, str] = {"pkg/other.py": f"X = {i}\n"}
        if i == 6:
            files = {"pkg/model.py": MODEL_BROKEN}
        elif i == 7:
            files = {"pkg/model.py": MODEL_V2}
        elif i == 9:
            files = {"pkg/speed.py": "SLOW = True\n"}
        subject = {6: "WIP: broken forward", 7: "Fix the syntax error", 9: "Planted: slow path"}.get(i, f"Churn {i}")
        b.commit(label, subject, files)
        labels.append(label)
    history = b.build()
    return history.shas, labels


@pytest.mark.slow
def test_git_bisect_run_finds_the_planted_commit_and_skips_the_unpatchable(tmp_path) -> None:
    repo = tmp_path / "repo"
    shas, _labels = build_bisect_history(repo)
    manifest = write_manifest(tmp_path / "kit")
    bench = tmp_path / "bench.sh"
    bench.write_text(BENCH)
    bench.chmod(0o755)
    log = tmp_path / "measured.log"
    env = dict(os.environ, LOG=str(log))
    git(repo, "bisect", "start", shas["c12"], shas["c00"])
    step = [patchkit_script(), "run", "-m", str(manifest), "--apply", "--bisect", "--", str(bench)]
    proc = subprocess.run(
        ["git", "bisect", "run", *step],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{shas['c09']} is the first bad commit" in proc.stdout
    bisect_log = git(repo, "bisect", "log")
    assert f"# first bad commit: [{shas['c09']}] Planted: slow path" in bisect_log
    assert f"git bisect skip {shas['c06']}" in bisect_log
    assert f"# skip: [{shas['c06']}] WIP: broken forward" in bisect_log
    measured = log.read_text().split()
    assert shas["c06"] not in measured  # skipped: never measured
    assert shas["c09"] in measured
    # Every step left the tree clean (or git bisect could not have moved on), and so does the last.
    git(repo, "bisect", "reset")
    assert porcelain(repo) == []


# -- the pytest plugin ------------------------------------------------------------------------------------


def test_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    found = [e for e in entry_points(group="pytest11") if e.name == "patchkit"]
    assert [e.value for e in found] == ["patchkit.guard.pytest_plugin"]


BENCH_TEST = """
def test_benchmark():
    print("BENCHMARK RAN")
"""


@pytest.mark.slow
def test_plugin_is_inert_without_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bench=BENCH_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "patchkit guard" not in result.stdout.str()


def test_plugin_aborts_the_session_on_an_unpatched_tree(pytester: pytest.Pytester, tree) -> None:
    repo, manifest = tree
    pytester.makepyfile(test_bench=BENCH_TEST)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-s", "--patchkit-manifest", str(manifest), "--patchkit-repo", str(repo)
    )
    assert result.ret == 1
    text = result.stdout.str() + result.stderr.str()
    assert "patchkit guard refused this tree (patches); no test was run" in text
    assert "required patches not in place: typing (not applied), hook (not applied)" in text
    assert "BENCHMARK RAN" not in text
    assert "1 passed" not in text
    # The report once, then why the session stopped: not again in pytest's "Exit:" line and closing banner.
    assert text.count("GUARD FAILED") == 1 and text.count("required patches not in place") == 1, text
    err = result.stderr.str()
    assert err.index("GUARD FAILED") < err.index("Exit: patchkit guard refused this tree"), err


@pytest.mark.slow
def test_plugin_runs_the_tests_on_a_patched_tree(pytester: pytest.Pytester, tree) -> None:
    repo, manifest = tree
    assert run_script("apply", "-m", manifest, "--repo", repo).code == 0
    pytester.makepyfile(test_bench=BENCH_TEST)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-s", "--patchkit-manifest", str(manifest), "--patchkit-repo", str(repo)
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"patchkit guard: ok, manifest hooks at {head_sha(repo)} *", "*BENCHMARK RAN*"])


def test_plugin_reports_bad_input_as_a_usage_error(pytester: pytest.Pytester, tree, tmp_path) -> None:
    repo, _manifest = tree
    pytester.makepyfile(test_bench=BENCH_TEST)
    result = pytester.runpytest("--patchkit-manifest", str(tmp_path / "missing.toml"), "--patchkit-repo", str(repo))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "patchkit: error:" in result.stderr.str()


@pytest.mark.slow
def test_options_after_the_command_belong_to_it_and_typos_do_not_run(tree, tmp_path) -> None:
    repo, manifest = tree
    assert run(repo, manifest, "--apply", "--keep").returncode == 2  # no command
    # Without `--`, everything from the first argument on is the command's, options included.
    proc = run(repo, manifest, "--apply", "sh", "-c", 'echo "$@"; exit 3', "x", "--keep", "--apply")
    assert proc.returncode == 3 and proc.stdout == "--keep --apply\n"
    assert porcelain(repo) == []  # --keep went to sh, not to patchkit: the edits were reverted
    marker = tmp_path / "ran"
    proc = run(repo, manifest, "--aply", "--", "touch", marker)
    assert proc.returncode == 2 and "No such option '--aply'" in proc.stderr and not marker.exists()
