"""The .pyc a process ran in place of its source (patchkit/proof/bytecode.py), judged in-process."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
from pathlib import Path

import pytest

from patchkit.proof.bytecode import BytecodeConfig, stale_bytecode

HERE = BytecodeConfig(sys.implementation.cache_tag)


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_the_cached_path_is_importlibs(tmp_path: Path, optimize: int) -> None:
    source = str(tmp_path / "pkg" / "mod.py")
    config = BytecodeConfig(sys.implementation.cache_tag, optimize)
    assert config.cached(source) == importlib.util.cache_from_source(source, optimization=optimize or "")


def test_a_pycache_prefix_moves_the_pyc_under_it(tmp_path: Path) -> None:
    config = BytecodeConfig("cpython-399", 0, str(tmp_path / "cache"))
    source = "/srv/tree/pkg/mod.py"
    assert config.cached(source) == str(tmp_path / "cache" / "srv" / "tree" / "pkg" / "mod.cpython-399.pyc")


def _write(path: Path, text: str, ns: int) -> os.stat_result:
    path.write_text(text)
    os.utime(path, ns=(ns, ns))
    return path.stat()


def test_a_fresh_pyc_and_a_missing_one_are_not_stale(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    st = _write(source, "VALUE = 41\n", 1_000_000_000_000_000_010)
    assert stale_bytecode(str(source), st, [HERE]) is None  # no .pyc: the source ran
    py_compile.compile(str(source), cfile=HERE.cached(str(source)))
    assert stale_bytecode(str(source), st, [HERE]) is None


def test_an_older_pyc_of_other_code_taken_as_fresh_is_stale(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    pyc = HERE.cached(str(source))
    _write(source, "VALUE = 40\n", 1_000_000_000_000_000_010)
    py_compile.compile(str(source), cfile=pyc)
    os.utime(pyc, ns=(1_000_000_000_000_000_020,) * 2)
    st = _write(source, "VALUE = 41\n", 1_000_000_000_000_000_030)  # same size, same second, after the .pyc
    why = stale_bytecode(str(source), st, [HERE])
    assert why is not None and why.startswith(f"stale bytecode: {pyc} holds other code than this file")
    # Another interpreter's .pyc (another magic) cannot be compiled here: reported as unverifiable.
    data = Path(pyc).read_bytes()
    Path(pyc).write_bytes(b"\x00\x00\r\n" + data[4:])
    os.utime(pyc, ns=(1_000_000_000_000_000_020,) * 2)
    assert (stale_bytecode(str(source), st, [HERE]) or "").startswith(f"unverifiable bytecode: {pyc}")
    # A source of another second: Python recompiles, whatever the .pyc holds.
    st = _write(source, "VALUE = 41\n", 1_000_000_001_000_000_030)
    assert stale_bytecode(str(source), st, [HERE]) is None


def test_an_unchecked_hash_pyc_of_other_source_is_stale_and_a_checked_one_is_pythons_job(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    pyc = HERE.cached(str(source))
    source.write_text("VALUE = 40\n")
    for mode, stale in ((py_compile.PycInvalidationMode.UNCHECKED_HASH, True),
                        (py_compile.PycInvalidationMode.CHECKED_HASH, False)):  # fmt: skip
        py_compile.compile(str(source), cfile=pyc, invalidation_mode=mode)
        source.write_text("VALUE = 41\n")
        why = stale_bytecode(str(source), source.stat(), [HERE])
        assert (why is not None and "unchecked-hash bytecode of other source" in why) == stale
        source.write_text("VALUE = 40\n")
