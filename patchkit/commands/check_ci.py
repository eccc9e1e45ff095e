"""`patchkit check`'s CI outputs: ``--format github|gitlab``, ``--junit FILE``, ``--since REV`` and ``--strict``.

Kept apart from ``commands/check.py`` (the table) so that the verb's own module only wires them: the formats
themselves are ``patchkit/ci/`` (pure functions of the check result), the comparison with REV is
``engine/since.py``.  Everything that can be refused is refused before the check runs (a nightly job must not
spend its range check to learn that its report path is a directory): an unknown format (click), ``--format``
against ``--json``, a report path that cannot be written, a ``--since`` that is not an ancestor of the tip.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.results import PatchResult, Status

if TYPE_CHECKING:
    from patchkit.engine.check import CheckReport
    from patchkit.engine.range_check import RangeCheck
    from patchkit.engine.since import SincePlan
    from patchkit.views.console import Console


@dataclass(frozen=True)
class Outputs:
    """What a check prints on stdout (``format``: table, json, github, gitlab) and writes besides (``junit``)."""

    format: str
    junit: Path | None
    strict: bool

    @classmethod
    def take(cls, output_format: str, json_out: bool, junit: str | None, strict: bool) -> Outputs:
        if json_out and output_format not in ("table", "json"):
            raise UsageError(
                f"--json and --format {output_format} both choose what stdout carries",
                hint="give one of them (--json is --format json)",
            )
        return cls("json" if json_out else output_format, None if junit is None else _writable(junit), strict)

    def write(self, report: CheckReport) -> str | None:
        """Write the JUnit file (atomically); return the stdout text of a CI format (None: table or json)."""
        from patchkit.ci import github_commands, gitlab_report, junit_xml

        if self.junit is not None:
            from patchkit.engine.transaction import atomic_write

            data = junit_xml(report, strict=self.strict).encode("utf-8")
            try:
                atomic_write(self.junit, data)
            except OSError as exc:
                raise UsageError(
                    f"--junit {self.junit}: cannot write it: {exc.strerror or exc}",
                    hint="name a file in a writable directory",
                ) from None
        if self.format == "github":
            return github_commands(report, strict=self.strict)
        if self.format == "gitlab":
            return gitlab_report(report, strict=self.strict)
        return None

    def failed(self, report: CheckReport) -> bool:
        """Exit 1: with --since, a required patch newly FAILs; else one FAILs anywhere (--strict: or WARNs)."""
        if report.since is not None:
            return report.since.failed
        return report.failed or (self.strict and warned(report) > 0)

    def exit_code(self, report: CheckReport) -> int:
        return int(ExitCode.REFUSED if self.failed(report) else ExitCode.OK)


def warned(report: CheckReport) -> int:
    """Commits where a patch or group WARNs (what --strict counts as failing)."""
    return sum(
        any(r.status is Status.WARN for r in row.results) or any(g.status is Status.WARN for g in row.groups)
        for row in report.commits
    )


def _writable(given: str) -> Path:
    """``given`` as a report path that can be written atomically, or a one-line refusal (exit 2) naming why.

    The write is a temp file beside it then a rename, so what must be writable is its directory: probed by
    creating (and removing) such a temp file, which also finds a read-only filesystem or a full disk.
    """
    path = Path(given)
    if path.is_dir():
        raise UsageError(f"--junit {given}: is a directory", hint=f"name a file in it, e.g. {path / 'junit.xml'}")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(
            f"--junit {given}: the directory {parent} does not exist",
            hint="create it first, or name a file in an existing directory",
        )
    probe = parent / f".{path.name}.{os.urandom(4).hex()}.patchkit-tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(
            f"--junit {given}: cannot write in {parent}: {exc.strerror or exc}",
            hint="name a file in a writable directory",
        ) from None
    return path


def start(
    repo: str, since: str | None, ranges: Sequence[str], commits: Sequence[str], manifest: str
) -> tuple[str | Repo, Sequence[str], Sequence[str], SincePlan | None]:
    """Without ``--since``: the check as given.  With it: the repository opened and the range REV..TIP to check,
    refused (exit 2) when REV is not an ancestor of the tip; a bad manifest is still reported first."""
    if since is None:
        return repo, ranges, commits, None
    from patchkit.engine.since import plan
    from patchkit.manifest import bad_manifest_first

    with bad_manifest_first(manifest):
        opened = Repo.discover(Path(repo))
        planned = plan(opened, since, ranges, commits)
    return opened, planned.ranges, planned.commits, planned


def with_since(
    report: CheckReport, range_check: RangeCheck, planned: SincePlan | None, outputs: Outputs, use_cache: bool
) -> CheckReport:
    """``report`` with its ``since`` comparison (``engine/since.py``), when ``--since`` was given."""
    if planned is None:
        return report
    from patchkit.engine.since import changes_since

    assert range_check.repo is not None and range_check.manifest is not None
    since = changes_since(
        range_check.manifest, range_check.repo, report, planned, strict=outputs.strict, use_cache=use_cache
    )
    return replace(report, since=since)


def show_since(report: CheckReport, console: Console) -> None:
    """The people's view of ``--since``: only the patches and groups whose verdict changed, each with what it says
    now and the upstream commit that changed it, then whether a required one newly fails."""
    since = report.since
    assert since is not None
    m = report.manifest

    def say(text: str, style: str = "") -> None:
        console.print(text, style=style)  # the console's settings: no markup, no highlighting, unwrapped off a TTY

    say(
        f'patchkit check  manifest {m.name} ({m.digest[:19]}…)  since {since.since.short} "{since.since.subject}": '
        f'{since.commits:,} new commit{"" if since.commits == 1 else "s"} to {since.tip.short} "{since.tip.subject}"',
        "bold",
    )
    for change in since.changes:
        was, now = change.before, change.after
        label = change.id if change.kind == "patch" else f"group {change.id}"
        required = "" if now.required else " (optional)"
        before = f"{was.status.value}{' ' + was.reason.value if was.reason else ''}"
        after = f"{now.status.value}{' ' + now.reason.value if now.reason else ''}"
        where = f"  {now.where()}" if isinstance(now, PatchResult) else ""
        flag = "  NEWLY FAILING" if change.newly_failing else ""
        say(f"{label}{required}  {before} -> {after}{where}{flag}", "bold red" if change.newly_failing else "bold")
        if now.status is not Status.APPLY:
            say(f"        {now.message}", "dim")
            if isinstance(now, PatchResult) and now.hint:
                say(f"        hint: {now.hint}", "dim")
        for c in change.changed_by:
            say(f'  changed by {c.sha} "{c.subject}"  {c.author}, {c.date}')
        for c, a, b in change.reason_changes:
            say(f'  then {b.value if b else "-"} (was {a.value if a else "-"}) from {c.short} "{c.subject}"')
    if not since.changes:
        say(f"no verdict changed between {since.since.short} and {since.tip.short}.", "bold green")
    newly = [c for c in since.changes if c.newly_failing]
    if newly:
        names = ", ".join(f"{c.id} {c.after.reason.value if c.after.reason else ''}".strip() for c in newly)
        say(
            f"FAILED: newly failing at {since.tip.short}: {names}; "
            f"`patchkit explain -m {m.name} PATCH --commit {since.tip.short}` shows the hunk that did it",
            "bold red",
        )
    else:
        say(f"OK: no required patch newly fails since {since.since.short}.", "bold green")


def strict_note(report: CheckReport, outputs: Outputs, console: Console) -> None:
    """Under ``--strict``, the table's closing line for a check that fails only by WARNs."""
    if outputs.strict and not report.failed:
        count = warned(report)
        if count:
            console.print(
                f"FAILED (--strict): an optional patch WARNs at {count:,} of {report.stats.commits:,} commits.",
                style="bold red",
            )
