"""The setuptools-scm version a worktree gets, and the version self-check against server_info."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest
from bench_helpers import bench_table, build_history, write_bench_kit

from patchkit.bench.execution.job import JobSpec, version_problem
from patchkit.bench.execution.prepare import scm_version, write_scm_version_file
from patchkit.demo.history import HistoryBuilder
from patchkit.git import Commit, Repo
from patchkit.manifest import load_manifest


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("prep") / "repo")


def test_scm_version_follows_guess_next_dev(history):
    repo = Repo.discover(history.path)
    short = repo.git("rev-parse", "--short", history["tip"]).strip()
    assert scm_version(repo, history["base"]) == "0.5.8"  # exactly at the tag: no local part
    assert scm_version(repo, history["tip"]) == f"0.5.9.dev6+g{short}"
    assert scm_version(repo, history["docs"]).startswith("0.5.9.dev1+g")


def test_scm_version_without_tags(tmp_path):
    b = HistoryBuilder(tmp_path / "r")
    b.commit("a", "a", {"x.py": "1\n"})
    b.commit("b", "b", {"x.py": "2\n"})
    h = b.build()
    repo = Repo.discover(h.path)
    assert scm_version(repo, h["b"]) == f"0.1.dev2+g{repo.git('rev-parse', '--short', h['b']).strip()}"


def test_written_file_is_what_sglang_version_py_imports(tmp_path):
    path = tmp_path / "python" / "sglang" / "_version.py"
    write_scm_version_file(path, "0.5.9.dev6+gc79ab64")
    namespace = runpy.run_path(str(path))
    assert namespace["__version__"] == "0.5.9.dev6+gc79ab64"
    assert namespace["__version_tuple__"] == (0, 5, 9, "dev6", "gc79ab64")
    assert namespace["__commit_id__"] == "gc79ab64"


def test_an_unchanged_version_file_is_not_rewritten(tmp_path):
    """A server running from a reused worktree (a Slurm job whose submitter died) has loaded the file: its
    probe refuses one changed since, even to the same bytes, so the same version leaves it alone."""
    path = tmp_path / "python" / "sglang" / "_version.py"
    write_scm_version_file(path, "0.5.9.dev6+gc79ab64")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()
    write_scm_version_file(path, "0.5.9.dev6+gc79ab64")
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    write_scm_version_file(path, "0.5.9.dev7+gd00d00d")  # another version: written
    assert path.stat().st_mtime_ns != before.st_mtime_ns
    assert "0.5.9.dev7+gd00d00d" in path.read_text(encoding="utf-8")


def spec(tmp_path: Path, history, expected: str | None, **bench) -> JobSpec:
    manifest = load_manifest(write_bench_kit(tmp_path / "kit", bench=bench_table(**bench)))
    assert manifest.bench is not None
    return JobSpec(
        commit=Commit(history["tip"], (), "a <a@x>", "d", "s"),
        tree=tmp_path,
        config=manifest.bench,
        profile="eagle3",
        vars={},
        run_dir=tmp_path / "run",
        warmup=0,
        repeat=1,
        expected_version=expected,
    )


def test_version_self_check(tmp_path, history):
    sha = history["tip"]
    good = f"0.5.9.dev6+g{sha[:7]}"
    job = spec(tmp_path, history, good)
    assert version_problem(job, {"version": good}) is None
    assert "another commit" in (version_problem(job, {"version": "0.5.9.dev6+g0000000"}) or "")
    assert "reports no version" in (version_problem(job, {}) or "")
    assert "not running this tree" in (version_problem(job, {"version": "0.5.8"}) or "")


def test_static_version_file(tmp_path, history):
    (tmp_path / "python" / "sglang").mkdir(parents=True)
    (tmp_path / "python" / "sglang" / "version.py").write_text('__version__ = "0.4.6.post4"\n', encoding="utf-8")
    job = spec(tmp_path, history, None, scm_version_file=None, version_file="python/sglang/version.py")
    assert job.config.scm_version_file is None
    assert version_problem(job, {"version": "0.4.6.post4"}) is None
    problem = version_problem(job, {"version": "0.5.0"})
    assert problem == (
        "the server reports version 0.5.0, the tree's python/sglang/version.py says 0.4.6.post4: "
        "it is not running this tree"
    )


def test_gpu_standin_runs_the_applied_timing_code(tmp_path, sglang_history, project_root, monkeypatch, capfd):
    """The GPU stand-in's workers time with the code eagle3-verify-timing put in the tree (CPU half of it here)."""
    import sys

    from patchkit.engine.commit_apply import apply_at_commit

    tree = tmp_path / "wt"
    repo = Repo.discover(sglang_history.path)
    report = apply_at_commit(
        load_manifest(project_root / "manifests" / "eagle3-verify-timing.toml"),
        repo,
        sglang_history["verify-nvtx"],
        worktree=str(tree),
    )
    assert not report.refused
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "standin"))
    monkeypatch.setenv("PATCHKIT_EAGLE3_VERIFY_TIMING", "1")
    sys.modules.pop("server", None)
    import server  # tests/standin/server.py

    helpers = server.timing_helpers(str(tree))
    assert helpers["_PATCHKIT_VERIFY_TIMING"] is True
    helpers["_patchkit_verify_timer_stop"](helpers["_patchkit_verify_timer_start"]())
    assert capfd.readouterr().err.startswith("[patchkit] eagle3 verify_ms=")
    sys.modules.pop("server", None)
