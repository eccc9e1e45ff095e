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

A manifest found by NAME outside the working directory (patchkit's own, in the checkout or bundled
with an installed wheel) is never rewritten: that would change patchkit's files for every later
user of the name.  Port writes the ported manifest and all its payloads under ``./manifests/`` and
``./patches/`` instead (their layout relative to each other kept), and says so; ``-m NAME`` run here
then finds the copy first.  A copy rather than a refusal, because a copy is what the user would
have to make by hand anyway, and because then the README's ``port -m NAME`` works as printed.

A retired manifest (upstream has every patch at the target) is left as it is, and port says what to do
with it instead: stop applying it from the commit since which upstream has every patch, and delete it
(with its payloads; its [bench] table moved first) once the commits before that no longer matter.  Port
never deletes it itself: those earlier commits are what ``check``, ``bench`` and ``bisect`` still need
it for, and only the user knows when they stop mattering.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.capture.textdiff import unified_diff
from patchkit.engine.check import check_range
from patchkit.errors import ExitCode, UnwritableError, UsageError
from patchkit.git import Repo
from patchkit.manifest import Manifest, load_manifest
from patchkit.manifest.resolve import BUNDLED_ROOT, display_path, is_name
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
    if not dry_run and loaded.path.is_relative_to(BUNDLED_ROOT) and not is_name(manifest):
        raise UsageError(
            f"{loaded.display} is the copy of {loaded.name} installed with patchkit: port does not rewrite it",
            hint=f"run `patchkit port -m {loaded.name} ...` from your project's directory: it writes a ported copy "
            "under ./manifests/ and ./patches/ (or use --dry-run)",
        )
    cwd = Path.cwd().resolve()
    outside = is_name(manifest) and not loaded.path.is_relative_to(cwd)  # patchkit's own: never rewritten
    copy = outside
    with Repo.discover(Path(repo)) as git_repo:
        plan = plan_port(loaded, git_repo, to, start=start, drop_upstreamed=drop_upstreamed)
        copy = copy and bool(plan.files) and not plan.refused
        writes = _copies(loaded, plan.files, cwd) if copy else _in_place(plan.files)
        written = False
        check: dict[str, object] | None = None
        if not plan.refused and not dry_run and writes:
            write_all(writes)
            written = True
        if not plan.refused and not dry_run:
            ported = writes[0].path if copy else plan.manifest.path
            report = check_range(load_manifest(ported), git_repo, commits=[plan.target.sha])
            row = report.commits[0]
            check = {"failed": row.failed, "results": [r.to_json() for r in row.results]}
    code = ExitCode.REFUSED if plan.refused or (check is not None and check["failed"]) else ExitCode.OK
    copied_from = str(loaded.path) if copy else None
    if json_out:
        files = [
            {"path": w.display, "diff": unified_diff(w.display, w.diff_from.decode("utf-8"), w.data.decode("utf-8"))}
            for w in writes
        ]
        doc = {**plan.to_json(), "files": files, "copied_from": copied_from, "dry_run": dry_run, "written": written}
        print_json({**doc, "check": check})
        return int(code)
    retired = _retired(plan, bundled=outside, drop_upstreamed=drop_upstreamed) if plan.retired else []
    _print(
        console, plan, writes, dry_run=dry_run, written=written, check=check, copied_from=copied_from, retired=retired
    )
    return int(code)


@dataclass(frozen=True)
class Write:
    """One file port writes: the bytes, the mode, what it holds now (None: a new file, a copy's) and the
    bytes its diff is shown against (the file port read: the original, for a copy)."""

    path: Path
    display: str
    data: bytes
    mode: int
    before: bytes | None
    diff_from: bytes


def _in_place(files: tuple[FileChange, ...]) -> list[Write]:
    return [Write(f.path, f.display, f.after, f.path.stat().st_mode & 0o7777, f.before, f.before) for f in files]


def _copies(loaded: Manifest, files: tuple[FileChange, ...], cwd: Path) -> list[Write]:
    """The manifest (first) and every payload it uses, ported, as new files under ``cwd``: the manifest at
    ``manifests/NAME.toml``, each payload where its ``source`` points from there (``../patches/x.py``:
    ``patches/x.py``).  A payload path already there with other bytes is refused, naming it: it is someone's
    file, maybe another manifest's payload."""
    changed = {f.path: f.after for f in files}
    sources = [loaded.path, *_payloads(loaded)]
    home = cwd / "manifests"
    writes = []
    for source in dict.fromkeys(sources):
        target = Path(os.path.normpath(home / os.path.relpath(source, loaded.path.parent)))
        if source == loaded.path:
            target = home / loaded.path.name
        if not target.is_relative_to(cwd):
            raise UsageError(
                f"{loaded.display} uses {source}, whose copy would land outside this directory ({target})",
                hint="copy the manifest and its payloads into your project yourself and port the copy by its path",
            )
        original = source.read_bytes()
        data = changed.get(source, original)
        try:
            there: bytes | None = target.read_bytes()
        except FileNotFoundError:
            there = None
        if there is not None and there != data:
            raise UsageError(
                f"{display_path(target)} exists and is not {loaded.name}'s payload as ported: port writes its copy of "
                f"{loaded.name} (found in {display_path(loaded.path.parent)}, which it never rewrites) here",
                hint="move that file aside, or run port from another directory",
            )
        if there is None:
            mode = source.stat().st_mode & 0o7777
            writes.append(Write(target, display_path(target), data, mode, None, original))
    return writes


