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
command and returns notes for its report.  Where the journals are and how
they read is ``leftovers``, which also holds ``interrupted``, the read-only
view ``status`` and the guard show.
"""

from __future__ import annotations

import json
from pathlib import Path

from patchkit.engine.leftovers import MoveJournal, go_back, load_move, move_path, where
from patchkit.engine.record import Record, load_record, record_bytes, record_path, record_rel, state_dir
from patchkit.engine.transaction import FileWrite, Transaction, atomic_write
from patchkit.errors import RepoError, UnwritableError
from patchkit.git import GitFailed, Repo
from patchkit.manifest import manifest_arg
from patchkit.written import Written


def _arg(repo: Repo, name: str) -> str:
    """The manifest as ``-m`` takes it here: its record names the file it was loaded from."""
    record = load_record(repo, name)
    return manifest_arg(name, record.manifest_path if record is not None else None)


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
    data: MoveJournal = {
        "version": 1,
        "manifest": manifest,
        "from": {"commit": commit, "branch": branch},
        "to": target,
        "ours": {path: txn.objects.put(content) for path, content in ours.items()},
        "records": {rec.manifest_name: txn.objects.put(record_bytes(rec)) for rec in records},
    }
    try:
        state_dir(repo).mkdir(parents=True, exist_ok=True)
        atomic_write(move_path(repo), json.dumps(data, indent=1).encode(), 0o644)
    except OSError as exc:  # before anything moved: a refusal naming the journal
        raise UnwritableError.from_os(move_path(repo), exc) from None


def end_move(repo: Repo) -> None:
    move_path(repo).unlink(missing_ok=True)


def recover(repo: Repo, root: Path, *, written: Written | None = None) -> list[str]:
    """Roll back what a killed run left; one note per thing done.  Call under the lock."""
    notes = []
    txn = Transaction(root, state_dir(repo), written=written)
    recovered = txn.recover()
    if recovered:
        notes.append(f"rolled back a patchkit run that was interrupted while writing: {recovered.describe()}")
    move = load_move(repo)
    if move is not None:
        notes.append(_recover_move(repo, root, txn, move))
        end_move(repo)
    return notes


def _recover_move(repo: Repo, root: Path, txn: Transaction, move: MoveJournal) -> str:
    origin = move["from"]
    head, branch = repo.head(), repo.branch()
    moved = head != origin["commit"] or (origin["branch"] is not None and branch != origin["branch"])
    if moved:
        if repo.changed_tracked_files():
            return (
                f"an interrupted `apply --commit` moved this tree from {where(origin)} to {(head or '?')[:10]} "
                "and patched it there, where it stays; to go back: "
                f"`patchkit revert -m {_arg(repo, move['manifest'])}`, "
                f"then `{go_back(origin)}`"
            )
        try:
            if origin["branch"] is not None:
                repo.checkout_branch(origin["branch"])
            elif origin["commit"] is not None:
                repo.checkout_detached(origin["commit"])
        except GitFailed as exc:
            raise RepoError(
                f"an interrupted `apply --commit` left HEAD at {(head or '?')[:10]} and git cannot move it back to "
                f"{where(origin)} ({exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else 'git failed'})",
                hint=f"run `{go_back(origin)}` yourself",
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
        f"{where(origin)}{restored}"
    )
