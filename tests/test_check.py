"""Range checks: the full matrix on real histories with branches and merges."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers import git, rich_off_terminal
from histories import MODEL_V2, build_model_history, write_manifest

from patchkit.cli import main
from patchkit.demo.history import HistoryBuilder, Symlink
from patchkit.engine.check import check_range
from patchkit.engine.evaluate import evaluate
from patchkit.errors import RepoError, RevisionError
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.results import Reason, Status
from patchkit.sources import CommitSource

A, S, F = Status.APPLY, Status.SKIP, Status.FAIL

# label -> (typing, hook), as (status, reason)
EXPECTED = {
    "base": [(F, Reason.FILE_NOT_FOUND), (F, Reason.FILE_NOT_FOUND)],
    "add": [(A, None), (A, None)],
    "churn1": [(A, None), (A, None)],
    "edit": [(A, None), (A, None)],
    "broken": [(F, Reason.PARSE_ERROR), (F, Reason.PARSE_ERROR)],
    "fix": [(A, None), (A, None)],
    "rename": [(A, None), (F, Reason.CLASS_NOT_FOUND)],
    "move": [(F, Reason.FILE_NOT_FOUND), (F, Reason.FILE_NOT_FOUND)],
    "churn2": [(A, None), (A, None)],
    "merge": [(F, Reason.FILE_NOT_FOUND), (F, Reason.FILE_NOT_FOUND)],
    "upstreamed": [(A, None), (S, Reason.UPSTREAM_PROVIDES)],
}


@pytest.fixture
def model(tmp_path: Path):
    history = build_model_history(tmp_path / "repo")
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    with Repo.discover(history.path) as repo:
        yield history, manifest, repo


def matrix_by_label(report, history):
    return {history.label_of(row.commit.sha): [(r.status, r.reason) for r in row.results] for row in report.commits}


def test_full_matrix_over_branches_and_merge(model) -> None:
    history, manifest, repo = model
    report = check_range(manifest, repo, ranges=["main"])
    assert matrix_by_label(report, history) == EXPECTED
    # rev-list semantics: every commit, merges and the side branch included, oldest first
    assert len(report.commits) == len(EXPECTED)
    order = [history.label_of(c.commit.sha) for c in report.commits]
    assert order.index("add") < order.index("fix") < order.index("rename") < order.index("move") < order.index("merge")
    assert report.failed
    assert history.label_of(report.last_good.sha) == "upstreamed"
    # far fewer evaluations than commits: one per distinct target blob
    assert report.stats.distinct_states == 6


def test_range_matrix_equals_per_commit_evaluation(model) -> None:
    """Every field of every result equals a single-commit evaluation's, except one hint: before
    the file exists, a range knows where in the range it first exists, with no history walk."""
    history, manifest, repo = model
    report = check_range(manifest, repo, ranges=["main"], use_cache=False)
    arrived = history["add"]
    ranged = 0
    for row in report.commits:
        single = evaluate(manifest, CommitSource(repo, row.commit))
        label = history.label_of(row.commit.sha)
        for got, want in zip(row.results, single.results, strict=True):
            if got.reason is Reason.FILE_NOT_FOUND and label == "base":
                assert (
                    got.hint == f"in this range it first exists at {arrived[:10]} 'Add the model' ({got.hint[-11:-1]})"
                )
                assert "it first appears in" in (want.hint or "")
                got, ranged = got.with_hint(want.hint), ranged + 1
            assert got.to_json() == want.to_json(), label
    assert ranged == len(manifest.patches)


def test_lines_and_messages_are_precise(model) -> None:
    history, manifest, repo = model
    report = check_range(manifest, repo, ranges=["main"])
    rows = {history.label_of(r.commit.sha): r.results for r in report.commits}
    broken = rows["broken"][1]
    assert broken.line == 10 and "expected ':'" in broken.message
    renamed = rows["rename"][1]
    assert "class Model is not defined in pkg/model.py" in renamed.message
    assert "LanguageModelWrapper (line 6)" in renamed.message
    moved = rows["merge"][1]
    assert moved.hint is not None and "renamed to pkg/models/model.py" in moved.hint
    upstream = rows["upstreamed"][1]
    assert "redundant" in upstream.message and upstream.line == 14


def test_windows_name_the_commit_where_status_changed(model) -> None:
    history, manifest, repo = model
    report = check_range(manifest, repo, ranges=["main"])
    hook = report.windows_of("hook")
    assert [(w.status, w.reason, w.count) for w in hook] == [
        (F, Reason.FILE_NOT_FOUND, 1),
        (A, None, 3),
        (F, Reason.PARSE_ERROR, 1),
        (A, None, 2),
        (F, Reason.CLASS_NOT_FOUND, 1),
        (F, Reason.FILE_NOT_FOUND, 2),
        (S, Reason.UPSTREAM_PROVIDES, 1),
    ]
    assert history.label_of(hook[4].first.sha) == "rename"


def test_warm_cache_reads_no_blob(model, open_repo) -> None:
    history, manifest, repo = model
    cold = check_range(manifest, repo, ranges=["main"])
    assert cold.stats.cache_misses > 0
    warm = check_range(manifest, open_repo(history.path), ranges=["main"])
    assert warm.stats.cache_misses == 0
    assert warm.matrix() == cold.matrix()
    assert (repo.common_dir / "patchkit" / "cache.sqlite").exists()


def test_cli_window_view_and_json(model, capsys) -> None:
    history, manifest, repo = model
    code = main(["check", "-m", str(manifest.path), "--repo", str(history.path), "--range", "main"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  CLASS_NOT_FOUND" in out
    assert f'from {history["rename"][:10]} "Rename the model class"' in out
    # The listing jumps from mainline to the side branch: the line says what
    # the commit's own parent had, so the jump is not mistaken for a change.
    assert f"(another line of history; its parent {history['fix'][:10]}: APPLY)" in out
    assert f"last commit where the whole manifest applies: {history['upstreamed']}" in out
    assert "FAILED: a required patch FAILs at 5 of 11 commits." in out
    code = main(["check", "-m", str(manifest.path), "--repo", str(history.path), "--range", "main", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["failed"] is True and data["command"] == "check"
    assert set(data) == {
        "version",
        "command",
        "manifest",
        "commits",
        "windows",
        "group_windows",
        "upstreamed",
        "last_good",
        "failed",
        "stats",
        "since",
    }
    assert data["since"] is None  # only with --since (tests below)
    assert set(data["windows"][0]) == {"patch", "status", "reason", "count", "first", "last", "message", "hint"}
    assert set(data["stats"]) == {"commits", "distinct_states", "cache_hits", "cache_misses"}
    assert [c["commit"] for c in data["commits"]] == [
        r.commit.sha for r in check_range(manifest, repo, ranges=["main"]).commits
    ]
    first = data["commits"][0]
    assert set(first) == {"commit", "subject", "author", "date", "results", "groups"}
    assert set(first["results"][0]) == {
        "patch",
        "op",
        "status",
        "reason",
        "required",
        "file",
        "line",
        "message",
        "hint",
    }
    assert data["last_good"]["commit"] == history["upstreamed"]
    assert set(data["last_good"]) == {"commit", "subject"}
    assert set(data["manifest"]) == {"name", "path", "digest"}


def test_range_from_fixed_point_excludes_it(model) -> None:
    history, manifest, repo = model
    report = check_range(manifest, repo, ranges=[f"{history['fix']}..main"])
    labels = {history.label_of(c.commit.sha) for c in report.commits}
    assert labels == {"rename", "move", "churn2", "merge", "upstreamed"}
    assert matrix_by_label(report, history) == {k: EXPECTED[k] for k in labels}


def test_single_commits(model) -> None:
    history, manifest, repo = model
    report = check_range(manifest, repo, commits=[history["broken"], history["upstreamed"]])
    assert matrix_by_label(report, history) == {k: EXPECTED[k] for k in ("broken", "upstreamed")}


# A failed range must not leave the other git processes running (they were reaped only by luck).
@pytest.mark.filterwarnings("error::ResourceWarning", "error::pytest.PytestUnraisableExceptionWarning")
def test_unknown_revision_and_empty_range(model, capsys) -> None:
    history, manifest, repo = model
    with pytest.raises(RevisionError, match="unknown revision 'nope'"):
        check_range(manifest, repo, ranges=["nope..main"])
    with pytest.raises(RevisionError, match="is empty"):
        check_range(manifest, repo, ranges=["main..main~3"])
    code = main(["check", "-m", str(manifest.path), "--repo", str(history.path), "--range", "main..v9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "unknown revision 'v9'" in err


def test_merge_from_side_branch_rename_is_exact(tmp_path: Path, open_repo) -> None:
    """The merge brings a rename from a side branch: the merge's tree has the
    new name though mainline never touched the file."""
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("add", "add", {"pkg/model.py": MODEL_V2})
    b.start_branch("side", "add")
    b.commit(
        "side-rename",
        "rename on side",
        {"pkg/model.py": MODEL_V2.replace("class Model:", "class Other:")},
        branch="side",
    )
    b.commit("main1", "mainline work", {"README": "x\n"})
    b.commit("merge", "merge side", {}, merge="side-rename")
    b.commit("after", "after merge", {"README": "y\n"})
    history = b.build()
    report = check_range(manifest, open_repo(history.path), ranges=["main"])
    hook = {history.label_of(c.commit.sha): c.results[1].reason for c in report.commits}
    assert hook == {
        "add": None,
        "side-rename": Reason.CLASS_NOT_FOUND,
        "main1": None,
        "merge": Reason.CLASS_NOT_FOUND,
        "after": Reason.CLASS_NOT_FOUND,
    }


@pytest.mark.parametrize("seed", range(6))
def test_inherited_states_match_every_commits_tree(tmp_path: Path, seed: int, open_repo) -> None:
    """Random DAGs with merges: the verdict of every commit equals a direct evaluation."""
    rng = random.Random(seed)
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    b = HistoryBuilder(tmp_path / "repo")
    variants = [MODEL_V2, MODEL_V2.replace("class Model:", "class M2:"), MODEL_V2 + "\ndef f(:\n", None]
    b.commit("c0", "root", {"pkg/model.py": MODEL_V2, "o.txt": "0"})
    tips = {"main": "c0"}
    labels = ["c0"]
    for i in range(1, 30):
        label = f"c{i}"
        files = {"o.txt": str(i)}
        if rng.random() < 0.4:
            files["pkg/model.py"] = rng.choice(variants)
        roll = rng.random()
        if roll < 0.15 and len(tips) < 3:
            name = f"b{i}"
            b.start_branch(name, rng.choice(labels))
            b.commit(label, "branch", files, branch=name)
            tips[name] = label
        elif roll < 0.35 and len(tips) > 1:
            other = rng.choice([t for t in tips if t != "main"])
            b.commit(label, "merge", files if rng.random() < 0.5 else {}, merge=tips[other])
            tips["main"] = label
        else:
            branch = rng.choice(list(tips))
            b.commit(label, "work", files, branch=branch)
            tips[branch] = label
        labels.append(label)
    history = b.build()
    repo = open_repo(history.path)
    report = check_range(manifest, repo, ranges=sorted(tips), use_cache=False)
    assert len(report.commits) == len(labels)
    for row in report.commits:
        direct = evaluate(manifest, CommitSource(repo, row.commit), hints=False)
        assert [(r.status, r.reason, r.line) for r in row.results] == [
            (r.status, r.reason, r.line) for r in direct.results
        ]


def test_bare_repo_check_works_apply_refuses(model, tmp_path: Path, capsys, open_repo) -> None:
    history, manifest, _ = model
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(history.path), str(bare))
    report = check_range(manifest, open_repo(bare), ranges=["main"])
    assert matrix_by_label(report, history) == EXPECTED
    code = main(["apply", "-m", str(manifest.path), "--repo", str(bare)])
    err = capsys.readouterr().err
    assert code == 2 and "is a bare repository" in err and "--worktree" in err


def test_shallow_clone_missing_history(model, tmp_path: Path, capsys, open_repo) -> None:
    history, manifest, _ = model
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{history.path}", str(shallow))
    repo = open_repo(shallow)
    with pytest.raises(RepoError, match="shallow clone"):
        check_range(manifest, repo, ranges=["main"])
    with pytest.raises(RevisionError) as info:
        check_range(manifest, repo, ranges=[f"{history['fix']}..main"])
    assert "shallow clone" in info.value.one_line() and "git fetch --unshallow" in info.value.one_line()
    # what was fetched is still checkable
    report = check_range(manifest, repo, ranges=["main~1..main"])
    assert len(report.commits) == 1
    code = main(["check", "-m", str(manifest.path), "--repo", str(shallow), "--range", "main"])
    assert code == 2 and "git fetch --unshallow" in capsys.readouterr().err


def test_symlink_and_non_utf8_targets_at_a_commit(tmp_path: Path, open_repo) -> None:
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("real", "real file", {"pkg/real.py": MODEL_V2, "pkg/model.py": MODEL_V2})
    b.commit("link", "make it a symlink", {"pkg/model.py": Symlink("real.py")})
    b.commit("latin1", "latin-1 file", {"pkg/model.py": MODEL_V2.encode() + b"# caf\xe9\n"})
    history = b.build()
    report = check_range(manifest, open_repo(history.path), ranges=["main"])
    rows = {history.label_of(r.commit.sha): r.results[1] for r in report.commits}
    assert rows["real"].status is A
    assert rows["link"].reason is Reason.UNSUPPORTED_FILE and "symlink" in rows["link"].message
    assert (
        rows["latin1"].reason is Reason.UNSUPPORTED_FILE
        and "not UTF-8 (byte 0xe9 at line 13)" in rows["latin1"].message
    )


def test_one_ls_tree_parser_serves_the_entries_and_the_blob_list(tmp_path: Path) -> None:
    """``Repo.ls_tree`` (paths a check reads) and ``Repo.tree_blobs`` (the proof's file list) read the same
    ``ls-tree -z`` records: a name with a space and a non-ASCII letter, an executable and a link."""
    from patchkit.demo.history import Executable

    odd = "pkg/odd name é.py"
    builder = HistoryBuilder(tmp_path / "repo")
    files = {"pkg/a.py": "a = 1\n", odd: "b = 2\n", "run.sh": Executable("echo\n"), "link.py": Symlink("pkg/a.py")}
    builder.commit("base", "base", files)
    sha = builder.build()["base"]
    with Repo.discover(tmp_path / "repo") as repo:
        entries = repo.ls_tree(sha, list(files))
        blobs = repo.tree_blobs(sha)
    assert sorted(entries) == sorted(files)
    assert {p: e.mode for p, e in entries.items()} == {
        "pkg/a.py": "100644",
        odd: "100644",
        "run.sh": "100755",
        "link.py": "120000",
    }
    assert blobs == {p: e.oid for p, e in entries.items() if e.mode != "120000"}


def test_subjects_print_as_written_on_and_off_a_terminal(tmp_path: Path, capsys) -> None:
    """A subject rich would read as markup ("[router]": a style it drops; "[/misc]": a closing tag it
    fails on) is printed as written; off a terminal without rich, byte for byte as rich prints it."""
    import io

    from patchkit.commands.check import show
    from patchkit.views.console import make_console

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("import sys\n")
    git(repo, "add", "a.py")
    git(repo, "commit", "-q", "-m", "[router] first\tcommit")
    (repo / "a.py").write_text("import sys\nx = 1\n")
    git(repo, "commit", "-q", "-am", "[/misc] second\t[bold]")
    kit = tmp_path / "kit"
    kit.mkdir()
    manifest = kit / "m.toml"
    manifest.write_text('schema = 1\nname = "m"\n\n[[patch]]\nid = "imp"\nop = "ensure-import"\nfile = "a.py"\n')
    manifest.write_text(manifest.read_text() + 'import = "import os"\n')

    code = main(["check", "-m", str(manifest), "--repo", str(repo), "--range", "main"])
    out = capsys.readouterr().out
    assert code == 0
    assert '"[/misc] second  [bold]"' in out  # the tab expanded, as rich does

    report = check_range(load_manifest(manifest), Repo.discover(repo), ranges=["main"])
    plain, rich = io.StringIO(), io.StringIO()
    show(report, make_console(plain), "main")
    show(report, rich_off_terminal(rich), "main")
    assert plain.getvalue() == out
    assert '"[/misc] second  [bold]"' in rich.getvalue()
    assert plain.getvalue() == rich.getvalue()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    show(report, make_console(terminal), "main")
    assert '"[/misc] second' in terminal.getvalue() and "[bold]" in terminal.getvalue()


# -- check --since REV: what changed since the last run's tip -------------------------------------------------


def since_json(capsys, history, manifest, since: str, tip: str) -> tuple[int, dict]:
    """``check --since SINCE --commit TIP --json`` (both labels of ``history``)."""
    argv = ["check", "-m", str(manifest.path), "--repo", str(history.path), "--json"]
    code = main([*argv, "--since", history[since], "--commit", history[tip]])
    captured = capsys.readouterr()
    assert captured.err == ""
    return code, json.loads(captured.out)


def test_since_names_the_side_branch_commit_as_explain_does(model, capsys) -> None:
    """fix..merge: the merge brings the side branch's rename and move, so both patches go APPLY -> FAIL
    FILE_NOT_FOUND.  Each is named by the side-branch commit where it stopped applying, not by the merge, as
    `explain` names it: the move for the import, the rename for the hook (CLASS_NOT_FOUND there), whose reason the
    move then changed.  A required patch newly FAILs: exit 1."""
    history, manifest, _repo = model
    code, data = since_json(capsys, history, manifest, "fix", "merge")
    assert code == 1
    since = data["since"]
    assert (since["since"]["commit"], since["tip"]["commit"]) == (history["fix"], history["merge"])
    assert since["commits"] == 4 and since["failed"] is True and since["strict"] is False
    assert [c["id"] for c in since["changes"]] == ["typing", "hook"]
    for change in since["changes"]:
        assert change["kind"] == "patch" and change["required"] is True and change["newly_failing"] is True
        assert (change["before"]["status"], change["after"]["status"]) == ("APPLY", "FAIL")
        assert change["after"]["reason"] == "FILE_NOT_FOUND"
    typing, hook = since["changes"]
    assert [c["commit"] for c in typing["changed_by"]] == [history["move"]] and typing["reason_changes"] == []
    assert [c["commit"] for c in hook["changed_by"]] == [history["rename"]]
    assert [(c["commit"], c["from"], c["to"]) for c in hook["reason_changes"]] == [
        (history["move"], "CLASS_NOT_FOUND", "FILE_NOT_FOUND")
    ]
    # The range itself is checked whole: --json keeps every commit of fix..merge.
    assert {c["commit"] for c in data["commits"]} == {history[k] for k in ("rename", "move", "churn2", "merge")}
    main(
        [
            "explain",
            "-m",
            str(manifest.path),
            "hook",
            "--repo",
            str(history.path),
            "--commit",
            history["merge"],
            "--json",
        ]
    )
    explained = json.loads(capsys.readouterr().out)
    assert [i["commit"] for i in explained["introduced_by"]] == [history["rename"]]
    assert [(c["commit"], c["from"], c["to"]) for c in explained["reason_changes"]] == [
        (history["move"], "CLASS_NOT_FOUND", "FILE_NOT_FOUND")
    ]

    code = main(
        [
            "check",
            "-m",
            str(manifest.path),
            "--repo",
            str(history.path),
            "--since",
            history["fix"],
            "--commit",
            history["merge"],
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("patchkit check  manifest hooks (") and f'since {history["fix"][:10]} "Fix' in lines[0]
    assert "typing  APPLY -> FAIL FILE_NOT_FOUND  pkg/model.py  NEWLY FAILING" in lines
    assert f'  changed by {history["move"]} "Move the model into pkg/models"' in out
    assert f'  changed by {history["rename"]} "Rename the model class"' in out
    assert f'  then FILE_NOT_FOUND (was CLASS_NOT_FOUND) from {history["move"][:10]} "Move the model' in out
    assert lines[-1].startswith(f"FAILED: newly failing at {history['merge'][:10]}: typing FILE_NOT_FOUND, hook ")


def test_since_exits_1_only_when_a_required_patch_newly_fails(model, capsys) -> None:
    history, manifest, _repo = model
    # edit..fix holds the broken commit (FAIL PARSE_ERROR), but the verdicts at edit and at fix are the same:
    # nothing changed since the last run, whatever happened between.
    plain = main(
        [
            "check",
            "-m",
            str(manifest.path),
            "--repo",
            str(history.path),
            "--range",
            f"{history['edit']}..{history['fix']}",
        ]
    )
    capsys.readouterr()
    assert plain == 1
    code, data = since_json(capsys, history, manifest, "edit", "fix")
    assert code == 0 and data["failed"] is True  # the range's own verdict is still there
    assert data["since"]["changes"] == [] and data["since"]["failed"] is False
    # A fix (FAIL -> APPLY) and a failure that only changed its reason (PARSE_ERROR -> CLASS_NOT_FOUND) are
    # changes, printed, but neither newly fails.
    code, data = since_json(capsys, history, manifest, "broken", "rename")
    assert code == 0
    changes = {c["id"]: c for c in data["since"]["changes"]}
    assert (changes["typing"]["before"]["reason"], changes["typing"]["after"]["status"]) == ("PARSE_ERROR", "APPLY")
    assert changes["hook"]["after"]["reason"] == "CLASS_NOT_FOUND" and changes["hook"]["newly_failing"] is False
    assert [c["commit"] for c in changes["hook"]["changed_by"]] == [history["rename"]]
    assert [c["commit"] for c in changes["typing"]["changed_by"]] == [history["fix"]]
    # REV is the tip: nothing new, nothing changed.
    code, data = since_json(capsys, history, manifest, "merge", "merge")
    assert code == 0 and data["since"]["commits"] == 0 and data["since"]["changes"] == []
    tip = history["merge"]
    code = main(["check", "-m", str(manifest.path), "--repo", str(history.path), "--since", tip, "--commit", tip])
    out = capsys.readouterr().out
    assert code == 0
    assert f"no verdict changed between {history['merge'][:10]} and {history['merge'][:10]}." in out


def test_since_names_the_merge_when_the_change_comes_from_before_rev(tmp_path: Path, capsys) -> None:
    """A side branch forked before REV, where the file did not exist yet, is merged after REV taking its
    tree's absence of the file: walking back from the tip leaves the range with the tip's verdict, so the
    commit that changed it on the tip's line is the merge."""
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("base", "Initial layout", {"README.md": "upstream\n"})
    b.start_branch("side", "base")
    b.commit("add", "Add the model", {"pkg/model.py": MODEL_V2})
    b.commit("side-work", "Work on the side", {"README.md": "side\n"}, branch="side")
    b.commit("churn", "Tweak", {"pkg/other.py": "X = 1\n"})
    b.commit("merge", "Merge branch 'side', dropping the model", {"pkg/model.py": None}, merge="side-work")
    history = b.build()
    manifest = load_manifest(write_manifest(tmp_path / "m"))
    code, data = since_json(capsys, history, manifest, "churn", "merge")
    assert code == 1
    for change in data["since"]["changes"]:
        assert change["after"]["reason"] == "FILE_NOT_FOUND" and change["newly_failing"] is True
        assert [c["commit"] for c in change["changed_by"]] == [history["merge"]]
