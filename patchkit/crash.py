"""Crash reports: what an internal error leaves behind for the bug report.

An internal error (exit 3) prints one line on stderr and writes the rest to a
log file, as pre-commit's ``error_handler`` does: the command line, the
versions of everything involved, and the traceback.  The file goes under the
git dir of the repository the command was pointed at (``<git dir>/patchkit/``,
next to patchkit's other state), or, when there is no repository to use, under
``$XDG_CACHE_HOME/patchkit`` (``~/.cache/patchkit``), or the temp dir.  Writing
the report must never raise: a crash while reporting a crash would hide the
first one.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from patchkit import __version__, paths
from patchkit.git import run_git


def repo_arg(argv: Sequence[str]) -> str:
    """The value of ``--repo`` on a command line (default: the current directory)."""
    value = "."
    for index, arg in enumerate(argv):
        if arg == "--repo" and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith("--repo="):
            value = arg[len("--repo=") :]
    return value


def _git_dir(repo: str) -> Path | None:
    path = Path(repo)
    if not path.is_dir():
        return None
    try:
        out = run_git(["rev-parse", "--absolute-git-dir"], path).strip()
    except Exception:  # noqa: BLE001 (any failure: fall back to the cache dir
        return None
    return Path(out) if out else None


def versions() -> dict[str, str]:
    out = {"patchkit": __version__, "python": sys.version.replace("\n", " "), "platform": platform.platform()}
    for dist in ("libcst", "click", "rich", "jsonschema"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    try:
        out["git"] = run_git(["--version"], Path.cwd() if Path.cwd().is_dir() else Path("/")).strip()
    except Exception as exc:  # noqa: BLE001 (a report without git's version is still a report
        out["git"] = f"unknown ({type(exc).__name__})"
    return out


def report_text(exc: BaseException, argv: Sequence[str]) -> str:
    lines = [
        "# patchkit crash report",
        "",
        f"time: {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC",
        f"command: patchkit {' '.join(argv)}",
        f"cwd: {os.getcwd()}",
        "",
        "## versions",
    ]
    lines.extend(f"{name}: {value}" for name, value in versions().items())
    lines += ["", "## traceback", "".join(traceback.format_exception(exc)).rstrip(), ""]
    return "\n".join(lines)


def write_report(exc: BaseException, argv: Sequence[str]) -> Path | None:
    """Write the crash report; returns its path, or None if no place would take it."""
    text = report_text(exc, argv)
    prefix = f"crash-{datetime.now(UTC):%Y%m%dT%H%M%S}-"
    places: list[Path] = []
    git_dir = _git_dir(repo_arg(argv))
    if git_dir is not None:
        places.append(paths.work_tree_state(git_dir))
    places += [paths.user_cache(), Path(tempfile.gettempdir()) / paths.NAME]
    for place in places:
        try:
            place.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=prefix, suffix=".log", dir=place)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            return Path(name)
        except OSError:
            continue
    return None
