"""Atomic file writes, and writing several files as one transaction.

A single file is written to a temp file in its own directory and moved into
place with ``os.replace``.  Several files (and patchkit's own state files,
the records) are written as one ``Transaction``: a journal in the git dir is
written first, naming every temp file, every target with a backup of its old
content and its real permission bits, and every record's old and new digest;
then the temps, then the renames, then the records.  A run killed at any
point is rolled back by the next patchkit command (``recover``): temps
removed, files and records put back.  A failure during the renames rolls
back at once.  ``patchkit.sources.safety.outside_reason`` keeps every read and
write inside the work tree (no ``..``, no symlinked directory on the way).

Test hook: ``PATCHKIT_TEST_CRASH_AT=<phase>`` makes ``crash_point(phase)``
end the process with ``os._exit(137)``, as ``kill -9`` would, so tests can
kill a real run at an exact point.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit.engine.files import sha256
from patchkit.engine.leftovers import FILE_JOURNAL, journal_files
from patchkit.errors import RefusedError, UnwritableError
from patchkit.sources.safety import outside_reason
from patchkit.written import Written


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically, keeping (or setting) its permission bits."""
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    tmp = _temp_name(path)
    _write_new(tmp, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)  # the error that got here is the one to report; a temp that stays is dot-named
        raise


def _unlink(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _remove(path: Path) -> OSError | None:
    """Remove ``path`` if it is there; the error when it is there and stays.  Never raises: it cleans up
    after another error, which must be the one reported.  A read-only filesystem answers EROFS even for a
    name that does not exist, so a refused unlink counts only while the file is really there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc if os.path.lexists(path) else None
    return None


@dataclass(frozen=True)
class FileWrite:
    """One file of a transaction: the bytes it must still hold, the bytes to put there, and the mode to keep."""

    path: str  # relative to the root
    before: bytes  # what the file must still hold when we replace it
    after: bytes
    mode: int | None


class ObjectStore:
    """Content-addressed copies of file contents (backups for revert and recovery)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes) -> str:
        """Store ``data``; its digest.  A filesystem that says no is an ``UnwritableError`` naming the path
        (a half-written copy never stays: ``atomic_write`` removes its temp file)."""
        digest = sha256(data)
        path = self.root / digest[:2] / digest[2:]
        if not path.exists():
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, data, 0o644)
            except OSError as exc:
                raise UnwritableError.from_os(path, exc) from None
        return digest

    def get(self, digest: str) -> bytes | None:
        path = self.root / digest[:2] / digest[2:]
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return data if sha256(data) == digest else None


@dataclass(frozen=True)
class Recovered:
    """What ``Transaction.recover`` undid."""

    restored: tuple[str, ...] = ()  # tree paths put back to their content before the killed run
    state_files: tuple[str, ...] = ()  # records (paths in the state dir) put back or removed
    temps: tuple[str, ...] = ()  # leftover temp files removed (tree paths)
    found: bool = False  # there was a killed run's journal

    def __bool__(self) -> bool:
        return self.found

    def describe(self) -> str:
        parts = []
        if self.restored:
            parts.append(f"restored {', '.join(self.restored)}")
        if self.state_files:
            parts.append(f"put back the record(s) {', '.join(self.state_files)}")
        if self.temps:
            parts.append(f"removed {len(self.temps)} leftover temp file" + ("" if len(self.temps) == 1 else "s"))
        return "; ".join(parts) or "nothing had been written yet"


def crash_point(phase: str) -> None:
    """Test hook: die here as ``kill -9`` would, if ``PATCHKIT_TEST_CRASH_AT`` names ``phase``.

    Lets the test suite kill a real patchkit process at an exact point of a
    transaction (see tests/test_crash_recovery.py).  Harmless otherwise: the
    variable is read, compared, and ignored.
    """
    if os.environ.get(CRASH_ENV) == phase:
        os._exit(137)


CRASH_ENV = "PATCHKIT_TEST_CRASH_AT"


def _temp_name(path: Path) -> Path:
    # os.urandom, as secrets.token_hex uses: importing tempfile or secrets would be paid by the read-only commands
    return path.with_name(f".{path.name}.{os.urandom(4).hex()}.patchkit-tmp")


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (it must not exist) with ``data`` and ``mode``, synced to disk.  On failure no file
    stays behind, as far as the filesystem lets it be removed (``_remove``)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(path, mode)
    except BaseException:
        _remove(path)
        raise


