"""[[group]]: variants of one change, as before/after source text and over a real history.

The manifest here is a small model of eagle3-verify-timing: a timer around one
call that upstream has in two places (a v1 worker in ``pkg/v1.py``, in two call
shapes, and a v2 worker in ``pkg/v2.py``), with helper definitions that must go
in only where one of their callers does.  Every expected text and verdict is
written out; none is computed by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import Kit, d, make_repo, manifest_text, run_cli, src, toml_value

from patchkit.demo.history import HistoryBuilder
from patchkit.engine.check import check_range
from patchkit.manifest import load_manifest

V1, V2 = "pkg/v1.py", "pkg/v2.py"

V1_SHAPE_A = d('''
    """Spec v1 worker."""
    import time


    class Worker:
        def verify(self, batch):
            prep = batch.prepare()
            out = self.target.forward(prep, is_verify=True)
            return out
''')
V1_SHAPE_B = V1_SHAPE_A.replace("prep = batch.prepare()\n        ", "").replace("forward(prep,", "forward(batch,")
V1_SHAPE_C = V1_SHAPE_B.replace("forward(batch, is_verify=True)", "forward_verify(batch)")  # fits no variant

V2_TEXT = d("""
    class WorkerV2:
        def verify(self, batch):
            out = self.target.forward(batch=None, plan=batch.plan)
            return out
""")
V2_MOVED = V2_TEXT.replace("out = self.target.forward(batch=None, plan=batch.plan)", "out = run_verify(self, batch)")

PAYLOAD = d("""
    import time


    def _timer_start():
        return time.perf_counter()


    def _timer_stop(t0):
        print(f"verify_ms={(time.perf_counter() - t0) * 1000:.1f}")


    def before():
        _t0 = _timer_start()


    def after(_t0):
        _timer_stop(_t0)
""")


def _insert(pid: str, file: str, function: str, anchor: str, position: str, requires: list[str]) -> dict:
    return {
        "id": pid,
        "op": "insert",
        "file": file,
        "function": function,
        "anchor": anchor,
        "position": position,
        "source": src("t.py"),
        "body_of": "before" if position == "before" else "after",
        "requires": requires,
    }


def _helpers(pid: str, file: str, before: str, requires: list[str]) -> dict:
    return {
        "id": pid,
        "op": "add-definitions",
        "file": file,
        "source": src("t.py"),
        "names": ["_timer_start", "_timer_stop"],
        "before": before,
        "requires": requires,
    }


A_CALL = "out = self.target.forward(prep, is_verify=True)"
B_CALL = "out = self.target.forward(batch, is_verify=True)"
V2_CALL = "out = self.target.forward(batch=None, plan=batch.plan)"

PATCHES = [
    {"id": "v1-import-time", "op": "ensure-import", "file": V1, "import": "import time", "requires": ["v1-helpers"]},
    _helpers("v1-helpers", V1, "Worker", ["v1-import-time", "v1"]),
    _insert("v1-start", V1, "Worker.verify", A_CALL, "before", ["v1-helpers", "v1-stop"]),
    _insert("v1-stop", V1, "Worker.verify", A_CALL, "after", ["v1-helpers", "v1-start"]),
    _insert("v1-batch-start", V1, "Worker.verify", B_CALL, "before", ["v1-helpers", "v1-batch-stop"]),
    _insert("v1-batch-stop", V1, "Worker.verify", B_CALL, "after", ["v1-helpers", "v1-batch-start"]),
    _helpers("v2-helpers", V2, "WorkerV2", ["v2-start"]),
    _insert("v2-start", V2, "WorkerV2.verify", V2_CALL, "before", ["v2-helpers", "v2-stop"]),
    _insert("v2-stop", V2, "WorkerV2.verify", V2_CALL, "after", ["v2-helpers", "v2-start"]),
]


def groups_text(required: bool | None) -> str:
    top = {"id": "timing", "members": ["v1", "v2-start"], "description": "time verify wherever it is"}
    if required is not None:
        top["required"] = required
    inner = {"id": "v1", "members": ["v1-start", "v1-batch-start"]}
    lines = []
    for table in (top, inner):
        lines += ["", "[[group]]", *(f"{k} = {toml_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


MEMBERS = {"v1-start", "v1-batch-start", "v2-start"}


def kit(tmp_path: Path, required: bool | None = True) -> Kit:
    """The manifest; with an optional group, the patches outside it are optional too (as in eagle3-verify-timing)."""
    patches = (
        PATCHES if required is not False else [p if p["id"] in MEMBERS else {**p, "required": False} for p in PATCHES]
    )
    k = Kit(tmp_path / "kit")
    k.write(payloads={"t.py": PAYLOAD}, text=manifest_text(patches) + groups_text(required))
    return k


def apply(capsys, tmp_path: Path, files: dict[str, str], required: bool | None = True):
    repo = make_repo(tmp_path / "repo", files)
    k = kit(tmp_path, required)
    r = run_cli(capsys, "apply", "-m", k.manifest, "--repo", repo, "--json")
    return repo, k, r


def verdicts(data: dict) -> dict[str, str]:
    return {r["patch"]: f"{r['status']} {r['reason'] or ''}".strip() for r in data["results"]}


def groups(data: dict) -> dict[str, tuple[str, str | None, list[str]]]:
    return {g["group"]: (g["status"], g["reason"], g["covered_by"]) for g in data["groups"]}


V1_A_AFTER = d('''
    """Spec v1 worker."""
    import time


    def _timer_start():
        return time.perf_counter()


    def _timer_stop(t0):
        print(f"verify_ms={(time.perf_counter() - t0) * 1000:.1f}")


    class Worker:
        def verify(self, batch):
            prep = batch.prepare()
            _t0 = _timer_start()
            out = self.target.forward(prep, is_verify=True)
            _timer_stop(_t0)
            return out
''')

V2_AFTER = d("""
    def _timer_start():
        return time.perf_counter()


    def _timer_stop(t0):
        print(f"verify_ms={(time.perf_counter() - t0) * 1000:.1f}")


    class WorkerV2:
        def verify(self, batch):
            _t0 = _timer_start()
            out = self.target.forward(batch=None, plan=batch.plan)
            _timer_stop(_t0)
            return out
