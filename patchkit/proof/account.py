"""Every file that ran, accounted for: tree, dist, editable, stdlib, generated, probe, or STRAY with why.

The files are those the probe saw loaded (``records``), each with the size
and mtime it had then.  A file is, in this order:

* **STRAY** when it changed or vanished since it was loaded (what ran is no
  longer on disk, so nothing on disk can vouch for it), or when Python ran a
  ``.pyc`` of other code in its place (``proof/bytecode.py``);
* **probe**: patchkit's own probe (``PROBE_FILES``: its ``sitecustomize`` and the parts beside it);
* **tree**: under the benchmarked work tree, and equal to the commit's blob
  or to what patchkit's record says it wrote (else STRAY);
* **dist NAME VERSION**: listed in that distribution's RECORD with a matching
  sha256 (an edited file, or one listed without a hash, is STRAY);
* **editable NAME from DIR**: under the source directory of a PEP 610
  editable install; where DIR is in a git checkout the file must be clean
  there (else STRAY), and the checkout's commit is recorded;
* STRAY, "owned by none", for any other file under a site directory (a
  hand-written ``sitecustomize.py``, a file left by hand);
* **stdlib**: under the interpreter's own library directory (recorded, not
  verified), by its real path or by the path it was loaded from: Debian's
  ``/usr/lib/python3.X/sitecustomize.py`` is a symlink into ``/etc``, and is
  the distribution's own file wherever it points (a file loaded from a site
  directory is never stdlib, whatever it links to);
* **generated**: under a JIT compiler's cache (Triton's launchers, torch
  extension builds: ``proof/jitcache.py``), recorded with the cache's name,
  not verified: derived from verified code, named by its hash;
* STRAY for anything else ("outside every known root").

``allow_stray`` globs (``fnmatch`` on the absolute path; ``*`` crosses
``/``) move a STRAY to ``allowed``, which is kept in the record.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchkit.engine.record import all_records
from patchkit.errors import PatchkitError
from patchkit.git import Repo, blob_id
from patchkit.proof import PROBE_FILES
from patchkit.proof.bytecode import BytecodeConfig, stale_bytecode
from patchkit.proof.digests import DigestCache, hash_file, hex_of
from patchkit.proof.dists import ALGO, DIGEST, Distribution, SiteIndex
from patchkit.proof.document import AccountingJson, VerdictJson
from patchkit.proof.jitcache import JitCache
from patchkit.proof.records import LoadedFile, ProcessFacts

OUTSIDE = "outside every known root (tree, site directories, editable checkouts, stdlib, JIT caches)"
CATEGORIES = ("tree", "dist", "editable", "stdlib", "generated", "probe", "data", "stray", "allowed")


@dataclass(frozen=True)
class TreeFacts:
    """The benchmarked work tree as plain data (no git process needed to use it): its root, the commit,
    the commit's blobs (rel -> blob id, ``Repo.tree_blobs``), and what patchkit wrote (rel -> sha256 hex:
    the apply records, and the version file bench writes)."""

    root: Path
    commit: str
    blobs: Mapping[str, str]
    object_format: str = "sha1"
    written: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, repo: Repo, root: Path, commit: str, extra: Mapping[str, str] | None = None) -> TreeFacts:
        """Read from a repository: the commit's blobs and every apply record of the work tree."""
        written = {f.path: f.after_sha256 for record in all_records(repo) for f in record.files}
        written.update(extra or {})
        return cls(root, commit, repo.tree_blobs(commit), repo.object_format, written)

    def to_json(self) -> dict[str, object]:
        return {"root": str(self.root), "commit": self.commit, "written": dict(self.written)}


@dataclass(frozen=True)
class Verdict:
    """Where one file that ran belongs: its category (tree, dist, editable, ..., stray, allowed), its owner, why when
    it is a STRAY, and the processes that loaded it: by identity (``ProcessFacts.ident``: host, boot, pid, start),
    so that two hosts' pid 1234, or a pid reused by a later worker, are two loaders, not one."""

    path: str
    category: str
    owner: str | None  # "sglang 0.5.3", "sglang from /src (at abc123)", the commit, or None
    why: str | None  # for a STRAY: what is wrong
    pids: tuple[int, ...]  # the loaders' pids, as a person reads them (one per pid: see ``processes``)
    read: bool = False  # a data file a process read (the probe's open hook), not code that ran
    sha256: str | None = None  # for a data file: its digest when accounted
    processes: tuple[str, ...] = ()  # every loader's ident, one per process whatever it exec()s

    def to_json(self) -> VerdictJson:
        out: VerdictJson = {
            "path": self.path,
            "category": self.category,
            "owner": self.owner,
            "why": self.why,
            "pids": list(self.pids),
            "processes": list(self.processes),
        }
        if self.read:
            out["sha256"] = self.sha256
        return out


