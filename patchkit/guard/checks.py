"""The guard's checks: one function per check, each returning a frozen ``Check``.

Every check is computed (none stops at the first failure) so a report lists
everything that is wrong.  A check that fails says what to do in its message.
``severity`` is ``"ok"``, ``"warning"`` (passes: an optional patch not in
place, or a dirty tree under ``--allow-dirty``) or ``"error"`` (fails).

The checks read state other modules already compute: the per-patch table of
``status_worktree`` (``StatusReport``), the record (``load_record``,
``edited_since``), ``git status --porcelain`` and the import probe.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.engine.files import sha256
from patchkit.engine.leftovers import Interrupted
from patchkit.engine.record import Layers, Record
from patchkit.engine.status import StatusReport
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, manifest_arg
from patchkit.results import PatchResult, Status
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.guard.probe import InterpreterFacts, PackageFacts

OK = "ok"
WARNING = "warning"
ERROR = "error"


@dataclass(frozen=True)
class Check:
    """One of the guard's checks and its verdict: a one-line message that says what to do when it fails,
    and the details ``--json`` gives."""

    check: str  # "commit", "patches", "record", "clean", "import:<package>"
    ok: bool  # passes (severity "ok" or "warning")
    message: str  # one line; for a failure, also what to do
    details: Mapping[str, object] = field(default_factory=dict)
    severity: str = OK

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.check,
            "ok": self.ok,
            "message": self.message,
            "details": self.details,
            "severity": self.severity,
        }


def _passed(name: str, message: str, details: Mapping[str, object], *, warning: bool = False) -> Check:
    return Check(name, True, message, details, WARNING if warning else OK)


def _failed(name: str, message: str, details: Mapping[str, object]) -> Check:
    return Check(name, False, message, details, ERROR)


# -- commit ------------------------------------------------------------------------------


def check_commit(commit: Commit | None, branch: str | None) -> Check:
    """HEAD is a commit: its full sha and subject, and the branch (or detached)."""
    if commit is None:
        return _failed(
            "commit",
            "HEAD is not a commit (an empty repository or an unborn branch); check out the commit to benchmark",
            {"commit": None, "subject": None, "branch": branch, "detached": branch is None},
        )
    where = f"on branch {branch}" if branch else "detached HEAD"
    return _passed(
        "commit",
        f"HEAD is {commit.sha} {commit.subject!r} ({where})",
        {"commit": commit.sha, "subject": commit.subject, "branch": branch, "detached": branch is None},
    )


# -- patches in place ----------------------------------------------------------------------


def _describe(status: StatusReport, result: PatchResult) -> str:
    state = status.state_of(result)
    if result.reason is not None and result.status is not Status.SKIP:
        return f"{result.patch} ({state}: {result.reason.value})"
    return f"{result.patch} ({state})"


def repo_option(tree: Path | None) -> str:
    """What advice adds after ``-m M`` so that a command pasted from here acts on the guarded tree: `` --repo
    DIR`` unless that tree is the working directory's (``guard --repo DIR`` run from elsewhere)."""
    if tree is None:
        return ""
    try:
        here = Path.cwd().resolve()
    except OSError:
        here = None
    root = Path(tree).resolve()
    return "" if root == here else f" --repo {shlex.quote(str(root))}"


