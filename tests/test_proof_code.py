"""The code that ran, from the probe: every function that started once, on Python 3.12+ (``sys.monitoring``), and
which module files ran on older interpreters, with the granularity said; the files read under the tree; an exec
the probe did not follow; and the launch's coverage folded from its processes (``proof/coverage.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from proof_env import monitoring_python

from patchkit.proof import probe_env
from patchkit.proof.coverage import coverage_json
from patchkit.proof.records import read_probe_dir

PY312 = monitoring_python()
needs_312 = pytest.mark.skipif(PY312 is None, reason="needs Python 3.12+ (sys.monitoring): none found on PATH or pyenv")

ENGINE = """import os


class Engine:
    def start(self):
        return [helper(n) for n in range(3)]

    def stop(self):
        return "never called"


def helper(n):
    return n + 1


def unused():
    return "never called"
"""

PROGRAM = """import json, os, sys
sys.path.insert(0, {tree!r})
import pkg.engine
for _ in range(1000):
    pkg.engine.Engine().start()
with open(os.path.join({tree!r}, "tuning.cfg")) as f:
    f.read()
with open(os.path.join({tree!r}, "conf.json")) as f:
    json.load(f)
with open(os.path.join({tree!r}, "out.log"), "w") as f:
    f.write("written, not read")
pid = os.fork()
if pid == 0:
    pkg.engine.helper(1)
    os._exit(0)
os.waitpid(pid, 0)
print("done")
"""


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "engine.py").write_text(ENGINE)
    (root / "tuning.cfg").write_text("E=8\n")
    (root / "conf.json").write_text("{}\n")
    return root


def run(python: Path | str, tmp_path: Path, *, core: str | None = None, program: str = PROGRAM) -> Path:
    root = tree(tmp_path)
    out = tmp_path / "probe"
    out.mkdir()
    env = probe_env(dict(os.environ, PATCHKIT_BENCH_TREE=str(root)), out)
    if core is not None:
        env["PATCHKIT_PROBE_CORE"] = core
    done = subprocess.run(
        [str(python), "-c", program.format(tree=str(root))], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0 and "probe failed" not in done.stderr, done.stderr
    return out


@needs_312
def test_on_312_every_function_that_started_is_recorded_once_with_its_qualname_and_line(tmp_path: Path) -> None:
    out = run(PY312, tmp_path)
    engine = str(tmp_path / "tree" / "pkg" / "engine.py")
    parent, child = sorted(read_probe_dir(out), key=lambda p: p.forked_from is not None)
    assert (parent.core, parent.granularity, parent.core_why) == ("sysmon", "function", None)
    mine = [(name, line) for path, name, line in parent.code if path == engine]
    # one entry per code object, not per call (start() ran 1000 times, helper 3000 times)
    assert sorted(mine) == [("<module>", 1), ("Engine", 4), ("Engine.start", 5), ("helper", 12)]
    assert "unused" not in {name for _path, name, _line in parent.code}
    assert not any("patchkit/proof/site" in path for path, _name, _line in parent.code)  # the probe's own code
    # a forked child records what it runs itself, although the parent had disabled those events already
    assert child.forked_from == parent.pid
    assert [(name, line) for path, name, line in child.code if path == engine] == [("helper", 12)]
    # every file read under the tree, whatever its suffix; a data file as data; no .py, nothing written
    assert parent.reads == (str(tmp_path / "tree" / "tuning.cfg"),)
    assert [f.path for f in parent.files if f.kind == "data"] == [str(tmp_path / "tree" / "conf.json")]


def test_before_312_the_module_files_that_ran_and_the_granularity_are_recorded(tmp_path: Path) -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("the default interpreter has sys.monitoring: file granularity is tested with PATCHKIT_PROBE_CORE")
    out = run(sys.executable, tmp_path)
    parent = next(p for p in read_probe_dir(out) if p.forked_from is None)
    assert (parent.core, parent.granularity) == ("file", "file") and parent.code == ()
    assert parent.core_why == f"Python 3.{sys.version_info.minor} has no sys.monitoring (3.12+)"
    assert str(tmp_path / "tree" / "pkg" / "engine.py") in {f.path for f in parent.files if f.kind == "module"}
    coverage = coverage_json(read_probe_dir(out), str(tmp_path / "tree"))
    assert coverage["granularity"] == "file" and coverage["functions"] == {}
    assert str(tmp_path / "tree" / "tuning.cfg") in coverage["reads"]


@needs_312
def test_the_file_core_can_be_asked_for_on_312_and_says_so(tmp_path: Path) -> None:
    out = run(PY312, tmp_path, core="file")
    parent = next(p for p in read_probe_dir(out) if p.forked_from is None)
    assert (parent.core, parent.granularity, parent.core_why, parent.code) == ("file", "file", None, ())


@needs_312
def test_a_launchs_coverage_is_the_union_and_names_an_exec_the_probe_did_not_follow(tmp_path: Path) -> None:
    program = PROGRAM.replace('print("done")', 'os.execv("/bin/true", ["true"])')
    out = run(PY312, tmp_path, program=program)
    root = str(tmp_path / "tree")
    processes = read_probe_dir(out)
    coverage = coverage_json(processes, root)
    engine = str(tmp_path / "tree" / "pkg" / "engine.py")
    assert coverage["granularity"] == "function" and coverage["root"] == root
    assert coverage["functions"][engine] == [["<module>", 1], ["Engine", 4], ["Engine.start", 5], ["helper", 12]]
    assert engine in coverage["modules"]
    assert str(tmp_path / "tree" / "tuning.cfg") in coverage["reads"]
    assert str(tmp_path / "tree" / "conf.json") in coverage["reads"]
    [line] = coverage["blind"]
    parent = next(p for p in processes if p.forked_from is None)
    assert line.startswith(f"pid {parent.pid} (") and "exec'd /bin/true and the probe did not follow it" in line
    assert sorted(p["granularity"] for p in coverage["processes"]) == ["function", "function"]


def test_a_module_source_the_program_opens_itself_is_read_but_an_import_is_not(tmp_path: Path) -> None:
    """A server that parses a module's source (the demo's stand-in reads its all-reduce dispatch so), or a JIT
    compiler's ``inspect.getsource``, depends on every line of it: the probe records that open as a read, told
    apart from the import system's own reads of the same file by the frame that opens it."""
    program = PROGRAM.replace(
        'print("done")', 'open(os.path.join({tree!r}, "pkg", "engine.py"), encoding="utf-8").read()\nprint("done")'
    )
    out = run(sys.executable, tmp_path, program=program)
    parent = next(p for p in read_probe_dir(out) if p.forked_from is None)
    engine = str(tmp_path / "tree" / "pkg" / "engine.py")
    assert engine in parent.reads and str(tmp_path / "tree" / "pkg" / "__init__.py") not in parent.reads
    plain = tmp_path / "plain"
    plain.mkdir()
    again = next(p for p in read_probe_dir(run(sys.executable, plain)) if p.forked_from is None)
    assert not any(path.endswith(".py") for path in again.reads)  # imported, never opened by the program
    assert engine.replace(str(tmp_path), str(plain)) in {f.path for f in again.files if f.kind == "module"}


