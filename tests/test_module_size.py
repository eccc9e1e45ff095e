"""The house by job (#48): no module of patchkit over 800 lines, but the two whose one job is long.

``cli.py`` is the option declarations (as pre-commit's ``main.py``) and ``git.py`` is all git access; any
other module that grows past the bound holds more than one job and is split by job, not trimmed."""

from __future__ import annotations

from pathlib import Path

BOUND = 800
EXEMPT = {"patchkit/cli.py", "patchkit/git.py"}


def test_no_module_over_the_bound(project_root: Path) -> None:
    over = {}
    for path in sorted((project_root / "patchkit").rglob("*.py")):
        name = path.relative_to(project_root).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > BOUND and name not in EXEMPT:
            over[name] = lines
    assert not over, f"modules over {BOUND} lines (split them by job): {over}"
