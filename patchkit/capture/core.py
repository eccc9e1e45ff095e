"""``patchkit capture``: turn an edited work tree into a manifest and payloads.

1. Ask git (``patchkit/git.py``) which tracked files differ from the base.
   A file capture cannot carry byte for byte (new, deleted, renamed, binary,
   a symlink, a mode change) stops the capture with one error naming it:
   nothing is ever dropped silently.
2. Propose patches per file: Python files through ``capture/python.py``
   (structured ops), everything else as one ``diff`` op.
3. Write the manifest and payloads into a staging directory, load them with
   the ordinary loader and evaluate them at the base commit with the ordinary
   engine.  A file whose patches are not all APPLY there, or whose rendered
   bytes differ from the edited file in any byte, is carried by a ``diff``
   op instead (the summary says why).  The final manifest is verified the
   same way, so the round trip (capture, reset to base, apply) is exact by
   construction, and ``patchkit check`` at the base says APPLY for every
   patch.  On large files, proposing and verifying (the parses) run in a
   child process that a Ctrl-C abandons at once (``engine/abandon.py``).
4. Move the staged files into ``OUT/manifests/NAME.toml`` and
   ``OUT/patches/NAME/`` (renames; an existing capture is replaced only with
   ``force``).

Output bytes depend only on the base commit and the edited files: files and
patches are in path and line order, ids are derived from names, diffs are
made in Python (``textdiff.py``), and nothing records a time or a path of
this machine.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from patchkit.capture.python import Proposal, Unfit, propose, visible
from patchkit.capture.textdiff import count_changes, unified_diff
from patchkit.engine import abandonable
from patchkit.engine.evaluate import evaluate, render
from patchkit.errors import InternalError, ManifestError, RefusedError, UsageError
from patchkit.git import Commit, Repo
from patchkit.manifest import load_manifest
from patchkit.results import Status
from patchkit.sources.commit import CommitSource
from patchkit.wording import agree, plural
from patchkit.written import Written

T = TypeVar("T")

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
PY_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True)
class CapturedPatch:
    """One patch a capture wrote, as its summary lists it: id, op, file, what changed, and why that op."""

    id: str
    op: str
    file: str
    change: str
    why: str

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "op": self.op, "file": self.file, "change": self.change, "why": self.why}


@dataclass(frozen=True)
class CaptureReport:
    """What ``capture`` wrote: the manifest and payload directory for the edit on top of ``base``, and every patch;
    untracked files are listed, never captured."""

    name: str
    base: Commit
    manifest: Path
    payload_dir: Path
    patches: tuple[CapturedPatch, ...]
    untracked: tuple[str, ...]  # left alone, listed so that nothing goes unmentioned

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "command": "capture",
            "name": self.name,
            "base": {"commit": self.base.sha, "subject": self.base.subject},
            "manifest": str(self.manifest),
            "payloads": str(self.payload_dir),
            "patches": [p.to_json() for p in self.patches],
            "untracked": list(self.untracked),
        }


@dataclass(frozen=True)
class _FileChange:
    """One tracked text file the edit changed: its bytes at the base and in the work tree, the two sides that
    patches are proposed from."""

    path: str
    before: bytes
    after: bytes

    # The engine reads a file without its UTF-8 byte order mark and writes the mark back
    # (``engine/evaluate.py``): patches are proposed on the same text (both sides have it,
    # or neither: ``_changed_files`` refuses a change of the mark itself).

    @property
    def before_text(self) -> str:
        return self.before.decode("utf-8-sig")

    @property
    def after_text(self) -> str:
        return self.after.decode("utf-8-sig")


# -- reading the change ----------------------------------------------------------------


def _changed_files(repo: Repo, root: Path, base: Commit, verb: str = "capture") -> list[_FileChange]:
    problems: list[str] = []
    files: list[_FileChange] = []
    changes = repo.worktree_changes(base.sha)
    entries = repo.ls_tree(base.sha, [c.path for c in changes if c.status == "M" or c.status == "T"])
    for change in sorted(changes, key=lambda c: c.path):
        path = change.path
        if change.status == "R":
            problems.append(f"{path} renamed to {change.renamed_to}")
            continue
        if change.status == "A" or change.status == "C":
            problems.append(f"{change.renamed_to or path} is a new file")
            continue
        if change.status == "D":
            problems.append(f"{path} is deleted")
            continue
        if change.old_mode != change.new_mode:
            problems.append(f"{path} changes mode {change.old_mode} -> {change.new_mode}")
            continue
        if not change.new_mode.startswith("100"):
            problems.append(f"{path} is a symlink or submodule")
            continue
        full = root / path
        after = full.read_bytes()
        before = repo.read_blob(entries[path].oid)
        if before == after:
            continue  # only the stat information changed
        if not (_is_text(before) and _is_text(after)):
            problems.append(f"{path} is binary (not UTF-8 text, or holds NUL bytes)")
            continue
        if before.startswith(codecs.BOM_UTF8) != after.startswith(codecs.BOM_UTF8):
            problems.append(
                f"{path} {'loses' if before.startswith(codecs.BOM_UTF8) else 'gains'} its UTF-8 byte order mark"
            )
            continue
        files.append(_FileChange(path, before, after))
    if problems:
        raise RefusedError(
            f"{verb} carries edits of existing text files only, and {plural(len(problems), 'change')} "
            + ("is" if len(problems) == 1 else "are")
            + " not that: "
            + "; ".join(problems)
            + "; nothing was written",
            hint=(
                "commit those changes to the base first, or undo them, then capture again"
                if verb == "capture"
                else "leave those files' sections out of the patch (or commit them to the base first), "
                f"then run {verb} again"
            ),
        )
    return files


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# -- proposals and ids -----------------------------------------------------------------


@dataclass(frozen=True)
class _Planned:
    """A proposal for one file, with the diff payload of a ``diff`` op and how it was proposed, so that ``_replan``
    knows the next step when it does not verify."""

    proposal: Proposal
    diff: str | None = None  # the payload of a diff op
    hunks: bool = False  # proposed with every in-function edit as edit-function (``propose``)
    import_hunks: bool = False  # proposed with every import edit as edit-imports


def _slug(text: str) -> str:
    # Letters keep their base letter (`módulo` -> `modulo`), not a dash each.
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9._-]+", "-", ascii_text.lower()).strip("-._")
    return slug or "x"


def _diff_plan(change: _FileChange, why: str) -> _Planned:
    diff = unified_diff(change.path, change.before_text, change.after_text)
    hunks, added, removed = count_changes(diff)
    noun = "hunk" if hunks == 1 else "hunks"
    # One line in the summary whatever the reason quotes (code with its newlines, say).
    proposal = Proposal(
        "diff", change.path, "diff", (), None, f"{hunks} {noun}, +{added} -{removed} lines", visible(why)
    )
    return _Planned(proposal, diff)


def _plan_file(change: _FileChange, *, hunks: bool = False, import_hunks: str | None = None) -> list[_Planned]:
    if not change.path.endswith(PY_SUFFIXES):
        return [_diff_plan(change, "not a Python file")]
    try:
        proposals = propose(change.path, change.before_text, change.after_text, hunks=hunks, import_hunks=import_hunks)
    except Unfit as exc:
        return [_diff_plan(change, f"no structured op fits: {exc}")]
    return [_Planned(p, hunks=hunks, import_hunks=import_hunks is not None) for p in proposals]


IMPORT_OPS = ("ensure-import", "move-import")


def _replan(change: _FileChange, planned: list[_Planned], why: str) -> list[_Planned]:
    """The next proposal for a file whose proposal did not verify (``why``), one step at a time.

    A proposal with ``insert`` is tried again with every in-function edit as
    ``edit-function`` (which carries the blank lines and comments around
    inserted statements byte for byte); then one with ``ensure-import`` /
    ``move-import`` with every import edit of the file as ``edit-imports``
    (hunks inside the import block: any layout, byte for byte); anything else
    falls back to ``diff``."""
    ops = {p.proposal.op for p in planned}
    hunks = any(p.hunks for p in planned)
    imports = any(p.import_hunks for p in planned)
    if "insert" in ops and not hunks:
        again = _plan_file(change, hunks=True, import_hunks=why if imports else None)
    elif ops & set(IMPORT_OPS) and not imports:
        again = _plan_file(change, hunks=hunks, import_hunks=why)
    else:
        again = []
    if again and again[0].proposal.op != "diff":
        return again
    return [_diff_plan(change, why)]


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise InternalError(f"capture cannot write {value!r} as TOML")


def _render(
    name: str, base: Commit, plans: Mapping[str, list[_Planned]]
) -> tuple[str, dict[str, bytes], list[CapturedPatch]]:
    """The manifest text, payload files (name -> bytes) and the patch list."""
    used: set[str] = set()
    payloads: dict[str, bytes] = {}
    patches: list[CapturedPatch] = []
    blocks: list[str] = []
    for path in sorted(plans):
        stem = _slug(Path(path).name if not path.endswith(PY_SUFFIXES) else Path(path).stem)
        for planned in plans[path]:
            p = planned.proposal
            readable = _slug(Path(path).name) if p.op == "diff" else f"{stem}-{_slug(p.name)}"
            pid, n = readable, 2
            while pid in used:
                pid, n = f"{readable}-{n}", n + 1
            used.add(pid)
            lines = ["[[patch]]", f"id = {_toml(pid)}", f"op = {_toml(p.op)}", f"file = {_toml(path)}"]
            lines += [f"{key} = {_toml(value)}" for key, value in p.keys]
            if planned.diff is not None:
                payloads[f"{pid}.diff"] = planned.diff.encode("utf-8")
                lines.append(f"source = {_toml(f'../patches/{name}/{pid}.diff')}")
            elif p.payload is not None:
                payloads[f"{pid}{p.payload_suffix}"] = p.payload.encode("utf-8")
                lines.append(f"source = {_toml(f'../patches/{name}/{pid}{p.payload_suffix}')}")
            lines.append(f"description = {_toml(f'Captured: {p.change}. Op {p.op}: {p.why}.')}")
            blocks.append("\n".join(lines) + "\n")
            patches.append(CapturedPatch(pid, p.op, path, p.change, p.why))
    head = (
        "# Captured by `patchkit capture` from a work tree edited on top of\n"
        f"# {base.sha} ({base.subject}).\n"
        "# Every file's edit is carried exactly: `patchkit apply` at that commit\n"
        "# reproduces the edited files byte for byte.\n\n"
        "schema = 1\n"
        f"name = {_toml(name)}\n"
        f"summary = {_toml(f'Captured from a work tree edited on top of {base.short}.')}\n"
    )
    return head + "".join("\n" + b for b in blocks), payloads, patches


# -- verification ------------------------------------------------------------------------


def verify_staged(
    repo: Repo,
    base: Commit,
    manifest_path: Path,
    changes: Mapping[str, _FileChange],
    patches: Sequence[CapturedPatch],
) -> dict[str, str]:
    """Files whose captured patches do not reproduce the edit, with the reason."""

    try:
        manifest = load_manifest(manifest_path)
    except ManifestError as exc:
        # A proposal the loader refuses (e.g. two patches that cannot
        # compose): carry that patch's file with a diff instead.
        found = re.search(r"patch\[(\d+)\]", exc.key_path or "")
        if found is None:
            raise InternalError(f"capture wrote a manifest that does not load: {exc.one_line()}") from None
        # The loader names the staged manifest, a temporary file gone by the time this is read: say
        # which patch of the user's file it was, and the loader's own words.
        file = patches[int(found.group(1)) - 1].file
        words = exc.message.split(f": {exc.key_path}: ", 1)[-1]
        return {file: f"the manifest would not load (the patch for {file}, {exc.key_path}: {words})"}
    evaluation = evaluate(manifest, CommitSource(repo, base), hints=False)
    bad: dict[str, str] = {}
    for result in evaluation.results:
        if result.status is not Status.APPLY and result.file not in bad:
            verdict = f"{result.status.value} {result.reason.value if result.reason else ''}".strip()
            bad[result.file] = f"patch {result.patch} would be {verdict} at the base ({result.message})"
    if bad:
        return bad
    rendered, evaluation = render(evaluation)
    for result in evaluation.results:
        if result.status is not Status.APPLY and result.file not in bad:
            bad[result.file] = f"patchkit could not render patch {result.patch} ({result.message})"
    if bad:
        return bad
    out = {r.path: r.after for r in rendered}
    for path, change in changes.items():
        got = out.get(path, change.before)
        if got != change.after:
            difference = first_line_difference(got, change.after)
            bad[path] = f"the structured ops would not reproduce it byte for byte ({difference})"
    return bad


def first_line_difference(got: bytes, want: bytes) -> str:
    """Where the rendered file first differs from the edit, with whitespace made visible (``repr``).

    When the two lines hold the same text, it says what differs (the
    indentation, the trailing whitespace or the line ending), never "'x', they give 'x'"."""
    a, b = got.split(b"\n"), want.split(b"\n")
    for number, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x != y:
            want_line, got_line = y.decode("utf-8", "replace"), x.decode("utf-8", "replace")
            text = f"line {number}: the edit has {want_line!r}, the ops would write {got_line!r}"
            return text + _what_differs(want_line, got_line)
    longer = "the edit" if len(b) > len(a) else "the ops' output"
    return f"line {min(len(a), len(b)) + 1}: the files differ in length ({longer} has more lines)"


def _what_differs(want: str, got: str) -> str:
    if want.strip() != got.strip():
        return ""
    lead_w, lead_g = len(want) - len(want.lstrip()), len(got) - len(got.lstrip())
    if lead_w != lead_g:
        return f" (the same text, indented {lead_w} columns in the edit and {lead_g} by the ops)"
    if want.endswith("\r") != got.endswith("\r"):
        return " (the same text with another line ending)"
    return " (the same text with other trailing whitespace)"


# -- writing ---------------------------------------------------------------------------------


def _stage(staging: Path, name: str, text: str, payloads: Mapping[str, bytes]) -> Path:
    manifest = staging / "manifests" / f"{name}.toml"
    payload_dir = staging / "patches" / name
    manifest.parent.mkdir(parents=True, exist_ok=True)
    if payload_dir.exists():
        shutil.rmtree(payload_dir)
    payload_dir.mkdir(parents=True)
    for file_name, data in payloads.items():
        (payload_dir / file_name).write_bytes(data)
    manifest.write_bytes(text.encode("utf-8"))
    return manifest


def _publish(staging: Path, out: Path, name: str, force: bool) -> tuple[Path, Path]:
    manifest = out / "manifests" / f"{name}.toml"
    payload_dir = out / "patches" / name
    existing = [p for p in (manifest, payload_dir) if p.exists()]
    if existing and not force:
        raise RefusedError(
            f"{' and '.join(str(p) for p in existing)} already {agree(len(existing), 'exists', 'exist')}; "
            "nothing was written",
            hint="pass --force to replace that capture, or choose another --name",
        )
    manifest.parent.mkdir(parents=True, exist_ok=True)
    payload_dir.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if payload_dir.exists():
        old = staging / "old-payloads"
        os.replace(payload_dir, old)
    try:
        os.replace(staging / "patches" / name, payload_dir)
        os.replace(staging / "manifests" / f"{name}.toml", manifest)
    except BaseException:
        if old is not None and not payload_dir.exists():
            os.replace(old, payload_dir)
        raise
    return manifest, payload_dir


# -- the verb ----------------------------------------------------------------------------------


def capture(
    repo: Repo,
    *,
    name: str,
    base: str | None = None,
    out: Path,
    force: bool = False,
    verb: str = "capture",
    written: Written | None = None,
) -> CaptureReport:
    """Capture the repository's work tree against ``base`` (default HEAD) into ``out``.

    ``verb`` is the command the user ran (``import-diff`` captures a temporary worktree), for advice.
    """
    if not NAME_RE.match(name):
        raise UsageError(
            f"--name {name!r} must start with a lowercase letter or digit and use only a-z, 0-9 and '-'",
            hint="e.g. --name kimi-local",
        )
    root = repo.require_worktree("capture")
    commit = repo.commit(base or "HEAD")
    changes = {c.path: c for c in _changed_files(repo, root, commit, verb)}
    out = out.resolve()
    ours = [out / "manifests" / f"{name}.toml", out / "patches" / name]
    untracked = tuple(p for p in repo.untracked_files() if not any(_inside(root / p, mine) for mine in ours))
    if not changes:
        if untracked:
            shown = ", ".join(untracked[:5]) + (f" and {len(untracked) - 5} more" if len(untracked) > 5 else "")
            raise RefusedError(
                f"the work tree has no changes to tracked files against {commit.short}, only "
                f"{plural(len(untracked), 'untracked file')} ({shown}); nothing to capture",
                items=untracked,
                hint="capture carries edits of existing files: commit new files to the base first "
                "(or put their code into an existing file), then capture again",
            )
        raise RefusedError(
            f"the work tree has no changes against {commit.short}; nothing to capture",
            hint="edit files, or pass --base REV to capture against an older commit",
        )
    plans = _abandonable(repo, changes, partial(_plan_files, changes))
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".patchkit-capture-", dir=out))
    except OSError as exc:
        raise UsageError(f"cannot write to --out {out}: {exc.strerror}", hint="choose a writable directory") from None
    published = False
    try:
        for _attempt in range(2 * len(plans) + 2):
            text, payloads, patches = _render(name, commit, plans)
            manifest = _stage(staging, name, text, payloads)
            bad, plans = _abandonable(
                repo, changes, partial(_verify_and_replan, repo, commit, manifest, changes, patches, plans)
            )
            if not bad:
                break
        else:
            raise InternalError(f"capture could not verify {', '.join(sorted(bad))}: {'; '.join(bad.values())}")
        manifest_path, payload_dir = _publish(staging, out, name, force)
        published = True
        if written is not None:
            written.add([str(manifest_path), str(payload_dir)])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not published:
            with contextlib.suppress(OSError):
                out.rmdir()  # made for this capture, which wrote nothing: not left behind (empty)
    return CaptureReport(name, commit, manifest_path, payload_dir, tuple(patches), untracked)


def _plan_files(changes: Mapping[str, _FileChange]) -> dict[str, list[_Planned]]:
    abandonable.report_phase("comparing the base with the edit of")
    return {path: _plan_file(change) for path, change in changes.items()}


def _verify_and_replan(
    repo: Repo,
    base: Commit,
    manifest_path: Path,
    changes: Mapping[str, _FileChange],
    patches: Sequence[CapturedPatch],
    plans: Mapping[str, list[_Planned]],
) -> tuple[dict[str, str], dict[str, list[_Planned]]]:
    """The files the staged capture does not reproduce (``verify_staged``), and the plans to stage next."""
    bad = verify_staged(repo, base, manifest_path, changes, patches)
    again = dict(plans)
    for path, why in bad.items():
        if again[path][0].proposal.op == "diff":
            raise InternalError(f"the captured diff of {path} does not reproduce it: {why}")
        abandonable.report_phase("proposing again for")
        again[path] = _replan(changes[path], again[path], why)
    return bad, again


def _abandonable(repo: Repo, changes: Mapping[str, _FileChange], work: Callable[[], T]) -> T:
    """``work()``, in a child process a Ctrl-C abandons at once when the edited files are large.

    Proposing parses the base and the edit, and verifying parses and renders with the engine: on a
    multi-megabyte file libcst's and ``ast``'s native parsers would hold off a Ctrl-C for the whole
    parse (``engine/abandon.py``).  The child only reads (the staged capture, the base's blobs) and
    returns the plans or the verdicts; the parent stages, publishes and cleans up.
    """
    sizes = {path: max(len(c.before), len(c.after)) for path, c in changes.items()}
    if not abandonable.large(sum(sizes.values())):
        return work()
    repo.close()  # the child starts its own blob reader; the parent's pipes stay the parent's

    def child() -> T:
        try:
            return work()
        finally:
            repo.close()  # the child's reader, reaped before the child leaves

    return abandonable.in_child(child, sizes)


def _inside(path: Path, mine: Path) -> bool:
    try:
        path.resolve().relative_to(mine.resolve())
    except ValueError:
        return False
    return True


def summarize(patches: Sequence[CapturedPatch]) -> list[tuple[str, str, str, str]]:
    """Rows of the summary table: file, change, chosen op, why."""
    return [(p.file, p.change, f"{p.op} ({p.id})", p.why) for p in patches]
