"""The defects a new user hit in apply, check, guard, capture and import-diff.

Each test here fails without its fix; real git repositories, real files, the real CLI.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import (
    Kit,
    Scenario,
    git,
    lock_held,
    make_repo,
    patchkit_script,
    porcelain,
    run_cli,
    run_script,
    scenario,
    src,
    temp_leftovers,
)
from test_bench_store import record
from test_guard import make_venv

from patchkit.bench.records.store import Store
from patchkit.errors import ExitCode, UnwritableError

# -- 1. import-diff on something that is not a text patch -------------------------------------


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"", "is empty, not a patch"),
        (b"hello, this is a note\nnot a diff\n", "is not a patch"),
        (b"diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n", "no hunks"),
        (
            b"diff --git a/b.bin b/b.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZQz|\n\nliteral 0\n",
            "is a binary patch",
        ),
        (b"diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n", "binary"),
    ],
    ids=["empty", "not-a-patch", "no-hunks", "git-binary", "binary-files-differ"],
)
def test_import_diff_refuses_what_is_not_a_text_patch(tmp_path, capsys, content, what):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.bin": b"\0\1"})
    patch = tmp_path / "x.patch"
    patch.write_bytes(content)
    r = run_cli(capsys, "import-diff", patch, "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and str(patch) in lines[0] and what in lines[0], r.err
    assert "internal error" not in r.err
    assert not (tmp_path / "kit").exists()
    assert "patchkit-import-diff" not in git(repo, "worktree", "list")


def test_import_diff_refusal_speaks_of_import_diff_not_capture(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    patch = tmp_path / "new.patch"
    patch.write_text(
        "diff --git a/b.txt b/b.txt\nnew file mode 100644\nindex 0000000..1\n"
        "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n"
    )
    r = run_cli(capsys, "import-diff", patch, "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 1, r.err
    assert "b.txt is a new file" in r.err
    assert "capture again" not in r.err and "import-diff again" in r.err
    assert porcelain(repo) == []


def test_capture_with_only_an_untracked_file_names_it(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    (repo / "pkg").mkdir()
    (repo / "pkg" / "new_model.py").write_text("x = 1\n")
    r = run_cli(capsys, "capture", "--repo", repo, "--name", "x", "--out", tmp_path / "kit")
    assert r.code == 1
    assert "pkg/new_model.py" in r.err and "1 untracked file " in r.err, r.err


# -- 2. a full, read-only or forbidden filesystem under the git dir is a refusal ----------------

BIG_MODEL = "import torch\n\n\nclass Model:\n    def forward(self, x):\n        return x\n\n\n" + "".join(
    f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(400)
)
EXTRA = {"m.py": "class Model:\n    def extra(self):\n        return 1\n"}
ADD_EXTRA = [{"id": "extra", "op": "add-methods", "file": "pkg/mod.py", "class": "Model", "source": "../patches/m.py"}]


def _sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True)


@contextmanager
def mounted_tmpfs(where: Path, *, size: str = "64k", read_only: bool = False) -> Iterator[Path]:
    """A small real tmpfs at ``where`` (root only); skips the test where mounting is not permitted."""
    where.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    if os.geteuid() != 0 or _sh("mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)).returncode != 0:
        pytest.skip("mounting a tmpfs needs root (and a kernel that permits it here)")
    try:
        yield where
    finally:
        _sh("umount", "-l", str(where))


def _fill(where: Path, leave: int) -> None:
    """Fill the filesystem at ``where`` until only ``leave`` bytes (rounded to pages) are free."""
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    if free > leave:
        with open(where / "filler", "wb") as handle, contextlib.suppress(OSError):
            handle.write(b"\0" * (free - leave))


def _tree_scenario(tmp_path: Path) -> Scenario:
    return scenario(tmp_path, {"pkg/mod.py": BIG_MODEL}, ADD_EXTRA, EXTRA)


@pytest.mark.parametrize("free_pages", [0, 1, 2, 3, 4, 5, 6])
def test_apply_on_a_full_git_dir_refuses_naming_the_path_and_cause(tmp_path, free_pages):
    sc = _tree_scenario(tmp_path)
    state = sc.repo / ".git" / "patchkit"
    before = sc.file().read_bytes()
    with mounted_tmpfs(state):
        _fill(state, free_pages * 4096)
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
        leftovers = temp_leftovers(state)
        journal = (state / "journal.json").exists()
    assert "internal error" not in r.err + r.out, r.err + r.out
    assert leftovers == [] and not journal
    if r.code == 0:  # enough room at this size: applied whole
        assert sc.file().read_bytes() != before
        return
    assert r.code == 1, r.err + r.out
    assert sc.file().read_bytes() == before and porcelain(sc.repo) == []
    said = (r.out + r.err).strip().splitlines()[-1]
    assert "No space left on device" in said and str(state) in said, said
    assert "free some space" in said and "permissions" not in r.out + r.err


def test_a_full_disk_refusal_is_reached_at_each_size_up_to_success(tmp_path):
    """Over the sizes, both outcomes happen: the refusal is not an accident of one size."""
    codes = []
    for pages in (0, 8):
        sc = _tree_scenario(tmp_path / str(pages))
        with mounted_tmpfs(sc.repo / ".git" / "patchkit", size="256k"):
            _fill(sc.repo / ".git" / "patchkit", pages * 4096 * 4)
            codes.append(run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code)
    assert codes == [1, 0]


def test_revert_on_a_full_disk_advises_space_not_permissions(tmp_path):
    sc = _tree_scenario(tmp_path)
    pkg = sc.repo / "pkg"
    assert run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0
    patched = sc.file().read_bytes()
    # The tree's directory moves onto a small full filesystem, the patched file with it.
    saved = tmp_path / "saved"
    shutil.copytree(pkg, saved)
    with mounted_tmpfs(pkg, size="256k"):
        shutil.copy2(saved / "mod.py", pkg / "mod.py")
        _fill(pkg, 0)
        r = run_script("revert", "-m", sc.kit.manifest, "--repo", sc.repo)
        after = (pkg / "mod.py").read_bytes()
        leftovers = temp_leftovers(pkg)
    assert r.code == 1, r.err + r.out
    line = r.err.strip().splitlines()
    assert len(line) == 1 and "cannot write pkg/mod.py: No space left on device" in line[0], r.err
    assert "free some space" in line[0] and "permissions" not in line[0]
    assert after == patched and leftovers == []


def test_a_read_only_git_dir_is_a_refusal_naming_the_read_only_filesystem(tmp_path):
    sc = _tree_scenario(tmp_path)
    objects = sc.repo / ".git" / "patchkit" / "objects"
    before = sc.file().read_bytes()
    with mounted_tmpfs(objects, read_only=True):
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 1, r.err + r.out
    said = r.out.strip().splitlines()[-1]
    assert "Read-only file system" in said and str(objects) in said, said
    assert "mounted read-only" in said and "permissions" not in r.out
    assert sc.file().read_bytes() == before and porcelain(sc.repo) == []


def test_a_read_only_lock_directory_is_a_refusal_not_a_crash(tmp_path):
    sc = _tree_scenario(tmp_path)
    state = sc.repo / ".git" / "patchkit"
    with mounted_tmpfs(state, read_only=True):
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 1, r.err + r.out
    assert r.err.count("\n") == 1 and f"cannot write {state}/lock: Read-only file system" in r.err, r.err


def test_a_git_dir_the_user_may_not_write_is_a_refusal_naming_permissions(tmp_path):
    """EACCES needs a process the permission bits apply to: patchkit runs as root without CAP_DAC_OVERRIDE."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("dropping CAP_DAC_OVERRIDE needs root and setpriv")
    sc = _tree_scenario(tmp_path)
    objects = sc.repo / ".git" / "patchkit" / "objects"
    objects.mkdir(parents=True)
    objects.chmod(0o555)
    drop = "-dac_override,-dac_read_search"
    try:
        proc = subprocess.run(
            [
                "setpriv",
                f"--inh-caps={drop}",
                f"--bounding-set={drop}",
                "--",
                patchkit_script(),
                "apply",
                "-m",
                str(sc.kit.manifest),
                "--repo",
                str(sc.repo),
            ],
            capture_output=True,
            text=True,
        )
    finally:
        objects.chmod(0o755)
    assert proc.returncode == 1, proc.stderr + proc.stdout
    said = proc.stdout.strip().splitlines()[-1]
    assert "Permission denied" in said and str(objects) in said, said
    assert "check the permissions" in said
    assert porcelain(sc.repo) == []


