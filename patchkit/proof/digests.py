"""A stat cache of file digests: (path, size, mtime_ns, ctime_ns, inode) -> sha256.

The digest is kept in RECORD's form (``urlsafe_b64encode(sha256).rstrip("=")``)
so a verified file costs one stat, one dict lookup and one string compare.
One file per scope (the set of roots being verified) under patchkit's cache
directory (``$XDG_CACHE_HOME/patchkit/digests/``), in ``marshal`` form: it
loads in a few milliseconds for 30,000 entries, and is replaced atomically.
Two processes that save at once lose one's new entries; that costs hashing
time on the next run, never a wrong verdict.

What a stat cache cannot see (``--no-cache`` hashes everything):

* a file whose content is changed while its size, mtime, ctime and inode all
  stay the same: possible only for someone who can set the clock back (ctime
  cannot be set by ``touch`` or ``os.utime``), or on a filesystem that does not
  update them (some network and FUSE filesystems, or writes through a mapping
  that are not yet synced);
* a RECORD rewritten the same way (its parsed rows are cached by the same key);
* a cache file edited by hand: the cache lives in the user's own directory,
  so it protects against accidents, not against someone with the user's rights.
"""

from __future__ import annotations

import base64
import hashlib
import marshal
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.paths import user_cache

if TYPE_CHECKING:
    from patchkit.proof.dists import Entry

CACHE_VERSION = 3
_CHUNK = 1 << 20


def record_digest(raw: bytes) -> str:
    """A digest in RECORD's encoding: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def hash_file(path: str, algo: str = "sha256") -> str:
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, algo)
    return record_digest(digest.digest())


def hex_of(record_form: str) -> str:
    return base64.urlsafe_b64decode(record_form + "=" * (-len(record_form) % 4)).hex()


class DigestCache:
    """sha256 digests of files, remembered by their stat; ``enabled=False`` hashes every time."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self.entries: dict[str, tuple[int, int, int, int, str]] = {}
        self.records: dict[str, tuple[tuple[int, int, int, int], tuple[Entry, ...]]] = {}
        self.headers: dict[str, tuple[tuple[int, int, int, int], bytes]] = {}  # .pyc files: their first bytes
        self.dirty = False
        self.hits = 0
        self.hashed = 0
        if file is not None:
            try:
                data = marshal.loads(file.read_bytes())
            except (OSError, EOFError, ValueError, TypeError):
                data = None
            if isinstance(data, tuple) and len(data) == 4 and data[0] == CACHE_VERSION:
                self.entries, self.records, self.headers = data[1], data[2], data[3]

    @classmethod
    def for_scope(cls, scope: str, *, enabled: bool = True) -> DigestCache:
        if not enabled:
            return cls(None)
        name = hashlib.sha256(scope.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return cls(user_cache() / "digests" / f"{name}.marshal")

    def sha256(self, path: str, st: os.stat_result) -> str:
        """``path``'s sha256 (RECORD form), from the cache when its stat is unchanged."""
        entry = self.entries.get(path)
        if (
            entry is not None
            and entry[0] == st.st_size
            and entry[1] == st.st_mtime_ns
            and entry[2] == st.st_ctime_ns
            and entry[3] == st.st_ino
        ):
            self.hits += 1
            return entry[4]
        digest = hash_file(path)
        self.hashed += 1
        if self.file is not None:
            self.entries[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, digest)
            self.dirty = True
        return digest

    def record(self, path: str, st: os.stat_result) -> tuple[Entry, ...] | None:
        """A RECORD file's parsed rows, when the file's stat is what it was when they were parsed."""
        found = self.records.get(path)
        if found is not None and found[0] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino):
            return found[1]
        return None

    def remember_record(self, path: str, st: os.stat_result, entries: tuple[Entry, ...]) -> None:
        if self.file is not None:
            self.records[path] = ((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino), entries)
            self.dirty = True

    def header(self, path: str, st: os.stat_result, size: int) -> bytes:
        """``path``'s first ``size`` bytes (a ``.pyc``'s header), from the cache when its stat is unchanged."""
        key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        found = self.headers.get(path)
        if found is not None and found[0] == key:
            return found[1]
        with open(path, "rb") as f:
            data = f.read(size)
        if self.file is not None:
            self.headers[path] = (key, data)
            self.dirty = True
        return data

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is skipped (it is only a cache)."""
        if self.file is None or not self.dirty:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".digests-")
            try:
                with os.fdopen(fd, "wb") as f:
                    marshal.dump((CACHE_VERSION, self.entries, self.records, self.headers), f)
                os.replace(tmp, self.file)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self.dirty = False
