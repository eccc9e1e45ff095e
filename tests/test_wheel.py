"""A non-editable install works from any directory.

Builds the real wheel (``pip wheel --no-build-isolation``, offline, with the
``test`` extra's setuptools and wheel), installs it without dependencies into
a fresh venv that borrows this environment's dependencies through a ``.pth``
line (the registry is not needed; ``.ci/run`` does the same smoke with
dependencies from the registry), and runs ``patchkit validate`` and
``patchkit demo`` from a directory that has no manifests.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"{argv}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("wheel-build")
    # A copy of the source tree, so the build leaves nothing (build/, egg-info) in the checkout.
    tracked = _run("git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for rel in filter(None, tracked):
        source = ROOT / rel
        if source.is_file():
            target = build / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, build)
    (found,) = out.glob("patchkit-*.whl")
    return found


def test_wheel_ships_the_bundled_manifests_and_payloads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("manifests", "patches"):
        sources = sorted(
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        )
        assert sources
        for name in sources:
            assert f"patchkit/_bundled/{name}" in names
    assert "patchkit/manifest/schema.json" in names
    assert not any(name.startswith(("tests/", "manifests/", "patches/")) for name in names)


def test_wheel_ships_every_file_of_the_probe(wheel: Path) -> None:
    """The probe is its entry point and a package of parts beside it: a wheel without one part would start a
    probe that fails in every server process."""
    names = set(zipfile.ZipFile(wheel).namelist())
    site_dir = ROOT / "patchkit" / "proof" / "site"
    probe = sorted(p.relative_to(ROOT).as_posix() for p in site_dir.rglob("*.py") if "__pycache__" not in p.parts)
    assert "patchkit/proof/site/sitecustomize.py" in probe and len(probe) > 2
    assert [name for name in probe if name not in names] == []


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "v"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    # This environment's pip installs into the venv (pip --python): a pip of its own (ensurepip) is not needed.
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel)
    # Dependencies come from this environment, on sys.path after the venv's own site-packages.
    purelib = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip())
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz-test-deps.pth").write_text("\n".join(deps) + "\n")
    return venv


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(home)
    return env


def test_installed_wheel_is_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    out = _run(installed / "bin" / "python", "-c", "import patchkit; print(patchkit.__file__)", cwd=tmp_path)
    assert Path(out.strip()).is_relative_to(installed)


def test_validate_bundled_manifest_from_another_directory(installed: Path, tmp_path: Path) -> None:
    out = _run(installed / "bin" / "patchkit", "validate", "-m", "kimi-k25-eagle3", cwd=tmp_path, env=_env(tmp_path))
    assert "VALID: 2 patches." in out
    assert "/site-packages/patchkit/_bundled/manifests/kimi-k25-eagle3.toml" in out


def test_the_installed_probe_starts_and_records(installed: Path, tmp_path: Path) -> None:
    out = tmp_path / "probe"
    out.mkdir()
    program = (
        "import os, subprocess, sys\n"
        "from patchkit.proof import probe_env\n"
        f"env = probe_env(os.environ, __import__('pathlib').Path({str(out)!r}))\n"
        "sys.exit(subprocess.run([sys.executable, '-c', 'import json'], env=env).returncode)\n"
    )
    done = subprocess.run(
        [installed / "bin" / "python", "-c", program], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0 and "probe failed" not in done.stderr, done.stderr
    [written] = list(out.glob("probe-*.jsonl"))
    text = written.read_text()
    assert '"kind": "process"' in text and '"kind": "probe"' in text and "/site-packages/patchkit/proof/site/" in text


def test_demo_from_another_directory(installed: Path, tmp_path: Path) -> None:
    out = _run(installed / "bin" / "patchkit", "demo", cwd=tmp_path, env=_env(tmp_path))
    assert "no manifest named" not in out
    assert "REFUSED" in out  # step 2: the refused apply at the renamed class
    assert "FIRST BAD: " in out  # step 6: bisect, with the wheel's own stand-in server and client