def test_a_quota_refusal_is_worded_for_the_quota(tmp_path):
    """EDQUOT takes a filesystem with user quotas, which a test cannot mount everywhere; the full-disk tests
    above drive the real refusal path, and this one the advice that path gives for a quota instead of a full
    disk: the refusal ``apply``, ``check`` and the store raise for the OSError the write got."""
    target = tmp_path / ".git" / "patchkit" / "cache.sqlite"
    quota = UnwritableError.from_os(target, OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)))
    full = UnwritableError.from_os(target, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    line = quota.one_line()
    assert line.startswith(f"cannot write {target}: {os.strerror(errno.EDQUOT)}; nothing was written")
    assert "within your disk quota" in line and "ask for a larger one" in line
    assert "disk quota" not in full.one_line() and "free some space on that filesystem" in full.one_line()
    assert quota.exit_code == ExitCode.REFUSED


def _history(tmp_path: Path) -> Scenario:
    sc = _tree_scenario(tmp_path)
    for i in range(3):
        (sc.repo / "pkg" / "mod.py").write_text(BIG_MODEL + f"\nVALUE_{i} = {i}\n")
        git(sc.repo, "commit", "-qam", f"upstream {i}")
    return sc


def test_check_on_a_full_git_dir_refuses_naming_the_cache_and_the_cause(tmp_path):
    sc = _history(tmp_path)
    state = sc.repo / ".git" / "patchkit"
    with mounted_tmpfs(state, size="256k"):
        _fill(state, 0)
        r = run_script("check", "-m", sc.kit.manifest, "--repo", sc.repo, "--range", "HEAD~3..HEAD")
        leftovers = temp_leftovers(state)
    assert r.code == 1, r.err + r.out
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert f"cannot write {state}/cache.sqlite: No space left on device" in lines[0]
    assert "free some space" in lines[0] and "--no-cache" in lines[0]
    assert leftovers == []
    ok = run_script("check", "-m", sc.kit.manifest, "--repo", sc.repo, "--range", "HEAD~3..HEAD")
    assert ok.code == 0, ok.err


def test_check_on_a_read_only_git_dir_refuses_and_no_cache_still_checks(tmp_path):
    sc = _history(tmp_path)
    state = sc.repo / ".git" / "patchkit"
    with mounted_tmpfs(state, read_only=True):
        r = run_script("check", "-m", sc.kit.manifest, "--repo", sc.repo, "--range", "HEAD~3..HEAD")
        bare = run_script("check", "-m", sc.kit.manifest, "--repo", sc.repo, "--range", "HEAD~3..HEAD", "--no-cache")
    assert r.code == 1 and "Read-only file system" in r.err and "mounted read-only" in r.err, r.err
    assert bare.code == 0, bare.err


def test_check_no_cache_reports_no_cache_hits(tmp_path, capsys):
    sc = _history(tmp_path)
    argv = ["check", "-m", sc.kit.manifest, "--repo", sc.repo, "--range", "HEAD~3..HEAD", "--json"]
    assert run_cli(capsys, *argv).code == 0
    warm = run_cli(capsys, *argv).json["stats"]
    assert warm["cache_hits"] > 0
    bare = run_cli(capsys, *argv, "--no-cache").json["stats"]
    assert bare["cache_hits"] == 0 and bare["cache_misses"] > 0


# The bench store (`.git/patchkit/bench.sqlite`): opening it migrates it, a write; `bench` adds runs.


def _store_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"a.txt": "a\n"})


def _one_line_refusal(r, path: Path, cause: str, advice: str) -> str:
    assert r.code == 1, r.err + r.out
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in r.err, r.err
    assert f"cannot write {path}: {cause}" in lines[0] and advice in lines[0], lines[0]
    return lines[0]


def _no_store(r, path: Path) -> None:
    """`runs` only reads: with no store there, nothing is opened on the filesystem that could refuse."""
    assert r.code == 0 and r.out.startswith(f"no bench store at {path}: nothing was benchmarked"), r.err + r.out


def _store_refusal(path: Path, cause: str, advice: str) -> str:
    """A verb that writes the store (bench, noise, bisect) opens it like this; its error is one line."""
    with pytest.raises(UnwritableError) as raised:
        Store(path)
    line = raised.value.one_line()
    assert raised.value.exit_code == 1 and "\n" not in line
    assert f"cannot write {path}: {cause}" in line and advice in line, line
    return line


def test_a_store_on_a_full_git_dir_refuses_naming_the_store_and_the_cause(tmp_path):
    repo = _store_repo(tmp_path)
    state = repo / ".git" / "patchkit"
    with mounted_tmpfs(state):
        _fill(state, 0)
        _no_store(run_script("runs", "--repo", repo), state / "bench.sqlite")
        line = _store_refusal(state / "bench.sqlite", "No space left on device", "free some space")
        left = sorted(p.name for p in state.iterdir())
    assert "permissions" not in line and "read-only" not in line
    assert left == ["filler"], left  # no store, journal or probe half-made


