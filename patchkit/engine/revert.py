"""Revert on a work tree: the Python API behind ``patchkit revert``.

Every file the record lists is restored from HEAD (when it was clean before
patching) or from its backup, in one transaction with the record's removal.
Files edited after patching are refused unless ``force``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkit.engine.lock import repo_lock
from patchkit.engine.record import all_records, edited_since, layers, load_record, record_rel, state_dir
from patchkit.engine.recovery import recover
from patchkit.engine.transaction import FileWrite, Transaction
from patchkit.errors import RefusedError
from patchkit.git import Repo
from patchkit.manifest import manifest_arg
from patchkit.sources.safety import outside_reason
from patchkit.wording import plural
from patchkit.written import Written


@dataclass(frozen=True)
class RevertReport:
    """What ``patchkit revert`` did for one manifest: each file restored and where from (HEAD or the backup), the files
    ``force`` overwrote, and what an interrupted run had left, rolled back first.
    """

    manifest_name: str
    target: str
    restored: tuple[tuple[str, str], ...]  # (path, "HEAD" | "backup")
    forced: tuple[str, ...]  # files edited after patching, overwritten because of --force
    nothing_recorded: bool
    recovered: tuple[str, ...] = ()  # what an interrupted run had left, rolled back first

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "command": "revert",
            "manifest": {"name": self.manifest_name},
            "target": self.target,
            "nothing_recorded": self.nothing_recorded,
            "restored": [{"path": p, "from": src} for p, src in self.restored],
            "forced": list(self.forced),
            "recovered": list(self.recovered),
        }


def revert_worktree(
    name: str, repo: Repo, *, force: bool = False, wait: float | None = None, written: Written | None = None
) -> RevertReport:
    """``written``: told each path once it is restored whole (``apply_worktree``)."""
    root = repo.require_worktree("revert")
    with repo_lock(state_dir(repo), wait=wait):
        return _revert_locked(name, repo, root, force=force, written=written)


def _revert_locked(name: str, repo: Repo, root: Path, *, force: bool, written: Written | None) -> RevertReport:
    txn = Transaction(root, state_dir(repo), written=written)
    notes = tuple(recover(repo, root, written=written))
    record = load_record(repo, name)
    if record is None:
        return RevertReport(name, str(root), (), (), True, notes)
    for f in record.files:
        outside = outside_reason(root, f.path)
        if outside is not None:
            raise RefusedError(
                f"{outside}; the record of {name} lists it, and patchkit will not write there; nothing was reverted",
                hint=f"check where that link points; `patchkit status -m {manifest_arg(name, record.manifest_path)}` "
                "shows the rest",
            )
    edited = edited_since(repo, record)
    if edited and not force:
        records = all_records(repo)
        over = layers(root, record, records).over
        others = [
            r.manifest_name for r in records if r.manifest_name != name and {f.path for f in r.files} & set(edited)
        ]
        hint = "review them; pass --force to restore them anyway (their edits are lost)"
        if over and set(edited) <= set(over):
            # Another manifest's intact write sits on top: reverting it first is the whole answer;
            # --force here would throw that manifest's edits away.
            tops = list(dict.fromkeys(n for path in edited for n in reversed(over[path])))
            files = {r.manifest_name: r.manifest_path for r in records} | {name: record.manifest_path}
            raise RefusedError(
                f"manifest(s) {', '.join(tops)} patched over {plural(len(edited), 'file')} {name} wrote, "
                f"and their edits are intact; nothing was reverted",
                items=tuple(edited),
                hint="revert from the top: "
                + " && ".join(f"patchkit revert -m {manifest_arg(n, files.get(n))}" for n in [*tops, name]),
            )
        if others:
            hint = (
                f"manifest(s) {', '.join(others)} also patched them, and the files hold an edit none of them made: "
                f"revert those first (each with its own record), then this one; --force discards that edit"
            )
        raise RefusedError(
            f"{plural(len(edited), 'file')} patchkit wrote for {name} "
            + ("was" if len(edited) == 1 else "were")
            + " edited after patching; nothing was reverted",
            items=tuple(edited),
            hint=hint,
        )
    head = repo.head()
    writes = []
    restored = []
    for f in record.files:
        full = root / f.path
        current = full.read_bytes() if full.exists() else b""
        content = None
        origin = "backup"
        if f.clean_before and head is not None:
            entry = repo.ls_tree(head, [f.path]).get(f.path)
            if entry is not None and entry.mode.startswith("100"):
                content, origin = repo.read_blob(entry.oid), "HEAD"
        if content is None:
            content = txn.objects.get(f.before_sha256)
        if content is None:
            raise RefusedError(
                f"the backup of {f.path} is missing from {txn.objects.root}; nothing was reverted",
                hint=f"restore it with `git checkout -- {f.path}` if HEAD's version is what you want",
            )
        if not full.exists():
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_bytes(b"")  # the transaction replaces it; it must exist to be compared
        writes.append(FileWrite(f.path, current, content, f.mode))
        restored.append((f.path, origin))
    txn.write(writes, {record_rel(name): None})
    return RevertReport(name, str(root), tuple(restored), tuple(edited), False, notes)
