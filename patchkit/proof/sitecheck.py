"""``patchkit guard --python PY --site``: every file of PY's site directories, against the RECORDs.

PY is asked for its site directories (``site.getsitepackages()``, and the
user site when enabled), with the caller's environment, as the server would
start.  Then, without importing anything from them:

* every file listed with a hash in a distribution's RECORD must exist, have
  the recorded size and sha256 ("edited", "missing");
* every ``.py`` and ``.pth`` file, and every ``sitecustomize`` /
  ``usercustomize``, under a site directory must be listed in some RECORD
  ("owned by none"); ``__pycache__`` is not checked (pip lists ``.pyc`` files
  without hashes);
* ``.pth`` files with an ``import`` line run code at every start-up: owned
  ones are listed as notes, unowned ones are findings;
* editable installs (PEP 610) are listed with their checkout's commit, and
  an uncommitted change in the checkout is a finding per file.

Digests go through the stat cache (``digests.DigestCache``; ``--no-cache``
hashes everything).  Any finding makes the exit code 1.
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
from patchkit.proof.account import Checkouts
from patchkit.proof.digests import DigestCache, hash_file
from patchkit.proof.dists import Distribution, SiteIndex

SITE_SCRIPT = (
    "import json, os, site, sys\n"
    "dirs = list(site.getsitepackages())\n"
    "if site.ENABLE_USER_SITE: dirs.append(site.getusersitepackages())\n"
    "print(json.dumps({'executable': sys.executable, 'version': sys.version.split()[0], 'prefix': sys.prefix,"
    " 'stdlib': os.path.dirname(os.__file__), 'site_dirs': dirs}))\n"
)
CUSTOMIZE = ("sitecustomize.py", "usercustomize.py")


@dataclass(frozen=True)
class Finding:
    kind: str  # edited | missing | unowned | editable-dirty
    path: str
    owner: str | None  # "NAME VERSION", "NAME from DIR", or None: owned by none
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "owner": self.owner, "detail": self.detail}


@dataclass(frozen=True)
class Editable:
    name: str
    version: str
    directory: str
    commit: str | None  # None: not a git checkout
    dirty: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "dir": self.directory,
            "commit": self.commit,
            "dirty": list(self.dirty),
        }


@dataclass(frozen=True)
class SiteReport:
    python: str
    executable: str
    version: str
    site_dirs: tuple[str, ...]
    distributions: tuple[Distribution, ...]
    files: int  # files walked under the site directories
    verified: int  # RECORD entries whose digest was checked
    from_cache: int
    hashed: int
    findings: tuple[Finding, ...]
    notes: tuple[Finding, ...]  # owned .pth files that run code
    editables: tuple[Editable, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
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
            "distributions": [
                {"name": d.name, "version": d.version, "site_dir": d.site_dir} for d in self.distributions
            ],
            "findings": [f.to_json() for f in self.findings],
            "notes": [f.to_json() for f in self.notes],
            "editables": [e.to_json() for e in self.editables],
        }


def interpreter_sites(python: str) -> dict[str, Any]:
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


def walk(root: str) -> dict[str, os.stat_result]:
    """Every regular file under ``root`` (symlinked directories are not followed), with its stat."""
    out: dict[str, os.stat_result] = {}
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            it = os.scandir(top)
        except OSError:
            continue
        with it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    try:
                        out[entry.path] = entry.stat(follow_symlinks=False)
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
    return check_site_dirs(
        site_dirs,
        python=python,
        executable=str(facts.get("executable")),
        version=str(facts.get("version")),
        use_cache=use_cache,
    )


def check_site_dirs(
    site_dirs: Sequence[str], *, python: str, executable: str, version: str, use_cache: bool = True
) -> SiteReport:
    site_dirs = list(dict.fromkeys(site_dirs))
    cache = DigestCache.for_scope("site:" + os.pathsep.join(site_dirs), enabled=use_cache)
    files: dict[str, os.stat_result] = {}
    for site_dir in site_dirs:
        files.update(walk(site_dir))
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
    for path in files:
        if not path.endswith((".py", ".pth")) or path in owner:
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
        else:
            what = "listed in no RECORD"
        findings.append(Finding("unowned", path, None, what))
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
    )


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
