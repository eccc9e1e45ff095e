"""Name resolution: a manifest spec to its file, and the closest names to a mistyped one."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from patchkit.errors import UsageError

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout, when patchkit runs from one
# A wheel ships the bundled manifests/ and patches/ here (copied by setup.py's
# build step), laid out as at the top of the checkout so `../patches/x.py`
# sources resolve the same way.
BUNDLED_ROOT = Path(__file__).resolve().parents[1] / "_bundled"


def close_matches(word: str, options: Iterable[str]) -> list[str]:
    """The closest of ``options`` to a mistyped ``word`` (difflib, loaded only when a manifest is wrong)."""
    import difflib

    return difflib.get_close_matches(word, list(options), n=1)


def is_name(spec: str) -> bool:
    """Whether ``-m spec`` names a manifest (looked up as manifests/NAME.toml) rather than giving its path."""
    return not (spec.endswith(".toml") or "/" in spec or os.sep in spec)


def resolve_manifest(spec: str, cwd: Path | None = None) -> Path:
    """A path, or a bare name looked up as manifests/NAME.toml: in ``cwd``, then in
    patchkit's checkout, then in the copy bundled with an installed wheel."""
    cwd = cwd or Path.cwd()
    if not is_name(spec):
        path = (cwd / spec).resolve()
        if path.is_dir():
            raise UsageError(
                f"manifest {spec} is a directory, not a .toml file",
                hint="give the path of a manifest file inside it, e.g. -m DIR/NAME.toml",
            )
        if not path.is_file():
            raise UsageError(
                f"manifest file {spec} does not exist", hint="give a path to a .toml file or a manifest name"
            )
        return path
    candidates = []
    checkout = [PROJECT_ROOT] if (PROJECT_ROOT / "pyproject.toml").is_file() else []
    bundled = [BUNDLED_ROOT] if BUNDLED_ROOT.is_dir() else []
    for root in dict.fromkeys([cwd, *checkout, *bundled]):
        candidate = root / "manifests" / f"{spec}.toml"
        candidates.append(candidate)
        if candidate.is_file():
            return candidate.resolve()
    known = sorted({p.stem for c in candidates if c.parent.is_dir() for p in c.parent.glob("*.toml")})
    close = close_matches(spec, known)
    hint = (
        f"did you mean {close[0]!r}?"
        if close
        else (f"known manifests: {', '.join(known)}" if known else "give a path to a .toml file")
    )
    raise UsageError(f"no manifest named {spec!r} (looked for {', '.join(str(c) for c in candidates)})", hint=hint)


def display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows); keep the absolute path
        return str(path)


def manifest_arg(name: str, path: str | Path | None, cwd: Path | None = None) -> str:
    """What printed advice puts after ``-m`` so that the command runs as pasted, here.

    The name where ``-m NAME`` finds this very file from the working directory (a bundled or
    project manifest, or ``./manifests/NAME.toml``); else the file's path, relative when it lies
    below the working directory and absolute otherwise, shell-quoted.  A manifest loaded by path
    is not found by its name (``patchkit apply -m NAME`` exits 2), so advice naming it by name
    could not be followed.  A file that is gone keeps its name: ``revert`` finds the record by it.
    """
    if path is None:
        return name
    cwd = cwd or Path.cwd()
    file = Path(path)
    try:
        if resolve_manifest(name, cwd) == file.resolve():
            return name
    except UsageError:
        pass
    if not file.is_file():
        return name
    shown = os.path.relpath(file.resolve(), cwd.resolve())
    if shown == os.pardir or shown.startswith(os.pardir + os.sep):
        shown = str(file.resolve())
    elif os.sep not in shown and not shown.endswith(".toml"):
        shown = os.path.join(os.curdir, shown)  # read as a path, not a name
    return shlex.quote(shown)