def _payloads(loaded: Manifest) -> list[Path]:
    """The payload files the manifest's ``source`` keys name, in order, once each."""
    data = tomllib.loads(loaded.path.read_text(encoding="utf-8"))
    paths = [(loaded.path.parent / t["source"]).resolve() for t in data.get("patch", []) if "source" in t]
    return list(dict.fromkeys(paths))


def _retired(plan: PortPlan, *, bundled: bool, drop_upstreamed: bool) -> list[str]:
    """What to say of a manifest upstream has every patch of (``PortPlan.retired``): since when, that port
    leaves it as it is, and what to do with the file (and its payloads, and its [bench] table)."""
    name, since, target = plan.manifest.name, plan.retired_since, plan.target
    when = f" since {since.short} {since.subject!r}" if since is not None else ""
    lines = [f"retired at {target.short}: upstream has had every patch of {name}{when}."]
    from_ = f"from {since.short} on" if since is not None else f"at {target.short} and after"
    before = f"the commits before {since.short}" if since is not None else "earlier commits"
    dropped = " --drop-upstreamed drops no patch of it: a manifest keeps at least one." if drop_upstreamed else ""
    if bundled:
        lines.append(
            f"port writes no copy of it (patchkit's own, {plan.manifest.display}): stop applying -m {name} "
            f"{from_}.{dropped}"
        )
        return lines
    payloads = _payloads(plan.manifest)
    files = f" and its {agree(len(payloads), 'payload', 'payloads')} {', '.join(map(display_path, payloads))}"
    bench = "bench" in tomllib.loads(plan.manifest.path.read_text(encoding="utf-8"))
    keep = " (move its [bench] table to a manifest you keep first, if you benchmark with it)" if bench else ""
    lines.append(
        f"port leaves {plan.manifest.display} as it is, for {before}: stop applying it {from_}; delete it"
        f"{files if payloads else ''} once you no longer need those commits{keep}.{dropped}"
    )
    return lines


def write_all(writes: list[Write]) -> None:
    """Write every file or none: temps first (same directory, same mode), then the moves; a failed move puts
    back the files already moved (a new file is removed).  A cleanup step that fails never hides the
    error that caused it."""
    temps: list[tuple[Write, Path]] = []
    try:
        for w in writes:
            w.path.parent.mkdir(parents=True, exist_ok=True)
            temp = w.path.with_name(f".{w.path.name}.{os.getpid()}.patchkit-tmp")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, w.mode)
            temps.append((w, temp))
            with os.fdopen(fd, "wb") as out:
                out.write(w.data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, w.mode)
    except OSError as exc:
        _remove(temp for _w, temp in temps)
        raise UnwritableError.from_os(writes[len(temps) - 1 if temps else 0].path, exc) from None
    moved: list[Write] = []
    try:
        for w, temp in temps:
            os.replace(temp, w.path)
            moved.append(w)
    except OSError as exc:
        for w in moved:
            with contextlib.suppress(OSError):
                if w.before is None:
                    w.path.unlink()
                else:
                    w.path.write_bytes(w.before)
        _remove(temp for _w, temp in temps[len(moved) :])
        raise UnwritableError.from_os(temps[len(moved)][0].path, exc) from None


def _remove(paths: Iterable[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):  # the error being reported is the one that matters
            path.unlink()


def _print(
    console: Console,
    plan: PortPlan,
    writes: list[Write],
    *,
    dry_run: bool,
    written: bool,
    check: dict[str, Any] | None,
    copied_from: str | None,
    retired: list[str],
) -> None:
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
        elif p.how is How.UPSTREAMED and not plan.retired:
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
    name = plan.manifest.name
    copy_note = (
        f" (a ported copy: the manifest named {name} is patchkit's own, {copied_from}, which port never rewrites; "
        f"here `-m {name}` finds the copy first)"
        if copied_from
        else ""
    )
    for line in retired:
        console.print(line, markup=False)
    if dry_run:
        for w in writes:
            if w.data != w.diff_from:
                text = unified_diff(w.display, w.diff_from.decode("utf-8"), w.data.decode("utf-8"))
                console.print(text.rstrip("\n"), markup=False, highlight=False)
        would = (
            f"{plural(len(writes), 'file')} would be written{copy_note}"
            if copied_from
            else (f"{plural(len(writes), 'file')} would change")
        )
        console.print(f"dry run: {would}; nothing was written.", markup=False)
        return
    if written:
        console.print(f"wrote {', '.join(w.display for w in writes)}{copy_note}", markup=False)
    elif not retired:
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
