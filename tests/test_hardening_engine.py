"""No write outside the tree, --worktree scope, apply --commit at the current commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import Kit, d, git, head_sha, make_repo, porcelain, result_of, run_cli, src, tree_state
from histories import build_model_history, write_manifest

from patchkit.demo.history import HistoryBuilder, Symlink
from patchkit.engine.check import check_range
from patchkit.git import Repo
from patchkit.manifest import load_manifest

KIMI = d(
    """
    class KimiK25ForConditionalGeneration:
        def forward(self, x):
            return x
    """
)
PAYLOAD = d(
    """
    class KimiK25ForConditionalGeneration:
        def hook(self):
            return 1
    """
)
ESCAPING = "python/escape/kimi_k25.py"


# -- 1. symlinked directories ----------------------------------------------------------------


@pytest.fixture
def escape(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repo with a committed `python/escape -> <outside>` and a manifest targeting a file through it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kimi_k25.py").write_text(KIMI)
    repo = make_repo(tmp_path / "repo", {"python/escape": Symlink(str(outside)), "README.md": "x\n"})
    kit = Kit(tmp_path / "kit")
    manifest = kit.write(
        [
            {
                "id": "hook",
                "op": "add-methods",
                "file": ESCAPING,
                "class": "KimiK25ForConditionalGeneration",
                "source": src("p.py"),
            }
        ],
        {"p.py": PAYLOAD},
    )
    return repo, manifest, outside


def test_apply_never_writes_through_a_symlinked_directory(escape, capsys) -> None:
    repo, manifest, outside = escape
    before = tree_state(outside)
    r = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    assert r.code == 1
    hook = result_of(r.json, "hook")
    assert (hook["status"], hook["reason"]) == ("FAIL", "UNSUPPORTED_FILE")
    assert "python/escape, which is a symlink" in hook["message"]
    assert tree_state(outside) == before
    assert porcelain(repo) == []


def test_check_status_apply_and_apply_commit_agree_on_a_symlinked_directory(escape, capsys) -> None:
    repo, manifest, _outside = escape
    verdicts = []
    for argv in (
        ("apply", "-m", manifest, "--repo", repo, "--json"),
        ("apply", "-m", manifest, "--repo", repo, "--json", "--dry-run"),
        ("status", "-m", manifest, "--repo", repo, "--json"),
        ("check", "-m", manifest, "--repo", repo, "--json"),
        ("apply", "-m", manifest, "--repo", repo, "--json", "--commit", "HEAD"),
    ):
        r = run_cli(capsys, *argv)
        results = r.json["commits"][0]["results"] if argv[0] == "check" else r.json["results"]
        verdicts.append([(x["status"], x["reason"], x["message"]) for x in results])
    assert all(v == verdicts[0] for v in verdicts), verdicts
    assert verdicts[0][0][:2] == ("FAIL", "UNSUPPORTED_FILE")


def test_check_range_sees_the_symlink_appear(tmp_path: Path) -> None:
    """The target is absent in both commits; only the parent changes into a symlink."""
    outside = tmp_path / "outside"
    outside.mkdir()
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("one", "no python dir", {"README.md": "x\n"})
    b.commit("two", "a symlinked dir", {"python/escape": Symlink(str(outside))})
    b.commit("three", "a symlink two levels up", {"python/escape": None, "python": Symlink(str(outside))})
    b.commit("four", "a plain file in the way", {"python": "not a directory\n"})
    history = b.build()
    kit = Kit(tmp_path / "kit")
    kit.write([{"id": "imp", "op": "ensure-import", "file": ESCAPING, "import": "import os"}])
    report = check_range(load_manifest(str(kit.manifest)), Repo.discover(history.path), ranges=["main"])
    reasons = [(c.results[0].status.value, c.results[0].reason.value) for c in report.commits]  # type: ignore[union-attr]
    assert reasons == [
        ("FAIL", "FILE_NOT_FOUND"),
        ("FAIL", "UNSUPPORTED_FILE"),
        ("FAIL", "UNSUPPORTED_FILE"),
        ("FAIL", "FILE_NOT_FOUND"),
    ]
    assert "under python, which is a symlink" in report.commits[2].results[0].message


def test_revert_refuses_a_recorded_path_that_now_passes_through_a_symlink(tmp_path: Path, capsys) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo", {"python/real/kimi_k25.py": KIMI})
    kit = Kit(tmp_path / "kit")
    manifest = kit.write(
        [
            {
                "id": "hook",
                "op": "add-methods",
                "file": "python/real/kimi_k25.py",
                "class": "KimiK25ForConditionalGeneration",
                "source": src("p.py"),
            }
        ],
        {"p.py": PAYLOAD},
    )
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    # Someone swaps the directory for a link pointing outside the tree.
    patched = (repo / "python/real/kimi_k25.py").read_bytes()
    (outside / "kimi_k25.py").write_bytes(patched)
    (repo / "python/real/kimi_k25.py").unlink()
    (repo / "python/real").rmdir()
    (repo / "python/real").symlink_to(outside)
    before = tree_state(outside)
    r = run_cli(capsys, "revert", "-m", manifest, "--repo", repo)
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("patchkit: error: python/real/kimi_k25.py is under python/real")
    assert tree_state(outside) == before
    st = run_cli(capsys, "status", "-m", manifest, "--repo", repo, "--json")
    assert result_of(st.json, "hook")["reason"] == "UNSUPPORTED_FILE"


# -- 2. --worktree on a checkout that is not a linked worktree --------------------------------


def test_worktree_refuses_the_main_checkout(tmp_path: Path, capsys) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "m")
    repo = history.path
    before = (head_sha(repo), git(repo, "symbolic-ref", "--short", "HEAD"))
    r = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--worktree", repo)
    assert r.code == 2
    assert r.err.count("\n") == 1 and "is the main checkout" in r.err
    assert (head_sha(repo), git(repo, "symbolic-ref", "--short", "HEAD")) == before
    assert porcelain(repo) == []
    # From a linked worktree, the main checkout is refused the same way.
    linked = tmp_path / "linked"
    assert (
        run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--worktree", linked).code
        == 0
    )
    r = run_cli(capsys, "apply", "-m", manifest, "--repo", linked, "--commit", history["fix"], "--worktree", repo)
    assert r.code == 2 and "is the main checkout" in r.err
    assert (head_sha(repo), git(repo, "symbolic-ref", "--short", "HEAD")) == before


# -- 10. apply --commit where the tree already is ----------------------------------------------


def test_apply_commit_at_the_current_commit_of_a_patched_tree_writes_nothing(tmp_path: Path, capsys) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "m")
    repo = history.path
    first = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"])
    assert first.code == 0
    assert "moved: the tree was on branch main" in first.out and "git checkout main" in first.out
    state = tree_state(repo, include_git=False)
    mtime = (repo / "pkg/model.py").stat().st_mtime_ns
    again = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--json")
    assert again.code == 0
    data = again.json
    assert data["written"] == [] and data["moved_from"] is None
    assert {(r["status"], r["reason"]) for r in data["results"]} == {("SKIP", "ALREADY_APPLIED")}
    assert tree_state(repo) == state and (repo / "pkg/model.py").stat().st_mtime_ns == mtime
    human = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"])
    assert "moved:" not in human.out and "OK: nothing to do" in human.out


def test_rerunning_worktree_on_a_patched_worktree_writes_nothing(tmp_path: Path, capsys) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "m")
    linked = tmp_path / "linked"
    argv = ("apply", "-m", manifest, "--repo", history.path, "--commit", history["fix"], "--worktree", linked, "--json")
    first = run_cli(capsys, *argv)
    assert first.code == 0 and first.json["written"] == ["pkg/model.py"]
    mtime = (linked / "pkg/model.py").stat().st_mtime_ns
    again = run_cli(capsys, *argv)
    assert again.code == 0 and again.json["written"] == [] and again.json["moved_from"] is None
    assert {(r["status"], r["reason"]) for r in again.json["results"]} == {("SKIP", "ALREADY_APPLIED")}
    assert (linked / "pkg/model.py").stat().st_mtime_ns == mtime
    assert json.loads(json.dumps(again.json))["worktree"] == str(linked.resolve())


# -- 11. the timing manifest: together or not at all --------------------------------------------

TIMING = Path(__file__).resolve().parents[1] / "manifests" / "eagle3-verify-timing.toml"
EAGLE = "python/sglang/srt/speculative/eagle_worker.py"


@pytest.fixture(scope="module")
def eagle_worker(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from patchkit.demo.sglang import build_sglang_history

    history = build_sglang_history(tmp_path_factory.mktemp("sglang") / "repo")
    from helpers import git_bytes

    return git_bytes(history.path, "show", f"{history['verify-nvtx']}:{EAGLE}")


def test_timing_manifest_writes_nothing_when_the_forward_call_changed(tmp_path: Path, eagle_worker, capsys) -> None:
    text = eagle_worker.decode()
    call = "                is_verify=True,\n"
    assert text.count(call) == 1  # the anchor statement, written over several lines
    changed = text.replace(call, call + "                spec_info=spec_info,\n")
    repo = make_repo(tmp_path / "repo", {EAGLE: changed})
    r = run_cli(capsys, "apply", "-m", TIMING, "--repo", repo, "--json")
    assert r.code == 0
    verdicts = {x["patch"]: (x["status"], x["reason"]) for x in r.json["results"]}
    # The v1 patches (the other variants' files do not exist in this tree: FILE_NOT_FOUND).
    verdicts = {p: v for p, v in verdicts.items() if not p.startswith(("v2-", "common-"))}
    assert verdicts == {
        "import-os": ("WARN", "DEPENDENCY"),
        "import-sys": ("WARN", "DEPENDENCY"),
        "import-time": ("SKIP", "ALREADY_APPLIED"),  # upstream's own import: nothing to hold back
        "import-optional": ("SKIP", "ALREADY_APPLIED"),
        "timing-helpers": ("WARN", "DEPENDENCY"),
        "verify-timer-start": ("WARN", "ANCHOR_NOT_FOUND"),
        "verify-timer-stop": ("WARN", "ANCHOR_NOT_FOUND"),
        "v1-batch-timer-start": ("WARN", "ANCHOR_NOT_FOUND"),
        "v1-batch-timer-stop": ("WARN", "ANCHOR_NOT_FOUND"),
    }
    assert {(g["group"], g["status"], g["reason"]) for g in r.json["groups"]} >= {
        ("verify-timing", "WARN", "NO_VARIANT")
    }
    assert "requires group v1-verify" in result_of(r.json, "timing-helpers")["message"]
    assert r.json["written"] == [] and porcelain(repo) == []
    # With the call as the manifest expects, everything applies together.
    good = make_repo(tmp_path / "good", {EAGLE: eagle_worker})
    ok = run_cli(capsys, "apply", "-m", TIMING, "--repo", good, "--json")
    assert ok.code == 0 and ok.json["written"] == [EAGLE]
    assert {x["status"] for x in ok.json["results"]} <= {"APPLY", "SKIP"}


def test_json_keys_of_status_revert_and_apply(tmp_path: Path, capsys) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = write_manifest(tmp_path / "m")
    repo = history.path
    ap = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--json").json
    assert set(ap) == {
        "version", "command", "manifest", "target", "commit", "subject", "dry_run", "strict", "refused",
        "written", "would_write", "notes", "moved_from", "worktree", "unwritable", "unwritable_advice",
        "results", "groups",
    }  # fmt: skip
    assert ap["moved_from"] == {"commit": history["upstreamed"], "branch": "main"}
    st = run_cli(capsys, "status", "-m", manifest, "--repo", repo, "--json").json
    assert set(st) == {
        "version", "command", "manifest", "target", "commit", "subject", "complete", "record",
        "edited_after_apply", "layered_over", "layered_under", "out_of_date", "interrupted", "results", "groups",
    }  # fmt: skip
    assert st["interrupted"] is None and st["out_of_date"] == []
    rv = run_cli(capsys, "revert", "-m", manifest, "--repo", repo, "--json").json
    assert set(rv) == {
        "version",
        "command",
        "manifest",
        "target",
        "nothing_recorded",
        "restored",
        "forced",
        "recovered",
    }
    assert rv["recovered"] == []


def test_stored_symlink_facts_serve_old_commits_and_new_ones_are_asked(tmp_path: Path) -> None:
    """What a cold check learnt about symlinked parents is kept per path; a longer range asks git only
    about its new commits, and still sees a parent that turned into a symlink there."""
    import sqlite3

    outside = tmp_path / "outside"
    outside.mkdir()
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("one", "no python dir", {"README.md": "x\n"})
    b.commit("two", "a symlinked dir", {"python/escape": Symlink(str(outside))})
    b.commit("three", "back to nothing", {"python/escape": None})
    b.commit("four", "a symlink two levels up", {"python": Symlink(str(outside))})
    history = b.build()
    kit = Kit(tmp_path / "kit")
    kit.write([{"id": "imp", "op": "ensure-import", "file": ESCAPING, "import": "import os"}])
    manifest = load_manifest(str(kit.manifest))

    def reasons(spec: str, use_cache: bool = True) -> list[str]:
        with Repo.discover(history.path) as repo:
            report = check_range(manifest, repo, ranges=[spec], use_cache=use_cache)
        return [c.results[0].reason.value for c in report.commits]  # type: ignore[union-attr]

    first = reasons(f"{history['one']}~0..{history['three']}")
    db = sqlite3.connect(history.path / ".git" / "patchkit" / "cache.sqlite")
    (facts,) = db.execute("SELECT facts FROM parents WHERE path = ?", (ESCAPING,)).fetchone()
    db.close()
    assert sorted(json.loads(facts)["checked"]) == sorted([history["two"], history["three"]])
    assert json.loads(facts)["links"] == {history["two"]: "python/escape"}
    assert first == ["UNSUPPORTED_FILE", "FILE_NOT_FOUND"]
    longer = reasons("main")
    assert longer == ["FILE_NOT_FOUND", "UNSUPPORTED_FILE", "FILE_NOT_FOUND", "UNSUPPORTED_FILE"]
    assert longer == reasons("main", use_cache=False)


def test_symlinked_parents_of_two_targets_in_one_directory(tmp_path: Path) -> None:
    """Two targets under one directory share its answer (asked once per commit); each still gets it."""
    from patchkit.git import symlinked_parents

    outside = tmp_path / "outside"
    outside.mkdir()
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("one", "a real dir", {"python/escape/other.py": "x = 1\n"})
    b.commit("two", "a symlinked dir", {"python/escape/other.py": None, "python/escape": Symlink(str(outside))})
    history = b.build()
    pairs = [(history[c], f"python/escape/{name}") for c in ("one", "two") for name in ("a.py", "b.py")]
    with Repo.discover(history.path) as repo:
        found = symlinked_parents(repo, pairs)
    assert found == {
        (history["two"], "python/escape/a.py"): "python/escape",
        (history["two"], "python/escape/b.py"): "python/escape",
    }
