"""What the system refuses (a read-only tree, an I/O error, a full disk, permissions) is one line, never a bug.

Real refusals only: a read-only bind mount or an immutable directory (root ignores mode bits), /dev/full
for stdout, and faults injected into the real syscalls of a real ``patchkit apply`` / ``revert`` with
``strace -e inject`` (each write-path call failing once).  Each case names the file and the cause,
exits with the documented code, leaves no journal (so ``status`` is not INTERRUPTED) and no temp file,
and a plain rerun finishes the job.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import CliResult, patchkit_script, run_script, scenario, temp_leftovers

from patchkit.errors import ExitCode

MODEL = "import torch\n\n\nclass Model:\n    def forward(self, x):\n        return x\n"
EXTRA = {"m.py": "class Model:\n    def extra(self):\n        return 1\n"}
ADD_EXTRA = [{"id": "extra", "op": "add-methods", "file": "pkg/mod.py", "class": "Model", "source": "../patches/m.py"}]
STRACE = shutil.which("strace")


def _sh(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True)


@contextmanager
def read_only(where: Path, how: str) -> Iterator[None]:
    """``where`` made read-only for root too: a read-only bind mount of it onto itself (EROFS), or the
    immutable flag on the directory (EPERM).  Skips saying why where this machine does not allow it."""
    if os.geteuid() != 0:
        pytest.skip("making a directory read-only for the test needs root (mount --bind, chattr +i)")
    if how == "mount":
        bound = _sh("mount", "--bind", where, where)
        if bound.returncode != 0:
            pytest.skip(f"mount --bind is not permitted here: {bound.stderr.strip()}")
        try:
            ro = _sh("mount", "-o", "remount,ro,bind", where)
            if ro.returncode != 0:
                pytest.skip(f"remounting a bind mount read-only is not permitted here: {ro.stderr.strip()}")
            yield
        finally:
            _sh("umount", "-l", where)
        return
    flagged = _sh("chattr", "+i", where)
    if flagged.returncode != 0:
        pytest.skip(f"chattr +i does not work on this filesystem: {flagged.stderr.strip()}")
    try:
        yield
    finally:
        _sh("chattr", "-i", where)


def _status(sc_repo: Path, manifest: Path) -> dict[str, object]:
    r = run_script("status", "-m", manifest, "--repo", sc_repo, "--json")
    return dict(json.loads(r.out))


def _said(r: CliResult) -> list[str]:
    """The lines patchkit printed about the failure: stderr, else the verdict line ending stdout."""
    if r.err.strip():
        return r.err.strip().splitlines()
    return r.out.strip().splitlines()[-1:]


# -- a read-only tree ---------------------------------------------------------------------------


@pytest.mark.parametrize(("how", "cause"), [("mount", "Read-only file system"), ("chattr", "Operation not permitted")])
def test_apply_on_a_read_only_tree_is_a_refusal_naming_the_file_and_leaves_no_journal(tmp_path, how, cause):
    sc = scenario(tmp_path, {"pkg/mod.py": MODEL}, ADD_EXTRA, EXTRA)
    before = sc.file().read_bytes()
    with read_only(sc.repo / "pkg", how):
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
        leftovers = temp_leftovers(sc.repo)
    assert r.code == ExitCode.REFUSED, r.out + r.err
    assert "internal error" not in r.out + r.err and "Traceback" not in r.err
    said = _said(r)
    assert len(said) == 1 and f"cannot write pkg/mod.py: {cause}; nothing was written" in said[0], said
    assert sc.file().read_bytes() == before and leftovers == []
    assert not (sc.repo / ".git" / "patchkit" / "journal.json").exists()
    status = _status(sc.repo, sc.kit.manifest)
    assert status["interrupted"] is None, status


def test_revert_on_a_read_only_tree_keeps_the_patch_and_its_record(tmp_path):
    sc = scenario(tmp_path, {"pkg/mod.py": MODEL}, ADD_EXTRA, EXTRA)
    assert run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0
    patched = sc.file().read_bytes()
    with read_only(sc.repo / "pkg", "mount"):
        r = run_script("revert", "-m", sc.kit.manifest, "--repo", sc.repo)
        leftovers = temp_leftovers(sc.repo)
    assert r.code == ExitCode.REFUSED, r.out + r.err
    said = _said(r)
    assert len(said) == 1 and "cannot write pkg/mod.py: Read-only file system; nothing was written" in said[0]
    assert sc.file().read_bytes() == patched and leftovers == []
    status = _status(sc.repo, sc.kit.manifest)
    assert status["interrupted"] is None and status["complete"] is True, status


# -- stdout that cannot be written --------------------------------------------------------------


@pytest.mark.parametrize("json_out", [False, True], ids=["table", "json"])
def test_a_full_stdout_is_one_line_naming_stdout_not_a_bug(tmp_path, json_out):
    """/dev/full answers every write with ENOSPC, as a redirect onto a full disk does."""
    sc = scenario(tmp_path, {"pkg/mod.py": MODEL}, ADD_EXTRA, EXTRA)
    argv = ["apply", "-m", str(sc.kit.manifest), "--repo", str(sc.repo)] + (["--json"] if json_out else [])
    with open("/dev/full", "w") as full:
        proc = subprocess.run([patchkit_script(), *argv], stdout=full, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == ExitCode.REFUSED, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cannot write the output to stdout (/dev/full): No space left on device (ENOSPC)" in lines[0]
    # The apply itself finished before its report could be printed, and the line says so.
    assert "written whole before it: pkg/mod.py" in lines[0]
    assert "def extra" in sc.file().read_text(encoding="utf-8")


# -- git that cannot read its own files ---------------------------------------------------------


@pytest.mark.skipif(STRACE is None, reason="strace is not installed: the git read faults are injected with it")
@pytest.mark.parametrize(
    ("path", "verb"),
    [(".git/config", "apply"), (".git/config", "status"), (".git/packed-refs", "apply"), (".git/packed-refs", "check")],
)
def test_git_unable_to_read_its_files_is_one_line_with_gits_words(tmp_path, path, verb):
    """Every open of ``path`` by git fails with EIO (``strace -P`` matches git's relative path; run from a
    directory without one, patchkit's own opens are not touched)."""
    sc = scenario(tmp_path, {"pkg/mod.py": MODEL}, ADD_EXTRA, EXTRA)
    subprocess.run(["git", "pack-refs", "--all"], cwd=sc.repo, check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = [verb, "-m", str(sc.kit.manifest), "--repo", str(sc.repo)]
    if verb == "check":
        argv += ["--range", "HEAD"]
    inject = ["-qq", "-o", os.devnull, "-P", path, "-e", "trace=openat", "-e", "inject=openat:error=EIO"]
    proc = subprocess.run([str(STRACE), "-f", *inject, patchkit_script(), *argv], cwd=elsewhere, capture_output=True)
    err = proc.stderr.decode()
    assert proc.returncode == ExitCode.USAGE, (proc.returncode, err, proc.stdout.decode())
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err, err
    assert f"{path}" in err and "Input/output error" in err, err


# -- one syscall at a time ----------------------------------------------------------------------

# The calls a write makes, by the syscall that makes it (open is openat; os.replace is rename).
WRITE_CALLS = ("rename", "fsync", "unlink", "mkdir", "ftruncate", "write", "openat")
ERRNOS = ("EIO", "ENOSPC", "EACCES")
WRITE_OPEN = re.compile(r"O_WRONLY|O_RDWR|O_CREAT")


def _fault_kit(root: Path, verb: str) -> tuple[Path, Path]:
    """A repository and a manifest where ``verb`` has one file to write (revert: applied first)."""
    sc = scenario(root, {"pkg/mod.py": MODEL}, ADD_EXTRA, EXTRA)
    if verb == "revert":
        assert run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0
    return sc.repo, sc.kit.manifest


def _write_path_calls(template: Path, manifest: Path, verb: str, work: Path) -> list[tuple[str, int]]:
    """(syscall, N) for every call on the write path of one traced run, N counted per process as strace's
    ``when=N`` counts them: in patchkit's own process, each rename, fsync, unlink, mkdir, ftruncate and
    write, and each open for writing."""
    _fresh(template, work)
    trace = work.parent / f"{work.name}.trace"
    traced = subprocess.run(
        [str(STRACE), "-f", "-qq", "-o", trace, "-e", f"trace={','.join(WRITE_CALLS)}", *_argv(verb, manifest, work)],
        capture_output=True,
    )
    assert traced.returncode == 0, traced.stderr
    lines = trace.read_text(encoding="utf-8", errors="replace").splitlines()
    main = lines[0].split()[0]
    seen: Counter[str] = Counter()
    calls = []
    for line in lines:
        pid, _, rest = line.partition(" ")
        match = re.match(r"\s*(\w+)\(", rest)
        if pid != main or match is None or match.group(1) not in WRITE_CALLS:
            continue
        name = match.group(1)
        seen[name] += 1
        if name != "openat" or WRITE_OPEN.search(rest):
            calls.append((name, seen[name]))
    return calls


def _argv(verb: str, manifest: Path, repo: Path) -> list[str]:
    return [patchkit_script(), verb, "-m", str(manifest), "--repo", str(repo)]


def _fresh(template: Path, work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(template, work, symlinks=True)


@pytest.mark.slow
@pytest.mark.skipif(STRACE is None, reason="strace is not installed: the faults are injected with it")
@pytest.mark.parametrize("verb", ["apply", "revert"])
def test_each_write_path_syscall_failing_once_is_one_line_and_a_rerun_finishes(tmp_path, verb):
    """Each rename, fsync, unlink, mkdir, ftruncate, write and open-for-writing of a real run fails once (its
    N-th call, in every process strace follows, git's included), with EIO, ENOSPC or EACCES in turn.

    Never an internal error; stderr is at most one line; what failed is named with its cause (or, where git
    lost its own output, that it was cut short); no temp file stays unless the line names it; the journal
    stays only where the line says the next command finishes the rollback; a plain rerun ends as a run
    without the fault would (exit 0).
    """
    template, manifest = _fault_kit(tmp_path / "kit", verb)
    work = tmp_path / "run"
    calls = _write_path_calls(template, manifest, verb, work)
    counted = Counter(name for name, _ in calls)
    assert counted["rename"] and counted["fsync"] and counted["write"] and counted["openat"], counted
    outcomes: Counter[int] = Counter()
    for index, (name, n) in enumerate(calls):
        error = ERRNOS[index % len(ERRNOS)]
        _fresh(template, work)
        inject = [str(STRACE), "-f", "-qq", "-o", os.devnull, "-e", f"inject={name}:error={error}:when={n}"]
        proc = subprocess.run([*inject, *_argv(verb, manifest, work)], capture_output=True, text=True)
        case = f"{verb}: {name} #{n} fails with {error}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        outcomes[proc.returncode] += 1
        assert proc.returncode in (ExitCode.OK, ExitCode.REFUSED, ExitCode.USAGE), case
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, case
        assert len(proc.stderr.strip().splitlines()) <= 1, case
        said = " ".join(_said(CliResult(proc.returncode, proc.stdout, proc.stderr)))
        if proc.returncode != ExitCode.OK:
            assert os.strerror(getattr(errno, error)) in said or "cut short" in said, case
        for temp in temp_leftovers(work):
            assert temp in said, case
        journal = (work / ".git" / "patchkit" / "journal.json").exists()
        assert not journal or "the next patchkit command" in said, case
        rerun = subprocess.run(_argv(verb, manifest, work), capture_output=True, text=True)
        assert rerun.returncode == ExitCode.OK, f"{case}\nrerun: {rerun.stdout}{rerun.stderr}"
        assert ("def extra" in (work / "pkg" / "mod.py").read_text(encoding="utf-8")) == (verb == "apply"), case
    assert outcomes[ExitCode.REFUSED] > 0, outcomes  # the faults were really injected
