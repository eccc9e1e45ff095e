"""Benchmark: reading a real history's blobs through patchkit.git against GitPython's persistent object database.

The design brief named GitPython; patchkit.git runs git itself (an allowlisted environment, one persistent
``git cat-file --batch``).  This measures what that choice costs or saves on the range check's access
pattern: the distinct blob versions of a set of files across the newest N first-parent commits of a real
repository (default: ``python/sglang/srt/models/*.py`` over 2,000 commits of the SGLang mirror), each read
once, newest first, as ``check --range`` reads the versions it has not analysed yet.

Both readers start fresh in every round (the process start is part of what a command pays) and read the
same list; rounds alternate between them, and each round's bytes are hashed and compared, so the two read
the same data.  Printed: the median seconds of each, their ratio (GitPython / patchkit.git) and the MB/s.

    python benchmarks/bench_gitpython.py [--repo DIR] [--commits 2000] [--paths GLOB ...] [--rounds 5]

The mirror is a promisor pack: a blob it does not hold is left out (listed with GIT_NO_LAZY_FETCH=1, so
nothing tries the network), as the range check counts a missing blob as unknown.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MIRROR = Path("/work/.mirror/fzyzcjy+sglang/repo")
OFFLINE = {**os.environ, "GIT_NO_LAZY_FETCH": "1"}


def shared_clone(repo: Path, into: Path) -> Path:
    """A bare clone that reads ``repo``'s objects in place (``--shared``: an alternates file, nothing copied).

    The mirror is a bare git dir without a config file: git finds it, but GitPython, which reads
    ``core.bare`` from the config, takes it for a work tree's .git and runs git in its parent.  Both readers
    read this clone, so both go through the same alternates."""
    target = into / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--shared", str(repo), str(target)], check=True, env=OFFLINE)
    return target


def blob_list(repo: Path, commits: int, paths: list[str]) -> list[str]:
    """The distinct blob ids of ``paths`` over the newest ``commits`` first-parent commits, newest first,
    without the ones the repository does not hold."""
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--first-parent", f"-n{commits}", "--format=", "--raw", "--no-abbrev",
         "HEAD", "--", *paths],
        check=True, capture_output=True, text=True, env=OFFLINE,
    ).stdout  # fmt: skip
    seen: dict[str, None] = {}
    for line in log.splitlines():
        fields = line.split()
        if len(fields) >= 5 and set(fields[3]) != {"0"}:
            seen.setdefault(fields[3])
    check = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-check"],
        input="\n".join(seen) + "\n", check=True, capture_output=True, text=True, env=OFFLINE,
    ).stdout  # fmt: skip
    return [line.split()[0] for line in check.splitlines() if line.split()[1:2] == ["blob"]]


def read_patchkit(repo: Path, oids: list[str]) -> str:
    from patchkit.git import Repo

    digest = hashlib.sha256()
    with Repo.discover(repo) as git_repo:
        for oid in oids:
            digest.update(git_repo.read_blob(oid))
    return digest.hexdigest()


def read_gitpython(repo: Path, oids: list[str]) -> str:
    import git

    digest = hashlib.sha256()
    handle = git.Repo(repo, odbt=git.GitCmdObjectDB)  # the persistent `cat-file --batch` object database
    try:
        for oid in oids:
            digest.update(handle.odb.stream(bytes.fromhex(oid)).read())
    finally:
        handle.close()
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=MIRROR)
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--paths", nargs="+", default=["python/sglang/srt/models/*.py"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    try:
        import git
    except ImportError:
        raise SystemExit("GitPython is not installed: pip install -e '.[test]' (it is in the test extra)") from None
    with tempfile.TemporaryDirectory(prefix="patchkit-bench-gitpython-") as tmp:
        return measure(shared_clone(args.repo, Path(tmp)), args, git.__version__)


def measure(repo: Path, args: argparse.Namespace, version: str) -> int:
    oids = blob_list(repo, args.commits, args.paths)
    sizes = subprocess.run(
        ["git", "-C", str(args.repo), "cat-file", "--batch-check=%(objectsize)"],
        input="\n".join(oids) + "\n", check=True, capture_output=True, text=True, env=OFFLINE,
    ).stdout  # fmt: skip
    size = sum(int(n) for n in sizes.split())
    print(f"{args.repo}: {len(oids)} distinct blobs ({size / 1e6:.1f} MB) of {' '.join(args.paths)} "
          f"over {args.commits} first-parent commits; GitPython {version}")  # fmt: skip
    readers: dict[str, Callable[[Path, list[str]], str]] = {
        "patchkit.git": read_patchkit,
        "GitPython": read_gitpython,
    }
    times: dict[str, list[float]] = {name: [] for name in readers}
    digests: set[str] = set()
    for round_ in range(args.rounds):
        order = list(readers) if round_ % 2 == 0 else list(reversed(readers))
        for name in order:
            started = time.perf_counter()
            digests.add(readers[name](repo, oids))
            times[name].append(time.perf_counter() - started)
    if len(digests) != 1:
        raise SystemExit("the two readers read different bytes")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"  {name:<13} median {median:.3f} s  ({size / 1e6 / median:.0f} MB/s)  "
              f"rounds: {' '.join(f'{t:.3f}' for t in samples)}")  # fmt: skip
    ratio = statistics.median(times["GitPython"]) / statistics.median(times["patchkit.git"])
    print(f"GitPython / patchkit.git: {ratio:.2f}x (same bytes, sha256 {digests.pop()[:12]}…)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
