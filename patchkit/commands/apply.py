"""`patchkit apply`: patch a work tree (or a commit, in place or in a worktree)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchkit.capture.textdiff import unified_diff
from patchkit.commands._common import open_inputs
from patchkit.engine.apply import ApplyReport, apply_worktree
from patchkit.engine.commit_apply import apply_at_commit
from patchkit.engine.groups import group_results
from patchkit.errors import ExitCode, UsageError
from patchkit.manifest import manifest_arg
from patchkit.results import Status
from patchkit.views.console import emit, print_json
from patchkit.views.patches import groups_table, header, results_table
from patchkit.wording import plural
from patchkit.written import Written

if TYPE_CHECKING:
    from patchkit.views.console import Console


def apply(
    *,
    manifest: str,
    repo: str,
    commit: str | None,
    worktree: str | None,
    dry_run: bool,
    diff: bool,
    json_out: bool,
    strict: bool,
    wait: float,
    console: Console,
    written: Written | None = None,
) -> int:
    """``written``: the CLI's sink for the paths written whole (its words for an interrupt)."""
    loaded, git_repo = open_inputs(manifest, repo)
    with git_repo:
        if commit is not None:
            report = apply_at_commit(
                loaded,
                git_repo,
                commit,
                worktree=worktree,
                dry_run=dry_run,
                strict=strict,
                wait=wait,
                written=written,
            )
        else:
            if worktree is not None:
                raise UsageError("--worktree needs --commit REV", hint="e.g. --commit HEAD --worktree ../sglang-head")
            report = apply_worktree(loaded, git_repo, dry_run=dry_run, strict=strict, wait=wait, written=written)
        if json_out:
            print_json(report.to_json())
        else:
            show(report, console, diff=diff)
        return int(ExitCode.REFUSED if report.refused else ExitCode.OK)


def show(report: ApplyReport, console: Console, *, diff: bool = False) -> None:
    header(
        console,
        "apply" + (" --dry-run" if report.dry_run else ""),
        report.manifest,
        f"work tree {report.target}",
        report.commit,
    )
    for note in report.notes:
        console.print(f"note: {note}", style="yellow", markup=False)
    if report.moved_from is not None and report.commit is not None:
        origin = (
            f"branch {report.moved_from_branch} ({report.moved_from.short})"
            if report.moved_from_branch
            else f"commit {report.moved_from.short}"
        )
        back = report.moved_from_branch or report.moved_from.sha
        console.print(
            f"moved: the tree was on {origin} and is now at {report.commit.short} (detached HEAD); "
            f"to go back: `patchkit revert -m {manifest_arg(report.manifest.name, report.manifest.path)}`, "
            f"then `git checkout {back}`",
            markup=False,
        )
    emit(console, results_table(report.results))
    if report.manifest.groups:
        emit(console, groups_table(group_results(report.manifest, report.results)))
    if diff:
        write_bytes(console, b"".join(diff_bytes(item.path, item.before, item.after) for item in report.diffs))
    line, style = verdict(report)
    console.print(line, style=style, markup=False)


def diff_bytes(path: str, before: bytes, after: bytes) -> bytes:
    """The unified diff of one file, byte for byte what is written: every ``\\r`` kept (lines split at
    ``\\n`` only), bytes that are not UTF-8 carried through, so ``git apply`` takes it as it is."""
    old = before.decode("utf-8", "surrogateescape")
    new = after.decode("utf-8", "surrogateescape")
    return unified_diff(path, old, new).encode("utf-8", "surrogateescape")


def write_bytes(console: Console, data: bytes) -> None:
    """Raw bytes to the console's stream: rich (and the plain console, to match it) drop ``\\r``."""
    stream = console.file
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "surrogateescape"))


def verdict(report: ApplyReport) -> tuple[str, str]:
    """The one-line verdict and its style."""
    results = report.results
    warns = [r for r in results if r.status is Status.WARN]
    if report.refused and report.unwritable:
        advice = f"; {report.unwritable_advice}" if report.unwritable_advice else ""
        return f"REFUSED: cannot write {report.unwritable}; nothing was written{advice}.", "bold red"
    if report.refused:
        blocking = [r for r in results if r.status is Status.FAIL or (report.strict and r.status is Status.WARN)]
        listed = ", ".join(f"{r.patch} {r.reason.value if r.reason else ''}".strip() for r in blocking)
        what = "required " if all(r.required for r in blocking) else ""
        strict = " (--strict counts WARN as failure)" if report.strict and warns else ""
        return (
            f"REFUSED: {plural(len(blocking), what + 'patch', what + 'patches')} cannot apply "
            f"({listed}){strict}; nothing was written.",
            "bold red",
        )
    tail = f"; {plural(len(warns), 'optional patch', 'optional patches')} left out (WARN)" if warns else ""
    applied = sum(r.status is Status.APPLY for r in results)
    if report.dry_run:
        if not report.would_write:
            return f"DRY RUN: nothing to do, every patch is already in place{tail}.", "bold"
        return (
            f"DRY RUN: would apply {plural(applied, 'patch', 'patches')} to "
            f"{plural(len(report.would_write), 'file')} ({', '.join(report.would_write)}){tail}; "
            "nothing was written.",
            "bold",
        )
    if not report.written:
        return f"OK: nothing to do, every patch is already in place{tail}.", "bold green"
    return (
        f"APPLIED: {plural(applied, 'patch', 'patches')}, wrote {plural(len(report.written), 'file')} "
        f"({', '.join(report.written)}){tail}.",
        "bold green",
    )
