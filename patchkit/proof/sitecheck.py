"""``patchkit guard --python PY --site``: every file of PY's site directories, against the RECORDs.

PY is asked for its site directories (``site.getsitepackages()``, and the
user site when enabled), with the caller's environment, as the server would
start.  Then, without importing anything from them:

* every file listed with a hash in a distribution's RECORD must exist, have
  the recorded size and sha256 ("edited", "missing");
* every file under a site directory that Python can import or run must be
  listed in some RECORD ("owned by none"): ``.py`` and ``.pth`` files,
  ``sitecustomize`` / ``usercustomize``, sourceless bytecode (a ``.pyc``
  outside ``__pycache__`` imports as a module), and extension modules (PY's
  own ``importlib.machinery.EXTENSION_SUFFIXES``: ``.so``, ABI-tagged names
  such as ``.cpython-311-x86_64-linux-gnu.so``, ``.pyd``);
* the ``__pycache__`` bytecode PY would run (its cache tag, any ``-O``
  level) is judged against its source as the probe's accounting judges it
  (``proof/bytecode.py``): a ``.pyc`` of other code that Python takes as
  fresh is "stale bytecode".  pip lists ``.pyc`` files without hashes, so
  they are not otherwise verified; their headers are kept in the stat cache,
  so a warm run opens none.  With ``sys.pycache_prefix`` set for PY the
  bytecode lies outside the site directories and is looked up per source;
* ``.pth`` files with an ``import`` line run code at every start-up: owned
  ones are listed as notes, unowned ones are findings;
* editable installs (PEP 610) are listed with their checkout's commit, and
  an uncommitted change in the checkout is a finding per file.

Digests go through the stat cache (``digests.DigestCache``; ``--no-cache``
hashes everything).  Every finding makes the exit code 1.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkit.errors import UsageError
from patchkit.proof import PROBE_DATA_SUFFIXES
from patchkit.proof.account import Checkouts
from patchkit.proof.bytecode import HEADER, BytecodeConfig, judge_header, source_of
from patchkit.proof.digests import DigestCache, hash_file
from patchkit.proof.dists import Distribution, SiteIndex

SITE_SCRIPT = (
    "import importlib.machinery, json, os, site, sys\n"
    "dirs = list(site.getsitepackages())\n"
    "if site.ENABLE_USER_SITE: dirs.append(site.getusersitepackages())\n"
    "print(json.dumps({'executable': sys.executable, 'version': sys.version.split()[0], 'prefix': sys.prefix,"
    " 'stdlib': os.path.dirname(os.__file__), 'site_dirs': dirs,"
    " 'extension_suffixes': importlib.machinery.EXTENSION_SUFFIXES,"
    " 'cache_tag': sys.implementation.cache_tag, 'pycache_prefix': sys.pycache_prefix}))\n"
)
EXTENSIONS = (".so", ".pyd")  # when PY does not say (its EXTENSION_SUFFIXES all end with one of these)
CUSTOMIZE = ("sitecustomize.py", "usercustomize.py")


@dataclass(frozen=True)
class Finding:
    """One file of the site directories that does not match the RECORDs (edited, missing, unowned, editable-dirty,
    stale bytecode), or, among the notes, an owned ``.pth`` file that runs code."""

    kind: str  # edited | missing | unowned | editable-dirty | stale-bytecode
    path: str
    owner: str | None  # "NAME VERSION", "NAME from DIR", or None: owned by none
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "path": self.path, "owner": self.owner, "detail": self.detail}


@dataclass(frozen=True)
class Editable:
    """An editable install (PEP 610): its source directory, the checkout's commit, and the files uncommitted there."""

    name: str
    version: str
    directory: str
    commit: str | None  # None: not a git checkout
    dirty: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "dir": self.directory,
            "commit": self.commit,
            "dirty": list(self.dirty),
        }


@dataclass(frozen=True)
class SiteReport:
    """What ``guard --site`` found for one interpreter: its site directories and distributions, the findings, notes
    and editable installs, and how many files were walked, verified and hashed."""

    python: str
    executable: str
    version: str
    site_dirs: tuple[str, ...]
    distributions: tuple[Distribution, ...]
    files: int  # files walked under the site directories (__pycache__ apart)
    verified: int  # RECORD entries whose digest was checked
    from_cache: int
    hashed: int
    findings: tuple[Finding, ...]
    notes: tuple[Finding, ...]  # owned .pth files that run code
    editables: tuple[Editable, ...]
    bytecode: int = 0  # .pyc files of PY's cache tag judged against their source

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, object]:
        return {
            "python": self.python,
            "executable": self.executable,
            "version": self.version,
            "site_dirs": list(self.site_dirs),
            "ok": self.ok,
            "files": self.files,
            "verified": self.verified,
            "from_cache": self.from_cache,
            "hashed": self.hashed,
            "bytecode": self.bytecode,
            "distributions": [
                {"name": d.name, "version": d.version, "site_dir": d.site_dir} for d in self.distributions
            ],
            "findings": [f.to_json() for f in self.findings],
            "notes": [f.to_json() for f in self.notes],
            "editables": [e.to_json() for e in self.editables],
        }


