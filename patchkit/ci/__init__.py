"""The formats a CI system reads natively, written from one ``check`` result.

``check --junit FILE`` (JUnit XML: GitLab, Jenkins, Buildkite, GitHub's test-report actions),
``check --format github`` (GitHub Actions workflow commands) and ``check --format gitlab`` (a GitLab
Code Quality report) are machine formats like ``--json``: pure functions from the frozen
``CheckReport`` to text, stdlib only, so a nightly job loads neither rich nor the engine to print them.
Each reads the one list of ``cases.cases(report)``, so they agree with each other and with
``--json`` about which patch has which verdict where, at which file and line.
"""

from __future__ import annotations

from patchkit.ci.cases import Case, cases, findings
from patchkit.ci.github import github_commands
from patchkit.ci.gitlab import gitlab_report
from patchkit.ci.junit import junit_xml

FORMATS = ("github", "gitlab")
"""The ``--format`` values these modules write (besides ``table`` and ``json``)."""

__all__ = ["FORMATS", "Case", "cases", "findings", "github_commands", "gitlab_report", "junit_xml"]