def test_a_store_on_a_read_only_git_dir_refuses_naming_the_read_only_filesystem(tmp_path):
    repo = _store_repo(tmp_path)
    state = repo / ".git" / "patchkit"
    with mounted_tmpfs(state, read_only=True):
        _no_store(run_script("runs", "--repo", repo), state / "bench.sqlite")
        line = _store_refusal(state / "bench.sqlite", "Read-only file system", "mounted read-only")
    assert "permissions" not in line and "free some space" not in line


def test_an_existing_store_on_a_filesystem_made_read_only_refuses_and_keeps_its_runs(tmp_path):
    repo = _store_repo(tmp_path)
    state = repo / ".git" / "patchkit"
    with mounted_tmpfs(state, size="1m"):
        with Store(state / "bench.sqlite") as store:
            store.add(record())
        before = (state / "bench.sqlite").read_bytes()
        assert _sh("mount", "-o", "remount,ro", str(state)).returncode == 0
        r = run_script("runs", "--repo", repo)
        after = (state / "bench.sqlite").read_bytes()
    _one_line_refusal(r, state / "bench.sqlite", "Read-only file system", "mounted read-only")
    assert after == before


def test_a_store_write_on_a_full_disk_refuses_and_the_store_keeps_what_it_held(tmp_path):
    state = tmp_path / "state"
    with mounted_tmpfs(state, size="256k"):
        path = state / "bench.sqlite"
        with Store(path) as store:
            first = store.add(record())
            _fill(state, 0)
            big = record(samples={"output_tok_s": [float(i) for i in range(20000)]})
            with pytest.raises(UnwritableError) as raised:
                store.add(big)
            assert [r.run_id for r in store.runs()] == [first]  # the failed add rolled back whole
        (state / "filler").unlink()
        with Store(path) as store:
            assert [r.run_id for r in store.runs()] == [first]
        leftovers = temp_leftovers(state)
    assert raised.value.exit_code == 1 and raised.value.path == str(path)
    assert "No space left on device" in raised.value.one_line() and "free some space" in raised.value.one_line()
    assert leftovers == []


