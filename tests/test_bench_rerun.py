"""Re-running is normal, and nothing secret is kept: real benches of the stand-in server in a repository
that ignores nothing (bench's version file and the server's bytecode show as untracked files there)."""

from __future__ import annotations

import pytest
from bench_helpers import bench_table, build_history, write_bench_kit
from helpers import run_cli

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

PLANTED = "hf_planted_0123456789abcdefPLANTED"
CREDENTIAL = "db-credential-PLANTED-9876543210"


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("bare") / "repo", ignore=False)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    table = bench_table(inherit=["PATH", "HOME", "HF_TOKEN", "SGLANG_DB_CREDENTIAL"])
    return write_bench_kit(tmp_path_factory.mktemp("kit"), bench=table)


def bench(capsys, history, manifest, root, *args):
    result = run_cli(
        capsys, "bench", "-m", manifest, "--repo", history.path, "--commit", history["docs"], "--profile",
        "baseline", "--worktree-root", root, "--json", *args,
    )  # fmt: skip
    assert "Traceback" not in result.err
    return result


def test_a_second_bench_of_one_commit_is_ok_and_only_foreign_changes_refuse(capsys, history, manifest, tmp_path):
    root = tmp_path / "wts"
    first = bench(capsys, history, manifest, root)
    assert first.code == 0, first.err
    tree = root / history["docs"][:12]
    assert (tree / "python/sglang/_version.py").is_file()  # bench wrote it; nothing ignores it
    second = bench(capsys, history, manifest, root)
    assert second.code == 0, second.err
    (run,) = second.json["runs"]
    assert run["outcome"] == "ok"
    # the two runs of one commit: the same patched code was in place, nothing upstream between them
    same = run_cli(capsys, "compare", "--commit", history["docs"], "--commit", history["docs"], "--repo",
                   history.path, "--profile", "baseline")  # fmt: skip
    assert same.code == 0, same.err
    assert "upstream commits: none (A and B are the same commit)" in same.out
    assert "patch state changes: none" in same.out
    clean = next(c for c in run["guard"]["reports"][0]["checks"] if c["check"] == "clean")
    generated = clean["details"]["generated"]
    assert "python/sglang/_version.py" in generated
    caches = [p for p in generated if p != "python/sglang/_version.py"]
    assert caches and all("/__pycache__/" in p for p in caches)  # what the server's interpreter left
    # patchkit guard, which did not write them, still counts them.
    guard = run_cli(capsys, "guard", "-m", manifest, "--repo", tree, "--json")
    assert (
        "python/sglang/_version.py (untracked)"
        in next(c for c in guard.json["checks"] if c["check"] == "clean")["message"]
    )
    # Any other change refuses, naming the option; --allow-dirty lets it run and is recorded.
    (tree / "notes.txt").write_text("mine\n", encoding="utf-8")
    refused = bench(capsys, history, manifest, root)
    assert refused.code == 1
    (run,) = refused.json["runs"]
    assert run["outcome"] == "refused" and run["allow_dirty"] is False
    (detail,) = [d for d in run["details"] if "[clean]" in d]
    assert "1 change outside patchkit's edits: notes.txt (untracked)" in detail and "--allow-dirty" in detail
    allowed = bench(capsys, history, manifest, root, "--allow-dirty")
    assert allowed.code == 0, allowed.err
    (run,) = allowed.json["runs"]
    assert run["outcome"] == "ok" and run["allow_dirty"] is True


def test_a_planted_token_is_in_no_file_under_the_git_dir(capsys, history, manifest, tmp_path, monkeypatch):
    """HF_TOKEN, and a credential in a family the probe records (SGLANG_), are in no file bench writes."""
    monkeypatch.setenv("HF_TOKEN", PLANTED)
    monkeypatch.setenv("SGLANG_DB_CREDENTIAL", CREDENTIAL)
    result = run_cli(
        capsys, "bench", "-m", manifest, "--repo", history.path, "--commit", history["tip"], "--profile", "eagle3",
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    (run,) = result.json["runs"]
    assert run["env"]["HF_TOKEN"] == "<redacted>"  # named, so a reader knows it was passed
    assert run["env"]["SGLANG_DB_CREDENTIAL"] == "<redacted>"
    server = next(p for p in run["proof"]["processes"] if p["start_env"].get("SGLANG_DB_CREDENTIAL"))
    assert server["start_env"]["SGLANG_DB_CREDENTIAL"] == "<redacted>"  # the probe saw it, and redacted it
    assert PLANTED not in result.out and CREDENTIAL not in result.out
    listed = run_cli(capsys, "runs", "--repo", history.path, "--json")
    assert PLANTED not in listed.out and CREDENTIAL not in listed.out
    git_dir = history.path / ".git"
    files = [p for p in git_dir.rglob("*") if p.is_file()]
    assert any(p.name == "bench.sqlite" for p in files) and any(p.name == "server.log" for p in files)
    holding = [str(p) for p in files if PLANTED.encode() in p.read_bytes() or CREDENTIAL.encode() in p.read_bytes()]
    assert holding == []


def test_a_second_bisect_over_reused_worktrees_still_answers(capsys, history, manifest, tmp_path):
    """The user's report: the second bisect ended with "NO RESULT: --good ... is not good (skip)"."""
    args = (
        "bisect", "-m", manifest, "--repo", history.path, "--good", history["restore-model"], "--bad",
        history["slow"], "--metric", "output_tok_s", "--ratio", "0.9", "--worktree-root", tmp_path / "wts", "--json",
    )  # fmt: skip
    for _ in range(2):
        result = run_cli(capsys, *args)
        assert result.code == 0, result.err
        assert result.json["first_bad"]["commit"] == history["slow"]
        assert result.json["allow_dirty"] is False


def test_a_secret_rendered_into_the_server_command_is_not_in_the_progress_lines(capsys, history, tmp_path):
    """An API key passed on the server's command line ({api_key}): the 'starting server' line on stderr,
    which nohup and CI logs keep, shows the command with the key redacted, as the record does."""
    key = "sk-live-PLANTED-0123456789"
    base = bench_table()
    table = bench_table(server=base["server"] + " --api-key {api_key}", vars={**base["vars"], "api_key": "unset"})
    manifest = write_bench_kit(tmp_path / "kit", bench=table)
    result = run_cli(
        capsys, "bench", "-m", manifest, "--repo", history.path, "--commit", history["docs"], "--profile",
        "baseline", "--worktree-root", tmp_path / "wts", "--set", f"api_key={key}", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    starting = [line for line in result.err.splitlines() if "starting server" in line]
    assert starting and all("--api-key '<redacted>'" in line or "--api-key <redacted>" in line for line in starting)
    assert key not in result.err and key not in result.out
