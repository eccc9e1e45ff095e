"""The distributions of a set of site directories, read from their ``*.dist-info`` (and ``*.egg-info``).

``RECORD`` (packaging's "Recording installed projects") is CSV:
``path,sha256=<urlsafe base64, no padding>,size``, paths relative to the site
directory (``../../bin/x`` for scripts).  PEP 610's ``direct_url.json`` with
``dir_info.editable: true`` marks an editable install and names its source
directory.  Nothing here imports the distributions or asks ``importlib``: the
site directories may belong to another interpreter.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from patchkit.proof.document import DistributionJson

# One RECORD line: (absolute normalised path, hash algorithm, digest in RECORD form, size).  A plain tuple: a
# site directory has tens of thousands, and `guard --site` with a warm cache is little more than a walk over them.
Entry = tuple[str, "str | None", "str | None", "int | None"]
PATH: Final = 0
ALGO: Final = 1
DIGEST: Final = 2
SIZE: Final = 3


class RecordCache(Protocol):
    """Where parsed RECORDs are remembered by the RECORD file's stat (``digests.DigestCache``)."""

    def record(self, path: str, st: os.stat_result) -> tuple[Entry, ...] | None: ...

    def remember_record(self, path: str, st: os.stat_result, entries: tuple[Entry, ...]) -> None: ...


@dataclass(frozen=True)
class Distribution:
    """One installed distribution, read from its ``*.dist-info`` (or ``*.egg-info``): name, version, where it lies,
    its RECORD entries, and the source directory of an editable install."""

    name: str
    version: str
    site_dir: str
    info_dir: str
    entries: tuple[Entry, ...] = field(repr=False)
    has_record: bool = True
    editable_dir: str | None = None  # PEP 610: the source directory of an editable install

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    def to_json(self) -> DistributionJson:
        return {
            "name": self.name,
            "version": self.version,
            "site_dir": self.site_dir,
            "editable_dir": self.editable_dir,
            "files": len(self.entries),
        }


def _metadata(info_dir: str) -> tuple[str | None, str | None]:
    name = version = None
    for candidate in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(info_dir, candidate), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    if line.startswith("Name:") and name is None:
                        name = line[5:].strip()
                    elif line.startswith("Version:") and version is None:
                        version = line[8:].strip()
        except OSError:
            continue
        break
    return name, version


def _editable_dir(info_dir: str) -> str | None:
    try:
        with open(os.path.join(info_dir, "direct_url.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not (data.get("dir_info") or {}).get("editable"):
        return None
    url = urlparse(str(data.get("url", "")))
    if url.scheme != "file":
        return None
    return os.path.realpath(unquote(url.path))


def read_record(site_dir: str, info_dir: str, cache: RecordCache | None = None) -> tuple[Entry, ...] | None:
    """RECORD's rows; a line without quotes is split by hand (csv only for the rare quoted path)."""
    record = os.path.join(info_dir, "RECORD")
    try:
        st = os.stat(record)
        if cache is not None:
            cached = cache.record(record, st)
            if cached is not None:
                return cached
        with open(record, encoding="utf-8", newline="") as f:
            text = f.read()
    except OSError:
        return None
    prefix = site_dir.rstrip(os.sep) + os.sep
    entries = []
    for line in text.splitlines():
        if not line:
            continue
        if '"' in line:
            row = next(csv.reader([line]))
        else:
            row = line.split(",")
            if len(row) > 3:  # a comma in an unquoted path: take the last two fields as hash and size
                row = [",".join(row[:-2]), row[-2], row[-1]]
        rel = row[0]
        if not rel:
            continue
        path = prefix + rel
        if "/." in path or "//" in path or os.sep != "/":
            path = os.path.normpath(path)
        algo = digest = None
        if len(row) > 1 and "=" in row[1]:
            algo, _, digest = row[1].partition("=")
        size = int(row[2]) if len(row) > 2 and row[2].isdigit() else None
        entries.append((path, algo, digest, size))
    out = tuple(entries)
    if cache is not None:
        cache.remember_record(record, st, out)
    return out


def read_distributions(site_dirs: Iterable[str], cache: RecordCache | None = None) -> list[Distribution]:
    """Every ``*.dist-info`` of ``site_dirs`` (a missing RECORD gives ``has_record=False``)."""
    found: list[Distribution] = []
    for site_dir in site_dirs:
        try:
            names = sorted(os.listdir(site_dir))
        except OSError:
            continue
        for entry in names:
            if not entry.endswith(".dist-info"):
                continue
            info_dir = os.path.join(site_dir, entry)
            name, version = _metadata(info_dir)
            stem = entry[: -len(".dist-info")]
            guess_name, _, guess_version = stem.partition("-")
            record = read_record(site_dir, info_dir, cache)
            found.append(
                Distribution(
                    name=name or guess_name,
                    version=version or guess_version,
                    site_dir=site_dir,
                    info_dir=info_dir,
                    entries=record or (),
                    has_record=record is not None,
                    editable_dir=_editable_dir(info_dir),
                )
            )
    return found


class SiteIndex:
    """Who owns a path: the RECORD that lists it, or the editable install whose source holds it."""

    def __init__(self, site_dirs: Sequence[str], cache: RecordCache | None = None) -> None:
        self.site_dirs = [os.path.realpath(d) for d in site_dirs]
        self.raw_site_dirs = [os.path.normpath(d) for d in site_dirs]  # as the interpreter named them
        self.dists = read_distributions(self.site_dirs, cache)
        self.owner: dict[str, tuple[Distribution, Entry]] = {}
        for dist in reversed(self.dists):  # the first distribution that lists a path owns it
            self.owner.update({item[PATH]: (dist, item) for item in dist.entries})
        self.editables = sorted(
            (d for d in self.dists if d.editable_dir), key=lambda d: len(d.editable_dir or ""), reverse=True
        )

    def site_dir_of(self, path: str) -> str | None:
        for site_dir in self.site_dirs:
            if path.startswith(site_dir + os.sep):
                return site_dir
        return None

    def under_raw_site_dir(self, path: str) -> bool:
        """Whether ``path`` (not resolved) is under a site directory as the interpreter named it."""
        return any(path.startswith(d + os.sep) for d in self.raw_site_dirs)

    def editable_of(self, path: str) -> Distribution | None:
        for dist in self.editables:
            assert dist.editable_dir is not None
            if path.startswith(dist.editable_dir + os.sep):
                return dist
        return None
