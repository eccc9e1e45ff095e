"""`patchkit port`: carry a manifest and its payloads forward to a later upstream commit.

The plan is ``patchkit/port/plan.py``'s; this module prints it, and
writes it: every changed file (the manifest, payloads) to a temp file in its
own directory first, then all moved into place, so a failure while writing
the temps leaves every file as it was, and a failure during the moves puts
back the ones already moved.  Bytes are written as the plan holds them: the
manifest's line endings and the payloads' own are kept by the edits
themselves.  After writing, the ported manifest is checked at the target
from its blobs, as ``patchkit check --commit REV`` does, and the verdict is
printed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.capture.textdiff import unified_diff
from patchkit.engine.check import check_range
from patchkit.errors import ExitCode, UnwritableError, UsageError
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.manifest.resolve import BUNDLED_ROOT
from patchkit.port import FileChange, How, PortPlan
from patchkit.port import port as plan_port
from patchkit.results import Status
from patchkit.views.console import emit, print_json, write_pieces
from patchkit.views.grid import Grid
from patchkit.views.patches import status_piece
from patchkit.wording import agree, plural

if TYPE_CHECKING:
    from patchkit.views.console import Console

HOW_STYLE = {
    How.MOVED: "cyan",
    How.RENAMED: "cyan",
    How.MERGED: "cyan",
    How.UNCHANGED: "",
    How.UPSTREAMED: "green",
    How.CONFLICT: "bold red",
    How.FAILED: "bold red",
}


def port(
    *,
    manifest: str,
    repo: str,
    to: str,
    start: str | None,
    dry_run: bool,
    drop_upstreamed: bool,
    json_out: bool,
    console: Console,
) -> int:
    loaded = load_manifest(manifest)
    if not dry_run and loaded.path.is_relative_to(BUNDLED_ROOT):
        raise UsageError(
            f"{loaded.display} is the copy of {loaded.name} installed with patchkit: port does not rewrite it",
            hint=f"copy manifests/{loaded.path.name} and its patches/ into your project and port the copy "
            "(or use --dry-run)",
        )
    with Repo.discover(Path(repo)) as git_repo:
        plan = plan_port(loaded, git_repo, to, start=start, drop_upstreamed=drop_upstreamed)
        written = False
        check: dict[str, object] | None = None
        if not plan.refused and not dry_run and plan.files:
            write_all(plan.files)
            written = True
        if not plan.refused and not dry_run:
            report = check_range(load_manifest(plan.manifest.path), git_repo, commits=[plan.target.sha])
            row = report.commits[0]
            check = {"failed": row.failed, "results": [r.to_json() for r in row.results]}
    code = ExitCode.REFUSED if plan.refused or (check is not None and check["failed"]) else ExitCode.OK
    if json_out:
        files = [
            {"path": f.display, "diff": unified_diff(f.display, f.before.decode("utf-8"), f.after.decode("utf-8"))}
            for f in plan.files
        ]
        print_json({**plan.to_json(), "files": files, "dry_run": dry_run, "written": written, "check": check})
        return int(code)
    _print(console, plan, dry_run=dry_run, written=written, check=check)
    return int(code)


def write_all(files: tuple[FileChange, ...]) -> None:
    """Write every file or none: temps first (same directory, same mode), then the moves; a failed move puts
    back the files already moved."""
    temps: list[tuple[FileChange, Path]] = []
    try:
        for change in files:
            temp = change.path.with_name(f".{change.path.name}.{os.getpid()}.patchkit-tmp")
            mode = change.path.stat().st_mode & 0o7777
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            temps.append((change, temp))
            with os.fdopen(fd, "wb") as out:
                out.write(change.after)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, mode)
    except OSError as exc:
        for _change, temp in temps:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        raise UnwritableError.from_os(exc.filename or files[len(temps) - 1].path, exc) from None
    moved: list[FileChange] = []
    try:
        for change, temp in temps:
            os.replace(temp, change.path)
            moved.append(change)
    except OSError as exc:
        for change in moved:
            with contextlib.suppress(OSError):
                change.path.write_bytes(change.before)
        for _change, temp in temps:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        raise UnwritableError.from_os(exc.filename or "", exc) from None


def _print(console: Console, plan: PortPlan, *, dry_run: bool, written: bool, check: dict[str, Any] | None) -> None:
    start, target = plan.start, plan.target
    found = "--from" if plan.start_given else "newest commit where it applies"
    write_pieces(
        console,
        [
            ("patchkit port", "bold"),
            (f"  manifest {plan.manifest.name}  from {start.short} {start.subject!r} ({found})", ""),
            (f"  to {target.short} {target.subject!r}", ""),
        ],
    )
    console.print(
        f"walked {plural(plan.walked, 'first-parent commit')}; "
        f"stopped at {plural(plan.stops, 'commit')} that {agree(plan.stops, 'touches', 'touch')} a target file",
        markup=False,
    )
    table = Grid()
    table.add_column("#", justify="right", style="dim", whole=True)
    table.add_column("patch")
    table.add_column("how", whole=True)
    table.add_column("status", whole=True)
    table.add_column("what", prose=True)
    for index, p in enumerate(plan.patches, start=1):
        label = p.patch + ("" if p.required else " (optional)")
        what = p.message
        for change in p.changes:
            if change.note:
                what += f"\n{change.key} at {change.commit.short if change.commit else '-'}: {change.note}"
        if p.evidence is not None:
            what += f"\n{p.evidence.why}: does the rest still earn its place? {p.evidence.command}"
        if p.dropped:
            what += "\ndropped from the manifest (--drop-upstreamed)"
        elif p.how is How.UPSTREAMED:
            what += "\n--drop-upstreamed removes it from the manifest"
        table.add_row(str(index), label, (p.how.value, HOW_STYLE[p.how]), status_piece(p.result.status), what)
    emit(console, table)
    for p in plan.patches:
        if p.conflict is None:
            continue
        c = p.conflict
        where = f"{c.file}:{c.line}" if c.line else c.file
        console.print(
            f"conflict: {p.patch} at {c.commit.short} {c.commit.subject!r}, {where}: "
            "ours and upstream's edit the same lines",
            markup=False,
        )
        console.print("  ours (the patch):", markup=False)
        for line in c.ours or ("(nothing: ours removes these lines)",):
            console.print(f"    {line}", markup=False, highlight=False)
        console.print("  upstream's:", markup=False)
        for line in c.upstream or ("(nothing: upstream removed these lines)",):
            console.print(f"    {line}", markup=False, highlight=False)
    if plan.refused:
        bad = [p for p in plan.patches if p.required and p.result.status is Status.FAIL]
        names = ", ".join(f"{p.patch} {p.how.value}" for p in bad)
        console.print(
            f"REFUSED: {plural(len(bad), 'required patch', 'required patches')} cannot be carried to "
            f"{target.short} ({names}); nothing was written.",
            style="bold red",
            markup=False,
        )
        return
    if dry_run:
        for file in plan.files:
            text = unified_diff(file.display, file.before.decode("utf-8"), file.after.decode("utf-8"))
            console.print(text.rstrip("\n"), markup=False, highlight=False)
        console.print(f"dry run: {plural(len(plan.files), 'file')} would change; nothing was written.", markup=False)
        return
    if written:
        console.print(f"wrote {', '.join(f.display for f in plan.files)}", markup=False)
    else:
        console.print("nothing to change: the manifest applies at the target as it is.", markup=False)
    if check is not None:
        counts: dict[str, int] = {}
        for r in check["results"]:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in counts.items())
        verdict = "FAIL" if check["failed"] else "OK"
        console.print(
            f"check --commit {target.short}: {summary}: {verdict}",
            style="bold red" if check["failed"] else "bold green",
            markup=False,
        )