def check_patches(status: StatusReport, *, strict: bool, tree: Path | None = None) -> Check:
    """Every required patch reads SKIP; an optional one that does not is a warning (an error with strict).

    A patch whose older payload version is in the tree (``status.out_of_date``,
    required or not) fails: the tree runs code the manifest no longer holds.  ``tree``: the guarded work
    tree, which every command in the advice names (``repo_option``).
    """
    name = status.manifest.name
    # what `-m` takes from here (the path, for a manifest loaded by path), and --repo where the tree is elsewhere
    arg = manifest_arg(name, status.manifest.path) + repo_option(tree)
    missing = [r for r in status.results if r.required and r.status is not Status.SKIP]
    optional = [r for r in status.results if not r.required and r.status is not Status.SKIP]
    details = {
        "required_not_in_place": [r.patch for r in missing],
        "optional_not_in_place": [r.patch for r in optional],
        "out_of_date": list(status.out_of_date),
    }
    if status.out_of_date:
        stale = set(status.out_of_date)
        others = [r for r in missing + (optional if strict else []) if r.patch not in stale]
        also = f"; also not in place: {', '.join(_describe(status, r) for r in others)}" if others else ""
        return _failed(
            "patches",
            f"out of date: {stale_phrase(status.out_of_date)}{also}; run `patchkit apply -m {arg}` to update "
            + ("it" if len(status.out_of_date) == 1 else "them"),
            details,
        )
    blocking = missing + (optional if strict else [])
    if blocking:
        listed = ", ".join(_describe(status, r) for r in blocking)
        cannot = any(r.status in (Status.FAIL, Status.WARN) for r in blocking)
        todo = f"run `patchkit apply -m {arg}`"
        if cannot:
            todo = (
                f"`patchkit explain -m {arg} PATCH` says why; this commit cannot be patched as the manifest stands"
                if all(r.status is not Status.APPLY for r in blocking)
                else f"run `patchkit apply -m {arg}` once the failing patches are fixed "
                f"(`patchkit explain -m {arg} PATCH`)"
            )
        what = "patches" if strict and optional else "required patches"
        return _failed("patches", f"{what} not in place: {listed}; {todo}", details)
    total = len(status.results)
    if optional:
        listed = ", ".join(_describe(status, r) for r in optional)
        return _passed(
            "patches",
            f"every required patch is in place; optional not in place: {listed} (--strict makes this fail)",
            details,
            warning=True,
        )
    what = (
        f"the {plural(total, 'patch', 'patches')} of {name} is" if total == 1 else f"all {total} patches of {name} are"
    )
    return _passed("patches", f"{what} in place", details)


def stale_phrase(patches: Sequence[str]) -> str:
    """``a holds an older version of its payload...`` / ``a, b hold ... of their payload...``."""
    one = len(patches) == 1
    verb, whose = ("holds", "its") if one else ("hold", "their")
    return f"{', '.join(patches)} {verb} an older version of {whose} payload that patchkit wrote"


# -- record ------------------------------------------------------------------------------------


def check_record(
    manifest: Manifest,
    record: Record | None,
    edited: Sequence[str],
    interrupted: Interrupted | None = None,
    *,
    out_of_date: bool = False,
    layered: Layers | None = None,
    sharing: Mapping[str, Sequence[str]] | None = None,
    paths: Mapping[str, str] | None = None,
    tree: Path | None = None,
) -> Check:
    """The files patchkit wrote still hold what it wrote; the record is of this manifest version;
    no killed patchkit run left its journal (``interrupted``: files or a HEAD move half done).
    ``out_of_date``: a payload changed, so ``patchkit apply`` rewrites the record with this version.

    ``layered``: a file a later manifest patched over holds that manifest's write, intact: it is not
    edited (``edited`` already leaves it out), and the message names the other manifest.  ``sharing``:
    path -> every manifest whose record lists it, this one included, lowest layer first.  The advice for an edited file
    they share never says to ``--force`` one manifest's revert over another's edits: it reverts each
    manifest with its own record, from the top.  ``paths``: manifest name -> the file its record says it was
    loaded from; every command in the advice names a manifest as ``-m`` takes it from here (``manifest_arg``), and
    the guarded work ``tree`` where it is not the working directory (``repo_option``)."""
    name = manifest.name
    repo = repo_option(tree)
    arg = manifest_arg(name, manifest.path) + repo
    where = dict(paths or {})
    where[name] = str(manifest.path)
    left = None if interrupted is None else interrupted.to_json()
    recover = (
        f"interrupted: {interrupted.message}: run `patchkit apply -m {arg}` to recover, then guard again"
        if interrupted is not None
        else None
    )
    if record is None:
        details: dict[str, object] = {
            "recorded": False,
            "files": [],
            "edited": [],
            "manifest_digest": None,
            "applied_at": None,
            "interrupted": left,
        }
        if recover is not None:
            return _failed("record", recover, details)
        return _passed("record", f"no patchkit record for {name}: patchkit wrote nothing in this tree", details)
    details = {
        "recorded": True,
        "files": [f.path for f in record.files],
        "edited": list(edited),
        "manifest_digest": record.manifest_digest,
        "applied_at": record.applied_at,
        "base_commit": record.base_commit,
        "interrupted": left,
    }
    problems = [recover] if recover is not None else []
    shared = sharing or {}
    details["layered_over"] = {p: list(n) for p, n in (layered.over if layered else {}).items()}
    details["layered_under"] = {p: list(n) for p, n in (layered.under if layered else {}).items()}
    alone = [path for path in edited if not shared.get(path)]
    together = [path for path in edited if shared.get(path)]
    if alone:
        problems.append(
            f"edited after patchkit wrote them: {', '.join(alone)} "
            f"(restore with `patchkit revert -m {arg} --force`, then `patchkit apply -m {arg}`)"
        )
    if together:
        stack = list(dict.fromkeys(n for path in together for n in shared[path]))  # lowest first, this one too
        others = [n for n in stack if n != name]
        args = {n: manifest_arg(n, where.get(n)) + repo for n in stack}
        steps = " && ".join(f"patchkit revert -m {args[n]} --force" for n in reversed(stack))
        again = " && ".join(f"patchkit apply -m {args[n]}" for n in stack)
        problems.append(
            f"edited after patchkit wrote them, by none of the manifests that patched them: {', '.join(together)} "
            f"(also patched by {', '.join(others)}; see the edit with `git diff -- {together[0]}`; to start over, "
            f"revert each manifest from the top, which discards only that edit: `{steps}`, then `{again}`)"
        )
    if record.manifest_digest != manifest.digest:
        problems.append(
            f"the tree was patched on {record.applied_at} by another version of manifest {name} "
            f"({record.manifest_digest[:19]}…, now {manifest.digest[:19]}…); "
            + (
                f"`patchkit apply -m {arg}` updates it"
                if out_of_date
                else f"re-apply: `patchkit revert -m {arg} && patchkit apply -m {arg}`"
            )
        )
    if problems:
        return _failed("record", "; ".join(problems), details)
    over = layered.over if layered else {}
    under = layered.under if layered else {}
    also = "".join(f"; {path} patched over since by {', '.join(n)}, intact" for path, n in over.items())
    also += "".join(f"; {path} written over {', '.join(n)}'s intact edits" for path, n in under.items())
    return _passed(
        "record",
        f"the {plural(len(record.files), 'file')} patchkit wrote on {record.applied_at} "
        + ("is" if len(record.files) == 1 else "are")
        + " unchanged, "
        f"by this version of the manifest{also}",
        details,
    )