def interpreter_sites(python: str) -> dict[str, Any]:  # json.loads of what the interpreter printed
    """PY's executable, version, prefix, stdlib and site directories (one short process)."""
    try:
        proc = subprocess.run([python, "-c", SITE_SCRIPT], check=False, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise UsageError(
            f"--python {python}: no such interpreter", hint="give the path of the server's python"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(
            f"--python {python}: cannot run it ({exc})", hint="give the path of the server's python"
        ) from None
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(
            f"--python {python} did not report its site directories ({last})",
            hint="give the path of a Python 3 interpreter",
        ) from None
    return dict(data)


def walk(root: str, pycache: dict[str, os.stat_result] | None = None) -> dict[str, os.stat_result]:
    """Every regular file under ``root`` (symlinked directories are not followed), with its stat;
    the files of ``__pycache__`` directories go to ``pycache`` when it is given, else are skipped."""
    out: dict[str, os.stat_result] = {}
    stack = [(root, out)]
    while stack:
        top, into = stack.pop()
        try:
            it = os.scandir(top)
        except OSError:
            continue
        with it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append((entry.path, into))
                    elif pycache is not None:
                        stack.append((entry.path, pycache))
                elif entry.is_file(follow_symlinks=False):
                    try:
                        into[entry.path] = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
    return out


def _runs_code(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return any(line.startswith(("import ", "import\t")) for line in f)
    except OSError:
        return False


def check_site(python: str, *, use_cache: bool = True) -> SiteReport:
    facts = interpreter_sites(python)
    site_dirs = [os.path.realpath(d) for d in facts.get("site_dirs", []) if os.path.isdir(d)]
    suffixes = facts.get("extension_suffixes")
    tag, prefix = facts.get("cache_tag"), facts.get("pycache_prefix")
    return check_site_dirs(
        site_dirs,
        python=python,
        executable=str(facts.get("executable")),
        version=str(facts.get("version")),
        use_cache=use_cache,
        extension_suffixes=tuple(str(x) for x in suffixes) if isinstance(suffixes, list) else EXTENSIONS,
        bytecode=BytecodeConfig(tag, 0, prefix if isinstance(prefix, str) else None) if isinstance(tag, str) else None,
    )


def check_site_dirs(
    site_dirs: Sequence[str],
    *,
    python: str,
    executable: str,
    version: str,
    use_cache: bool = True,
    extension_suffixes: Sequence[str] = EXTENSIONS,
    bytecode: BytecodeConfig | None = None,
) -> SiteReport:
    """``bytecode``: PY's cache tag and ``pycache_prefix`` (None: bytecode is not judged)."""
    site_dirs = list(dict.fromkeys(site_dirs))
    cache = DigestCache.for_scope("site:" + os.pathsep.join(site_dirs), enabled=use_cache)
    files: dict[str, os.stat_result] = {}
    pycache: dict[str, os.stat_result] | None = {} if bytecode is not None and bytecode.prefix is None else None
    for site_dir in site_dirs:
        files.update(walk(site_dir, pycache))
    index = SiteIndex(site_dirs, cache)
    findings: list[Finding] = []
    notes: list[Finding] = []
    verified = 0
    sha256, get = cache.sha256, files.get
    for dist in index.dists:
        label = dist.label
        if not dist.has_record:
            where = os.path.join(dist.info_dir, "RECORD")
            findings.append(Finding("missing", where, label, "no RECORD: cannot verify"))
        for path, algo, digest, size in dist.entries:
            if digest is None:
                continue
            st = get(path)
            if st is None:
                try:
                    st = os.stat(path)
                except OSError:
                    findings.append(Finding("missing", path, label, "listed in RECORD, not on disk"))
                    continue
            if size is not None and st.st_size != size:
                findings.append(Finding("edited", path, label, f"size {st.st_size}, RECORD says {size}"))
                continue
            found = sha256(path, st) if algo == "sha256" else hash_file(path, algo or "sha256")
            verified += 1
            if found != digest:
                findings.append(Finding("edited", path, label, f"{algo} {found}, RECORD says {digest}"))
    owner = index.owner
    top = set(site_dirs)
    importable = (".py", ".pth", ".pyc", *extension_suffixes, *PROBE_DATA_SUFFIXES)
    for path in files:
        if not path.endswith(importable) or path in owner:
            if path.endswith(".pth") and path in owner and os.path.dirname(path) in top and _runs_code(path):
                pth = ".pth with an import line: runs code at every start-up"
                notes.append(Finding("pth", path, owner[path][0].label, pth))
            continue
        name = os.path.basename(path)
        if name.endswith(".pth"):
            if os.path.dirname(path) in top and _runs_code(path):
                what = ".pth with an import line: runs code at every start-up"
            else:
                what = ".pth listed in no RECORD"
        elif name in CUSTOMIZE:
            what = "runs at every start-up"
        elif name.endswith(PROBE_DATA_SUFFIXES):
            what = "data file (config, template): read at run time, it can change what runs; listed in no RECORD"
        elif name.endswith(".pyc"):
            what = "sourceless bytecode: imports as a module; listed in no RECORD"
        elif not name.endswith(".py"):
            what = "extension module: imports as a module; listed in no RECORD"
        else:
            what = "listed in no RECORD"
        findings.append(Finding("unowned", path, None, what))
    judged = 0
    if bytecode is not None:
        judged = _stale_bytecode(files, pycache, bytecode, index, cache, findings)
    findings.sort(key=lambda f: (f.kind != "edited", f.path))
    notes.sort(key=lambda f: f.path)
    editables = _editables(index, findings)
    cache.save()
    return SiteReport(
        python=python,
        executable=executable,
        version=version,
        site_dirs=tuple(site_dirs),
        distributions=tuple(index.dists),
        files=len(files),
        verified=verified,
        from_cache=cache.hits,
        hashed=cache.hashed,
        findings=tuple(findings),
        notes=tuple(notes),
        editables=editables,
        bytecode=judged,
    )


def _stale_bytecode(
    files: dict[str, os.stat_result],
    pycache: dict[str, os.stat_result] | None,
    config: BytecodeConfig,
    index: SiteIndex,
    cache: DigestCache,
    findings: list[Finding],
) -> int:
    """Judge each ``.pyc`` of PY's cache tag that has its source here; how many were judged."""
    pairs: list[tuple[str, os.stat_result, int, str]] = []  # (pyc, its stat, -O level, its source)
    if pycache is not None:
        for pyc, st in pycache.items():
            found = source_of(pyc, config.tag)
            if found is not None and found[0] in files:
                pairs.append((pyc, st, found[1], found[0]))
    else:  # sys.pycache_prefix: the bytecode is elsewhere, one lookup per source and -O level
        for path in files:
            if path.endswith(".py"):
                for level in (0, 1, 2):
                    pyc = BytecodeConfig(config.tag, level, config.prefix).cached(path)
                    try:
                        pairs.append((pyc, os.stat(pyc), level, path))
                    except OSError:
                        continue
    judged = 0
    for pyc, st, level, path in pairs:
        try:
            header = cache.header(pyc, st, HEADER)
        except OSError:
            continue
        judged += 1
        why = judge_header(path, files[path], pyc, header, st.st_mtime_ns, level)
        if why is not None:
            owned = index.owner.get(path)
            findings.append(Finding("stale-bytecode", pyc, owned[0].label if owned else None, why))
    return judged


def _editables(index: SiteIndex, findings: list[Finding]) -> tuple[Editable, ...]:
    checkouts = Checkouts()
    out = []
    for dist in index.editables:
        assert dist.editable_dir is not None
        state = checkouts.of(dist.editable_dir)
        if state is None:
            out.append(Editable(dist.name, dist.version, dist.editable_dir, None, ()))
            continue
        root, commit, dirty = state
        under = sorted(p for p in dirty if (Path(root) / p).resolve().is_relative_to(dist.editable_dir))
        for rel in under:
            findings.append(
                Finding(
                    "editable-dirty",
                    str(Path(root) / rel),
                    f"{dist.name} from {dist.editable_dir}",
                    f"uncommitted change in the editable checkout (at {(commit or '?')[:12]})",
                )
            )
        out.append(Editable(dist.name, dist.version, dist.editable_dir, commit, tuple(under)))
    return tuple(out)
