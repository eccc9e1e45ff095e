"""Real wheels, venvs and editable installs for the probe and `guard --site` tests.

Wheels are built on the fly with this environment's pip (offline:
``--no-build-isolation``) from small projects written here, and installed
with ``pip --python VENV_PY`` into venvs created without pip (fast).  The
stand-in torch (tests/standin/torch_standin) is installed as a real
distribution named ``torch``.  Built once per test session.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import setuptools

STANDIN = Path(__file__).parent / "standin"
SERVER = STANDIN / "server.py"
TORCH_VERSION = "2.9.1+standin"
ALPHA_CORE = '"""alpha\'s core."""\n\nVALUE = 41\n\n\ndef answer():\n    return VALUE + 1\n'

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"

[tool.setuptools.packages.find]
where = ["src"]
"""

_built: dict[str, Path] = {}


def pip(*args: str | Path, env: Mapping[str, str] | None = None) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def project(root: Path, name: str, version: str, files: Mapping[str, str]) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name, version=version))
    for rel, text in files.items():
        target = root / "src" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def wheels(base: Path) -> Path:
    """A folder with alpha-dist 1.0 and the stand-in torch as wheels (built once per session)."""
    if "wheels" in _built:
        return _built["wheels"]
    out = base / "wheels"
    torch_files = {
        str(p.relative_to(STANDIN / "torch_standin")): p.read_text()
        for p in sorted((STANDIN / "torch_standin" / "torch").rglob("*.py"))
    }
    alpha = project(base / "alpha", "alpha-dist", "1.0", {"alpha/__init__.py": "", "alpha/core.py": ALPHA_CORE})
    torch = project(base / "torch", "torch", TORCH_VERSION, torch_files)
    pip("wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", out, alpha, torch)
    _built["wheels"] = out
    return out


def make_venv(path: Path, wheel_dir: Path) -> Path:
    """A venv (no pip in it) with every wheel of ``wheel_dir`` installed by pip; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    pip("--python", python, "install", "--no-index", "--no-deps", *sorted(wheel_dir.glob("*.whl")))
    return python


def write_source(path: Path, text: str) -> None:
    """Rewrite an installed module and drop its bytecode, so the next process runs ``text``.

    Python takes a ``.pyc`` as fresh while the source's size and its mtime in
    whole seconds match what the ``.pyc`` recorded: an edit of the same size
    (``41`` -> ``40``), or its undo, within the second a server wrote the
    ``.pyc`` would run the old code.
    """
    path.write_text(text)
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def site_packages(python: Path) -> Path:
    found = list((python.parent.parent / "lib").glob("python3*/site-packages"))
    assert len(found) == 1, found
    return found[0]


def editable_install(python: Path, checkout: Path) -> None:
    """``pip install -e checkout`` into the venv; the build backend (setuptools) comes from this environment."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(setuptools.__file__).parent.parent)
    pip("--python", python, "install", "--no-index", "--no-deps", "--no-build-isolation", "-e", checkout, env=env)


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def wait_healthy(port: int, proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("server never healthy")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


MONITORING_PYTHONS = (  # 3.12 first: the oldest Python the function-level core runs on
    "python3.12",
    "/root/.pyenv/versions/3.12.1/bin/python3.12",
    "python3.13",
    "/root/.pyenv/versions/3.13.0/bin/python3.13",
)


def monitoring_python() -> Path | None:
    """An interpreter of Python 3.12 or later (``sys.monitoring``: the probe's function-level core) that runs, by
    its real executable (a pyenv shim on PATH may name a version that is not selected), or None."""
    for name in MONITORING_PYTHONS:
        found = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK) else None)
        if not found:
            continue
        asked = subprocess.run(
            [found, "-c", "import sys; print(sys.version_info >= (3, 12) and sys.executable)"],
            capture_output=True,
            text=True,
        )
        answer = asked.stdout.strip()
        if asked.returncode == 0 and answer not in ("", "False"):
            return Path(answer)
    return None


def make_venv_of(python: Path, path: Path, wheel_dir: Path) -> Path:
    """``make_venv`` with another interpreter (a 3.12+ one for the function-level core); returns its python."""
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(path)], check=True)
    venv_python = path / "bin" / "python"
    pip("--python", venv_python, "install", "--no-index", "--no-deps", *sorted(wheel_dir.glob("*.whl")))
    return venv_python
