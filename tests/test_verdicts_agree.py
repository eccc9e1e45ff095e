"""`patchkit status`, `patchkit guard` and bench's guard step agree on the same trees.

One tree per state a user meets (unpatched, patched, edited after patching,
interrupted, out of date), each judged three ways: ``status --json``,
``guard --json``, and ``patchkit.bench.execution.prepare.guard_tree`` (what ``patchkit
bench`` refuses through, on its prepared worktree).  Agreement means: bench
refuses exactly when the guard fails, naming the same checks; a tree status
calls incomplete never passes the guard; and each thing status flags (edited,
interrupted, out of date) is a failed guard check that says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import make_repo, run_cli, run_killed
from histories import MODEL_V1, edit_payload, write_manifest

from patchkit.bench.execution.prepare import guard_tree
from patchkit.git import Repo
from patchkit.manifest import load_manifest

MODEL = "pkg/model.py"


def build(state: str, root: Path, capsys: Any) -> tuple[Path, Path]:
    repo = make_repo(root / "repo", {"README.md": "upstream\n", MODEL: MODEL_V1})
    manifest = write_manifest(root / "kit")
    if state == "interrupted":  # killed after the files and the record landed, the journal still there
        assert run_killed("txn:state", "apply", "-m", manifest, "--repo", repo).returncode == 137
    elif state != "unpatched":
        assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    if state == "edited":
        (repo / MODEL).write_text((repo / MODEL).read_text() + "\n# tuned by hand\n")
    if state == "out-of-date":
        edit_payload(manifest)
    return repo, manifest


# state: (status exit code, guard's failed checks)
EXPECTED = {
    "unpatched": (1, ["patches"]),
    "patched": (0, []),
    "edited": (0, ["record"]),  # the patches are still in place: status is complete and flags the edit
    "interrupted": (1, ["record"]),
    "out-of-date": (1, ["patches", "record"]),  # and the record is of the older manifest version
}


@pytest.mark.parametrize("state", list(EXPECTED))
def test_status_guard_and_bench_agree(state: str, tmp_path: Path, capsys: Any) -> None:
    repo, manifest = build(state, tmp_path, capsys)
    status = run_cli(capsys, "status", "-m", manifest, "--repo", repo, "--json")
    guard = run_cli(capsys, "guard", "-m", manifest, "--repo", repo, "--json")
    stored, problems = guard_tree(Repo.discover(repo), [load_manifest(manifest)])
    failed = [c["check"] for c in guard.json["checks"] if not c["ok"]]
    st = status.json

    assert (status.code, failed) == EXPECTED[state]
    # bench refuses exactly when the guard fails, for the same checks, and stores that report.
    assert guard.code == (1 if failed else 0)
    assert stored["ok"] is (not failed) and bool(problems) is bool(failed)
    assert [p.split("] ")[0] for p in problems] == [f"hooks: [{name}" for name in failed]
    (report,) = stored["reports"]
    assert [(c["check"], c["ok"]) for c in report["checks"]] == [(c["check"], c["ok"]) for c in guard.json["checks"]]
    # Same per-patch table.
    assert [(r["patch"], r["state"]) for r in guard.json["results"]] == [
        (r["patch"], r["state"]) for r in st["results"]
    ]
    # What status flags, the guard fails on.
    if not st["complete"]:
        assert failed
    details = {c["check"]: c["details"] for c in guard.json["checks"]}
    assert details["record"]["edited"] == st["edited_after_apply"]
    assert details["record"]["interrupted"] == st["interrupted"]
    assert details["patches"]["out_of_date"] == st["out_of_date"]
    if st["edited_after_apply"] or st["interrupted"]:
        assert "record" in failed
    if st["out_of_date"]:
        assert "patches" in failed
    if st["complete"] and not st["edited_after_apply"]:
        assert not failed
