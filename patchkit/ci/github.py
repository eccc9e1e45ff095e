"""``check --format github``: GitHub Actions workflow commands, one annotation per failing patch or group.

The grammar is the runner's (the actions toolkit's ``packages/core/src/command.ts``, which the runner's parser
mirrors)::

    ::error file=python/x.py,line=41,title=...::message

In the message ``%``, CR and LF are written ``%25``, ``%0D`` and ``%0A``; in a property value ``:`` and ``,``
too (``%3A``, ``%2C``), since they end a property.  A multi-line message (message, hint, commits) is one line
this way, and the annotation shows it as lines.

FAIL is ``::error``; WARN is ``::warning`` (``::error`` under ``--strict``).  Each names the upstream file and
line of its newest failing window (``cases.findings``), and the commits in the title; APPLY and SKIP print
nothing, as a linter prints nothing for a clean file.  Printed on stdout, as ruff's ``--output-format github``
is: the runner reads the commands from the job's log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.ci.cases import Case, findings, printable
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.engine.check import CheckReport


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR, LF escaped (``%`` first, so an escape is never escaped again)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: the message's escapes, and ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, properties: list[tuple[str, str | None]], message: str) -> str:
    """``::name key=value,key=value::message``; a property whose value is None or empty is left out."""
    given = ",".join(f"{key}={escape_property(value)}" for key, value in properties if value)
    return f"::{name}{' ' + given if given else ''}::{escape_data(message)}"


def github_commands(report: CheckReport, *, strict: bool = False) -> str:
    """One workflow command per failing patch or group (none when nothing fails), one per line."""
    lines = []
    for case, earlier in findings(report):
        level = "error" if case.failing(strict) else "warning"
        title = f"{case.manifest}: {case.label} {case.verdict}"
        properties = [
            ("file", case.file),
            ("line", str(case.line) if case.line else None),
            ("title", f"{title} at {case.span}"),
        ]
        lines.append(printable(command(level, properties, _message(case, earlier))))
    return "".join(line + "\n" for line in lines)


def _message(case: Case, earlier: int) -> str:
    lines = [case.message]
    if case.hint:
        lines.append(f"hint: {case.hint}")
    lines.append(f'at {case.span}, from {case.first.short} "{case.first.subject}"')
    if earlier:
        lines.append(f"also WARN/FAIL in {plural(earlier, 'earlier window')} of this check (see the JUnit report)")
    return "\n".join(lines)