@dataclass(frozen=True)
class Accounting:
    """Every file that ran, accounted for (``account``), with the distributions of the site directories, the
    commits of editable checkouts, and the ``allow_stray`` globs that were applied."""

    verdicts: tuple[Verdict, ...]
    distributions: tuple[Distribution, ...]
    editable_commits: Mapping[str, str | None]  # editable dir -> commit (None: not a git checkout)
    allow_stray: tuple[str, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(CATEGORIES, 0)
        for v in self.verdicts:
            counts[v.category] += 1
        return counts

    @property
    def strays(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.category == "stray")

    @property
    def allowed(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.category == "allowed")

    @property
    def data(self) -> tuple[Verdict, ...]:
        """Every data file that was read, whatever its category (tree, dist, data, STRAY...)."""
        return tuple(v for v in self.verdicts if v.read)

    def summary_json(self) -> AccountingJson:
        """What the run record keeps: counts, every STRAY and every allowed one, the globs, distributions."""
        return {
            "counts": self.counts,
            "strays": [v.to_json() for v in self.strays],
            "allowed": [v.to_json() for v in self.allowed],
            "data": [v.to_json() for v in self.data],
            "allow_stray": list(self.allow_stray),
            "distributions": [d.to_json() for d in self.distributions],
            "editable_commits": dict(self.editable_commits),
        }


def _under(path: str, root: str | None) -> bool:
    return bool(root) and path.startswith(root.rstrip(os.sep) + os.sep)  # type: ignore[union-attr]


class Checkouts:
    """git state of editable source directories, one `git status` per checkout."""

    def __init__(self) -> None:
        self.state: dict[str, tuple[Path, str | None, set[str]] | None] = {}

    def of(self, directory: str) -> tuple[Path, str | None, set[str]] | None:
        if directory not in self.state:
            try:
                repo = Repo.discover(Path(directory))
                root = repo.root
                if root is None:
                    raise PatchkitError("no work tree")
                dirty = {path for _status, path in repo.changed_tracked_files()} | set(repo.untracked_files())
                self.state[directory] = (root, repo.head(), dirty)
            except PatchkitError:
                self.state[directory] = None
        return self.state[directory]


def account(
    processes: Sequence[ProcessFacts],
    *,
    tree: TreeFacts | None,
    allow_stray: Sequence[str] = (),
    cache: DigestCache,
    generated: Sequence[JitCache] = (),
) -> Accounting:
    # each file with the process images that loaded it (not their pids: two hosts' pid 1234 are two processes)
    loads: dict[str, list[tuple[ProcessFacts, LoadedFile]]] = {}
    site_dirs: list[str] = []
    stdlibs: set[str] = set()
    for proc in processes:
        for item in proc.files:
            loads.setdefault(item.path, []).append((proc, item))
        site_dirs += [d for d in proc.site_dirs if d not in site_dirs]
        if proc.stdlib:
            stdlibs.update((os.path.realpath(proc.stdlib), os.path.normpath(proc.stdlib)))
    index = SiteIndex(site_dirs, cache)
    checkouts = Checkouts()
    tree_root = os.path.realpath(tree.root) if tree is not None else None
    real = {path: os.path.realpath(path) for path in loads}
    blobs = tree.blobs if tree is not None else {}
    verdicts = []
    for path in sorted(loads):
        seen = loads[path]
        pids = tuple(sorted({proc.pid for proc, _ in seen}))
        idents = tuple(sorted({proc.ident for proc, _ in seen}))
        # the bytecode settings of the images that loaded it (an exec()ed image may run another Python)
        configs = dict.fromkeys(proc.bytecode for proc, _ in seen if proc.bytecode is not None)
        category, owner, why = _classify(
            path,
            real[path],
            seen,
            tree,
            tree_root,
            blobs,
            index,
            checkouts,
            stdlibs,
            PROBE_FILES,
            cache,
            configs,
            generated,
        )
        read = all(item.kind == "data" for _, item in seen)
        if read and category == "stray" and why == OUTSIDE:
            # under a root of PATCHKIT_PROBE_ROOTS (a model directory): nothing to verify it against; its digest
            # is kept, so two runs that read different configs differ
            category, owner, why = "data", "a data root (PATCHKIT_PROBE_ROOTS)", None
        if category == "stray" and any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(real[path], g) for g in allow_stray):
            category = "allowed"
        digest = None
        if read and category != "stray":
            try:
                digest = hex_of(cache.sha256(real[path], os.stat(real[path])))
            except OSError:
                digest = None
        verdicts.append(Verdict(path, category, owner, why, pids, read, digest, idents))
    cache.save()
    commits = {}
    for dist in index.editables:
        assert dist.editable_dir is not None
        state = checkouts.of(dist.editable_dir)
        commits[dist.editable_dir] = state[1] if state else None
    return Accounting(tuple(verdicts), tuple(index.dists), commits, tuple(allow_stray))


