"""The probe's robustness in real processes: a probe directory on a full filesystem (a 16 KiB tmpfs), a deleted
working directory, and legacy meta path finders (find_module only)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench_helpers import standin_python

from patchkit.proof import probe_env
from patchkit.proof.records import read_probe_dir
from patchkit.proof.runproof import proof_json, prove

MANY_IMPORTS = "import asyncio, email.mime.text, http.client, json, logging.handlers, xml.dom.minidom, unittest"


def probed(out: Path, code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = probe_env({k: v for k, v in os.environ.items() if not k.startswith("PATCHKIT_PROBE")}, out)
    return subprocess.run([standin_python(), "-c", code], env=env, capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def full(tmp_path: Path):
    """A 16 KiB tmpfs: the probe's file fills it within the first hundred modules."""
    where = tmp_path / "full"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_full_disk_is_one_line_once_and_the_proof_is_incomplete(full: Path, tmp_path: Path) -> None:
    done = probed(full, MANY_IMPORTS + "; print('ran')")
    assert done.returncode == 0 and done.stdout == "ran\n"  # the program is unaffected
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "cannot write" in lines[0] and "(ENOSPC: No space left on device" in lines[0]
    assert "the run's proof is incomplete" in lines[0]
    [marker] = [n for n in os.listdir(full) if n.endswith(".jsonl.ENOSPC")]
    assert os.path.getsize(full / marker) == 0
    [proc] = read_probe_dir(full)
    assert proc.incomplete == "ENOSPC" and proc.files  # what it recorded before the disk filled is kept
    stop = prove(full, live=[], tree=None, allow_stray=[], expected={}, when="stop")
    proof = proof_json(None, stop, server_log=tmp_path / "none.log", probe_dir=full)
    assert proof["state"] == "not proven"
    assert proof["reason"] == "proof incomplete (ENOSPC): the probe could not write its file in 1 process"
    assert proof["reasons"][0].startswith(f"proof incomplete (ENOSPC): the probe in pid {proc.pid} could not write")


def test_a_deleted_working_directory_changes_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    out = tmp_path / "probe"
    out.mkdir()
    code = f"import os; os.rmdir({str(gone)!r}); {MANY_IMPORTS}; open('relative.json')"
    done = probed(out, code, cwd=gone)
    assert done.returncode == 1 and "FileNotFoundError" in done.stderr  # the program's own error, as without it
    assert "probe" not in done.stderr
    [proc] = read_probe_dir(out)
    assert not proc.errors and len(proc.files) > 50


LEGACY = """
import sys

class Loader:
    def __init__(self, path):
        self.path = path
    def get_filename(self, name):
        return self.path
    def load_module(self, name):
        module = type(sys)(name)
        module.__file__ = self.path
        sys.modules[name] = module
        exec(compile(open(self.path).read(), self.path, "exec"), module.__dict__)
        return module

class Nameless:
    def load_module(self, name):
        module = type(sys)(name)
        module.VALUE = 7
        sys.modules[name] = module
        return module

class Legacy:
    def find_module(self, name, path=None):
        if name == "legacy_file":
            return Loader({path!r})
        return Nameless() if name == "legacy_nameless" else None

sys.meta_path.append(Legacy())
import legacy_file, legacy_nameless
print(legacy_file.VALUE + legacy_nameless.VALUE)
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 asks no find_module-only finder")
def test_legacy_finders_are_recorded_by_their_file_or_named(tmp_path: Path) -> None:
    module = tmp_path / "legacy_file.py"
    module.write_text("VALUE = 35\n")
    out = tmp_path / "probe"
    out.mkdir()
    done = probed(out, LEGACY.format(path=str(module)))
    assert done.returncode == 0 and done.stdout == "42\n", done.stderr
    [proc] = read_probe_dir(out)
    assert str(module) in {f.path for f in proc.files}  # its loader is not a SourceFileLoader: seen by its file
    [error] = proc.errors
    assert "module legacy_nameless was loaded by the legacy finder __main__.Legacy (find_module)" in error
    assert "what it ran is not accounted for" in error
