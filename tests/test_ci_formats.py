"""check's CI formats (#46): JUnit XML, GitHub workflow commands and a GitLab Code Quality report.

Each is derived here from one real check result (the demo's SGLang-shaped history, both bundled manifests, over
``main`` and the unmerged ``rename-kimi`` branch: APPLY, SKIP, WARN, FAIL and group windows) and held against the
``--json`` of that same result: the same patches, verdicts, commits and file:line.  The JUnit document is
validated with a real validator (xmlschema) against the schema those CI systems read, a copy of which is
``tests/fixtures/junit/junit-10.xsd``; GitHub's commands are parsed with the runner's documented grammar, and
their escaping of ``%``, CR, LF, ``:`` and ``,`` is checked through a real check whose file name and hint hold
each of them.
"""

from __future__ import annotations

import json
import os
import re
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from helpers import d, run_cli, scenario, temp_leftovers

from patchkit.ci import github_commands, gitlab_report, junit_xml
from patchkit.ci.github import escape_data, escape_property
from patchkit.engine.check import CheckReport, check_range
from patchkit.git import Repo
from patchkit.manifest import load_manifest

SCHEMA = Path(__file__).resolve().parent / "fixtures" / "junit" / "junit-10.xsd"
MANIFESTS = ("kimi-k25-eagle3", "eagle3-verify-timing")
RANGES = ("main", "main..rename-kimi")


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMA))


@pytest.fixture(scope="module")
def reports(sglang_history) -> dict[str, CheckReport]:
    with Repo.discover(sglang_history.path) as repo:
        return {name: check_range(load_manifest(name), repo, ranges=list(RANGES)) for name in MANIFESTS}


# -- what --json says, independently of patchkit.ci ------------------------------------------------------------


