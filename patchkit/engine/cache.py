"""The verdict cache of range checks, persisted in the git dir.

Key: the target file's path and git tree entry (mode + blob id), and the
fingerprints of the patches on that file (op, options, payload code, id,
``required``, and which are held back by ``requires``), with what their
messages quote as the manifest wrote it (``quoted``: a payload's path, an
anchor's spelling), since a cached result's message is reused word for word.
Value: their results.
A blob is thus analysed once, ever, for a given set of patches, and a warm
check reads no blob at all.

Tree hints (where a missing class or file went) depend on the whole tree, so
they are stored apart, keyed by the full commit id and what the hint is
about (plus the refs, for the hint that searches every branch): see
``engine/check.py``.  So are, per target path, the commits where it was
absent and looked at for a symlinked parent directory, and what was found
(facts of those commits' trees: a commit id names its tree for good).
"""

from __future__ import annotations

import errno
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path

from patchkit import __version__, paths
from patchkit.errors import UnwritableError
from patchkit.git import Entry
from patchkit.manifest import Patch
from patchkit.operations.base import Operation
from patchkit.operations.memo import Memo
from patchkit.operations.payload import Payload
from patchkit.results import PatchResult

CACHE_FORMAT = 2  # 2: the key holds what the messages quote (``quoted``)


def file_key(path: str, entry: Entry, patches: Sequence[Patch], held: Mapping[str, str]) -> str:
    """The key of one file state's verdicts: the sha256 of the JSON array written out below.

    Each patch's part (its id, ``required``, fingerprint and ``quoted``) is encoded once per
    ``Patch`` (``PATCH_PARTS``), not once per file state: a range check keys hundreds of states
    of a file with the same patches.  The array is the one ``json.dumps`` of the whole would
    write, byte for byte, so keys stored before still match.
    """
    parts = ",".join(_patch_part(p) for p in patches)
    held_part = _json(sorted(held.items())) if held else "[]"
    material = f"{_KEY_START}{_json(path)},{_json(entry)},[{parts}],{held_part}]"
    return hashlib.sha256(material.encode()).hexdigest()


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


_KEY_START = f"[{CACHE_FORMAT},{_json(__version__)},"  # what every key of this patchkit begins with


# A patch's part of the key, by id of the Patch (the Patch is held in the value, so its id is not reused
# while the entry lives): a manifest's patches, whatever the number of file states keyed with them.
PATCH_PARTS: Memo[int, tuple[Patch, str]] = Memo("file_key: a patch's part of the key, by id of the Patch", 4096)


def _patch_part(patch: Patch) -> str:
    hit = PATCH_PARTS.get(id(patch))
    if hit is not None and hit[0] is patch:
        return hit[1]
    part = _json([patch.id, patch.required, patch.op.fingerprint, quoted(patch.op)])
    PATCH_PARTS[id(patch)] = (patch, part)
    return part


def quoted(op: Operation) -> list[list[str]]:
    """What an op's messages may quote as the manifest wrote it, beyond its fingerprint (which keys the code):
    each of its text fields, and each payload's path as written.

    Two patches with the same id and code can differ only there: the same commit captured under two
    names (``patches/a/x.diff`` and ``patches/b/x.diff``), a payload file renamed, an anchor spelled
    otherwise.  A cached message names one of them; without these in the key it was served to the other.
    """
    values = {f.name: getattr(op, f.name) for f in fields(op)} if is_dataclass(op) else dict(vars(op))
    out = []
    for name, value in values.items():
        if isinstance(value, str):
            out.append([name, value])
        elif isinstance(value, Payload):
            out.append([name, value.display])
    return out


