"""``check --format gitlab``: a GitLab Code Quality report, one issue per failing patch or group.

GitLab reads a JSON array of issues (its "Code Quality report format", a subset of Code Climate's), each with
``description``, ``check_name``, ``fingerprint``, ``severity`` and ``location.path`` with
``location.lines.begin``.  Here:

- ``check_name``: the reason code (``CLASS_NOT_FOUND``), as ruff puts its rule code there;
- ``severity``: FAIL ``critical`` (the whole manifest is refused), WARN ``minor`` (``major`` under ``--strict``);
- ``location``: the upstream file and line of the newest failing window (``cases.findings``); line 1 where the
  result has none (a missing file), since GitLab requires one;
- ``fingerprint``: a sha256 of the manifest, the patch or group, its verdict and file, and nothing that moves
  with upstream (no line, no commit): the same failure keeps its fingerprint from one nightly to the next, so
  GitLab shows it as unchanged, while a new reason is a new issue.  One issue per patch or group keeps it unique.

Printed on stdout (redirect it to the file the job's ``artifacts:reports:codequality`` names), as ruff's
``--output-format gitlab`` is.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from patchkit.ci.cases import Case, findings, printable
from patchkit.results import Status

if TYPE_CHECKING:
    from patchkit.engine.check import CheckReport


def fingerprint(case: Case) -> str:
    """Stable across runs and commits: what failed, not where upstream's lines are today."""
    key = "\0".join(("patchkit", case.manifest, case.kind, case.id, case.verdict, case.file or ""))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def severity(case: Case, strict: bool) -> str:
    if case.failing(strict):
        return "critical" if case.status is Status.FAIL else "major"
    return "minor"


def gitlab_report(report: CheckReport, *, strict: bool = False) -> str:
    """The Code Quality JSON array (``[]`` when nothing fails), indented, with a final newline."""
    issues = []
    for case, earlier in findings(report):
        description = f"{case.label}: {case.summary} ({case.manifest} at {case.span})"
        if earlier:
            description += f"; also WARN/FAIL in {earlier} earlier window(s) of this check"
        issues.append(
            {
                "description": printable(description),
                "check_name": case.reason.value if case.reason else case.status.value,
                "fingerprint": fingerprint(case),
                "severity": severity(case, strict),
                "location": {"path": printable(case.file or case.manifest), "lines": {"begin": case.line or 1}},
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
