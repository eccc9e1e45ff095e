"""What a killed patchkit run left in the state dir, read without changing anything.

Two journals live there (``<git-dir>/patchkit``): ``journal.json``, the file
transaction's (``transaction.Transaction``), and ``move.json``, written by
``apply --commit`` before it moves HEAD.  This module knows where they are and
how to read them; ``status`` and the guard report what they find
(``interrupted``), and ``recovery`` finishes or rolls it back.  Kept apart from
both writers so that the read-only commands never load the write machinery.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from patchkit.engine.lock import is_held
from patchkit.engine.record import state_dir
from patchkit.errors import RepoError
from patchkit.git import Repo

FILE_JOURNAL = "journal.json"
MOVE_JOURNAL = "move.json"


class MoveOrigin(TypedDict):
    """Where an ``apply --commit`` move started: the commit, and the branch unless HEAD was detached."""

    commit: str | None
    branch: str | None


# ``move.json`` as ``recovery.start_move`` writes it ("from" is a keyword: the functional form).
MoveJournal = TypedDict(
    "MoveJournal",
    {
        "version": int,
        "manifest": str,
        "from": MoveOrigin,
        "to": str,
        "ours": dict[str, str],  # tree path -> digest of patchkit's content in the transaction's objects
        "records": dict[str, str],  # manifest name -> digest of its record
    },
)


@dataclass(frozen=True)
class Interrupted:
    """A killed run's leftovers, as ``status`` reports them (nothing is changed)."""

    files: tuple[str, ...]  # tree paths a file transaction was writing
    moved_from: dict[str, object] | None  # {"commit", "branch"} when apply --commit was moving HEAD
    moving_to: str | None
    message: str

    def to_json(self) -> dict[str, object]:
        return {
            "files": list(self.files),
            "moved_from": self.moved_from,
            "moving_to": self.moving_to,
            "message": self.message,
        }


def journal_files(journal: Path) -> list[str] | None:
    """The tree paths a killed run's file journal lists, or None when there is no journal."""
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return []
    return [entry["path"] for entry in data.get("files", [])]


def move_path(repo: Repo) -> Path:
    return state_dir(repo) / MOVE_JOURNAL


def load_move(repo: Repo) -> MoveJournal | None:
    """The move journal of an ``apply --commit`` that did not finish, or None."""
    try:
        data: MoveJournal = json.loads(move_path(repo).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RepoError(
            f"the patchkit move journal {move_path(repo)} is unreadable ({exc})",
            hint="check `git status` and `git branch`, then delete the file",
        ) from None
    return data


def where(origin: MoveOrigin) -> str:
    """Where a move started, in words: the branch (and its commit), or the detached commit."""
    sha = (origin.get("commit") or "")[:10]
    return f"branch {origin['branch']} ({sha})" if origin.get("branch") else f"commit {sha}"


def go_back(origin: Mapping[str, object]) -> str:
    """The git command that returns to where a move started."""
    return f"git checkout {origin.get('branch') or origin.get('commit')}"


def interrupted(repo: Repo) -> Interrupted | None:
    """What a killed run left, without changing anything (for ``status`` and the guard)."""
    files = journal_files(state_dir(repo) / FILE_JOURNAL)
    move = load_move(repo)
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
        origin = where(move["from"])
        if head != move["from"]["commit"]:
            parts.append(
                f"an `apply --commit` was killed after moving HEAD from {origin} to {(head or '?')[:10]} "
                f"(to go back by hand: `{go_back(move['from'])}`)"
            )
        else:
            parts.append(f"an `apply --commit` was killed before moving HEAD away from {origin}")
    message = "; ".join(parts) + "; the next `patchkit apply` or `patchkit revert` finishes or rolls it back"
    return Interrupted(
        tuple(files or ()),
        None if move is None else dict(move["from"]),
        None if move is None else move["to"],
        message,
    )
