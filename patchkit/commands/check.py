"""`patchkit check`: every patch at every commit of a range, as windows."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from patchkit.commands.check_ci import Outputs, show_since, strict_note, with_since
from patchkit.commands.check_ci import start as start_since
from patchkit.engine.range_check import RangeCheck
from patchkit.git import Commit
from patchkit.results import Status
from patchkit.views.console import print_indented, write_pieces
from patchkit.views.grid import Piece
from patchkit.views.patches import STATUS_STYLE
from patchkit.views.progress import RangeProgress
from patchkit.wording import plural

if TYPE_CHECKING:  # rich is imported where a table is printed: a warm `check --json` never needs it
    from patchkit.engine.check import CheckReport, GroupWindow, Window
    from patchkit.results import GroupResult, PatchResult
    from patchkit.views.console import Console


def check(
    *,
    manifest: str,
    repo: str,
    ranges: Sequence[str],
    commits: Sequence[str],
    json_out: bool,
    no_cache: bool,
    progress: bool | None,
    console: Console | None,
    jobs: int | None = None,
    output_format: str = "table",
    junit: str | None = None,
    since: str | None = None,
    strict: bool = False,
) -> int:
    """``console``: where the table goes (None with ``json_out`` or a machine ``output_format``).

    ``RangeCheck`` keeps the order that lets git walk while Python loads.  The CI outputs (``--format``,
    ``--junit``, ``--since``, ``--strict``) are ``check_ci``'s, views of the same report.
    """
    outputs = Outputs.take(output_format, json_out, junit, strict)
    opened, ranges, commits, planned = start_since(repo, since, ranges, commits, manifest)
    range_check = RangeCheck.start(opened, ranges)
    range_check.load(manifest)
    with RangeProgress(progress) as tick:
        report = range_check.run(commits=commits, use_cache=not no_cache, progress=tick, jobs=jobs)
    report = with_since(report, range_check, planned, outputs, use_cache=not no_cache)
    text = outputs.write(report)
    if outputs.format == "json":
        write_chunks([*report.json_chunks(), "\n"])
    elif text is not None:
        write_chunks([text])
    elif report.since is not None:
        assert console is not None
        show_since(report, console)
    else:
        assert console is not None
        show(report, console, " ".join(list(ranges) + list(commits)) or "HEAD")
        strict_note(report, outputs, console)
    return outputs.exit_code(report)


def write_chunks(chunks: Sequence[str]) -> None:
    """Write text to stdout as UTF-8, encoding each distinct long chunk once.

    A range check's JSON repeats one shared string per state at every commit
    of it (``CheckReport.json_chunks``); it is encoded once per state, not
    once per commit.
    """
    stream = sys.stdout
    binary = getattr(stream, "buffer", None)
    if binary is None or (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8":
        stream.writelines(chunks)
        stream.flush()
        return
    stream.flush()
    encoded: dict[int, bytes] = {}
    for chunk in chunks:  # ``chunks`` keeps every chunk alive, so an id is never reused here
        if len(chunk) < 512:
            binary.write(chunk.encode("utf-8"))
            continue
        data = encoded.get(id(chunk))
        if data is None:
            data = encoded[id(chunk)] = chunk.encode("utf-8")
        binary.write(data)
    binary.flush()


def _commit_label(commit: Commit) -> str:
    return f'{commit.short} "{commit.subject}" ({commit.date[:10]})'


def window_line(
    window: Window | GroupWindow,
    previous: Window | GroupWindow | None,
    parent_result: PatchResult | GroupResult | None = None,
    relation: tuple[bool, int | None] = (False, None),
) -> list[Piece]:
    """One window as styled pieces of a line.  ``relation``: (known, distance) for a --commit commit:
    how many commits after the one listed before it (distance None: not its descendant)."""
    line: list[Piece] = [("  ", "")]
    line.append((f"{window.status.value:<5}", STATUS_STYLE[window.status]))
    line.append((f" {window.reason.value if window.reason else '':<18}", ""))
    line.append((f" {window.count:>7,} {'commit ' if window.count == 1 else 'commits'}  ", ""))
    if previous is None:
        span = window.first.short if window.count == 1 else f"{window.first.short}..{window.last.short}"
        line.append((span, ""))
        return line
    line.append((f"from {_commit_label(window.first)}", ""))
    if window.count > 1:
        line.append((f" .. {window.last.short}", ""))
    parent = window.first.parents[0] if window.first.parents else None
    if parent != previous.last.sha:
        # The list jumped to another line of history (a side branch, or the
        # next --range): say what the commit's own parent had, so a reader
        # can tell a real change from a jump.
        if parent_result is None:
            said = "not checked"
        elif (parent_result.status, parent_result.reason) == (window.status, window.reason):
            said = "the same verdict: the change is older"
        else:
            said = f"{parent_result.status.value} {parent_result.reason.value if parent_result.reason else ''}".strip()
        known, distance = relation
        if known and distance is not None:
            where = f"{distance:,} commits after {previous.last.short}"
        elif known:
            where = f"not a descendant of {previous.last.short}: another line of history"
        else:
            where = "another line of history"
        line.append((f"  ({where}; its parent {parent[:10] if parent else '-'}: {said})", "dim"))
    return line


def _related(report: CheckReport, window: Window | GroupWindow) -> tuple[bool, int | None]:
    sha = window.first.sha
    return (sha in report.relations, report.relations.get(sha))


def show(report: CheckReport, console: Console, what: str) -> None:
    stats = report.stats
    write_pieces(
        console,
        [
            ("patchkit check", "bold"),
            (
                f"  manifest {report.manifest.name} ({report.manifest.digest[:19]}…)  {what}: "
                f"{plural(stats.commits, 'commit')}, "
                f"{plural(stats.distinct_states, 'distinct version')} of the target files",
                "",
            ),
        ],
    )
    rows = {row.commit.sha: row for row in report.commits}
    for patch in report.manifest.patches:
        write_pieces(
            console,
            [(patch.id, "bold"), (f"  {patch.op_name}{'' if patch.required else ' (optional)'}  {patch.file}", "")],
        )
        previous: Window | None = None
        column = report.manifest.patches.index(patch)
        for window in report.windows_of(patch.id):
            parent = window.first.parents[0] if window.first.parents else None
            parent_row = rows.get(parent) if parent else None
            write_pieces(
                console,
                window_line(
                    window, previous, parent_row.results[column] if parent_row else None, _related(report, window)
                ),
            )
            previous = window
            if window.status is not Status.APPLY:
                print_indented(console, window.first_result.message, indent=8, style="dim")
                if window.first_result.hint:
                    print_indented(console, "hint: " + window.first_result.hint, indent=8, style="dim")
        for taken in (u for u in report.upstreamed if u.patch == patch.id):
            write_pieces(console, [(f"  {taken.label}: " + taken.message, "bold yellow")])
    for column, group in enumerate(report.manifest.groups):
        within = f"  a variant in {group.parent}" if group.parent else ""
        write_pieces(
            console,
            [
                ("group " + group.id, "bold"),
                (f"{'' if group.required else ' (optional)'}  variants: {', '.join(group.members)}{within}", ""),
            ],
        )
        previous_group: GroupWindow | None = None
        for gw in report.group_windows_of(group.id):
            parent = gw.first.parents[0] if gw.first.parents else None
            parent_row = rows.get(parent) if parent else None
            line = window_line(
                gw, previous_group, parent_row.groups[column] if parent_row else None, _related(report, gw)
            )
            line.append((f"  covered by {', '.join(gw.covered_by)}" if gw.covered_by else "  covered by none", ""))
            write_pieces(console, line)
            previous_group = gw
            if not gw.first_result.ok:
                print_indented(console, gw.first_result.message, indent=8, style="dim")
    good = report.last_good
    if good is None:
        console.print("no checked commit has every required patch applying.", style="bold red")
    else:
        console.print(f'last commit where the whole manifest applies: {good.sha} "{good.subject}" ({good.date[:10]})')
    if report.failed:
        bad = sum(c.failed for c in report.commits)
        console.print(f"FAILED: a required patch FAILs at {bad:,} of {stats.commits:,} commits.", style="bold red")
    else:
        every = "the checked commit" if stats.commits == 1 else f"all {stats.commits:,} commits"
        console.print(f"OK: every required patch applies at {every}.", style="bold green")
