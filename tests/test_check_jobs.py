"""Range checks on several cores, their JSON text and their stored hints.

One worker is the reference: with N workers the report, its JSON text and
its stats are the same, byte for byte.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import git, run_cli
from histories import MODEL_BROKEN, MODEL_RENAMED, MODEL_V2, build_model_history, write_manifest

from patchkit.demo.history import HistoryBuilder
from patchkit.engine.check import check_range
from patchkit.engine.evaluate import evaluate_file
from patchkit.engine.pool import MIN_BATCH, Feed, Workers, evaluate_many
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.sources import read_entry

MANIFESTS = ("kimi-k25-eagle3", "eagle3-verify-timing")


@pytest.fixture(scope="module")
def churn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A model file with a dozen versions (one unparsable, one with the class renamed), and the hooks manifest."""
    root = tmp_path_factory.mktemp("churn")
    b = HistoryBuilder(root / "repo")
    b.commit("c0", "start", {"README": "x\n"})
    for i in range(1, 13):
        text = MODEL_V2.replace("class Model:", f"VERSION = {i}\n\n\nclass Model:")
        if i == 5:
            text = MODEL_BROKEN
        if i == 9:
            text = MODEL_RENAMED
        b.commit(f"c{i}", f"version {i}", {"pkg/model.py": text, "README": f"{i}\n"})
    b.build()
    return root / "repo", write_manifest(root / "m")


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_same_json_with_one_and_several_workers(churn, capsys, jobs: str) -> None:
    repo, manifest = churn

    def check(jobs: str) -> str:
        result = run_cli(capsys, "check", "-m", manifest, "--repo", repo, "--range", "main", "--json", "--no-cache",
                         "--jobs", jobs)  # fmt: skip
        assert result.code == 1, result.err
        return result.out

    one = check("1")
    assert check(jobs) == one
    stats = json.loads(one)["stats"]
    assert stats["cache_misses"] >= 12 >= MIN_BATCH  # enough file versions that the pool runs (next test)


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_same_json_with_one_and_two_workers_on_the_demo(sglang_history, capsys, manifest: str) -> None:
    outs = [
        run_cli(capsys, "check", "-m", manifest, "--repo", sglang_history.path, "--range", "v0.5.8..main", "--json",
                "--no-cache", "--jobs", jobs).out
        for jobs in ("1", "2")
    ]  # fmt: skip
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["commits"]


def churn_versions(churn) -> tuple[Repo, dict, list]:
    """The churn history's repository, its patches by file, and every version of the model file."""
    path, manifest_path = churn
    by_file = {"pkg/model.py": list(load_manifest(manifest_path).patches)}
    log = git(path, "log", "--format=", "--raw", "--no-abbrev", "main", "--", "pkg/model.py")
    oids = list(dict.fromkeys(line.split()[3] for line in log.splitlines() if line.startswith(":")))
    return Repo.discover(path), by_file, [("pkg/model.py", ("100644", oid)) for oid in oids]


def test_the_pool_computes_what_one_process_does(churn) -> None:
    repo, by_file, refs = churn_versions(churn)
    assert len(refs) >= MIN_BATCH
    pooled = evaluate_many(repo, by_file, refs, jobs=2)
    assert pooled is not None  # it did run in worker processes
    alone = [evaluate_file(read_entry(repo, p, e), by_file[p], {}).results for p, e in refs]
    assert pooled == alone
    assert {r.reason for results in alone for r in results} > {None}  # not all alike: order matters
    assert evaluate_many(repo, by_file, refs, jobs=1) is None  # one job: the caller's loop does it
    repo.close()


def test_the_feeds_tail_is_split_over_the_workers(churn) -> None:
    """What is still gathered when the check starts waiting goes out in one batch per worker,
    and every version still gets its own verdicts (in the order added)."""
    repo, by_file, refs = churn_versions(churn)
    refs = refs[:5]
    alone = [evaluate_file(read_entry(repo, p, e), by_file[p], {}).results for p, e in refs]
    workers = Workers(repo, by_file, 2)
    try:
        feed = Feed(workers)
        # As add() leaves them while every worker is busy: gathered, not yet sent.
        feed.gathered = list(refs)
        feed.where = dict.fromkeys(refs)
        assert [feed.result(ref) for ref in refs] == alone
        assert [len(batch.result()) for batch in feed.batches] == [3, 2]
    finally:
        workers.close()
        repo.close()


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_json_text_is_json_dumps_byte_for_byte(sglang_history, manifest: str) -> None:
    report = check_range(load_manifest(manifest), Repo.discover(sglang_history.path), ranges=["v0.5.8..main"])
    assert report.json_text() == json.dumps(report.to_json(), indent=2, ensure_ascii=False)