# -- clean tree --------------------------------------------------------------------------------

_WORDS = {"M": "modified", "A": "added", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed"}


def _change_word(status: str) -> str:
    if status == "??":
        return "untracked"
    staged, unstaged = status[0], status[1]
    if staged != " " and staged in _WORDS:
        return f"{_WORDS[staged]} (staged)"
    return _WORDS.get(unstaged, "changed")


def check_clean(
    changes: Sequence[tuple[str, str]],
    record: Record | None,
    head: str | None,
    head_digest: Callable[[str], str | None],
    *,
    allow_dirty: bool,
    others: Sequence[tuple[Record, Collection[str]]] = (),
    generated: Collection[str] | None = None,
    layered: Layers | None = None,
) -> Check:
    """No change in the tree but patchkit's own recorded edits.

    ``changes`` is ``git status --porcelain`` as (status, path), untracked
    non-ignored files included.  A recorded file counts as patchkit's own only
    if what it held before patching was HEAD's version: a file that carried
    local edits into the patch (``clean_before`` false), or that was patched at
    another commit and no longer starts from HEAD's content, is dirty too.
    ``head_digest(path)`` gives the sha256 of HEAD's version of a path (None:
    not in HEAD); it is only called for files patched at another commit.

    ``others``: the records of other manifests applied to this tree, each with
    the files edited since that manifest wrote them.  Their intact files are
    patchkit's edits too (the check passes with a warning naming them, since
    the benchmark then also runs with those patches); edited ones are dirty.

    ``generated`` (``patchkit bench``'s guard; None for ``patchkit guard``):
    the paths that the caller itself writes into the tree (the
    ``scm_version_file``); those, and the untracked bytecode caches an
    interpreter leaves (``__pycache__/``, ``*.pyc``), are patchkit's own too:
    listed in the details, never a change outside patchkit's edits.

    ``layered``: this manifest's files that other manifests patched over (intact), and the files this
    one patched over other manifests' intact writes.  Those are patchkit's edits too, named like
    ``others``; for the second kind, the lowest manifest's entry says whether the file started from HEAD.
    """
    recorded = {f.path: f for f in record.files} if record else {}
    written: list[str] = []  # generated files seen
    over = layered.over if layered else {}
    under = layered.under if layered else {}
    owners = {f.path: (other, f, f.path in edited) for other, edited in others for f in other.files}
    base = record.base_commit if record else None
    dirty: list[dict[str, str]] = []
    foreign: dict[str, list[str]] = {}
    for status, path in changes:
        if generated is not None and _is_generated(status, path, generated):
            written.append(path)
            continue
        entry = recorded.get(path)
        if entry is None and path in owners:
            other, entry, edited = owners[path]
            if edited:
                dirty.append({"path": path, "change": f"edited after manifest {other.manifest_name} patched it"})
                continue
            foreign.setdefault(other.manifest_name, []).append(path)
            base = other.base_commit
        elif entry is not None:
            base = record.base_commit if record else None
            for other_name in [*under.get(path, ()), *over.get(path, ())]:
                foreign.setdefault(other_name, []).append(path)
            if path in under and layered is not None:
                entry = layered.bottom[path]  # the write at the bottom saw the file as it was
        if entry is not None:
            if not entry.clean_before:
                dirty.append({"path": path, "change": "local edits patched over (had changes before patchkit wrote)"})
            elif base != head and entry.before_sha256 != head_digest(path):
                dirty.append({"path": path, "change": f"patched at {str(base)[:10]}, not at HEAD"})
            continue
        dirty.append({"path": path, "change": _change_word(status)})
    details = {
        "changes": dirty,
        "allow_dirty": allow_dirty,
        "patchkit_files": sorted(recorded),
        "other_manifests": {name: sorted(paths) for name, paths in sorted(foreign.items())},
    }
    if generated is not None:
        details["generated"] = written
    also = ""
    if foreign:
        listed = "; ".join(f"{name}: {', '.join(paths)}" for name, paths in sorted(foreign.items()))
        also = f"; also patched by other manifests ({listed})"
    if not dirty:
        differ = "differs" if len(recorded) == 1 else "differ"
        own = f" (only patchkit's {plural(len(recorded), 'recorded file')} {differ} from HEAD)" if recorded else ""
        return _passed("clean", f"no changes outside patchkit's edits{own}{also}", details, warning=bool(foreign))
    listed = ", ".join(f"{d['path']} ({d['change']})" for d in dirty)
    if allow_dirty:
        return _passed(
            "clean",
            f"{plural(len(dirty), 'change')} outside patchkit's edits, allowed: {listed}{also}",
            details,
            warning=True,
        )
    return _failed(
        "clean",
        f"{plural(len(dirty), 'change')} outside patchkit's edits: {listed}{also}; commit, remove or move them "
        "(patchkit never stashes), or pass --allow-dirty",
        details,
    )


def _is_generated(status: str, path: str, generated: Collection[str]) -> bool:
    """A file the bench writes itself, or an untracked bytecode cache of the tree's own modules."""
    if path in generated:
        return True
    return status == "??" and ("__pycache__" in path.split("/") or path.endswith((".pyc", ".pyo")))


def head_digest_reader(repo: Repo, head: str | None) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        if head is None:
            return None
        entry = repo.ls_tree(head, [path]).get(path)
        if entry is None or not entry.mode.startswith("100"):
            return None
        return sha256(repo.read_blob(entry.oid))

    return read


# -- imports ---------------------------------------------------------------------------------------


def _inside(path: str, root: Path) -> str | None:
    """``path`` relative to ``root`` (both real paths), or None if outside
    (or not a path at all: a built-in or frozen module's origin)."""
    if not os.path.isabs(path):
        return None
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def expected_location(name: str, tracked: Sequence[str]) -> str | None:
    """Where the package lives in the tree: the shortest tracked directory
    ``.../a/b`` (a package, regular or namespace) or module ``.../a/b.py``."""
    rel = name.replace(".", "/")
    found = set()
    for path in tracked:
        if path == f"{rel}.py" or path.endswith(f"/{rel}.py"):
            found.add(path)
        at = path.find(f"{rel}/")
        while at != -1:
            if at == 0 or path[at - 1] == "/":
                found.add(path[: at + len(rel)])
                break
            at = path.find(f"{rel}/", at + 1)
    return min(found, key=lambda p: (p.count("/"), p)) if found else None


def check_import(
    facts: InterpreterFacts, package: PackageFacts, root: Path, tracked: Callable[[], Sequence[str]]
) -> Check:
    """``facts.python`` resolves ``package`` to a location inside the tree at ``root``."""
    name = f"import:{package.name}"
    details: dict[str, object] = {
        "package": package.name,
        "python": facts.python,
        "location": package.location,
        "in_tree": None,
        "expected": None,
        "version": package.version,
    }
    if package.location is None:
        expected = expected_location(package.name, tracked())
        details["expected"] = expected
        why = f" (a finder raised {package.error})" if package.error else ""
        return _failed(
            name,
            f"{package.name} is not importable by {facts.python}{why}; {_todo(package.name, expected, root)}",
            details,
        )
    rel = _inside(package.location, root)
    details["in_tree"] = rel
    details["tree_version"] = None
    if rel is not None:
        found = tree_version(root, package.name, rel)
        details["tree_version"] = None if found is None else {"version": found[0], "file": found[1]}
        said = f"; this tree's version: {found[0]} (from {found[1]})" if found else ""
        if package.version:
            other = (
                " (metadata of an installed copy, not read from this tree)"
                if found is None or (found[0] != package.version)
                else ""
            )
            said += f"; installed distribution: {package.version}{other}"
        return _passed(name, f"{facts.python} imports {package.name} from this tree ({rel}){said}", details)
    files = tracked()
    expected = expected_location(package.name, files)
    details["expected"] = expected
    there = f"not from this tree ({expected})" if expected else "not from this tree (which has no such package)"
    top = package.name.split(".")[0]
    top_dir = expected_location(top, files)
    if (
        top_dir is not None
        and f"{top_dir}/__init__.py" not in files
        and any(path.startswith(f"{top_dir}/") for path in files)
        and _regular_package_at(package.location, package.name)
    ):
        # A regular package anywhere on sys.path wins over namespace portions, whatever the order.
        return _failed(
            name,
            f"{package.name} is shadowed: {facts.python} imports it from {package.location}, {there}; "
            f"uninstall that copy (`{facts.python} -m pip uninstall {top}`) or take it off that interpreter's path: "
            f"this tree's {top_dir} has no __init__.py, so it is a namespace package, and a regular package "
            "anywhere on sys.path wins over it whatever PYTHONPATH says",
            details,
        )
    return _failed(
        name,
        f"{package.name} is shadowed: {facts.python} imports it from {package.location}, {there}; "
        f"uninstall that copy, or {_todo(package.name, expected, root)}",
        details,
    )


def _regular_package_at(location: str | None, name: str) -> bool:
    """Whether the top-level package that ``location`` (of ``name``) lies in has an ``__init__.py``."""
    if location is None:
        return False
    path = Path(location)
    for _ in range(name.count(".") + (0 if path.is_dir() else 1)):
        path = path.parent
    return (path / "__init__.py").is_file()


# `__version__ = "0.5.9"`, `version: str = "0.5.9"`, and setuptools_scm's `__version__ = version = '0.5.9'`.
_VERSION = re.compile(
    r"""^\s*(?:__version__|version)\s*(?::\s*str\s*)?=\s*(?:(?:__version__|version)\s*=\s*)?["']([^"']+)["']""",
    re.M,
)


def tree_version(root: Path, package: str, rel: str) -> tuple[str, str] | None:
    """The version the tree itself states for ``package`` (imported from ``rel``): (version, file).

    Looked up, in order: ``version.py``, ``_version.py`` and ``__init__.py`` of the top-level package;
    then the ``pyproject.toml`` above it: its ``[tool.setuptools_scm]`` ``version_file`` (or
    ``write_to``), generated at install time and often untracked, else a static ``[project] version``.
    Never an installed distribution's metadata: that may be another copy's.
    """
    top = Path(rel)
    for _ in range(package.count(".")):  # up from the module (or package) to the top-level package
        top = top.parent
    for name in ("version.py", "_version.py", "__init__.py"):
        found = _version_in(root / top / name)
        if found:
            return found, (top / name).as_posix()
    folder = top
    while True:
        project = root / folder / "pyproject.toml"
        if project.is_file():
            try:
                data = tomllib.loads(project.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            scm = data.get("tool", {}).get("setuptools_scm", {})
            target = scm.get("version_file") or scm.get("write_to")
            if isinstance(target, str):
                found = _version_in(root / folder / target)
                if found:
                    return found, (folder / target).as_posix()
            static = data.get("project", {}).get("version")
            if isinstance(static, str):
                return static, (folder / "pyproject.toml").as_posix()
            return None
        if folder == Path(".") or folder == Path(""):
            return None
        folder = folder.parent


def _version_in(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = _VERSION.search(text)
    return match.group(1) if match else None


def _todo(package: str, expected: str | None, root: Path) -> str:
    """What makes the interpreter import this tree's copy."""
    if expected is None:
        return f"this tree has no {package}: check --import and --repo"
    depth = package.count(".") + 1
    entry = "/".join(expected.split("/")[:-depth])
    return (
        f"make it import this tree's copy: install the tree into that interpreter (`pip install -e`) "
        f"or put {(root / entry) if entry else root} first on PYTHONPATH"
    )