def test_a_store_directory_the_user_may_not_write_is_a_refusal_naming_permissions(tmp_path):
    """EACCES needs a process the permission bits apply to: patchkit runs as root without CAP_DAC_OVERRIDE."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("dropping CAP_DAC_OVERRIDE needs root and setpriv")
    repo = _store_repo(tmp_path)
    state = repo / ".git" / "patchkit"
    state.mkdir()
    state.chmod(0o555)
    drop = "-dac_override,-dac_read_search"
    opening = (  # what bench, noise and bisect do first; runs, which only reads, makes nothing
        "import sys\nfrom pathlib import Path\nfrom patchkit.bench.records.store import Store\n"
        "from patchkit.errors import UnwritableError\ntry:\n    Store(Path(sys.argv[1]))\n"
        "except UnwritableError as exc:\n"
        "    print(exc.one_line(), file=sys.stderr)\n    sys.exit(exc.exit_code)\n"
    )
    unprivileged = ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}", "--"]
    try:
        runs = subprocess.run([*unprivileged, patchkit_script(), "runs"], cwd=repo, capture_output=True, text=True)
        proc = subprocess.run(
            [*unprivileged, sys.executable, "-c", opening, str(state / "bench.sqlite")],
            cwd=repo,
            capture_output=True,
            text=True,
        )
    finally:
        state.chmod(0o755)
    assert runs.returncode == 0 and "no bench store at" in runs.stdout, runs.stderr
    assert proc.returncode == 1, proc.stderr + proc.stdout
    line = proc.stderr.strip()
    assert f"cannot write {state / 'bench.sqlite'}: Permission denied" in line, line
    assert "check the permissions" in line and "\n" not in line
    assert list(state.iterdir()) == []


# -- 3. manifests layered on one file -----------------------------------------------------------

LAYER_MODEL = "import torch\n\n\nclass Model:\n    def forward(self, x):\n        return x\n"


def _layer_kits(tmp_path: Path, count: int) -> tuple[Path, list[Path]]:
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": LAYER_MODEL})
    manifests = []
    for i in range(count):
        kit = Kit(tmp_path / f"kit{i}", name=f"layer-{i}")
        method = f"class Model:\n    def hook_{i}(self):\n        return {i}\n"
        manifests.append(
            kit.write(
                [
                    {
                        "id": f"hook-{i}",
                        "op": "add-methods",
                        "file": "pkg/mod.py",
                        "class": "Model",
                        "source": f"../patches/h{i}.py",
                    }
                ],
                {f"h{i}.py": method},
            )
        )
    return repo, manifests


def _guard(capsys, repo: Path, manifest: Path) -> dict:
    r = run_cli(capsys, "guard", "-m", manifest, "--repo", repo, "--json")
    return {c["check"]: c for c in r.json["checks"]} | {"_code": r.code}


@pytest.mark.parametrize("count", [2, 3])
def test_layered_manifests_each_pass_status_and_guard_naming_the_others(tmp_path, capsys, count):
    repo, manifests = _layer_kits(tmp_path, count)
    for m in manifests:
        assert run_cli(capsys, "apply", "-m", m, "--repo", repo).code == 0
    for i, m in enumerate(manifests):
        checks = _guard(capsys, repo, m)
        assert checks["_code"] == 0, {k: v["message"] for k, v in checks.items() if k != "_code" and not v["ok"]}
        others = [f"layer-{j}" for j in range(count) if j != i]
        text = checks["record"]["message"] + " " + checks["clean"]["message"]
        for other in others:
            assert other in text, text
        status = run_cli(capsys, "status", "-m", m, "--repo", repo)
        assert status.code == 0, status.out
        assert "edited after patchkit" not in status.out
        assert all(other in status.out for other in others), status.out


@pytest.mark.parametrize("count", [2, 3])
def test_an_edit_by_none_of_the_layers_fails_and_never_advises_forcing_over_another(tmp_path, capsys, count):
    repo, manifests = _layer_kits(tmp_path, count)
    for m in manifests:
        assert run_cli(capsys, "apply", "-m", m, "--repo", repo).code == 0
    with open(repo / "pkg/mod.py", "a") as handle:
        handle.write("STRAY = 1\n")
    for m in manifests:
        checks = _guard(capsys, repo, m)
        assert checks["_code"] == 1
        record = checks["record"]
        assert not record["ok"] and "pkg/mod.py" in record["message"]
        # The advice reverts each manifest with its own revert, from the top (the newest) down.
        # Each manifest as `-m` takes it: these were loaded by path, so by their paths; and the tree guarded from
        # elsewhere is named with --repo.
        expected = " && ".join(
            f"patchkit revert -m {manifests[j]} --repo {repo} --force" for j in reversed(range(count))
        )
        assert expected in record["message"], record["message"]
        assert f"`patchkit revert -m {m} --repo {repo} --force`, then" not in record["message"]


def _pasted(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` as a user pastes it into a shell in ``cwd`` (this checkout's patchkit first on PATH)."""
    env = {**os.environ, "PATH": f"{Path(patchkit_script()).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_layered_advice_for_manifests_loaded_by_path_runs_as_printed(tmp_path, where):
    """The steps the record check prints, pasted as they are: each names its manifest as `-m` takes it."""
    repo, manifests = _layer_kits(tmp_path, 2)
    given = [os.path.relpath(m, repo) if where == "relative" else str(m) for m in manifests]
    for m in given:
        assert run_script("apply", "-m", m, cwd=repo).code == 0
    with open(repo / "pkg/mod.py", "a") as handle:
        handle.write("STRAY = 1\n")
    guard = run_script("guard", "-m", given[0], "--json", cwd=repo)
    message = next(c["message"] for c in json.loads(guard.out)["checks"] if c["check"] == "record")
    found = re.search(r"`(patchkit revert [^`]+)`, then `(patchkit apply [^`]+)`", message)
    assert found is not None, message
    assert "layer-0 " not in found.group(0) and "layer-1 " not in found.group(0), found.group(0)  # not by name
    for step in found.groups():
        done = _pasted(step, repo)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    assert (repo / "pkg/mod.py").read_text().count("STRAY") == 0
    for m in given:
        assert run_script("guard", "-m", m, cwd=repo).code == 0


def test_advice_names_a_bundled_or_project_manifest_by_name_and_any_other_by_path(tmp_path):
    from patchkit.manifest import manifest_arg, resolve_manifest

    bundled = resolve_manifest("kimi-k25-eagle3")
    assert manifest_arg("kimi-k25-eagle3", bundled, cwd=tmp_path) == "kimi-k25-eagle3"
    copy = tmp_path / "work" / "my kit" / "kimi-k25-eagle3.toml"  # the same name, another file
    copy.parent.mkdir(parents=True)
    copy.write_bytes(bundled.read_bytes())
    assert manifest_arg("kimi-k25-eagle3", copy, cwd=tmp_path / "work") == "'my kit/kimi-k25-eagle3.toml'"
    assert manifest_arg("kimi-k25-eagle3", copy, cwd=tmp_path / "elsewhere") == f"'{copy}'"
    assert manifest_arg("kimi-k25-eagle3", tmp_path / "gone.toml", cwd=tmp_path) == "kimi-k25-eagle3"


@pytest.mark.parametrize("count", [2, 3])
def test_layered_reverts_in_the_wrong_order_refuse_and_in_the_right_order_restore(tmp_path, capsys, count):
    repo, manifests = _layer_kits(tmp_path, count)
    for m in manifests:
        assert run_cli(capsys, "apply", "-m", m, "--repo", repo).code == 0
    patched = (repo / "pkg/mod.py").read_bytes()
    for m in manifests[:-1]:  # every lower layer refuses while one sits on top, without offering --force
        r = run_cli(capsys, "revert", "-m", m, "--repo", repo)
        assert r.code == 1 and "--force" not in r.err and f"patchkit revert -m {manifests[-1]}" in r.err, r.err
        assert (repo / "pkg/mod.py").read_bytes() == patched
    for i, m in reversed(list(enumerate(manifests))):
        assert run_cli(capsys, "revert", "-m", m, "--repo", repo).code == 0
        for j, lower in enumerate(manifests[:i]):
            assert _guard(capsys, repo, lower)["_code"] == 0, j
    assert (repo / "pkg/mod.py").read_text() == LAYER_MODEL
    assert porcelain(repo) == []


# -- 6. apply --diff prints the bytes that are written ------------------------------------------

DIFF_BASE = "import os\n\n\nclass Model:\n    def forward(self, x):\n        return x\n\n\nEntryClass = Model\n"


@pytest.mark.parametrize(
    "text",
    [DIFF_BASE.replace("\n", "\r\n"), DIFF_BASE.replace("\n", "\r\n", 4), DIFF_BASE + "# caf\u00e9\n"],
    ids=["crlf", "mixed", "utf8"],
)
def test_apply_diff_output_is_what_git_apply_takes(tmp_path, text):
    sc = scenario(tmp_path, {"pkg/mod.py": text.encode("utf-8")}, ADD_EXTRA, EXTRA)
    r = subprocess.run(
        [patchkit_script(), "apply", "-m", str(sc.kit.manifest), "--repo", str(sc.repo), "--dry-run", "--diff"],
        capture_output=True,
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    diff = out[out.index(b"diff --git ") : out.rindex(b"DRY RUN:")]
    if "\r" in text:
        assert b"\r\n" in diff
    patch = tmp_path / "printed.patch"
    patch.write_bytes(diff)
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=sc.repo, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    subprocess.run(["git", "apply", str(patch)], cwd=sc.repo, check=True)
    by_git = sc.file().read_bytes()
    subprocess.run(["git", "checkout", "--", "pkg/mod.py"], cwd=sc.repo, check=True)
    assert run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0
    assert sc.file().read_bytes() == by_git  # the printed diff is exactly the write


# -- 8. check --commit A --commit B: oldest first, relations named right -------------------------


def test_check_commits_are_listed_oldest_first_and_an_ancestor_is_not_another_line(tmp_path, capsys):
    sc = _history(tmp_path)  # base, upstream 0, 1, 2
    git(sc.repo, "checkout", "-q", "-b", "side", "HEAD~2")
    (sc.repo / "pkg" / "mod.py").write_text(BIG_MODEL.replace("class Model:", "class Renamed:"))
    git(sc.repo, "commit", "-qam", "side: rename")
    side = git(sc.repo, "rev-parse", "HEAD").strip()
    git(sc.repo, "checkout", "-q", "master" if "master" in git(sc.repo, "branch") else "main")
    shas = [git(sc.repo, "rev-parse", f"HEAD~{n}").strip() for n in (0, 2, 3)]
    r = run_cli(capsys, "check", "-m", sc.kit.manifest, "--repo", sc.repo, *[f"--commit={s}" for s in shas], "--json")
    assert [c["commit"] for c in r.json["commits"]] == list(reversed(shas))
    text = run_cli(capsys, "check", "-m", sc.kit.manifest, "--repo", sc.repo, "--commit", shas[0], "--commit", side)
    assert "not a descendant of " in text.out and ": another line of history" in text.out, text.out
    # Upstream 2 and the base, newest first: listed base first, and upstream 2 is 3 commits after it.
    (sc.repo / "pkg" / "mod.py").write_text(BIG_MODEL)
    r = run_cli(capsys, "check", "-m", sc.kit.manifest, "--repo", sc.repo, "--commit", side, "--commit", shas[2])
    text = run_cli(
        capsys,
        "check",
        "-m",
        sc.kit.manifest,
        "--repo",
        sc.repo,
        "--commit",
        shas[0],
        "--commit",
        side,
        "--commit",
        shas[2],
    )
    body = text.out.split("\n", 1)[1]  # after the header, which repeats the arguments
    assert body.index(shas[2][:10]) < body.index(side[:10]), text.out
    assert "(1 commit after " not in text.out
    assert f"2 commits after {shas[2][:10]}" in text.out, text.out  # side forks from upstream 0, the base's child


# -- 4. a Ctrl-C inside a long libcst parse stops within a second -------------------------------


def big_model(functions: int) -> str:
    return "import torch\n\n\nclass Model:\n    def forward(self, x):\n        return x\n\n\n" + "".join(
        f"def helper_{i}(x, y=None):\n    z = [x + {i}, y, {{'a': {i}}}]\n    return z\n\n\n" for i in range(functions)
    )


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _forked(pid: int) -> list[int]:
    """The children of ``pid`` that are forks of it (its own command line), not git processes it runs."""
    try:
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    out = []
    for child in _children(pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{child}/cmdline").read_bytes() == own:
                out.append(child)
    return out


def _interrupt_in_child(argv: list[str], *, group: bool = True) -> tuple[int, float, str]:
    """Run patchkit, SIGINT it a second into the work its forked child does; (exit, latency, stderr)."""
    env = {**os.environ, "PATCHKIT_ABANDON_BYTES": "100000"}
    proc = subprocess.Popen(
        [patchkit_script(), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    worker: set[int] = set()
    while not worker and time.monotonic() < deadline and proc.poll() is None:
        # A fork that lasts (a subprocess's fork is another copy of patchkit only until it execs).
        seen = set(_forked(proc.pid))
        time.sleep(0.2)
        worker = seen & set(_forked(proc.pid))
    if not worker:
        proc.kill()
        _out, err = proc.communicate()
        pytest.fail(f"the work never went to a child process (exit {proc.returncode}): {err.decode()}")
    time.sleep(1.0)  # well inside the parse (seconds long)
    assert proc.poll() is None, "the parse ended before the interrupt: make the target larger"
    assert worker & set(_forked(proc.pid)), "the child ended before the interrupt: make the target larger"
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    latency = time.monotonic() - sent
    time.sleep(0.2)
    assert not any(Path(f"/proc/{c}").exists() for c in _forked(proc.pid))
    return proc.returncode, latency, err.decode()


@pytest.mark.slow
@pytest.mark.parametrize("group", [True, False], ids=["ctrl-c-to-the-group", "sigint-to-the-pid"])
def test_an_interrupt_inside_a_large_parse_stops_within_a_second_and_writes_nothing(tmp_path, group):
    sc = scenario(tmp_path, {"pkg/mod.py": big_model(5000)}, ADD_EXTRA, EXTRA)  # ~0.5 MB: a long libcst parse
    before = sc.file().read_bytes()
    code, latency, err = _interrupt_in_child(["apply", "-m", str(sc.kit.manifest), "--repo", str(sc.repo)], group=group)
    assert code == 130, err
    assert latency < 1.0, f"stopped {latency:.2f} s after the interrupt"
    assert err.strip().splitlines()[-1] == "patchkit: interrupted (Ctrl-C); nothing was written", err
    assert sc.file().read_bytes() == before and porcelain(sc.repo) == []
    assert not (sc.repo / ".git" / "patchkit" / "applied").exists()


@pytest.mark.slow
@pytest.mark.parametrize("worktree", [False, True], ids=["move-this-tree", "new-worktree"])
def test_an_interrupt_of_apply_commit_inside_a_large_parse_stops_within_a_second_and_moves_nothing(tmp_path, worktree):
    sc = scenario(tmp_path, {"pkg/mod.py": big_model(5000)}, ADD_EXTRA, EXTRA)
    old = git(sc.repo, "rev-parse", "HEAD").strip()
    (sc.repo / "README").write_text("upstream moved on\n")
    git(sc.repo, "add", "README")
    git(sc.repo, "commit", "-qm", "upstream: readme")
    head = git(sc.repo, "rev-parse", "HEAD").strip()
    argv = ["apply", "-m", str(sc.kit.manifest), "--repo", str(sc.repo), "--commit", old]
    if worktree:
        argv += ["--worktree", str(tmp_path / "linked")]
    code, latency, err = _interrupt_in_child(argv)
    assert code == 130, err
    assert latency < 1.0, f"stopped {latency:.2f} s after the interrupt"
    assert err.strip().splitlines()[-1] == "patchkit: interrupted (Ctrl-C); nothing was written", err
    assert git(sc.repo, "rev-parse", "HEAD").strip() == head and porcelain(sc.repo) == []
    assert git(sc.repo, "symbolic-ref", "-q", "HEAD").strip(), "the tree left its branch"
    assert not (tmp_path / "linked").exists()
    assert not (sc.repo / ".git" / "patchkit" / "applied").exists()
    assert not (sc.repo / ".git" / "patchkit" / "journal.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("verb", ["capture", "import-diff"])
def test_an_interrupt_of_capture_inside_a_large_parse_stops_within_a_second_and_writes_nothing(tmp_path, verb):
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": big_model(5000)})
    target = repo / "pkg" / "mod.py"
    target.write_text(target.read_text().replace("        return x\n", "        x = x + 1\n        return x\n", 1))
    out = tmp_path / "kit"
    argv = ["--repo", str(repo), "--name", "big", "--out", str(out)]
    if verb == "import-diff":
        patch = tmp_path / "big.patch"
        patch.write_text(git(repo, "diff"))
        git(repo, "checkout", "--", ".")
        argv = [str(patch), *argv]
    code, latency, err = _interrupt_in_child([verb, *argv])
    assert code == 130, err
    assert latency < 1.0, f"stopped {latency:.2f} s after the interrupt"
    assert err.strip().splitlines()[-1] == "patchkit: interrupted (Ctrl-C); nothing was written", err
    assert not out.exists(), list(out.rglob("*"))
    assert "patchkit-import-diff" not in git(repo, "worktree", "list")


# -- 5. the guard's import check: namespace packages, the tree's own version -------------------


def _namespace_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A tree whose python/pkg has no __init__.py, and a manifest with one applied patch on it."""
    files = {"python/pkg/model.py": "class Model:\n    def forward(self, x):\n        return x\n"}
    files["python/pyproject.toml"] = '[project]\nname = "pkg"\ndynamic = ["version"]\n\n'
    files["python/pyproject.toml"] += '[tool.setuptools_scm]\nversion_file = "pkg/_scm_version.py"\n'
    repo = make_repo(tmp_path / "repo", files)
    kit = Kit(tmp_path / "kit")
    manifest = kit.write(
        [{"id": "extra", "op": "add-methods", "file": "python/pkg/model.py", "class": "Model", "source": src("m.py")}],
        EXTRA,
    )
    return repo, manifest


def _import_check(capsys, repo: Path, manifest: Path, python: Path, env_path: str | None = None) -> dict:
    old = os.environ.get("PYTHONPATH")
    if env_path is not None:
        os.environ["PYTHONPATH"] = env_path
    try:
        r = run_cli(capsys, "guard", "-m", manifest, "--repo", repo, "--python", python, "--import", "pkg", "--json")
    finally:
        if env_path is not None:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old
    return next(c for c in r.json["checks"] if c["check"] == "import:pkg")


def test_a_regular_package_beats_the_trees_namespace_package_and_the_advice_says_so(tmp_path, capsys):
    repo, manifest = _namespace_tree(tmp_path)
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    python = make_venv(tmp_path / "venv", site)
    # The tree's python/ first on PYTHONPATH: the regular package in site-packages still wins.
    check = _import_check(capsys, repo, manifest, python, env_path=str(repo / "python"))
    assert not check["ok"] and check["details"]["location"] == str((site / "pkg").resolve()), check
    message = check["message"]
    assert "python/pkg has no __init__.py, so it is a namespace package" in message
    assert "whatever PYTHONPATH says" in message and "pip uninstall pkg" in message
    assert "first on PYTHONPATH" not in message


def test_the_tree_version_is_the_trees_and_the_installed_one_is_labelled(tmp_path, capsys):
    repo, manifest = _namespace_tree(tmp_path)
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    (repo / "python" / "pkg" / "_scm_version.py").write_text("__version__ = version = '0.5.9.dev42'\n")
    site = tmp_path / "site"
    info = site / "pkg-0.5.3.dist-info"  # another copy's metadata: an older release
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 0.5.3\n")
    python = make_venv(tmp_path / "venv", repo / "python", site)
    check = _import_check(capsys, repo, manifest, python)
    assert check["ok"], check
    assert check["details"]["tree_version"] == {"version": "0.5.9.dev42", "file": "python/pkg/_scm_version.py"}
    message = check["message"]
    assert "this tree's version: 0.5.9.dev42 (from python/pkg/_scm_version.py)" in message
    assert "installed distribution: 0.5.3 (metadata of an installed copy, not read from this tree)" in message
    assert "distribution version 0.5.3" not in message


def test_an_interpreter_that_prints_something_else_is_named_with_what_it_printed(tmp_path, capsys):
    repo, manifest = _namespace_tree(tmp_path)
    fake = tmp_path / "python2"
    fake.write_text("#!/bin/sh\necho 'Python 2.7.18'\n")
    fake.chmod(0o755)
    r = run_cli(capsys, "guard", "-m", manifest, "--repo", repo, "--python", fake, "--import", "pkg")
    assert r.code == 2
    assert "printed 'Python 2.7.18' instead of the probe's answer" in r.err and "no output" not in r.err, r.err


# -- 11. the small items -------------------------------------------------------------------------


def test_busy_after_wait_does_not_advise_passing_wait(tmp_path):
    sc = _tree_scenario(tmp_path)
    with lock_held(sc.repo):
        r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--wait", "0.3")
        now = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo)
    assert r.code == 4 and "still after waiting 0.3 s" in r.err and "pass a longer --wait" in r.err, r.err
    assert now.code == 4 and "or pass --wait SECONDS" in now.err


def test_bisect_with_good_equal_to_bad_says_so(tmp_path, capsys):
    sc = _tree_scenario(tmp_path)
    r = run_cli(capsys, "bisect", "-m", sc.kit.manifest, "--repo", sc.repo, "--good", "HEAD", "--bad", "HEAD",
                "--metric", "x", "--min", "1")  # fmt: skip
    assert r.code == 2
    assert "are the same commit" in r.err and "first-parent descendant" not in r.err, r.err


def test_capture_ids_of_non_ascii_names_keep_their_letters(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {"pkg/módulo_á.py": "class Módulo:\n    def f(self):\n        return 1\n"})
    (repo / "pkg/módulo_á.py").write_text("class Módulo:\n    def f(self):\n        return 1\n\n    def g(self):\n"
                                          "        return 2\n")  # fmt: skip
    r = run_cli(capsys, "capture", "--repo", repo, "--name", "x", "--out", tmp_path / "kit", "--json")
    assert r.code == 0, r.err
    ids = [p["id"] for p in r.json["patches"]]
    assert ids and all("m-dul" not in i for i in ids) and any("modulo" in i for i in ids), ids


def test_a_missing_required_key_is_named(tmp_path, capsys):
    kit = Kit(tmp_path / "kit")
    manifest = kit.write([{"id": "a", "op": "add-methods", "file": "a.py", "source": src("m.py")}], EXTRA)
    r = run_cli(capsys, "validate", "-m", manifest)
    assert r.code == 2 and "patch[1].class: missing required key 'class'" in r.err, r.err


SIGNAL_SCRIPT = """import signal, sys, time
def stop(signum, frame):
    open(sys.argv[1], "w").write("got SIGINT")
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)
"""


def _run_until_ready(tmp_path: Path, script_text: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`patchkit run` of a command that records the SIGINTs it gets, started and waited for."""
    sc = _tree_scenario(tmp_path)
    assert run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo).code == 0
    script, seen = tmp_path / "cmd.py", tmp_path / "seen"
    script.write_text(script_text)
    proc = subprocess.Popen(
        [patchkit_script(), "run", "-m", str(sc.kit.manifest), "--", sys.executable, str(script), str(seen)],
        cwd=sc.repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not Path(f"{seen}.ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc, seen


def test_run_passes_on_a_sigint_sent_to_its_own_pid(tmp_path):
    proc, seen = _run_until_ready(tmp_path, SIGNAL_SCRIPT)
    os.kill(proc.pid, signal.SIGINT)  # to patchkit alone, as `kill -INT PID` does
    _out, err = proc.communicate(timeout=30)
    assert seen.read_text() == "got SIGINT", err
    assert proc.returncode == 130


def test_ctrl_c_to_the_group_reaches_the_command(tmp_path):
    proc, seen = _run_until_ready(tmp_path, SIGNAL_SCRIPT.replace('"w").write', '"a").write'))
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=30)
    assert seen.read_text().startswith("got SIGINT")
    assert proc.returncode == 130


SINGULAR_S = {"class", "process", "status", "pass", "alias", "bias", "ms", "its", "this", "was", "is", "has", "does"}


def _plurals_after_one(text: str) -> list[str]:
    import re

    found = []
    for line in text.splitlines():
        for match in re.finditer(r"(?<![\d.,:/-])\b1 ([a-z]+(?: [a-z]+)?)", line):
            words = match.group(1).split()
            noun = next((w for w in words if w not in {"required", "optional", "untracked", "recorded",
                                                         "distinct", "leftover", "temp"}), words[-1])  # fmt: skip
            if noun.endswith("s") and noun not in SINGULAR_S and not noun.endswith("ss"):
                found.append(line.strip())
    return found


def test_no_summary_line_says_1_of_a_plural_across_the_verbs(tmp_path, capsys):
    """One patch, one file, one commit, one change, one warning, one check failed: every verb's lines."""
    sc = _tree_scenario(tmp_path)
    m, repo = sc.kit.manifest, sc.repo
    outputs = []

    def cli(*argv: str | Path) -> None:
        r = run_cli(capsys, *argv)
        outputs.append((" ".join(map(str, argv[:1])), r.out + r.err))

    cli("validate", "-m", m)
    cli("status", "-m", m, "--repo", repo)
    cli("guard", "-m", m, "--repo", repo)
    cli("apply", "-m", m, "--repo", repo, "--dry-run")
    cli("apply", "-m", m, "--repo", repo)
    cli("apply", "-m", m, "--repo", repo)
    cli("status", "-m", m, "--repo", repo)
    cli("guard", "-m", m, "--repo", repo)
    (repo / "notes.txt").write_text("x\n")
    cli("guard", "-m", m, "--repo", repo)
    cli("guard", "-m", m, "--repo", repo, "--allow-dirty")
    (repo / "notes.txt").unlink()
    cli("check", "-m", m, "--repo", repo)
    with open(sc.file(), "a") as handle:
        handle.write("# edited\n")
    cli("guard", "-m", m, "--repo", repo)
    cli("revert", "-m", m, "--repo", repo)
    cli("revert", "-m", m, "--repo", repo, "--force")
    with open(sc.file(), "a") as handle:
        handle.write("X = 1\n")
    (repo / "new.txt").write_text("new\n")
    cli("capture", "--repo", repo, "--name", "one", "--out", tmp_path / "captured")
    patch = tmp_path / "one.patch"
    patch.write_text(git(repo, "diff"))
    git(repo, "checkout", "--", ".")
    (repo / "new.txt").unlink()
    cli("import-diff", patch, "--repo", repo, "--name", "two", "--out", tmp_path / "imported")
    assert len(outputs) == 16
    bad = [(verb, line) for verb, text in outputs for line in _plurals_after_one(text)]
    assert bad == [], bad
    assert _plurals_after_one("VALID: 1 patches.") and _plurals_after_one("CAPTURED: 1 patches on 1 files")


# -- 7. layout on a narrow terminal: paths break at / and :, messages keep their indent -----------

LONG = "python/sglang/srt/models/kimi_k25.py"


def run_in_pty(argv: list[str], columns: int) -> str:
    """The console script on a real pseudo-terminal ``columns`` wide; its output, colours stripped."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm"
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(leader)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def _long_path_scenario(tmp_path: Path) -> Scenario:
    model = "import torch\n\n\nclass Model:\n    def forward(self, x):\n        return x\n"
    patches = [
        {"id": "extra", "op": "add-methods", "file": LONG, "class": "Model", "source": src("m.py")},
        {"id": "gone", "op": "add-methods", "file": LONG, "class": "KimiK25ForConditionalGeneration",
         "source": src("g.py"), "required": False},
    ]  # fmt: skip
    payloads = {**EXTRA, "g.py": "class KimiK25ForConditionalGeneration:\n    def hook(self):\n        return 1\n"}
    return scenario(tmp_path, {LONG: model}, patches, payloads, path=LONG)


@pytest.mark.parametrize("columns", [60, 80])
def test_paths_wrap_between_their_parts_on_a_narrow_terminal(tmp_path, columns):
    import re

    sc = _long_path_scenario(tmp_path)
    out = run_in_pty([patchkit_script(), "apply", "-m", str(sc.kit.manifest), "--repo", str(sc.repo), "--dry-run"],
                     columns)  # fmt: skip
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines), out
    assert "…" not in re.sub(r"sha256:[0-9a-f]+…", "", out)  # the digest is abbreviated on purpose
    # The where column breaks after "/" or ":": each directory is whole, ending its line or followed
    # by the next one; at 80 columns the file name and line number stay whole too.
    where = [line[line.index("python/") :].split()[0] for line in lines if line.startswith(("1  ", "2  "))]
    assert where and all(cell.startswith("python/") and cell.endswith("/") for cell in where), out
    parts = ["python/", "sglang/", "srt/", "models/"] + (["kimi_k25.py:4"] if columns >= 80 else [])
    for part in parts:
        assert any(part in line for line in lines), (part, out)
    assert not any("srt/mod" in line and "srt/models/" not in line for line in lines), out


@pytest.mark.parametrize("columns", [60, 80])
def test_check_messages_keep_their_indent_when_wrapped(tmp_path, columns):
    sc = _long_path_scenario(tmp_path)
    out = run_in_pty([patchkit_script(), "check", "-m", str(sc.kit.manifest), "--repo", str(sc.repo)], columns)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "class KimiK25ForConditionalGeneration is not defined" in line)
    block = []
    for line in lines[start:]:
        if not line.startswith("        "):
            break
        block.append(line)
    assert len(block) >= 2, out  # the message wrapped over several lines, all indented
    assert all(line.startswith("        ") and line[8] != " " for line in block), out
    assert "KimiK25ForConditionalGeneration" in "\n".join(block)


# -- 9. a distant rename is found by structure, not spelling ------------------------------------

VISION = "".join(
    f"class MoonVision{kind}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    f"        self.proj = None\n\n    def forward(self, x):\n        return self.proj(x)\n\n\n"
    for kind in ("Block", "Blocks", "Attention", "PatchEmbed", "Encoder", "EncoderLayer", "MLP", "Merger")
)
RENAMED = (
    "import torch\nfrom torch import nn\n\n\n" + VISION + "class MoonshotMultimodalModel(PreTrainedModel):\n"
    "    def __init__(self, config):\n        super().__init__()\n"
    "        self.language_model = None\n        self.vision_tower = None\n\n"
    "    def forward(self, input_ids, positions):\n        return self.language_model(input_ids, positions)\n\n"
    "    def load_weights(self, weights):\n        pass\n\n\n"
    "EntryClass = [MoonshotMultimodalModel]\n"
)
HOOKS = (
    "class KimiK25ForConditionalGeneration:\n"
    "    def set_eagle3_layers_to_capture(self, layers):\n"
    "        self.language_model.set_eagle3_layers_to_capture(layers)\n\n"
    "    def get_embed_and_head(self):\n"
    "        return self.language_model.get_embed_and_head()\n"
)


def test_a_distant_rename_is_named_as_probably_renamed(tmp_path, capsys):
    patches = [{"id": "eagle3-hooks", "op": "add-methods", "file": LONG, "class": "KimiK25ForConditionalGeneration",
                "source": src("hooks.py")}]  # fmt: skip
    sc = scenario(tmp_path, {LONG: RENAMED}, patches, {"hooks.py": HOOKS}, path=LONG)
    r = sc.apply(capsys)
    assert r.code == 1
    message = r.json["results"][0]["message"]
    line = RENAMED.splitlines().index("class MoonshotMultimodalModel(PreTrainedModel):") + 1
    assert message.startswith(
        f"class KimiK25ForConditionalGeneration is not defined in {LONG}; probably renamed to MoonshotMultimodalModel "
        f"(line {line}): it is the file's EntryClass and it has language_model, which the patch uses"
    ), message
    # The list of classes still follows (spelling first): nothing is hidden.
    assert "MoonVision" in message


def _kimi_rename_history(tmp_path: Path, renamed_tail: str = "") -> tuple[Path, Path]:
    """capture_trees' Kimi file with eight vision classes above the model, registered in a dict (no
    EntryClass), then the model renamed (``renamed_tail`` appended to the renamed class's body).
    Returns the repository and the bundled kimi-k25-eagle3 manifest."""
    from capture_trees import BASE, KIMI

    from patchkit.demo.history import HistoryBuilder
    from patchkit.manifest import resolve_manifest

    kimi = BASE[KIMI].replace(
        "logger = logging.getLogger(__name__)\n\n\n", "logger = logging.getLogger(__name__)\n\n\n" + VISION
    )
    kimi = kimi.replace(
        "EntryClass = [KimiK25ForConditionalGeneration]", 'MODELS = {"kimi": KimiK25ForConditionalGeneration}'
    )
    renamed = kimi.replace("KimiK25ForConditionalGeneration", "MoonshotMultimodalModel")
    renamed = renamed.replace("\n\n\nMODELS", renamed_tail + "\n\n\nMODELS")
    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "Kimi-K2.5: vision tower", {**BASE, KIMI: kimi})
    builder.commit(
        "rename", "Rename KimiK25ForConditionalGeneration to MoonshotMultimodalModel", {**BASE, KIMI: renamed}
    )
    return builder.build().path, resolve_manifest("kimi-k25-eagle3")


def _eagle3_hooks_at_head(capsys, repo: Path, manifest: Path) -> str:
    r = run_cli(capsys, "check", "-m", manifest, "--repo", repo, "--commit", "HEAD", "--no-cache", "--json")
    assert r.code == 1, r.err
    [hooks] = [x for x in r.json["commits"][0]["results"] if x["patch"] == "eagle3-hooks"]
    assert hooks["reason"] == "CLASS_NOT_FOUND"
    return hooks["message"]


def test_a_distant_rename_without_an_entryclass_is_found_with_the_bundled_kimi_manifest(tmp_path, capsys):
    """The bundled payload reads `getattr(self, "language_model", None)`, not `self.language_model`, and the
    file registers its model in a dict: the rename is found by the member the patch uses and the position
    of the class (the file's last), not by an EntryClass."""
    repo, manifest = _kimi_rename_history(tmp_path)
    message = _eagle3_hooks_at_head(capsys, repo, manifest)
    line = (repo / LONG).read_text().splitlines().index("class MoonshotMultimodalModel(nn.Module):") + 1
    assert (
        f"probably renamed to MoonshotMultimodalModel (line {line}): it has language_model, which the patch uses "
        "and it is the file's last class; the 9 classes in this file" in message
    ), message


def test_a_rename_is_found_by_the_methods_the_patch_adds_when_upstream_has_them(tmp_path, capsys):
    """Upstream renamed the class and gave it the hooks: the class holding the payload's methods is named."""
    hooks = (
        "\n\n    def set_eagle3_layers_to_capture(self, layer_ids=None):\n        pass\n\n"
        "    def get_embed_and_head(self):\n        pass\n"
    )
    repo, manifest = _kimi_rename_history(tmp_path, hooks)
    text = (repo / LONG).read_text()
    message = _eagle3_hooks_at_head(capsys, repo, manifest)
    line = text.splitlines().index("class MoonshotMultimodalModel(nn.Module):") + 1
    assert (
        f"probably renamed to MoonshotMultimodalModel (line {line}): it already has get_embed_and_head, "
        "set_eagle3_layers_to_capture, which the patch adds" in message
    ), message


def test_a_class_renamed_in_a_patched_tree_is_found_by_the_code_patchkit_wrote(tmp_path, capsys):
    """After `apply`, the class is renamed by hand and a class is added after it: `status` names the class
    holding the methods the record says patchkit wrote (not by position, not by what the payload reads)."""
    payload = "class Model:\n    def hook(self):\n        return 1\n\n    def other_hook(self):\n        return 2\n"
    block = "class Block:\n    def forward(self):\n        return 0\n\n\n"
    base = block + "class Model:\n    def forward(self):\n        return 0\n"
    patch = {"id": "hooks", "op": "add-methods", "file": "pkg/mod.py", "class": "Model", "source": src("h.py")}
    sc = scenario(tmp_path, {"pkg/mod.py": base}, [patch], {"h.py": payload})
    assert sc.apply(capsys).code == 0
    text = sc.text().replace("class Model:", "class Transformer:") + "\n\nclass Config:\n    pass\n"
    sc.file().write_text(text)
    r = run_cli(capsys, "status", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    [result] = r.json["results"]
    assert result["reason"] == "CLASS_NOT_FOUND"
    assert (
        "probably renamed to Transformer (line 6): it holds hook, other_hook, which patchkit wrote there"
        in (result["message"])
    ), result["message"]