def expected_cases(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every window of --json, patches then groups, with the file and line of the result at its first commit
    (a group: its first member patch's, through nested groups)."""
    commits = {c["commit"]: c for c in data["commits"]}
    out = []
    for w in data["windows"]:
        [r] = [r for r in commits[w["first"]]["results"] if r["patch"] == w["patch"]]
        out.append({**w, "kind": "patch", "id": w["patch"], "file": r["file"], "line": r["line"]})
    for w in data["group_windows"]:
        groups = {g["group"]: g for g in commits[w["first"]]["groups"]}
        results = {r["patch"]: r for r in commits[w["first"]]["results"]}
        member = w["group"]
        while member in groups:
            member = groups[member]["members"][0]
        out.append(
            {**w, "kind": "group", "id": w["group"], "file": results[member]["file"], "line": results[member]["line"]}
        )
    return out


def newest_failing(cases: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    newest = {}
    for case in cases:
        if case["status"] in ("WARN", "FAIL"):
            newest[(case["kind"], case["id"])] = case
    return newest


def label(case: dict[str, Any]) -> str:
    return case["id"] if case["kind"] == "patch" else f"group {case['id']}"


# -- GitHub's grammar, as the runner reads it --------------------------------------------------------------------

COMMAND = re.compile(r"^::(?P<name>[a-z]+)(?: (?P<properties>[^:]*))?::(?P<message>.*)$")


def unescape(text: str, tokens: dict[str, str]) -> str:
    """One left-to-right pass, as a decoder must (replacing ``%25`` first would turn a literal ``%0A`` into LF)."""
    return re.sub("|".join(map(re.escape, tokens)), lambda m: tokens[m.group(0)], text)


DATA = {"%25": "%", "%0D": "\r", "%0A": "\n"}
PROPERTY = {**DATA, "%3A": ":", "%2C": ","}


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """``::name k=v,k=v::message`` into its parts, unescaped; a raw CR, LF, or an unescaped ``:``/``,`` inside
    a property value, makes the line fail to parse or parse into other parts."""
    assert "\r" not in line and "\n" not in line
    match = COMMAND.match(line)
    assert match, line
    properties = {}
    for item in (match["properties"] or "").split(","):
        if item:
            key, _, value = item.partition("=")
            assert re.fullmatch(r"[a-zA-Z]+", key), item
            properties[key] = unescape(value, PROPERTY)
    return match["name"], properties, unescape(match["message"], DATA)


def parse_github(text: str) -> list[tuple[str, dict[str, str], str]]:
    assert text == "" or text.endswith("\n")
    return [parse_command(line) for line in text.splitlines()]


# -- the tests ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MANIFESTS)
@pytest.mark.parametrize("strict", [False, True])
def test_every_format_agrees_with_the_json_of_one_result(reports, schema, name, strict):
    report = reports[name]
    data = json.loads(report.json_text())
    cases = expected_cases(data)
    digest = data["manifest"]["digest"]
    failing = {"FAIL", "WARN"} if strict else {"FAIL"}

    # JUnit: one test case per window, in the same order, mapped by status.
    junit = junit_xml(report, strict=strict)
    schema.validate(junit)
    root = ET.fromstring(junit.encode("utf-8"))
    [suite] = root.findall("testsuite")
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["manifest_digest"] == digest
    testcases = suite.findall("testcase")
    assert len(testcases) == len(cases)
    assert int(suite.get("tests")) == len(cases)
    assert int(suite.get("failures")) == sum(c["status"] in failing for c in cases)
    assert int(suite.get("skipped")) == sum(c["status"] == "SKIP" for c in cases)
    for element, case in zip(testcases, cases, strict=True):
        assert element.get("classname") == f"patchkit.{name}"
        title = element.get("name")
        assert title.startswith(f"{label(case)} at {case['first'][:10]}")
        if case["count"] > 1:
            assert f"..{case['last'][:10]} ({case['count']:,} commits)" in title
        children = [child.tag for child in element]
        where = f"{case['file']}:{case['line']}" if case["line"] else case["file"]
        if case["status"] == "APPLY":
            assert children == []
        elif case["status"] == "SKIP":
            assert children == ["skipped"]
            assert element[0].get("type") == case["reason"]
            assert element[0].get("message").startswith(f"SKIP {case['reason']} at {where}: {case['message']}")
        elif case["status"] in failing:
            assert children == ["failure"]
            failure = element[0]
            assert failure.get("type") == case["reason"]
            message = failure.get("message")
            assert message.startswith(f"{case['status']} {case['reason']} at {where}: {case['message']}")
            if case.get("hint"):
                assert message.endswith(f"; hint: {case['hint']}")
            assert f"where: {where}" in failure.text and case["first"] in failure.text
        else:  # WARN without --strict: a pass with a note
            assert children == ["system-out"]
            assert element[0].text.startswith(f"WARN {case['reason']}\nwhere: {where}\n")
            assert "--strict" in element[0].text

    # GitHub and GitLab: one annotation per failing patch or group, its newest failing window.
    newest = newest_failing(cases)
    commands = parse_github(github_commands(report, strict=strict))
    issues = json.loads(gitlab_report(report, strict=strict))
    assert len(commands) == len(issues) == len(newest)
    for (level, properties, message), issue, case in zip(commands, issues, newest.values(), strict=True):
        verdict = f"{case['status']} {case['reason']}"
        assert level == ("error" if case["status"] in failing else "warning")
        assert properties["file"] == case["file"]
        assert properties.get("line") == (str(case["line"]) if case["line"] else None)
        assert properties["title"].startswith(f"{name}: {label(case)} {verdict} at {case['first'][:10]}")
        assert message.startswith(case["message"])
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["check_name"] == case["reason"]
        assert issue["location"] == {"path": case["file"], "lines": {"begin": case["line"] or 1}}
        assert issue["severity"] == {"FAIL": "critical", "WARN": "major" if strict else "minor"}[case["status"]]
        assert issue["description"].startswith(f"{label(case)}: {verdict} at ")
        assert re.fullmatch(r"[0-9a-f]{64}", issue["fingerprint"])
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    if name == "kimi-k25-eagle3":  # the range has required FAILs: the formats must show them
        assert any(level == "error" for level, _, _ in commands)
    else:
        assert any(case["kind"] == "group" for case in newest.values()) and newest


def test_the_schema_refuses_what_it_does_not_allow(reports, schema):
    """The validation can fail: a test case with a ``file`` attribute (which the schema has not) is refused."""
    junit = junit_xml(reports["kimi-k25-eagle3"])
    schema.validate(junit)
    broken = junit.replace("<testcase ", '<testcase file="x.py" ', 1)
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate(broken)


def test_the_cli_prints_and_writes_the_same_views_and_keeps_the_exit_codes(reports, sglang_history, capsys, tmp_path):
    repo = sglang_history.path
    ranges = [arg for r in RANGES for arg in ("--range", r)]
    for name, code in (("kimi-k25-eagle3", 1), ("eagle3-verify-timing", 0)):
        report = reports[name]
        junit = tmp_path / f"{name}.xml"
        github = run_cli(capsys, "check", "-m", name, "--repo", repo, *ranges, "--format", "github", "--junit", junit)
        assert (github.code, github.err) == (code, "")
        assert github.out == github_commands(report)
        assert junit.read_text(encoding="utf-8") == junit_xml(report)
        gitlab = run_cli(capsys, "check", "-m", name, "--repo", repo, *ranges, "--format", "gitlab")
        assert (gitlab.code, gitlab.out) == (code, gitlab_report(report))
        js = run_cli(capsys, "check", "-m", name, "--repo", repo, *ranges, "--format", "json")
        printed, derived = json.loads(js.out), report.to_json()
        for data in (printed, derived):
            data.pop("stats")  # the verdict cache's hits and misses differ from run to run
        assert (js.code, printed) == (code, derived)
    # --strict: the timing manifest's WARNs fail the check, in the exit code and in every view
    strict = run_cli(capsys, "check", "-m", "eagle3-verify-timing", "--repo", repo, *ranges, "--strict")
    assert strict.code == 1
    assert strict.out.rstrip("\n").splitlines()[-1].startswith("FAILED (--strict): an optional patch WARNs at ")
    strict_github = run_cli(
        capsys, "check", "-m", "eagle3-verify-timing", "--repo", repo, *ranges, "--strict", "--format", "github"
    )
    assert strict_github.code == 1
    assert strict_github.out == github_commands(reports["eagle3-verify-timing"], strict=True)
    assert strict_github.out.startswith("::error ")


WEIRD_FILE = "pkg/we,ird:50%0A.py"
WEIRD_HINT = "first line 100%\nsecond: a, b\r\nthird %0A stays literal"


def test_github_commands_escape_properties_and_message_as_the_runner_reads_them(tmp_path, capsys):
    """A real check whose file name holds ``,``, ``:``, ``%`` and a literal ``%0A``, and whose manifest hint holds
    CR, LF, ``%``, ``:`` and ``,``: every value parses back exactly from the one line."""
    sc = scenario(
        tmp_path,
        {
            WEIRD_FILE: d("""
            class Other:
                pass
        """)
        },
        [
            {
                "id": "hooks",
                "op": "add-methods",
                "file": WEIRD_FILE,
                "class": "Model",
                "source": "../patches/m.py",
                "hints": {"CLASS_NOT_FOUND": WEIRD_HINT},
            }
        ],
        {"m.py": "class Model:\n    def extra(self):\n        return 1\n"},
        path=WEIRD_FILE,
    )
    r = run_cli(capsys, "check", "-m", sc.kit.manifest, "--repo", sc.repo, "--format", "github")
    assert r.code == 1 and r.err == ""
    assert r.out.count("\n") == 1
    [(level, properties, message)] = parse_github(r.out)
    assert level == "error"
    assert list(properties) == ["file", "title"]  # no line: the class is missing
    assert properties["file"] == WEIRD_FILE
    assert properties["title"].startswith("test: hooks FAIL CLASS_NOT_FOUND at ")
    assert f"hint: {WEIRD_HINT}\n" in message
    line = r.out.rstrip("\n")
    assert "file=pkg/we%2Cird%3A50%250A.py," in line
    assert "test%3A hooks" in line and "%0Asecond: a, b%0D%0Athird %250A stays literal" in line


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("100%", "100%25", "100%25"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("k: v, w", "k: v, w", "k%3A v%2C w"),
        ("%0A", "%250A", "%250A"),
        ("%3A:", "%253A:", "%253A%3A"),
    ],
)
def test_escaping_follows_the_actions_toolkit(text, data, prop):
    """command.ts: escapeData does ``%``, CR, LF (``%`` first); escapeProperty also ``:`` and ``,``."""
    assert escape_data(text) == data
    assert escape_property(text) == prop
    assert unescape(data, DATA) == text == unescape(prop, PROPERTY)


def test_gitlab_fingerprints_are_stable_across_commits_and_runs(sglang_history, capsys):
    """The same failure at two commits (the rename branch's two) keeps its fingerprint, and a run repeated gives
    the same bytes; another failure (FILE_NOT_FOUND, before the file exists) gets another."""
    repo = sglang_history.path
    by_commit = [
        run_cli(capsys, "check", "-m", "kimi-k25-eagle3", "--repo", repo, "--commit", rev, "--format", "gitlab")
        for rev in ("rename-kimi~1", "rename-kimi", "rename-kimi")
    ]
    assert [r.code for r in by_commit] == [1, 1, 1]
    first, second, again = (json.loads(r.out) for r in by_commit)
    assert by_commit[1].out == by_commit[2].out
    assert [i["fingerprint"] for i in first] == [i["fingerprint"] for i in second]
    kimi = ("check", "-m", "kimi-k25-eagle3", "--repo", repo)
    older = run_cli(capsys, *kimi, "--commit", "v0.5.8", "--format", "gitlab")
    fingerprints = {i["fingerprint"] for i in json.loads(older.out)}
    assert len(fingerprints) == 2 and not fingerprints & {i["fingerprint"] for i in first}
    assert again == second


def test_nothing_failing_prints_no_command_and_an_empty_report(sglang_history, capsys):
    repo = sglang_history.path
    github = run_cli(capsys, "check", "-m", "kimi-k25-eagle3", "--repo", repo, "--commit", "main", "--format", "github")
    assert (github.code, github.out, github.err) == (0, "", "")
    gitlab = run_cli(capsys, "check", "-m", "kimi-k25-eagle3", "--repo", repo, "--commit", "main", "--format", "gitlab")
    assert (gitlab.code, json.loads(gitlab.out)) == (0, [])


def read_only_place() -> Path:
    """A directory that even root cannot create files in (sysfs); skipped, saying so, where it can."""
    probe = Path("/sys/.patchkit-probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return Path("/sys")
    probe.unlink()
    pytest.skip("this machine lets the test create files in /sys: no read-only place to write a report into")


def test_bad_input_is_exit_2_and_one_line_before_anything_runs(sglang_history, capsys, tmp_path):
    repo = sglang_history.path
    base = ["check", "-m", "kimi-k25-eagle3", "--repo", repo, "--commit", "rename-kimi"]
    (tmp_path / "a-dir").mkdir()
    cases = {
        "unknown format": (["--format", "sarif"], "'sarif' is not one of"),
        "json and a format": (["--json", "--format", "github"], "--json and --format github"),
        "a directory": (["--junit", tmp_path / "a-dir"], "is a directory"),
        "a missing parent": (["--junit", tmp_path / "no" / "such" / "j.xml"], "does not exist"),
        "a read-only place": (["--junit", read_only_place() / "j.xml"], "cannot write in /sys"),
        "a non-ancestor": (["--since", "main"], "is not an ancestor of rename-kimi"),
        "since with a range": (["--since", "v0.5.8", "--range", "v0.5.8..main"], "takes no --range"),
        "an unknown since": (["--since", "no-such-rev"], "unknown revision 'no-such-rev'"),
    }
    for what, (extra, said) in cases.items():
        r = run_cli(capsys, *base, *extra)
        assert r.code == 2, (what, r)
        assert r.out == "", what
        assert r.err.startswith("patchkit: error: ") and r.err.count("\n") == 1, (what, r.err)
        assert said in r.err, (what, r.err)
    assert list((tmp_path / "a-dir").iterdir()) == []


def test_the_junit_file_is_replaced_atomically_keeping_its_mode(sglang_history, capsys, tmp_path):
    report_dir = tmp_path / "reports"
    report_dir.mkdir()
    junit = report_dir / "junit.xml"
    junit.write_text("old\n")
    junit.chmod(0o640)
    r = run_cli(
        capsys, "check", "-m", "kimi-k25-eagle3", "--repo", sglang_history.path, "--commit", "main", "--junit", junit
    )
    assert r.code == 0
    assert junit.read_text(encoding="utf-8").startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    assert stat.S_IMODE(junit.stat().st_mode) == 0o640
    assert sorted(p.name for p in report_dir.iterdir()) == ["junit.xml"]
    assert temp_leftovers(report_dir) == []


def test_with_since_a_format_keeps_the_since_exit_code(sglang_history, capsys):
    """v0.5.8..main holds the commit before the model file existed (FAIL), so the annotations show it; but at
    main every patch is in place, which it was not at v0.5.8: nothing newly fails, exit 0."""
    repo = sglang_history.path
    argv = ("check", "-m", "kimi-k25-eagle3", "--repo", repo, "--since", "v0.5.8", "--commit", "main")
    github = run_cli(capsys, *argv, "--format", "github")
    assert github.code == 0
    assert [level for level, _, _ in parse_github(github.out)] == ["error", "error"]
    js = run_cli(capsys, *argv, "--json")
    assert js.code == 0 and js.json["failed"] is True and js.json["since"]["failed"] is False
    renamed = run_cli(capsys, *argv[:5], "--since", "rename-kimi~2", "--commit", "rename-kimi", "--format", "gitlab")
    assert renamed.code == 1 and json.loads(renamed.out)[0]["check_name"] == "CLASS_NOT_FOUND"