""")


# -- before/after ------------------------------------------------------------------------------


def test_every_variant_that_fits_applies(capsys, tmp_path: Path) -> None:
    repo, k, r = apply(capsys, tmp_path, {V1: V1_SHAPE_A, V2: V2_TEXT})
    assert r.code == 0, r.err
    assert verdicts(r.json) == {
        "v1-import-time": "SKIP ALREADY_APPLIED",
        "v1-helpers": "APPLY",
        "v1-start": "APPLY",
        "v1-stop": "APPLY",
        "v1-batch-start": "SKIP OTHER_VARIANT",
        "v1-batch-stop": "SKIP OTHER_VARIANT",
        "v2-helpers": "APPLY",
        "v2-start": "APPLY",
        "v2-stop": "APPLY",
    }
    assert groups(r.json) == {"timing": ("APPLY", None, ["v1", "v2-start"]), "v1": ("APPLY", None, ["v1-start"])}
    assert (repo / V1).read_text() == V1_A_AFTER
    assert (repo / V2).read_text() == V2_AFTER
    batch = next(x for x in r.json["results"] if x["patch"] == "v1-batch-start")
    assert batch["message"].startswith(
        "another variant of group v1 applies here (v1-start); on its own: FAIL ANCHOR_NOT_FOUND"
    )
    assert batch["required"] is True  # from its group
    stop = next(x for x in r.json["results"] if x["patch"] == "v1-batch-stop")
    assert "needed only by an unused variant: requires v1-batch-start is SKIP OTHER_VARIANT" in stop["message"]

    again = run_cli(capsys, "apply", "-m", k.manifest, "--repo", repo, "--json")
    assert again.code == 0 and again.json["written"] == []
    assert set(verdicts(again.json).values()) == {"SKIP ALREADY_APPLIED", "SKIP OTHER_VARIANT"}
    assert verdicts(again.json)["v1-batch-start"] == "SKIP OTHER_VARIANT"
    assert groups(again.json) == {
        "timing": ("SKIP", "ALREADY_APPLIED", ["v1", "v2-start"]),
        "v1": ("SKIP", "ALREADY_APPLIED", ["v1-start"]),
    }


def test_the_second_call_shape_is_a_variant_too(capsys, tmp_path: Path) -> None:
    repo, _, r = apply(capsys, tmp_path, {V1: V1_SHAPE_B, V2: V2_TEXT})
    assert r.code == 0
    got = verdicts(r.json)
    assert (got["v1-start"], got["v1-stop"], got["v1-batch-start"], got["v1-batch-stop"]) == (
        "SKIP OTHER_VARIANT",
        "SKIP OTHER_VARIANT",
        "APPLY",
        "APPLY",
    )
    assert groups(r.json)["v1"] == ("APPLY", None, ["v1-batch-start"])
    assert (repo / V1).read_text() == V1_A_AFTER.replace("        prep = batch.prepare()\n", "").replace(
        "forward(prep,", "forward(batch,"
    )


def test_a_deleted_variant_is_not_a_failure(capsys, tmp_path: Path) -> None:
    _, _, r = apply(capsys, tmp_path, {V2: V2_TEXT})
    assert r.code == 0
    got = verdicts(r.json)
    assert {got[p] for p in got if p.startswith("v1")} == {"SKIP OTHER_VARIANT"}
    assert groups(r.json) == {
        "timing": ("APPLY", None, ["v2-start"]),
        "v1": ("SKIP", "OTHER_VARIANT", []),
    }
    start = next(x for x in r.json["results"] if x["patch"] == "v1-start")
    assert start["message"] == (
        "another variant of group timing applies here (v2-start); "
        "on its own: FAIL FILE_NOT_FOUND: pkg/v1.py does not exist"
    )
    helpers = next(x for x in r.json["results"] if x["patch"] == "v1-helpers")
    assert helpers["message"].startswith(
        "needed only by an unused variant: requires group v1, a variant of group timing, is not used here"
    )
    assert r.json["written"] == [V2]


def test_helpers_never_go_in_without_a_caller(capsys, tmp_path: Path) -> None:
    """The v1 file is there but fits no call shape: nothing of v1 goes in, and that is no failure."""
    repo, _, r = apply(capsys, tmp_path, {V1: V1_SHAPE_C, V2: V2_TEXT})
    assert r.code == 0
    got = verdicts(r.json)
    assert got["v1-helpers"] == "SKIP OTHER_VARIANT"
    # Already in the file: a held-back patch that is in place stays SKIP ALREADY_APPLIED.
    assert got["v1-import-time"] == "SKIP ALREADY_APPLIED"
    assert (repo / V1).read_text() == V1_SHAPE_C
    assert r.json["written"] == [V2]


def test_no_variant_fails_a_required_group_listing_every_reason(capsys, tmp_path: Path) -> None:
    repo, _, r = apply(capsys, tmp_path, {V1: V1_SHAPE_C})
    assert r.code == 1 and r.json["refused"] is True and r.json["written"] == []
    got = verdicts(r.json)
    assert got["v1-start"] == "FAIL ANCHOR_NOT_FOUND"
    assert got["v1-batch-start"] == "FAIL ANCHOR_NOT_FOUND"
    assert got["v2-start"] == "FAIL FILE_NOT_FOUND"
    assert got["v1-helpers"] == "FAIL DEPENDENCY"
    timing = next(g for g in r.json["groups"] if g["group"] == "timing")
    assert (timing["status"], timing["reason"], timing["covered_by"]) == ("FAIL", "NO_VARIANT", [])
    message = timing["message"]
    assert message.startswith("no variant applies here: v1: FAIL NO_VARIANT (no variant applies here: v1-start: FAIL")
    for part in ("v1-start: FAIL ANCHOR_NOT_FOUND", "v1-batch-start: FAIL ANCHOR_NOT_FOUND"):
        assert part in message
    assert "v2-start: FAIL FILE_NOT_FOUND (pkg/v2.py does not exist)" in message
    assert (repo / V1).read_text() == V1_SHAPE_C


def test_no_variant_warns_an_optional_group(capsys, tmp_path: Path) -> None:
    _, _, r = apply(capsys, tmp_path, {V1: V1_SHAPE_C}, required=False)
    assert r.code == 0 and r.json["written"] == []
    got = verdicts(r.json)
    assert (got["v1-start"], got["v2-start"]) == ("WARN ANCHOR_NOT_FOUND", "WARN FILE_NOT_FOUND")
    assert groups(r.json)["timing"] == ("WARN", "NO_VARIANT", [])
    assert r.json["groups"][0]["required"] is False


def test_human_output_has_a_groups_table(capsys, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {V2: V2_TEXT})
    k = kit(tmp_path)
    r = run_cli(capsys, "apply", "-m", k.manifest, "--repo", repo, "--dry-run")
    lines = [line.split() for line in r.out.splitlines()]
    assert ["group", "status", "reason", "covered", "by", "message"] in lines
    timing = next(line for line in lines if line[:1] == ["timing"])
    assert timing[1:4] == ["APPLY", "-", "v2-start"]
    inner = next(line for line in lines if line[:1] == ["v1"])
    assert inner[1:4] == ["SKIP", "OTHER_VARIANT", "-"]


def test_status_counts_unused_variants_as_not_needed(capsys, tmp_path: Path) -> None:
    repo, k, r = apply(capsys, tmp_path, {V2: V2_TEXT})
    assert r.code == 0
    s = run_cli(capsys, "status", "-m", k.manifest, "--repo", repo, "--json")
    assert s.code == 0 and s.json["complete"] is True
    states = {x["patch"]: x["state"] for x in s.json["results"]}
    assert states["v1-start"] == "not needed (another variant applies)"
    assert states["v2-start"] == "applied"
    assert [g["group"] for g in s.json["groups"]] == ["timing", "v1"]


def test_validate_lists_groups(capsys, tmp_path: Path) -> None:
    k = Kit(tmp_path / "kit")
    k.write(payloads={"t.py": PAYLOAD}, text=manifest_text(PATCHES) + groups_text(False))
    r = run_cli(capsys, "validate", "-m", k.manifest, "--json")
    assert r.code == 0
    assert r.json["groups"] == [
        {
            "group": "timing",
            "members": ["v1", "v2-start"],
            "required": False,
            "parent": None,
            "description": "time verify wherever it is",
        },
        {
            "group": "v1",
            "members": ["v1-start", "v1-batch-start"],
            "required": False,
            "parent": "timing",
            "description": None,
        },
    ]
    # members take `required` from the outermost group
    patches = {p["patch"]: p["required"] for p in r.json["patches"]}
    assert (patches["v1-start"], patches["v1-batch-start"], patches["v2-start"]) == (False, False, False)
    assert patches["v1-stop"] is True  # not a member: its own (default) `required`


# -- over a history -------------------------------------------------------------------------------


def build_history(path: Path):
    b = HistoryBuilder(path)
    b.commit("both", "v1 and v2 workers", {V1: V1_SHAPE_A, V2: V2_TEXT})
    b.commit("docs", "docs", {"README.md": "docs\n"})
    b.commit("v1-batch", "v1 passes the batch", {V1: V1_SHAPE_B})
    b.commit("drop-v1", "remove spec v1", {V1: None})
    b.commit("move-v2", "v2 forward moves into a helper", {V2: V2_MOVED})
    return b.build()


def test_check_shows_which_variant_covers_which_commits(capsys, tmp_path: Path, open_repo) -> None:
    history = build_history(tmp_path / "repo")
    k = kit(tmp_path, required=False)
    report = check_range(load_manifest(k.manifest), open_repo(history.path), ranges=["main"])
    got = [
        (
            w.group,
            w.status.value,
            w.reason.value if w.reason else None,
            w.covered_by,
            [history.label_of(c.sha) for c in w.commits],
        )
        for w in report.group_windows
    ]
    assert got == [
        ("timing", "APPLY", None, ("v1", "v2-start"), ["both", "docs", "v1-batch"]),
        ("timing", "APPLY", None, ("v2-start",), ["drop-v1"]),
        ("timing", "WARN", "NO_VARIANT", (), ["move-v2"]),
        ("v1", "APPLY", None, ("v1-start",), ["both", "docs"]),
        ("v1", "APPLY", None, ("v1-batch-start",), ["v1-batch"]),
        ("v1", "SKIP", "OTHER_VARIANT", (), ["drop-v1"]),
        ("v1", "WARN", "NO_VARIANT", (), ["move-v2"]),
    ]
    # No commit gets helpers without a caller in the same file.
    for row in report.commits:
        by_id = {r.patch: r.status.value for r in row.results}
        assert (by_id["v1-helpers"] == "APPLY") == ("APPLY" in (by_id["v1-start"], by_id["v1-batch-start"]))
        assert (by_id["v2-helpers"] == "APPLY") == (by_id["v2-start"] == "APPLY")

    r = run_cli(capsys, "check", "-m", k.manifest, "--repo", history.path, "--range", "main")
    assert r.code == 0
    out = r.out.splitlines()
    start = out.index("group timing (optional)  variants: v1, v2-start")
    shown = [line.split() for line in out[start : start + 5]]
    assert shown[1][:3] == ["APPLY", "3", "commits"] and shown[1][-4:] == ["covered", "by", "v1,", "v2-start"]
    assert shown[2][-3:] == ["covered", "by", "v2-start"]
    assert shown[3][:4] == ["WARN", "NO_VARIANT", "1", "commit"] and shown[3][-3:] == ["covered", "by", "none"]
    assert shown[4][:4] == ["no", "variant", "applies", "here:"]
    assert "group v1 (optional)  variants: v1-start, v1-batch-start  a variant in timing" in out

    data = json.loads(
        run_cli(capsys, "check", "-m", k.manifest, "--repo", history.path, "--range", "main", "--json").out
    )
    assert set(data["group_windows"][0]) == {
        "group",
        "status",
        "reason",
        "covered_by",
        "count",
        "first",
        "last",
        "message",
    }
    assert set(data["commits"][0]["groups"][0]) == {
        "group",
        "status",
        "reason",
        "required",
        "members",
        "covered_by",
        "message",
    }
    assert [w["count"] for w in data["group_windows"] if w["group"] == "timing"] == [3, 1, 1]


# -- manifest errors ------------------------------------------------------------------------------


def _error(capsys, tmp_path: Path, text: str) -> str:
    k = Kit(tmp_path / "kit")
    k.write(payloads={"t.py": PAYLOAD}, text=text)
    r = run_cli(capsys, "validate", "-m", k.manifest)
    assert r.code == 2 and r.out == ""
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err.strip()


BASE = manifest_text(PATCHES)
BASE_LINES = BASE.count("\n")


@pytest.mark.parametrize(
    ("groups_toml", "expected"),
    [
        (
            '[[group]]\nid = "g"\nmembers = ["v1-start", "v2-strat"]\n',
            "{n3}: group[1].members[2]: no patch or group has id 'v2-strat'; did you mean 'v2-start'?",
        ),
        (
            '[[group]]\nid = "g"\nmembers = ["v1-start"]\n\n[[group]]\nid = "h"\nmembers = ["v1-start"]\n',
            "{n7}: group[2].members[1]: 'v1-start' is already a member of group[1] ('g'); an id can be a variant in "
            "one group only; nest the groups instead: make one group a member of the other",
        ),
        (
            '[[group]]\nid = "g"\nmembers = ["h"]\n\n[[group]]\nid = "h"\nmembers = ["g"]\n',
            "{n3}: group[1].members: groups nest in a cycle: g -> h -> g",
        ),
        (
            '[[group]]\nid = "v1-start"\nmembers = ["v2-start"]\n',
            "{n2}: group[1].id: duplicate id 'v1-start' (patch[3] has it)",
        ),
        ('[[group]]\nid = "g"\nmembers = ["g"]\n', "{n3}: group[1].members[1]: a group cannot be its own member"),
        ('[[group]]\nid = "g"\nmembers = []\n', "{n3}: group[1].members: must not be empty"),
        (
            '[[group]]\nid = "g"\nmembers = ["v1-start"]\nrequird = true\n',
            "{n4}: group[1].requird: unknown key; did you mean 'required'?",
        ),
        ('[[group]]\nid = "g"\n', "{n1}: group[1].members: missing required key"),
        (
            '[[group]]\nid = "g"\nmembers = ["V1"]\n',
            "{n3}: group[1].members[1]: 'V1' must start with a lowercase letter",
        ),
    ],
    ids=["unknown-member", "two-groups", "cycle", "id-clash", "self", "empty", "typo", "no-members", "bad-id"],
)
def test_group_errors_name_the_key_path_and_line(capsys, tmp_path: Path, groups_toml: str, expected: str) -> None:
    err = _error(capsys, tmp_path, BASE + "\n" + groups_toml)
    lines = {f"n{i}": BASE_LINES + 1 + i for i in range(1, 8)}  # n1: the [[group]] line
    assert err.startswith("patchkit: error: ") and f".toml:{expected.format(**lines)}" in err, err


def test_a_member_cannot_set_required(capsys, tmp_path: Path) -> None:
    patches = [dict(p) for p in PATCHES]
    patches[2]["required"] = False  # v1-start
    err = _error(capsys, tmp_path, manifest_text(patches) + groups_text(True))
    assert "patch[3].required: 'v1-start' is a variant in group 'v1' and takes `required` from group 'timing'" in err
    assert "set `required` on group[1] ('timing')" in err


def test_requires_may_name_a_group_and_typos_are_caught(capsys, tmp_path: Path) -> None:
    patches = [dict(p) for p in PATCHES]
    patches[1]["requires"] = ["v1-import-time", "vv1"]
    err = _error(capsys, tmp_path, manifest_text(patches) + groups_text(True))
    assert "patch[2].requires[2]: no patch or group has id 'vv1'; did you mean 'v1'?" in err


def test_explain_calls_an_unused_variant_no_failure(capsys, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {V2: V2_TEXT})
    k = kit(tmp_path)
    r = run_cli(capsys, "explain", "-m", k.manifest, "v1-start", "--repo", repo)
    assert r.code == 0, r.err
    assert "SKIP OTHER_VARIANT" in r.out
    assert "v1-start is an unused variant at " in r.out and "there is no failure to explain" in r.out