def _classify(
    path: str,
    real: str,
    seen: list[tuple[ProcessFacts, LoadedFile]],
    tree: TreeFacts | None,
    tree_root: str | None,
    blobs: Mapping[str, object],
    index: SiteIndex,
    checkouts: Checkouts,
    stdlibs: Iterable[str],
    probe_files: frozenset[str],
    cache: DigestCache,
    bytecode: Iterable[BytecodeConfig] = (),
    generated: Iterable[JitCache] = (),
) -> tuple[str, str | None, str | None]:
    try:
        st = os.stat(path)
    except OSError:
        return "stray", None, f"gone since pid {seen[0][0].pid} loaded it"
    for proc, item in seen:
        if (item.size, item.mtime_ns) != (st.st_size, st.st_mtime_ns):
            return (
                "stray",
                None,
                (
                    f"changed since pid {proc.pid} loaded it (size {item.size} -> {st.st_size}, "
                    f"mtime_ns {item.mtime_ns} -> {st.st_mtime_ns})"
                ),
            )
    if real in probe_files:
        return "probe", "patchkit", None
    stale = stale_bytecode(path, st, bytecode)
    if stale is not None:  # whatever vouches for the source, other code ran
        return "stray", None, stale
    if tree is not None and tree_root and _under(real, tree_root):
        rel = os.path.relpath(real, tree_root)
        digest = hex_of(cache.sha256(real, st))
        if tree.written.get(rel) == digest:
            return "tree", "patchkit record", None
        blob = blobs.get(rel)
        if blob is not None:
            with open(real, "rb") as f:
                data = f.read()
            if blob_id(data, tree.object_format) == blob:
                return "tree", tree.commit, None
            return (
                "stray",
                None,
                (f"tree file {rel} differs from commit {tree.commit[:12]}'s blob and from patchkit's record"),
            )
        return "stray", None, f"tree file {rel} is not in commit {tree.commit[:12]} and patchkit did not write it"
    owned = index.owner.get(os.path.normpath(path)) or index.owner.get(real)
    if owned is not None:
        dist, entry = owned
        algo, recorded = entry[ALGO], entry[DIGEST]
        if not recorded or not algo:
            return "stray", dist.label, f"listed without a hash in the RECORD of {dist.label}"
        if algo == "sha256":
            found = cache.sha256(real, st)
        else:
            found = hash_file(real, algo) if algo in hashlib.algorithms_available else "?"
        if found != recorded:
            return (
                "stray",
                dist.label,
                (f"edited: its {algo} differs from the RECORD of {dist.label} (RECORD {recorded}, file {found})"),
            )
        return "dist", dist.label, None
    editable = index.editable_of(real)
    if editable is not None:
        assert editable.editable_dir is not None
        state = checkouts.of(editable.editable_dir)
        if state is None:
            return "editable", f"{editable.name} from {editable.editable_dir} (not a git checkout)", None
        root, commit, dirty = state
        rel = os.path.relpath(real, root)
        if rel in dirty:
            return (
                "stray",
                f"{editable.name} from {editable.editable_dir}",
                (f"uncommitted change in the editable checkout {root} ({rel}) of {editable.label}"),
            )
        return "editable", f"{editable.name} from {editable.editable_dir} at {(commit or '?')[:12]}", None
    site_dir = index.site_dir_of(real)
    if site_dir is not None:
        return "stray", None, f"in {site_dir} but listed in no RECORD (owned by none)"
    loaded = os.path.normpath(path)
    for stdlib in stdlibs:
        if _under(real, stdlib):
            return "stdlib", None, None
        if _under(loaded, stdlib) and index.site_dir_of(loaded) is None and not index.under_raw_site_dir(loaded):
            return "stdlib", None, None  # loaded from the stdlib directory: a link it holds (Debian's sitecustomize)
    for jit in generated:
        if _under(path, jit.root) or _under(real, jit.root):
            return "generated", f"{jit.name} cache {jit.root}", None
    return "stray", None, OUTSIDE
