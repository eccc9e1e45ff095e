"""``check --junit FILE``: the check as JUnit XML, the test report GitLab, Jenkins, Buildkite and GitHub's
test-report actions read.

The document keeps to the schema those readers share (Jenkins xunit's ``junit-10.xsd``, which pytest's own
``--junitxml`` is tested against; ``tests/fixtures/junit-10.xsd``): ``testsuites`` > ``testsuite`` (with
``properties``) > ``testcase`` holding at most a ``failure``, a ``skipped`` or a ``system-out``.  That schema
has no ``file`` or ``line`` on a test case, so the upstream file and line are in the message.

One test case per ``Case`` (a patch or group over one window of equal verdicts), named so that a person sees the
manifest (``classname`` ``patchkit.<manifest>``: the suite or package column), the patch and the commits
(``name`` ``<patch> at <first>..<last> (<n> commits)``).  FAIL is a ``failure``; WARN is a ``failure`` under
``--strict`` and otherwise a pass whose ``system-out`` says why it did not apply; SKIP is ``skipped`` with its
reason; APPLY is a pass.  No time or timestamp: the same check gives the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from patchkit.ci.cases import Case, cases, printable
from patchkit.results import Status

if TYPE_CHECKING:
    from patchkit.engine.check import CheckReport


def junit_xml(report: CheckReport, *, strict: bool = False) -> str:
    """The JUnit XML document of ``report`` (UTF-8 text, with its declaration)."""
    manifest = report.manifest
    listed = cases(report)
    failures = sum(c.failing(strict) for c in listed)
    skipped = sum(c.status is Status.SKIP for c in listed)
    counts = {"tests": str(len(listed)), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", {"name": "patchkit check", **counts})
    suite = ET.SubElement(
        root, "testsuite", {"name": f"patchkit check {manifest.name}", **counts, "skipped": str(skipped)}
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("manifest", manifest.name),
        ("manifest_digest", manifest.digest),
        ("commits", str(report.stats.commits)),
        ("first_commit", report.commits[0].commit.sha if report.commits else ""),
        ("last_commit", report.commits[-1].commit.sha if report.commits else ""),
        ("strict", "true" if strict else "false"),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": printable(value)})
    for case in listed:
        suite.append(_testcase(case, strict))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(case: Case, strict: bool) -> ET.Element:
    element = ET.Element(
        "testcase",
        {"classname": printable(f"patchkit.{case.manifest}"), "name": printable(f"{case.label} at {case.span}")},
    )
    if case.status is Status.APPLY:
        return element
    if case.status is Status.SKIP:
        ET.SubElement(
            element,
            "skipped",
            {"type": case.reason.value if case.reason else "", "message": printable(case.summary)},
        )
    elif case.failing(strict):
        failure = ET.SubElement(
            element, "failure", {"type": case.reason.value if case.reason else "", "message": printable(case.summary)}
        )
        failure.text = printable(_details(case))
    else:  # WARN without --strict: an optional patch that does not apply is not a failure
        out = ET.SubElement(element, "system-out")
        out.text = printable(f"{_details(case)}\nnot a failure: the patch is optional (--strict makes WARN one)")
    return element


def _details(case: Case) -> str:
    kind = f"{case.op}, " if case.op else ""
    lines = [
        case.verdict,
        f"where: {case.where}",
        f"message: {case.message}",
    ]
    if case.hint:
        lines.append(f"hint: {case.hint}")
    lines.append(f'commits: {case.span}, from {case.first.sha} "{case.first.subject}"')
    if case.count > 1:
        lines.append(f'  to {case.last.sha} "{case.last.subject}"')
    lines.append(f"{case.kind}: {case.id} ({kind}{'required' if case.required else 'optional'})")
    lines.append(f"manifest: {case.manifest}")
    return "\n".join(lines)
