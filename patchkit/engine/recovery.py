"""Finishing what a killed patchkit run left behind, and saying so.

Two journals live in the state dir (``<git-dir>/patchkit``):

* ``journal.json``, the file transaction's (see ``transaction.Transaction``):
  files and records half replaced, temp files.  Rolled back.
* ``move.json``, written by ``apply --commit`` before it touches anything:
  where HEAD was (branch and commit), where it was going, and patchkit's own
  edits and records it is about to revert (their contents are in the object
  store).  If the run died before writing anything at the new commit, the
  move is undone: HEAD goes back to the branch or commit, and patchkit's
  earlier edits and records are put back.  If it died after patching the new
  commit, the tree stays there and the note says how to go back.

``recover`` runs under the repository lock at the start of every writing
command and returns notes for its report; ``interrupted`` is the read-only
view ``status`` shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit.engine.lock import is_held
from patchkit.engine.record import Record, load_record, record_bytes, record_path, record_rel, state_dir
from patchkit.engine.transaction import FileWrite, Transaction, atomic_write
from patchkit.errors import RepoError, UnwritableError
from patchkit.git import GitFailed, Repo
from patchkit.manifest import manifest_arg

MOVE_JOURNAL = "move.json"


@dataclass(frozen=True)
class Interrupted:
    """A killed run's leftovers, as ``status`` reports them (nothing is changed)."""

    files: tuple[str, ...]  # tree paths a file transaction was writing
    moved_from: dict[str, Any] | None  # {"commit", "branch"} when apply --commit was moving HEAD
    moving_to: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "moved_from": self.moved_from,
            "moving_to": self.moving_to,
            "message": self.message,
        }


def _arg(repo: Repo, name: str) -> str:
    """The manifest as ``-m`` takes it here: its record names the file it was loaded from."""
    record = load_record(repo, name)
    return manifest_arg(name, record.manifest_path if record is not None else None)


def _where(origin: dict[str, Any]) -> str:
    sha = (origin.get("commit") or "")[:10]
    return f"branch {origin['branch']} ({sha})" if origin.get("branch") else f"commit {sha}"


def _go_back(origin: dict[str, Any]) -> str:
    return f"git checkout {origin.get('branch') or origin.get('commit')}"


def _move_path(repo: Repo) -> Path:
    return state_dir(repo) / MOVE_JOURNAL


def _load_move(repo: Repo) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(_move_path(repo).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RepoError(
            f"the patchkit move journal {_move_path(repo)} is unreadable ({exc})",
            hint="check `git status` and `git branch`, then delete the file",
        ) from None
    return data


def start_move(
    repo: Repo,
    txn: Transaction,
    *,
    manifest: str,
    commit: str | None,
    branch: str | None,
    target: str,
    ours: dict[str, bytes],
    records: list[Record],
) -> None:
    """Journal an ``apply --commit`` move before anything changes."""
    data = {
        "version": 1,
        "manifest": manifest,
        "from": {"commit": commit, "branch": branch},
        "to": target,
        "ours": {path: txn.objects.put(content) for path, content in ours.items()},
        "records": {rec.manifest_name: txn.objects.put(record_bytes(rec)) for rec in records},
    }
    try:
        state_dir(repo).mkdir(parents=True, exist_ok=True)
        atomic_write(_move_path(repo), json.dumps(data, indent=1).encode(), 0o644)
    except OSError as exc:  # before anything moved: a refusal naming the journal
        raise UnwritableError.from_os(_move_path(repo), exc) from None


def end_move(repo: Repo) -> None:
    _move_path(repo).unlink(missing_ok=True)


def recover(repo: Repo, root: Path) -> list[str]:
    """Roll back what a killed run left; one note per thing done.  Call under the lock."""
    notes = []
    txn = Transaction(root, state_dir(repo))
    recovered = txn.recover()
    if recovered:
        notes.append(f"rolled back a patchkit run that was interrupted while writing: {recovered.describe()}")
    move = _load_move(repo)
    if move is not None:
        notes.append(_recover_move(repo, root, txn, move))
        end_move(repo)
    return notes


def _recover_move(repo: Repo, root: Path, txn: Transaction, move: dict[str, Any]) -> str:
    origin = move["from"]
    head, branch = repo.head(), repo.branch()
    moved = head != origin["commit"] or (origin["branch"] is not None and branch != origin["branch"])
    if moved:
        if repo.changed_tracked_files():
            return (
                f"an interrupted `apply --commit` moved this tree from {_where(origin)} to {(head or '?')[:10]} "
                "and patched it there, where it stays; to go back: "
                f"`patchkit revert -m {_arg(repo, move['manifest'])}`, "
                f"then `{_go_back(origin)}`"
            )
        try:
            if origin["branch"] is not None:
                repo.checkout_branch(origin["branch"])
            elif origin["commit"] is not None:
                repo.checkout_detached(origin["commit"])
        except GitFailed as exc:
            raise RepoError(
                f"an interrupted `apply --commit` left HEAD at {(head or '?')[:10]} and git cannot move it back to "
                f"{_where(origin)} ({exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else 'git failed'})",
                hint=f"run `{_go_back(origin)}` yourself",
            ) from None
    # Back where the run started: put back patchkit's edits it had reverted.
    writes = []
    current_head = repo.head()
    for path, digest in move["ours"].items():
        full = root / path
        data = txn.objects.get(digest)
        if data is None or not full.is_file():
            continue
        current = full.read_bytes()
        entry = repo.ls_tree(current_head, [path]).get(path) if current_head else None
        if current != data and entry is not None and repo.read_blob(entry.oid) == current:
            writes.append(FileWrite(path, current, data, None))
    states: dict[str, bytes | None] = {}
    for name, digest in move["records"].items():
        data = txn.objects.get(digest)
        if data is not None and not record_path(repo, name).exists():
            states[record_rel(name)] = data
    repo.close()
    txn.write(writes, states)
    restored = f"; patchkit's earlier edits are back ({', '.join(w.path for w in writes)})" if writes else ""
    return (
        f"rolled back an interrupted `apply --commit {str(move['to'])[:10]}`: the tree is back on "
        f"{_where(origin)}{restored}"
    )


def interrupted(repo: Repo, root: Path) -> Interrupted | None:
    """What a killed run left, without changing anything (for ``status``)."""
    txn = Transaction(root, state_dir(repo))
    files = txn.pending()
    move = _load_move(repo)
    if (files is None and move is None) or is_held(state_dir(repo)):
        return None  # nothing left, or a patchkit is working right now: its journal is live
    parts = []
    if files is not None:
        parts.append(
            "a patchkit run was killed while writing"
            + (f" {', '.join(files)}" if files else "")
            + " (its journal is still there)"
        )
    if move is not None:
        head = repo.head()
        where = _where(move["from"])
        if head != move["from"]["commit"]:
            parts.append(
                f"an `apply --commit` was killed after moving HEAD from {where} to {(head or '?')[:10]} "
                f"(to go back by hand: `{_go_back(move['from'])}`)"
            )
        else:
            parts.append(f"an `apply --commit` was killed before moving HEAD away from {where}")
    message = "; ".join(parts) + "; the next `patchkit apply` or `patchkit revert` finishes or rolls it back"
    return Interrupted(
        tuple(files or ()),
        None if move is None else dict(move["from"]),
        None if move is None else move["to"],
        message,
    )
