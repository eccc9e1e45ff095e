"""The accounting over probe records: which category a file that ran falls in (account.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_repo
from proof_env import PYPROJECT, editable_install, make_venv, site_packages, wheels

from patchkit.proof import probe_env
from patchkit.proof.account import account
from patchkit.proof.digests import DigestCache
from patchkit.proof.records import LoadedFile, ProcessFacts, read_probe_dir


def facts(stdlib: Path, site: Path, *paths: Path) -> ProcessFacts:
    files = []
    for path in paths:
        st = os.stat(path)
        files.append(LoadedFile("module", path.stem, str(path), st.st_size, st.st_mtime_ns))
    return ProcessFacts(
        pid=4242, ppid=1, argv=("x",), executable=sys.executable, title=None, mp_name=None, prefix=str(stdlib.parent),
        base_prefix=str(stdlib.parent), stdlib=str(stdlib), site_dirs=(str(site),), forked_from=None, start_env={},
        files=tuple(files),
    )  # fmt: skip


def test_a_stdlib_file_that_links_outside_the_stdlib_is_stdlib(tmp_path: Path) -> None:
    """Debian's /usr/lib/python3.X/sitecustomize.py links to /etc/python3.X/: its real path is outside every root,
    the path Python loaded it from is the stdlib's.  A link in a site directory stays what its target is."""
    stdlib = tmp_path / "usr" / "lib" / "python3.11"
    site = stdlib / "site-packages"
    etc = tmp_path / "etc" / "python3.11"
    for d in (site, etc):
        d.mkdir(parents=True)
    (etc / "sitecustomize.py").write_text("# Debian's apport hook\n")
    (stdlib / "sitecustomize.py").symlink_to(etc / "sitecustomize.py")
    (stdlib / "json.py").write_text("")
    (etc / "hook.py").write_text("")
    (site / "hook.py").symlink_to(etc / "hook.py")
    proc = facts(stdlib, site, stdlib / "sitecustomize.py", stdlib / "json.py", site / "hook.py", etc / "hook.py")
    verdicts = {v.path: v for v in account([proc], tree=None, cache=DigestCache(None)).verdicts}
    assert verdicts[str(stdlib / "sitecustomize.py")].category == "stdlib"
    assert verdicts[str(stdlib / "json.py")].category == "stdlib"
    assert verdicts[str(site / "hook.py")].category == "stray"  # loaded from a site dir: owned by none there
    assert "outside every known root" in (verdicts[str(etc / "hook.py")].why or "")


DEBIAN = Path(f"/usr/lib/python3.{sys.version_info.minor}/sitecustomize.py")
DEBIAN_PY = Path(f"/usr/bin/python3.{sys.version_info.minor}")


@pytest.mark.skipif(
    not (DEBIAN.is_symlink() and DEBIAN_PY.exists()), reason="needs Debian's python3 and its linked sitecustomize"
)
def test_a_venv_of_debians_python_runs_its_sitecustomize_and_is_not_refused(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    made = subprocess.run([str(DEBIAN_PY), "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"Debian's python cannot make a venv here: {made.stderr.strip()[-200:]}")
    out = tmp_path / "probe"
    out.mkdir()
    env = probe_env({k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, out)
    ran = subprocess.run([str(venv / "bin" / "python"), "-c", "import json"], env=env, capture_output=True, text=True)
    assert ran.returncode == 0 and "probe failed" not in ran.stderr, ran.stderr
    processes = read_probe_dir(out)
    assert [(f.kind, f.path) for p in processes for f in p.files if f.kind == "chained"] == [("chained", str(DEBIAN))]
    accounting = account(processes, tree=None, cache=DigestCache(None))
    assert not accounting.strays, accounting.strays
    assert {v.path: v.category for v in accounting.verdicts}[str(DEBIAN)] == "stdlib"


@pytest.mark.slow
def test_the_probes_accounting_names_an_unowned_sitecustomize_a_pth_import_line_and_a_dirty_editable(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The three ways in that a guard resolving the tree's package never sees, through the probe's accounting
    of a real process (not guard --site): each file that ran is a STRAY saying why, the clean ones are not."""
    python = make_venv(tmp_path / "venv", wheels(tmp_path_factory.mktemp("wheels")))
    checkout = make_repo(
        tmp_path / "beta",
        {
            "pyproject.toml": PYPROJECT.format(name="beta-src", version="0.3"),
            "src/beta/__init__.py": "",
            "src/beta/core.py": "B = 1\n",
            "src/beta/clean.py": "C = 1\n",
            ".gitignore": "*.egg-info/\n__pycache__/\nbuild/\n",
        },
    )
    editable_install(python, checkout)
    site = site_packages(python)
    (site / "sitecustomize.py").write_text("import os\nos.environ['NCCL_MIN_NCHANNELS'] = '8'\n")
    (site / "zz_hook.pth").write_text("import os; os.environ.setdefault('CUDA_DEVICE_MAX_CONNECTIONS', '1')\n")
    (checkout / "src" / "beta" / "core.py").write_text("B = 2\n")  # uncommitted
    out = tmp_path / "probe"
    out.mkdir()
    program = (
        "import os, alpha.core, beta.core, beta.clean\n"
        "print(os.environ['NCCL_MIN_NCHANNELS'], os.environ['CUDA_DEVICE_MAX_CONNECTIONS'], beta.core.B)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "NCCL_", "CUDA_"))}
    ran = subprocess.run([str(python), "-c", program], env=probe_env(base, out), capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout == "8 1 2\n", ran.stderr  # all three ran
    processes = read_probe_dir(out)
    accounting = account(processes, tree=None, cache=DigestCache(None))
    strays = {v.path: v for v in accounting.strays}
    assert set(strays) == {
        str(site / "sitecustomize.py"),
        str(site / "zz_hook.pth"),
        str(checkout / "src" / "beta" / "core.py"),
    }, strays
    assert strays[str(site / "sitecustomize.py")].why == f"in {site} but listed in no RECORD (owned by none)"
    assert strays[str(site / "zz_hook.pth")].why == f"in {site} but listed in no RECORD (owned by none)"
    dirty = strays[str(checkout / "src" / "beta" / "core.py")]
    assert dirty.owner == f"beta-src from {checkout / 'src'}" or dirty.owner == f"beta-src from {checkout}"
    assert (dirty.why or "").startswith(f"uncommitted change in the editable checkout {checkout} (src/beta/core.py)")
    verdicts = {v.path: v for v in accounting.verdicts}
    assert verdicts[str(checkout / "src" / "beta" / "clean.py")].category == "editable"
    assert verdicts[str(site / "alpha" / "core.py")].category == "dist"
    kinds: dict[str, set[str]] = {}
    for f in (f for p in processes for f in p.files):
        kinds.setdefault(f.path, set()).add(f.kind)
    # the shadowed sitecustomize: named as chained by the probe, and a module as its loader reads it
    assert kinds[str(site / "sitecustomize.py")] == {"chained", "module"}
    assert kinds[str(site / "zz_hook.pth")] == {"pth"}
