"""Machine and human output: JSON shapes per docs/json.md, the results table and the verdict line.

JSON: exactly one object on stdout, ``"version": 1`` and ``"command"``, the
documented keys with the documented types, results in manifest order.
Human: one table row per patch, a one-line verdict, no ANSI codes off a TTY.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import ANSI_ESCAPE, TARGET, d, head_sha, run_cli, run_script, scenario, src

RESULT_KEYS = {"patch", "op", "status", "reason", "required", "file", "line", "message", "hint"}
STATUSES = {"APPLY", "SKIP", "WARN", "FAIL"}


MODEL = d("""
    import torch


    class Model:
        def forward(self, x):
            return x


    EntryClass = Model
""")

WORKER = "def verify(batch):\n    result = forward(batch)\n    return result\n"


def patches() -> list[dict]:
    # Deliberately not grouped by file: results must still come back in manifest order.
    return [
        {"id": "reg", "op": "ensure-list-item", "file": "pkg/model.py", "target": "EntryClass", "item": "Extra"},
        {
            "id": "timing",
            "op": "insert",
            "file": "pkg/worker.py",
            "function": "verify",
            "anchor": "result = forward(batch)",
            "position": "before",
            "source": src("t.py"),
            "body_of": "start",
        },
        {"id": "imp", "op": "ensure-import", "file": "pkg/model.py", "import": "import os"},
        {
            "id": "opt",
            "op": "add-methods",
            "file": "pkg/gone.py",
            "class": "Model",
            "source": src("m.py"),
            "required": False,
            "requires": ["imp"],
            "description": "optional, file missing",
        },
    ]


PAYLOADS = {
    "t.py": "def start():\n    timer.start()\n",
    "m.py": "class Model:\n    def extra(self):\n        return 1\n",
}
IDS = ["reg", "timing", "imp", "opt"]


def make(tmp_path: Path):
    return scenario(tmp_path, {"pkg/model.py": MODEL, "pkg/worker.py": WORKER}, patches(), PAYLOADS)


def check_result(result: dict) -> None:
    assert set(result) == RESULT_KEYS, set(result) ^ RESULT_KEYS
    assert isinstance(result["patch"], str)
    assert isinstance(result["op"], str)
    assert result["status"] in STATUSES
    if result["status"] == "APPLY":
        assert result["reason"] is None
    else:
        assert isinstance(result["reason"], str)
    assert isinstance(result["required"], bool)
    assert isinstance(result["file"], str)
    assert result["line"] is None or (isinstance(result["line"], int) and result["line"] >= 1)
    assert isinstance(result["message"], str) and result["message"]
    assert result["hint"] is None or isinstance(result["hint"], str)


MANIFEST_KEYS = {"name", "path", "digest"}


def check_manifest_obj(obj: dict, manifest: Path) -> None:
    assert set(obj) == MANIFEST_KEYS
    assert obj["name"] == "test"
    assert Path(obj["path"]).resolve() == manifest.resolve()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", obj["digest"])


def one_json_object(out: str) -> dict:
    data = json.loads(out)  # raises if there is anything but one JSON document
    assert isinstance(data, dict)
    assert data["version"] == 1
    return data


APPLY_KEYS = {
    "version",
    "command",
    "manifest",
    "target",
    "commit",
    "subject",
    "dry_run",
    "strict",
    "refused",
    "written",
    "would_write",
    "notes",
    "moved_from",
    "worktree",
    "unwritable",
    "unwritable_advice",
    "results",
    "groups",
}


def check_apply(data: dict, sc, *, dry_run: bool) -> None:
    assert set(data) == APPLY_KEYS, set(data) ^ APPLY_KEYS
    assert data["command"] == "apply"
    check_manifest_obj(data["manifest"], sc.kit.manifest)
    assert Path(data["target"]).is_absolute() and Path(data["target"]) == sc.repo.resolve()
    assert data["commit"] == head_sha(sc.repo)
    assert data["subject"] == "upstream base"
    assert data["dry_run"] is dry_run
    assert data["strict"] is False
    assert isinstance(data["refused"], bool)
    for key in ("written", "would_write", "notes"):
        assert isinstance(data[key], list) and all(isinstance(x, str) for x in data[key])
    assert [r["patch"] for r in data["results"]] == IDS
    for result in data["results"]:
        check_result(result)


def test_apply_json_shape(tmp_path, capsys):
    sc = make(tmp_path)
    r = sc.apply(capsys)
    assert r.code == 0
    data = one_json_object(r.out)
    check_apply(data, sc, dry_run=False)
    assert data["refused"] is False
    assert sorted(data["written"]) == ["pkg/model.py", "pkg/worker.py"]
    assert data["would_write"] == []
    assert [(x["status"], x["reason"]) for x in data["results"]] == [
        ("APPLY", None),
        ("APPLY", None),
        ("APPLY", None),
        ("WARN", "FILE_NOT_FOUND"),
    ]
    assert [x["op"] for x in data["results"]] == ["ensure-list-item", "insert", "ensure-import", "add-methods"]
    assert [x["required"] for x in data["results"]] == [True, True, True, False]
    assert data["results"][3]["file"] == "pkg/gone.py" and data["results"][3]["line"] is None
    assert r.err == ""


def test_apply_dry_run_json_shape(tmp_path, capsys):
    sc = make(tmp_path)
    before = (sc.repo / "pkg/model.py").read_bytes()
    r = sc.apply(capsys, "--dry-run")
    assert r.code == 0
    data = one_json_object(r.out)
    check_apply(data, sc, dry_run=True)
    assert data["written"] == []
    assert sorted(data["would_write"]) == ["pkg/model.py", "pkg/worker.py"]
    assert (sc.repo / "pkg/model.py").read_bytes() == before


def test_apply_json_when_refused(tmp_path, capsys):
    sc = scenario(
        tmp_path,
        {"pkg/model.py": MODEL, "pkg/worker.py": WORKER},
        [p | {"required": True} if p["id"] == "opt" else p for p in patches()],
        PAYLOADS,
    )
    r = sc.apply(capsys)
    assert r.code == 1
    data = one_json_object(r.out)
    assert data["refused"] is True and data["written"] == []
    assert data["results"][3]["status"] == "FAIL" and data["results"][3]["required"] is True
    assert r.err == ""


STATUS_KEYS = {
    "version",
    "command",
    "manifest",
    "target",
    "commit",
    "subject",
    "complete",
    "record",
    "edited_after_apply",
    "layered_over",
    "layered_under",
    "out_of_date",
    "interrupted",
    "results",
    "groups",
}


def test_status_json_shape(tmp_path, capsys):
    sc = make(tmp_path)
    before = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert before.code == 1
    data = one_json_object(before.out)
    assert set(data) == STATUS_KEYS, set(data) ^ STATUS_KEYS
    assert data["command"] == "status"
    check_manifest_obj(data["manifest"], sc.kit.manifest)
    assert data["commit"] == head_sha(sc.repo)
    assert data["complete"] is False and data["record"] is None and data["edited_after_apply"] == []
    assert [r["patch"] for r in data["results"]] == IDS
    for result in data["results"]:
        assert set(result) == RESULT_KEYS | {"state"}
        assert result["state"] in {"applied", "provided by upstream", "not applied", "cannot apply"}
    assert [r["state"] for r in data["results"]] == ["not applied"] * 3 + ["cannot apply"]

    assert sc.apply(capsys).code == 0
    after = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert after.code == 0
    data = one_json_object(after.out)
    assert data["complete"] is True
    record = data["record"]
    assert set(record) == {"applied_at", "base_commit", "manifest_digest", "files"}
    assert isinstance(record["applied_at"], str) and re.match(r"\d{4}-\d\d-\d\dT", record["applied_at"])
    assert record["base_commit"] == head_sha(sc.repo)
    assert record["manifest_digest"] == data["manifest"]["digest"]
    assert sorted(record["files"]) == ["pkg/model.py", "pkg/worker.py"]
    assert [r["state"] for r in data["results"]] == ["applied"] * 3 + ["cannot apply"]


def test_revert_json_shape(tmp_path, capsys):
    sc = make(tmp_path)
    assert sc.apply(capsys).code == 0
    r = run_cli(capsys, "revert", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert r.code == 0
    data = one_json_object(r.out)
    assert set(data) == {
        "version", "command", "manifest", "target", "nothing_recorded", "restored", "forced", "recovered"
    }  # fmt: skip
    assert data["command"] == "revert"
    assert data["manifest"] == {"name": "test"}  # by name only: a broken manifest can still be reverted
    assert Path(data["target"]) == sc.repo.resolve()
    assert data["nothing_recorded"] is False
    assert sorted(data["restored"], key=lambda x: x["path"]) == [
        {"path": "pkg/model.py", "from": "HEAD"},
        {"path": "pkg/worker.py", "from": "HEAD"},
    ]
    assert data["forced"] == []


def test_validate_json_shape(tmp_path, capsys):
    sc = make(tmp_path)
    r = run_cli(capsys, "validate", "-m", sc.kit.manifest, "--json")
    assert r.code == 0
    data = one_json_object(r.out)
    assert set(data) == {"version", "command", "manifest", "patches", "groups", "warnings"}
    assert data["command"] == "validate"
    assert data["warnings"] == []
    check_manifest_obj(data["manifest"], sc.kit.manifest)
    assert data["patches"] == [
        {"patch": "reg", "op": "ensure-list-item", "file": "pkg/model.py", "required": True, "requires": []},
        {"patch": "timing", "op": "insert", "file": "pkg/worker.py", "required": True, "requires": []},
        {"patch": "imp", "op": "ensure-import", "file": "pkg/model.py", "required": True, "requires": []},
        {"patch": "opt", "op": "add-methods", "file": "pkg/gone.py", "required": False, "requires": ["imp"]},
    ]


def test_manifest_digest_covers_payloads(tmp_path, capsys):
    sc = make(tmp_path)
    first = run_cli(capsys, "validate", "-m", sc.kit.manifest, "--json").json["manifest"]["digest"]
    sc.kit.payload_path("t.py").write_text("def start():\n    timer.start()\n    timer.tick()\n")
    second = run_cli(capsys, "validate", "-m", sc.kit.manifest, "--json").json["manifest"]["digest"]
    assert first != second


def test_digest_json_shape_and_plain_output(tmp_path, capsys):
    text = "import os\n\n\nclass Worker:\n    def verify(self, batch):\n        return batch\n"
    sc = scenario(tmp_path, {TARGET: text}, [{"id": "i", "op": "ensure-import", "file": TARGET, "import": "import os"}])
    r = run_cli(capsys, "digest", sc.file(), "Worker.verify", "--json")
    assert r.code == 0
    data = one_json_object(r.out)
    assert set(data) == {"version", "command", "file", "qualname", "line", "digest"}
    assert data["command"] == "digest"
    assert data["file"] == str(sc.file())
    assert data["qualname"] == "Worker.verify"
    assert data["line"] == 5
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", data["digest"])
    plain = run_cli(capsys, "digest", sc.file(), "Worker.verify")
    assert plain.code == 0 and plain.out == data["digest"] + "\n"
    at_commit = run_cli(capsys, "digest", TARGET, "Worker.verify", "--repo", sc.repo, "--commit", "HEAD", "--json")
    assert at_commit.code == 0 and at_commit.json["digest"] == data["digest"]
    missing = run_cli(capsys, "digest", sc.file(), "Worker.verifyy")
    assert missing.code == 2
    assert missing.err.startswith("patchkit: error: ") and "verify (line 5)" in missing.err


# -- human output ------------------------------------------------------------------------------------


def table_rows(out: str, ids: list[str]) -> list[str]:
    rows = [line for line in out.splitlines() if re.match(r"^\s*\d+\s+\S", line)]
    assert len(rows) == len(ids), out
    for index, (row, patch_id) in enumerate(zip(rows, ids, strict=False), start=1):
        assert re.match(rf"^\s*{index}\s+{re.escape(patch_id)}\b", row), row
    return rows


def test_human_apply_table_and_verdicts(tmp_path, capsys):
    sc = make(tmp_path)
    argv = ["apply", "-m", sc.kit.manifest, "--repo", sc.repo]
    dry = run_cli(capsys, *argv, "--dry-run")
    assert dry.code == 0
    rows = table_rows(dry.out, IDS)
    assert "APPLY" in rows[0] and "WARN" in rows[3] and "FILE_NOT_FOUND" in rows[3]
    assert "(optional)" in rows[3]
    assert "pkg/model.py:" in rows[0]
    verdict = dry.out.rstrip("\n").splitlines()[-1]
    assert verdict.startswith("DRY RUN: would apply 3 patches to 2 files")
    assert "nothing was written" in verdict

    applied = run_cli(capsys, *argv)
    assert applied.code == 0
    table_rows(applied.out, IDS)
    verdict = applied.out.rstrip("\n").splitlines()[-1]
    assert verdict.startswith("APPLIED: 3 patches, wrote 2 files")
    assert "1 optional patch left out (WARN)" in verdict

    again = run_cli(capsys, *argv)
    rows = table_rows(again.out, IDS)
    assert all("SKIP" in row and "ALREADY_APPLIED" in row for row in rows[:3])
    assert again.out.rstrip("\n").splitlines()[-1].startswith("OK: nothing to do")

    for out in (dry.out, applied.out, again.out):
        assert ANSI_ESCAPE not in out
    assert dry.err == applied.err == again.err == ""


def test_human_refused_verdict_names_failures(tmp_path, capsys):
    failing = [
        *patches()[:3],
        {
            "id": "bad-anchor",
            "op": "insert",
            "file": "pkg/worker.py",
            "function": "verify",
            "anchor": "nothing_like_this()",
            "position": "after",
            "source": src("t.py"),
            "body_of": "start",
        },
        {"id": "gone", "op": "ensure-import", "file": "pkg/gone.py", "import": "import os"},
    ]
    sc = scenario(tmp_path, {"pkg/model.py": MODEL, "pkg/worker.py": WORKER}, failing, PAYLOADS)
    r = run_cli(capsys, "apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 1
    rows = table_rows(r.out, ["reg", "timing", "imp", "bad-anchor", "gone"])
    assert "FAIL" in rows[3] and "ANCHOR_NOT_FOUND" in rows[3]
    verdict = r.out.rstrip("\n").splitlines()[-1]
    assert verdict.startswith("REFUSED: 2 required patches cannot apply")
    assert "bad-anchor ANCHOR_NOT_FOUND" in verdict and "gone FILE_NOT_FOUND" in verdict
    assert verdict.endswith("nothing was written.")
    assert ANSI_ESCAPE not in r.out


def test_console_script_human_output_no_colour_no_traceback(tmp_path):
    sc = make(tmp_path)
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 0, r.err
    assert ANSI_ESCAPE not in r.out and ANSI_ESCAPE not in r.err
    assert r.err == ""
    table_rows(r.out, IDS)
    assert r.out.rstrip("\n").splitlines()[-1].startswith("APPLIED: 3 patches")
    js = run_script("status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert js.code == 0
    assert one_json_object(js.out)["complete"] is True


def test_console_script_colour_stays_off_without_no_color_env(tmp_path, monkeypatch):
    sc = make(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--dry-run")
    assert r.code == 0
    assert ANSI_ESCAPE not in r.out and ANSI_ESCAPE not in r.err


def test_usage_errors_are_exit_2_without_traceback(tmp_path, capsys):
    r = run_script("apply", "--no-such-option")
    assert r.code == 2
    assert "Traceback" not in r.err and "--no-such-option" in r.err
    sc = make(tmp_path)
    state = (sc.repo / "pkg/model.py").read_bytes()
    worktree_without_commit = run_cli(
        capsys, "apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--worktree", tmp_path / "w"
    )
    assert worktree_without_commit.code == 2
    assert worktree_without_commit.err.startswith("patchkit: error: ") and "--commit" in worktree_without_commit.err
    assert worktree_without_commit.err.count("\n") == 1
    assert (sc.repo / "pkg/model.py").read_bytes() == state


def test_human_status_and_validate(tmp_path, capsys):
    sc = make(tmp_path)
    st = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert st.code == 1
    rows = table_rows(st.out, IDS)
    assert "not applied" in rows[0] and "cannot apply" in rows[3]
    assert st.out.rstrip("\n").splitlines()[-1] == "INCOMPLETE: required patches not in place: reg, timing, imp."
    val = run_cli(capsys, "validate", "-m", sc.kit.manifest)
    assert val.code == 0
    table_rows(val.out, IDS)
    assert val.out.rstrip("\n").splitlines()[-1] == "VALID: 4 patches."
    assert ANSI_ESCAPE not in st.out + val.out


def test_check_machine_formats_are_plain_whole_lines_at_any_width(tmp_path, monkeypatch):
    """`check --format github|gitlab` through the console script at 40 columns: no colour, nothing wrapped,
    the optional patch's WARN a warning (an error under --strict, which also makes the exit 1); the --since
    view likewise plain."""
    sc = make(tmp_path)
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.delenv("NO_COLOR", raising=False)
    base = ("check", "-m", sc.kit.manifest, "--repo", sc.repo)
    github = run_script(*base, "--format", "github")
    assert (github.code, github.err) == (0, "")
    [line] = github.out.splitlines()
    assert line.startswith("::warning file=pkg/gone.py,title=test%3A opt WARN FILE_NOT_FOUND at ")
    strict = run_script(*base, "--format", "github", "--strict")
    assert strict.code == 1 and strict.out.startswith("::error file=pkg/gone.py,")
    gitlab = run_script(*base, "--format", "gitlab")
    assert gitlab.code == 0
    [issue] = json.loads(gitlab.out)
    assert (issue["check_name"], issue["severity"], issue["location"]) == (
        "FILE_NOT_FOUND",
        "minor",
        {"path": "pkg/gone.py", "lines": {"begin": 1}},
    )
    since = run_script(*base, "--since", "HEAD")
    assert since.code == 0
    assert since.out.splitlines()[0].startswith("patchkit check  manifest test (sha256:")
    assert since.out.splitlines()[-1] == f"OK: no required patch newly fails since {head_sha(sc.repo)[:10]}."
    for out in (github.out, strict.out, gitlab.out, since.out):
        assert ANSI_ESCAPE not in out