class VerdictCache:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.memory: dict[str, tuple[PatchResult, ...]] = {}
        self.pending: dict[str, str] = {}
        self.hits = 0
        self.misses = 0
        self.pending_hints: dict[str, str | None] = {}
        self.pending_parents: dict[str, str] = {}
        self._prefilled: set[str] = set()  # computed ahead (engine/pool.py): the first get() is a miss
        self._db: sqlite3.Connection | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(str(path), timeout=10)
                self._db.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, results TEXT NOT NULL)")
                self._db.execute("CREATE TABLE IF NOT EXISTS hints (key TEXT PRIMARY KEY, hint TEXT)")
                self._db.execute("CREATE TABLE IF NOT EXISTS parents (path TEXT PRIMARY KEY, facts TEXT NOT NULL)")
            except (OSError, sqlite3.Error) as exc:
                if self._db is not None:
                    self._db.close()
                self._db = None
                raise _unwritable(path, exc) from None

    def peek(self, key: str) -> tuple[PatchResult, ...] | None:
        """Like ``get``, without counting a hit or a miss."""
        found = self.memory.get(key)
        if found is None and self._db is not None:
            row = self._db.execute("SELECT results FROM verdicts WHERE key = ?", (key,)).fetchone()
            if row is not None:
                found = tuple(PatchResult.from_json(item) for item in json.loads(row[0]))
                self.memory[key] = found
        return found

    def get(self, key: str) -> tuple[PatchResult, ...] | None:
        found = self.peek(key)
        if found is None or key in self._prefilled or self.path is None:
            # Without a cache (--no-cache) every lookup is a miss, a reuse within this run included.
            self._prefilled.discard(key)
            self.misses += 1
        else:
            self.hits += 1
        return found

    def prefill(self, key: str, results: Iterable[PatchResult]) -> None:
        """Store verdicts computed ahead of their lookup; that lookup still counts as the miss it was."""
        self.put(key, results)
        self._prefilled.add(key)

    def get_hint(self, key: str) -> tuple[bool, str | None]:
        """(found, hint) for a tree hint stored by ``put_hint``."""
        if self._db is None:
            return False, None
        row = self._db.execute("SELECT hint FROM hints WHERE key = ?", (key,)).fetchone()
        return (False, None) if row is None else (True, row[0])

    def put_hint(self, key: str, hint: str | None) -> None:
        if self._db is not None:
            self.pending_hints[key] = hint

    def symlink_facts(self, path: str) -> tuple[set[str], dict[str, str]]:
        """(commits already looked at for a symlinked parent of ``path``, {commit: that parent})."""
        if self._db is None:
            return set(), {}
        row = self._db.execute("SELECT facts FROM parents WHERE path = ?", (path,)).fetchone()
        if row is None:
            return set(), {}
        try:
            facts = json.loads(row[0])
            return set(facts["checked"]), dict(facts["links"])
        except (ValueError, KeyError, TypeError):
            return set(), {}  # an unreadable entry is asked again, never trusted

    def remember_symlink_facts(self, path: str, checked: set[str], links: Mapping[str, str]) -> None:
        if self._db is not None:
            self.pending_parents[path] = json.dumps(
                {"checked": sorted(checked), "links": dict(sorted(links.items()))}, separators=(",", ":")
            )

    def put(self, key: str, results: Iterable[PatchResult]) -> tuple[PatchResult, ...]:
        stored = tuple(results)
        self.memory[key] = stored
        if self._db is not None:
            self.pending[key] = json.dumps([r.to_json() for r in stored], separators=(",", ":"))
        return stored

    def close(self) -> None:
        """Write the pending entries in one transaction.  Raises ``UnwritableError`` when the file system
        says no (full, quota, read-only, permissions): nothing is half-written, sqlite rolls back."""
        if self._db is None or self.path is None:
            return
        try:
            if self.pending or self.pending_hints or self.pending_parents:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO parents (path, facts) VALUES (?, ?)", self.pending_parents.items()
                    )
                    self._db.executemany(
                        "INSERT OR REPLACE INTO verdicts (key, results) VALUES (?, ?)", self.pending.items()
                    )
                    self._db.executemany(
                        "INSERT OR REPLACE INTO hints (key, hint) VALUES (?, ?)", self.pending_hints.items()
                    )
        except sqlite3.Error as exc:
            # The transaction rolled back: the file holds what it held.  The cache's path and the
            # filesystem's cause are named, as for every write under the git dir.
            raise _unwritable(self.path, exc) from None
        finally:
            self.pending.clear()
            self.pending_hints.clear()
            self.pending_parents.clear()
            self._db.close()
            self._db = None


def _unwritable(path: Path, exc: BaseException) -> UnwritableError:
    """The refusal for a cache that cannot be written, with the file system's real cause.

    sqlite words a full disk as "database or disk is full" and a read-only mount as "attempt to write a
    readonly database"; writing a page next to the file gives the errno itself, for the advice.
    """
    if isinstance(exc, OSError):
        found: OSError | None = exc
    else:
        found = paths.why_unwritable(path.parent)
    also = "or pass --no-cache to check without the cache"
    if found is None:
        return UnwritableError(str(path), str(exc), code=errno.EIO, also=also)
    return UnwritableError.from_os(path, found, also=also)
