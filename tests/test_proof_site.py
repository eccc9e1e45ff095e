"""`patchkit guard --python PY --site` on real venvs: wheels built and installed by pip, then tampered with."""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import subprocess
import sysconfig
import time
from pathlib import Path

import pytest
from helpers import git, make_repo, patchkit_script
from proof_env import ALPHA_CORE, PYPROJECT, editable_install, make_venv, site_packages, wheels

BETA_PYPROJECT = PYPROJECT.format(name="beta-src", version="0.3")


def guard_site(python: Path, *extra: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run(
        [patchkit_script(), "guard", "--python", str(python), "--site", *extra],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv with alpha-dist and torch from wheels, and beta-src installed editable from a clean git checkout."""
    base = tmp_path_factory.mktemp("site-venv")
    python = make_venv(base / "venv", wheels(tmp_path_factory.mktemp("wheels")))
    checkout = make_repo(
        base / "beta",
        {"pyproject.toml": BETA_PYPROJECT, "src/beta/__init__.py": "", "src/beta/core.py": "B = 1\n"},
    )
    (checkout / ".gitignore").write_text("*.egg-info/\n__pycache__/\nbuild/\n")
    git(checkout, "add", ".gitignore")
    git(checkout, "commit", "-q", "-m", "ignore build outputs")
    editable_install(python, checkout)
    return python, checkout


@pytest.mark.slow
def test_clean_then_tampered_venv(venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, checkout = venv
    site = site_packages(python)
    cache = tmp_path / "cache"
    clean = guard_site(python, cache=cache)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "GUARD --site OK: every file is accounted for." in clean.stdout
    head = git(checkout, "rev-parse", "HEAD").strip()
    assert f"editable beta-src 0.3 from {checkout}: git checkout at {head[:12]}, clean" in clean.stdout
    warm = json.loads(guard_site(python, "--json", cache=cache).stdout)
    assert warm["ok"] and warm["hashed"] == 0 and warm["from_cache"] == warm["verified"] > 10
    names = {(d["name"], d["version"]) for d in warm["distributions"]}
    assert {("alpha-dist", "1.0"), ("torch", "2.9.1+standin"), ("beta-src", "0.3")} <= names

    core = site / "alpha" / "core.py"
    core.write_text(ALPHA_CORE.replace("41", "40"))  # same size, other bytes
    (site / "sitecustomize.py").write_text("import os\nos.environ['NCCL_MIN_NCHANNELS'] = '8'\n")
    (site / "zz_hook.pth").write_text("import os; os.environ.setdefault('CUDA_DEVICE_MAX_CONNECTIONS', '1')\n")
    (checkout / "src" / "beta" / "core.py").write_text("B = 2\n")
    (site / "torch" / "cuda" / "nccl.py").unlink()
    tampered = guard_site(python, cache=cache)
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr
    text = tampered.stdout
    lines = {
        line.split()[1]: line
        for line in text.splitlines()
        if line.split()[:1] in (["EDITED"], ["UNOWNED"], ["MISSING"], ["DIRTY"])
    }
    assert "alpha-dist 1.0" in lines[str(core)] and lines[str(core)].startswith("EDITED")
    assert "owned by none" in lines[str(site / "sitecustomize.py")]
    assert "owned by none" in lines[str(site / "zz_hook.pth")] and "import line" in lines[str(site / "zz_hook.pth")]
    assert lines[str(site / "torch" / "cuda" / "nccl.py")].startswith("MISSING")
    assert "torch 2.9.1+standin" in lines[str(site / "torch" / "cuda" / "nccl.py")]
    assert lines[str(checkout / "src" / "beta" / "core.py")].startswith("DIRTY")
    assert f"beta-src from {checkout}" in lines[str(checkout / "src" / "beta" / "core.py")]
    assert "GUARD --site FAILED: 5 files not accounted for." in text
    data = json.loads(guard_site(python, "--json", "--no-cache", cache=cache).stdout)
    assert data["from_cache"] == 0 and data["hashed"] == data["verified"]
    assert {(f["kind"], f["path"]) for f in data["findings"]} == {
        ("edited", str(core)),
        ("unowned", str(site / "sitecustomize.py")),
        ("unowned", str(site / "zz_hook.pth")),
        ("missing", str(site / "torch" / "cuda" / "nccl.py")),
        ("editable-dirty", str(checkout / "src" / "beta" / "core.py")),
    }


@pytest.mark.slow
def test_the_stat_cache_sees_an_edit_that_keeps_size_and_mtime(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv", wheels(tmp_path_factory.mktemp("wheels")))
    core = site_packages(python) / "alpha" / "core.py"
    cache = tmp_path / "cache"
    assert guard_site(python, cache=cache).returncode == 0
    st = core.stat()
    with open(core, "r+b") as f:  # same inode, same size
        f.write(b"#")
    os.utime(core, ns=(st.st_atime_ns, st.st_mtime_ns))  # `touch -r`: the mtime as it was
    assert core.stat().st_mtime_ns == st.st_mtime_ns and core.stat().st_size == st.st_size
    again = guard_site(python, "--json", cache=cache)
    assert again.returncode == 1
    assert [f["path"] for f in json.loads(again.stdout)["findings"]] == [str(core)]


def test_site_needs_python_and_refuses_a_manifest(tmp_path: Path) -> None:
    proc = subprocess.run([patchkit_script(), "guard", "--site"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--site needs --python PY" in proc.stderr
    proc = subprocess.run(
        [patchkit_script(), "guard", "--site", "--python", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "no such interpreter" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([patchkit_script(), "guard"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Missing option '-m' / '--manifest'" in proc.stderr


def test_unowned_sourceless_bytecode_and_extension_modules_and_stale_bytecode(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """What imports without a .py: a .pyc outside __pycache__ and extension modules, owned by no RECORD; and a
    __pycache__ .pyc of other code that Python takes as fresh for a clean RECORD-listed source."""
    python = make_venv(tmp_path / "venv", wheels(tmp_path_factory.mktemp("wheels")))
    site = site_packages(python)
    cache = tmp_path / "cache"
    assert guard_site(python, cache=cache).returncode == 0
    hook = tmp_path / "evil.py"
    hook.write_text("import os\nos.environ['NCCL_MIN_NCHANNELS'] = '8'\n")
    py_compile.compile(str(hook), cfile=str(site / "evil.pyc"))
    ran = subprocess.run([str(python), "-c", "import evil, os; print(os.environ['NCCL_MIN_NCHANNELS'])"],
                         capture_output=True, text=True)  # fmt: skip
    assert ran.stdout == "8\n", ran.stderr  # it imports: Python runs it
    tagged = site / f"fast{sysconfig.get_config_var('EXT_SUFFIX')}"
    for ext in (tagged, site / "alpha" / "plain.so", site / "stable.abi3.so"):
        ext.write_bytes(b"\x7fELF not really")
    # alpha/core.py's own bytes (as its RECORD says), but its .pyc compiled from VALUE = 40 within the same second
    core = site / "alpha" / "core.py"
    original = core.read_text()
    second = int(time.time()) - 100
    pyc = Path(importlib.util.cache_from_source(str(core)))
    core.write_text(original.replace("41", "40"))
    os.utime(core, ns=(second * 10**9 + 10,) * 2)
    py_compile.compile(str(core), cfile=str(pyc), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    os.utime(pyc, ns=(second * 10**9 + 20,) * 2)
    core.write_text(original)
    os.utime(core, ns=(second * 10**9 + 30,) * 2)
    ran = subprocess.run(
        [str(python), "-c", "import alpha.core as c; print(c.answer())"], capture_output=True, text=True
    )
    assert ran.stdout == "41\n", ran.stderr  # the stale bytecode ran, though the file says 41

    for extra in ((), ("--no-cache",)):
        found = guard_site(python, "--json", *extra, cache=cache)
        assert found.returncode == 1, found.stdout + found.stderr
        data = json.loads(found.stdout)
        kinds = {f["path"]: (f["kind"], f["owner"], f["detail"]) for f in data["findings"]}
        assert kinds.pop(str(site / "evil.pyc")) == (
            "unowned",
            None,
            "sourceless bytecode: imports as a module; listed in no RECORD",
        )
        for ext in (tagged, site / "alpha" / "plain.so", site / "stable.abi3.so"):
            assert kinds.pop(str(ext)) == (
                "unowned",
                None,
                "extension module: imports as a module; listed in no RECORD",
            )
        kind, owner, detail = kinds.pop(str(pyc))
        assert (kind, owner) == ("stale-bytecode", "alpha-dist 1.0") and detail.startswith("stale bytecode: ")
        assert not kinds and data["bytecode"] >= 1
    text = guard_site(python, cache=cache).stdout
    assert any(line.startswith("STALE") and str(pyc) in line and "alpha-dist 1.0" in line for line in text.splitlines())
    assert any(
        line.startswith("UNOWNED") and str(tagged) in line and "owned by none" in line for line in text.splitlines()
    )