DYNAMO_PROGRAM = """import sys
sys.path.insert(0, {tree!r})
sys.path.insert(0, {tree!r} + "/../site")
import pkg.engine
import torch._dynamo.utils
torch._dynamo.utils.counters["frames"]["ok"] += FRAMES
pkg.engine.Engine().start()
print("done")
"""


def dynamo_site(tmp_path: Path) -> None:
    """A stand-in of torch's dynamo where the program can import it: the counters torch keeps
    (``torch._dynamo.utils.counters``, a mapping of counters), and nothing else."""
    pkg = tmp_path / "site" / "torch" / "_dynamo"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from torch._dynamo import utils\n")
    (pkg / "utils.py").write_text("import collections\n\ncounters = collections.defaultdict(collections.Counter)\n")


@pytest.mark.parametrize("frames", [0, 3])
def test_a_process_where_torch_compile_compiled_code_counts_at_file_granularity(tmp_path: Path, frames: int) -> None:
    """dynamo runs the functions it compiles as a graph: none of them starts as Python, so a process where it
    compiled a frame is recorded at file granularity, with why; one where it was loaded and compiled nothing
    keeps its core's granularity."""
    dynamo_site(tmp_path)
    python = PY312 or sys.executable
    out = run(python, tmp_path, program=DYNAMO_PROGRAM.replace("FRAMES", str(frames)))
    [proc] = read_probe_dir(out)
    coverage = coverage_json([proc], str(tmp_path / "tree"))
    [row] = coverage["processes"]
    if frames:
        assert proc.compiled is not None and "torch.compile (dynamo) compiled code here (3 frames" in proc.compiled
        assert (row["granularity"], row["why"]) == ("file", proc.compiled)
        assert coverage["granularity"] == "file"
    else:
        assert proc.compiled is None
        assert row["granularity"] == proc.granularity and row["why"] == proc.core_why


def test_a_process_that_loaded_dynamo_and_ended_without_its_exit_record_counts_at_file_granularity(
    tmp_path: Path,
) -> None:
    """Killed before its exit record, a process cannot say whether dynamo compiled anything: file granularity."""
    dynamo_site(tmp_path)
    program = DYNAMO_PROGRAM.replace("FRAMES", "0").replace('print("done")', 'print("done", flush=True)\nos._exit(0)')
    out = run(PY312 or sys.executable, tmp_path, program="import os\n" + program)
    [proc] = read_probe_dir(out)
    assert not proc.exited
    assert (
        proc.compiled == "torch.compile (dynamo) was loaded and the process ended before saying whether it "
        "compiled code"
    )
    assert coverage_json([proc], str(tmp_path / "tree"))["processes"][0]["granularity"] == "file"