class Transaction:
    """Several files in the tree, plus state files (records), written all or nothing.

    The journal (``<state>/journal.json``) is written *before* anything else
    exists: it names every temp file (chosen up front), every target with a
    backup of its old content and its real permission bits, and every state
    file with its old and new digests.  Then the temps are written, then
    renamed into place, then the state files, then the journal is removed.
    A run killed at any point leaves a journal, and ``recover`` (run by the
    next patchkit command, under the lock) removes the temps and puts back
    every file and record that had been replaced: both land, or neither.
    The journal's removal is the commit point: an error before it (that
    removal's own included) rolls the run back at once and removes the
    journal (``_undo``), so ``status`` is not left saying INTERRUPTED; only a
    rollback that cannot write leaves it, for the next command to finish.

    Phases for the ``PATCHKIT_TEST_CRASH_AT`` test hook: ``txn:journal``,
    ``txn:temps``, ``txn:first-rename``, ``txn:files``, ``txn:state``.
    """

    def __init__(self, root: Path, state_dir: Path, *, written: Written | None = None) -> None:
        """``written``: the caller's sink, told each tree path once its write is whole (the CLI's
        words for an interrupt); None keeps nothing."""
        self.root = root
        self.written = written
        self.state_dir = state_dir
        self.journal = state_dir / FILE_JOURNAL
        self.objects = ObjectStore(state_dir / "objects")

    def pending(self) -> list[str] | None:
        """The tree paths a killed run's journal lists, or None when there is no journal."""
        return journal_files(self.journal)

    def recover(self) -> Recovered:
        """Roll back a transaction a killed process left half done.  A filesystem that says no is an
        ``UnwritableError`` naming the path; the journal stays, for the next command to try again."""
        try:
            data = json.loads(self.journal.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Recovered()
        try:
            return self._recover(data)
        except OSError as exc:
            raise UnwritableError.from_os(
                exc.filename or self.journal,
                exc,
                outcome="an interrupted run is not rolled back yet; the next patchkit command tries again",
            ) from None

    def _recover(self, data: dict[str, Any]) -> Recovered:
        restored: list[str] = []
        temps: list[str] = []
        states: list[str] = []
        for entry in data.get("files", []):
            if outside_reason(self.root, entry["path"]) is not None:
                continue  # never follow a link out of the tree, even to undo
            full = self.root / entry["path"]
            if entry.get("temp"):
                temp = full.with_name(entry["temp"])
                if temp.exists():
                    _unlink(temp)
                    temps.append(str(temp.relative_to(self.root)))
            try:
                current = sha256(full.read_bytes())
            except FileNotFoundError:
                continue
            if current == entry["after"] and current != entry["before"]:
                before = self.objects.get(entry["before"])
                if before is not None:
                    atomic_write(full, before, entry["mode"])
                    restored.append(entry["path"])
        for entry in data.get("state_files", []):
            full = self.state_dir / entry["path"]
            if entry.get("temp"):
                _unlink(full.with_name(entry["temp"]))
            try:
                now: str | None = sha256(full.read_bytes())
            except FileNotFoundError:
                now = None
            if now == entry["after"] and now != entry["before"]:
                if entry["before"] is None:
                    _unlink(full)
                else:
                    before = self.objects.get(entry["before"])
                    if before is not None:
                        atomic_write(full, before, 0o644)
                states.append(entry["path"])
        self.journal.unlink()
        return Recovered(tuple(restored), tuple(states), tuple(temps), found=True)

    def write(self, writes: Sequence[FileWrite], state_files: Mapping[str, bytes | None] | None = None) -> None:
        """Write every file (and state file: path in the state dir -> bytes, or None to delete) or none.

        Raises RefusedError if a file changed under us, or lies outside the tree.
        """
        state_files = dict(state_files or {})
        if not writes and not state_files:
            return
        outside = [reason for w in writes if (reason := outside_reason(self.root, w.path)) is not None]
        if outside:
            raise RefusedError(f"{outside[0]}; nothing was written", items=tuple(outside[1:]))
        plan: list[tuple[FileWrite, Path, Path, int, int]] = []  # write, target, temp, old mode, new mode
        for w in writes:
            full = self.root / w.path
            old_mode = stat.S_IMODE(full.stat().st_mode)
            plan.append((w, full, _temp_name(full), old_mode, w.mode if w.mode is not None else old_mode))
        try:
            states = self._journal(plan, state_files)
        except OSError as exc:  # the git dir cannot be written: nothing was touched yet
            raise UnwritableError.from_os(exc.filename or self.state_dir, exc) from None
        crash_point("txn:journal")
        # The temps that may exist: each leaves the list once it is renamed into place.
        temps = [temp for *_, temp, _old_mode, _new_mode in plan]
        temps += [temp for _full, temp, data, _old in states if data is not None]
        renamed: list[tuple[FileWrite, Path, int]] = []
        replaced: list[tuple[Path, str | None]] = []
        step = ("write", "")  # what is being done to which path, for the refusal if the OS says no
        try:
            for w, _full, temp, _old_mode, new_mode in plan:
                step = ("write", w.path)
                _write_new(temp, w.after, new_mode)
            for full, temp, data, _old in states:
                step = ("write", str(full))
                if data is not None:
                    full.parent.mkdir(parents=True, exist_ok=True)
                    _write_new(temp, data, 0o644)
            crash_point("txn:temps")
            changed = [w.path for w, full, *_ in plan if full.read_bytes() != w.before]
            if changed:
                raise RefusedError(
                    "files changed on disk while patchkit was working; nothing was written",
                    items=tuple(changed),
                    hint="run the command again",
                )
            for w, full, temp, old_mode, _ in plan:
                step = ("write", w.path)
                os.replace(temp, full)
                temps.remove(temp)
                renamed.append((w, full, old_mode))
                if len(renamed) == 1:
                    crash_point("txn:first-rename")
            crash_point("txn:files")
            for full, temp, data, old in states:
                step = ("write", str(full))
                if data is None:
                    step = ("remove", str(full))
                    _unlink(full)
                else:
                    os.replace(temp, full)
                    temps.remove(temp)
                replaced.append((full, old))
            crash_point("txn:state")
            # The commit point: while the journal exists, the next command rolls this run back.
            step = ("remove", str(self.journal))
            self.journal.unlink()
        except BaseException as exc:  # noqa: BLE001 (undone, then raised again: a Ctrl-C too)
            raise self._undo(exc, step, renamed, replaced, temps) from None
        if self.written is not None:
            self.written.add(w.path for w in writes)

    def _undo(
        self,
        exc: BaseException,
        step: tuple[str, str],
        renamed: Sequence[tuple[FileWrite, Path, int]],
        replaced: Sequence[tuple[Path, str | None]],
        temps: Sequence[Path],
    ) -> BaseException:
        """Put back what this run replaced, remove its temps and its journal; the error to raise.

        The error that stopped the run is the one reported, whatever the cleanup meets: an OSError
        becomes the ``UnwritableError`` naming the path and the cause, and what the cleanup could not
        do is added to it.  Where the rollback itself fails, the journal stays, so that the next
        command (``recover``) finishes it; otherwise the tree is as it was and the journal goes.
        """
        failed: OSError | None = None
        try:
            for w, full, old_mode in reversed(renamed):
                atomic_write(full, w.before, old_mode)
            for full, old in reversed(replaced):
                previous = None if old is None else self.objects.get(old)
                if previous is None:
                    _unlink(full)
                else:
                    atomic_write(full, previous, 0o644)
        except OSError as rollback:
            failed = rollback
        stuck = [f"{temp}: {error.strerror}" for temp in temps if (error := _remove(temp)) is not None]
        notes = []
        if failed is not None:
            notes.append(
                f"putting back {failed.filename}: {failed.strerror}; the next patchkit command finishes the rollback"
            )
        else:
            journal = _remove(self.journal)
            if journal is not None:
                notes.append(f"{self.journal} stays ({journal.strerror}); the next patchkit command removes it")
        if stuck:
            notes.append(f"a temp file stays, remove it: {'; '.join(stuck)}")
        if isinstance(exc, OSError):
            action, path = step
            outcome = "nothing was written" if failed is None else "the files already replaced are not all back"
            return UnwritableError.from_os(
                path or exc.filename, exc, action=action, outcome=outcome, also="; ".join(notes) or None
            )
        if isinstance(exc, RefusedError) and notes:
            exc.hint = "; ".join(filter(None, [exc.hint, *notes]))
        return exc

    def _journal(
        self, plan: Sequence[tuple[FileWrite, Path, Path, int, int]], state_files: Mapping[str, bytes | None]
    ) -> list[tuple[Path, Path, bytes | None, str | None]]:
        """Back up the old contents and write the journal; returns the state-file plan."""
        states: list[tuple[Path, Path, bytes | None, str | None]] = []  # target, temp, new data, old digest
        for rel, data in state_files.items():
            full = self.state_dir / rel
            try:
                old: str | None = self.objects.put(full.read_bytes())
            except FileNotFoundError:
                old = None
            states.append((full, _temp_name(full), data, old))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        journal = {
            "version": 2,
            "pid": os.getpid(),
            "files": [
                {
                    "path": w.path,
                    "temp": temp.name,
                    "before": self.objects.put(w.before),
                    "after": sha256(w.after),
                    "mode": old_mode,
                }
                for w, _, temp, old_mode, _ in plan
            ],
            "state_files": [
                {
                    "path": str(full.relative_to(self.state_dir)),
                    "temp": temp.name if data is not None else None,
                    "before": old,
                    "after": None if data is None else sha256(data),
                }
                for full, temp, data, old in states
            ],
        }
        try:
            atomic_write(self.journal, json.dumps(journal, indent=1).encode(), 0o644)
        except OSError as exc:
            raise UnwritableError.from_os(self.journal, exc) from None
        return states