def test_json_text_with_non_ascii_and_tree_hints(tmp_path: Path) -> None:
    history = build_model_history(tmp_path / "repo")
    b = HistoryBuilder(tmp_path / "other")
    b.commit("c0", "Ünïcode subject — “quoted”", {"a.py": "x = 1\n"})
    b.build()
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    for path in (history.path, tmp_path / "other"):
        report = check_range(manifest, Repo.discover(path), ranges=["HEAD"] if path != history.path else ["main"])
        assert report.json_text() == json.dumps(report.to_json(), indent=2, ensure_ascii=False)


def _hint_history(path: Path) -> None:
    """main never has the target file; branch `feature` adds it."""
    b = HistoryBuilder(path)
    b.commit("c0", "start", {"README": "x\n"})
    b.commit("c1", "docs", {"README": "y\n"})
    b.start_branch("feature", "c1")
    b.commit("f1", "add the model", {"pkg/model.py": "class Model:\n    pass\n"}, branch="feature")
    b.build(checkout="main")


def test_tree_hints_are_stored_and_follow_the_refs(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    _hint_history(repo)
    manifest = write_manifest(tmp_path / "m")

    def check(*extra: str) -> dict:
        result = run_cli(capsys, "check", "-m", manifest, "--repo", repo, "--range", "main", "--json", *extra)
        assert result.code == 1, result.err
        data = result.json
        del data["stats"]  # cache hits and misses differ between cold and warm runs, by design
        return data

    cold = check("--no-cache")
    first = check()
    hint = first["commits"][0]["results"][0]["hint"]
    assert "which is not in this commit's history" in (hint or "")
    assert check() == first == cold  # the stored hint reads back the same
    db = sqlite3.connect(repo / ".git" / "patchkit" / "cache.sqlite")
    assert db.execute("SELECT COUNT(*) FROM hints").fetchone()[0] >= 1
    db.close()
    # The hint searched every branch: once `feature` is gone, it must not be served from the store.
    git(repo, "branch", "-D", "feature")
    after = check()
    assert after == check("--no-cache")
    assert "which is not in this commit's history" not in (after["commits"][0]["results"][0]["hint"] or "")


def test_arrival_hints_are_stored_under_the_arrival_commit(tmp_path: Path, capsys) -> None:
    """One commit, two ranges that bring the file in at different commits: each range's hint names its own."""
    repo = tmp_path / "repo"
    b = HistoryBuilder(repo)
    b.commit("c0", "start", {"README": "x\n", "old/model.py": "x = 1\n"})
    b.commit("c1", "add the model", {"pkg/model.py": "class Model:\n    pass\n"})
    b.start_branch("side", "c0")
    b.commit("s1", "docs", {"README": "y\n"}, branch="side")
    b.commit("s2", "add the model on the side", {"pkg/model.py": "class Model:\n    x = 1\n"}, branch="side")
    history = b.build(checkout="main")
    manifest = write_manifest(tmp_path / "m")

    def first_hint(rev: str, *extra: str) -> str:
        result = run_cli(capsys, "check", "-m", manifest, "--repo", repo, "--range", rev, "--json", *extra)
        data = result.json
        assert data["commits"][0]["commit"] == history["c0"], result.err
        return data["commits"][0]["results"][0]["hint"]

    on_main = first_hint("main")
    assert f"in this range it first exists at {history['c1'][:10]} 'add the model'" in on_main
    assert "a file named model.py exists at old/model.py" in on_main
    db = sqlite3.connect(repo / ".git" / "patchkit" / "cache.sqlite")
    keys = [k for (k,) in db.execute("SELECT key FROM hints")]
    db.close()
    assert any(history["c1"] in k and history["c0"] in k for k in keys)  # stored, under both commits
    on_side = first_hint("side")
    assert f"in this range it first exists at {history['s2'][:10]} 'add the model on the side'" in on_side
    assert first_hint("main") == on_main == first_hint("main", "--no-cache")  # read back from the store
    assert first_hint("side") == on_side == first_hint("side", "--no-cache")


def test_the_console_script_ends_with_all_its_output(sglang_history, capsys) -> None:
    """``patchkit.cli.entry`` skips the interpreter's teardown: the output must still arrive whole, with the code."""
    import subprocess
    import sys

    args = ["check", "-m", "kimi-k25-eagle3", "--repo", str(sglang_history.path), "--range", "v0.5.8..main", "--json"]
    run_cli(capsys, *args)  # the cache is warm for both runs below
    inside = run_cli(capsys, *args)
    proc = subprocess.run([sys.executable, "-m", "patchkit", *args], capture_output=True, text=True, check=False)
    assert proc.returncode == inside.code
    assert proc.stdout == inside.out and len(proc.stdout) > 10_000
    bad = subprocess.run([sys.executable, "-m", "patchkit", "check", "-m", "no-such"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("patchkit: error:") and not bad.stdout
