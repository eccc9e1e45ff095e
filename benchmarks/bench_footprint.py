"""Benchmark: the footprints of real upstream history (``patchkit.footprint``): what share of commits a hunt could
skip, and how fast the footprints are read.

Runs on any local clone or mirror of SGLang (never committed here; a partial clone is fine: a missing blob is
"unknown", and nothing is fetched) and prints, for the newest ``--commits`` first-parent commits of ``--tip``:

* **shares**: each commit in one bucket, the first that fits: it changes a *build or dependency input* (never
  inert); *module-level* code of a Python file outside docs, tests and CI; a *data file* outside them (inert
  unless a launch reads it: MoE configs, templates); only *function bodies* of such Python files (inert unless a
  launch ran the function); or only *docs, tests, CI, formatting or other components* (the benchmark scripts,
  the examples, the kernel package's and the gateway's non-build files).  Module-level commits are split further
  by parsing both versions (``ast``): those whose module-level change only adds or removes plain functions
  (no decorator, nothing else at module level), those that only change the ``def`` statements of existing
  functions (decorators, defaults, annotations), and the rest.  Build inputs are split by component.
* **windows**: over every run of ``--window`` consecutive commits, the share that only changes function bodies,
  docs, tests or CI (min, quartiles, median, max), and of docs, tests and CI alone;
* **speed**: reading the footprints of the newest ``--speed-commits`` commits (default 512): git's own time (the
  two logs the reader runs, and the blobs it reads), the reader's CPU cold (a fresh ``FootprintCache``) and
  warm (the same cache again), as commits per second and as a ratio to git's CPU;
* **check** (``--check N``): the newest N commits read again with every Python version compiled whole, file by
  file: the fast reading must never say less (a body where the whole compile says module level, nothing where
  it says something); how often it says more is printed.

A real server's coverage is not here: the shares bound what a hunt can skip before any launch says what ran.

    python benchmarks/bench_footprint.py --repo PATH [--tip main] [--commits 1500] [--window 64]
        [--speed-commits 512] [--check 300]
"""

from __future__ import annotations

import argparse
import ast
import re
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from patchkit.bench.stats.relevance import Change, ChangeKind, Footprint
from patchkit.footprint.code import python_changes, summarize
from patchkit.footprint.kinds import PathKind, path_kind
from patchkit.footprint.line import FootprintCache, line_footprints
from patchkit.git import Repo, git_environment, parse_hunks

BUCKETS = ("build", "module", "data", "body", "docs/tests/CI")
COMPONENTS = ("sgl-model-gateway/", "sgl-router/", "sgl-kernel/", "benchmark/", "examples/", "scripts/", "3rdparty/")
CI = (
    ".github/",
    "scripts/ci/",
    ".devcontainer/",
    ".pre-commit-config.yaml",
    ".gitignore",
    ".isort.cfg",
    ".editorconfig",
)


def area(path: str) -> str:
    """Where a path is: "docs", "tests", "ci", "other" (not the Python server), or "server"."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith(CI) or name.startswith((".clang-format", ".codespell")):
        return "ci"
    if path.startswith(("docs/", "doc/", "assets/")) or name.lower().startswith(("readme", "license", "changelog")):
        return "docs"
    if name.endswith((".md", ".mdx", ".rst", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ipynb")):
        return "docs"
    parts = path.split("/")
    if "test" in parts[:-1] or "tests" in parts[:-1] or name.startswith("test_") or name == "conftest.py":
        return "tests"
    if name.endswith("_test.py"):
        return "tests"
    if path.startswith(COMPONENTS):
        return "other"
    return "server"


def component(path: str) -> str:
    """Which component a build input belongs to."""
    if path.startswith(("sgl-model-gateway/", "sgl-router/")):
        return "Rust gateway"
    if path.startswith("sgl-kernel/"):
        return "sgl-kernel"
    if "dockerfile" in path.lower():
        return "Docker"
    if path.startswith("python/") or "/" not in path:
        return "Python package"
    return "other"


def bucket(footprint: Footprint) -> str:
    kinds = set()
    for change in footprint.changes:
        if change.kind is ChangeKind.BUILD:
            kinds.add("build")
        elif area(change.path) == "server" and change.kind is not ChangeKind.FORMAT:
            kinds.add({ChangeKind.MODULE: "module", ChangeKind.DATA: "data", ChangeKind.BODY: "body"}[change.kind])
    return next((b for b in BUCKETS if b in kinds), "docs/tests/CI")


# -- what a module-level change is, by ast ----------------------------------------------------------------------


def _skeleton(tree: ast.Module, drop: set[str], sites: bool) -> str:
    """The module with every function body left out (``sites``: its ``def`` line kept, decorators, defaults and
    annotations included) and the plain functions named in ``drop`` removed."""

    def strip(body: list[ast.stmt], prefix: str) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + node.name
                if name in drop and not node.decorator_list:
                    continue
                if sites:
                    kept = type(node)(
                        name=node.name,
                        args=node.args,
                        body=[ast.Pass()],
                        decorator_list=node.decorator_list,
                        returns=node.returns,
                        type_comment=None,
                    )
                else:
                    kept = ast.Expr(ast.Constant(f"def {node.name}"))
                out.append(kept)
            elif isinstance(node, ast.ClassDef):
                node = ast.ClassDef(
                    name=node.name,
                    bases=node.bases,
                    keywords=node.keywords,
                    body=strip(node.body, f"{prefix}{node.name}."),
                    decorator_list=node.decorator_list,
                )
                out.append(node)
            else:
                out.append(node)
        return out

    return ast.dump(ast.Module(body=strip(tree.body, ""), type_ignores=[]))


def _defs(tree: ast.Module) -> dict[str, bool]:
    """Functions at module level or in classes only: qualname -> whether it has decorators."""
    out: dict[str, bool] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out[prefix + node.name] = bool(node.decorator_list)
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(tree.body, "")
    return out


def module_kind(old: bytes | None, new: bytes | None) -> tuple[str, list[str]]:
    """("definitions" | "signatures" | "other", the functions added or removed) for one file's module-level change."""
    if old is None or new is None:
        return "other", []
    try:
        before, after = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return "other", []
    was, now = _defs(before), _defs(after)
    changed = {name for name in was.keys() ^ now.keys() if not (was | now)[name]}
    if _skeleton(before, changed, True) == _skeleton(after, changed, True):
        return "definitions", sorted(changed)
    if _skeleton(before, changed, False) == _skeleton(after, changed, False):
        return "signatures", sorted(changed)
    return "other", sorted(changed)


# -- reading --------------------------------------------------------------------------------------------------


def first_parent(repo: Repo, tip: str, count: int) -> list[str]:
    out = repo.git("rev-list", "--first-parent", f"--max-count={count + 1}", tip)
    return out.split()[::-1]  # oldest first; the first is the line's GOOD


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "    - "


def quartiles(values: Sequence[float]) -> str:
    if len(values) < 2:
        return "-"
    q1, med, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return f"min {min(values):.0%}, q1 {q1:.0%}, median {med:.0%}, q3 {q3:.0%}, max {max(values):.0%}"


def shares(repo_path: Path, tip: str, commits: int, window: int) -> None:
    with Repo.discover(repo_path) as repo:
        line = first_parent(repo, tip, commits)
        started = time.perf_counter()
        footprints = line_footprints(repo, line[0], line[-1])
        took = time.perf_counter() - started
        raw = dict(repo.line_changes(line[0], line[-1]))
        buckets = [bucket(f) for f in footprints]
        counts = Counter(buckets)
        total = len(footprints)
        print(f"shares: {total} first-parent commits up to {line[-1][:12]} (read in {took:.1f} s)")
        for name in BUCKETS:
            print(f"  {name:<16} {counts[name]:5d}  {percent(counts[name], total)}")
        gateway = sum(
            name == "docs/tests/CI"
            and bool(f.changes)
            and all(c.path.startswith(("sgl-model-gateway/", "sgl-router/")) for c in f.changes)
            for f, name in zip(footprints, buckets, strict=True)
        )
        print(f"  of docs/tests/CI, the Rust gateway's files alone: {percent(gateway, total)}")
        inert = counts["body"] + counts["docs/tests/CI"]
        print(f"  only function bodies, docs, tests or CI: {percent(inert, total)}")
        print(f"  module level or build inputs:             {percent(counts['module'] + counts['build'], total)}")
        print(f"  data files of the server's package:       {percent(counts['data'], total)}")

        build_parts = Counter()
        for footprint, name in zip(footprints, buckets, strict=True):
            if name == "build":
                parts = {component(c.path) for c in footprint.changes if c.kind is ChangeKind.BUILD}
                build_parts[next(iter(parts)) if len(parts) == 1 else "several"] += 1
        print("  build inputs by component (commits): " + ", ".join(f"{k} {v}" for k, v in build_parts.most_common()))

        kinds = Counter()
        added: list[str] = []
        for footprint, name in zip(footprints, buckets, strict=True):
            if name != "module":
                continue
            files = {c.path for c in footprint.changes if c.kind is ChangeKind.MODULE and area(c.path) == "server"}
            found = []
            for change in raw[footprint.commit]:
                if change.path in files:
                    old = None if set(change.old_oid) == {"0"} else repo.read_blob_if_present(change.old_oid)
                    new = None if set(change.new_oid) == {"0"} else repo.read_blob_if_present(change.new_oid)
                    what, names = module_kind(old, new)
                    found.append(what)
                    if what == "definitions":
                        added.extend(names)
            kinds[max(found, key=("definitions", "signatures", "other").index) if found else "other"] += 1
        print(
            "  module level, by what changed there: "
            f"only plain functions added or removed {percent(kinds['definitions'], total)}, "
            f"only def statements (decorators, defaults, annotations) {percent(kinds['signatures'], total)}, "
            f"other {percent(kinds['other'], total)}"
        )
        evidence(repo, line[-1], added)

        def share(names: Iterable[str], start: int) -> float:
            chosen = set(names)
            return sum(b in chosen for b in buckets[start : start + window]) / window

        starts = range(0, max(total - window + 1, 0))
        print(f"windows: every run of {window} consecutive commits ({len(starts)} of them)")
        print(f"  bodies, docs, tests or CI: {quartiles([share(('body', 'docs/tests/CI'), s) for s in starts])}")
        print(f"  docs, tests or CI only:    {quartiles([share(('docs/tests/CI',), s) for s in starts])}")
        print(
            f"  bodies, docs, tests, CI or package data: "
            f"{quartiles([share(('body', 'docs/tests/CI', 'data'), s) for s in starts])}"
        )


def evidence(repo: Repo, tip: str, added: list[str]) -> None:
    """What the plain functions that module-level-only-by-definitions commits add or remove are named like."""
    if not added:
        return
    probed = set(
        re.findall(
            r"""(?:hasattr|getattr)\([^,()]+,\s*["']([A-Za-z_]\w*)["']""",
            repo.git("grep", "-hE", r"(hasattr|getattr)\(", tip, "--", "python/", check=False),
        )
    )
    methods = Counter(
        re.findall(
            r"^\s+(?:async\s+)?def\s+([A-Za-z_]\w*)\(",
            repo.git("grep", "-hE", r"^\s+(async\s+)?def ", tip, "--", "python/", check=False),
            re.M,
        )
    )
    names = [n.rsplit(".", 1)[-1] for n in added]
    in_class = [n for n in added if "." in n]
    dunder = sum(n.startswith("__") and n.endswith("__") for n in names)
    hasattr_named = sum(n in probed for n in names)
    shared = sum(methods[n.rsplit(".", 1)[-1]] >= 2 for n in in_class)
    print(
        f"  the {len(added)} plain functions those commits add or remove: {len(in_class)} are methods; "
        f"{dunder} dunders; {hasattr_named} have a name some hasattr/getattr in python/ looks up; "
        f"{shared} of the methods have a name defined in two or more classes (an override, or overridden)"
    )


def speed(repo_path: Path, tip: str, commits: int) -> None:
    with Repo.discover(repo_path) as repo:
        line = first_parent(repo, tip, commits)
        good, bad = line[0], line[-1]
        # git's own time: the two logs the reader runs, and the blobs it reads
        before, started = children_cpu(), time.perf_counter()
        patch = repo.spawn_line_hunks(good, bad)
        changes = repo.line_changes(good, bad)
        hunks = parse_hunks(patch.bytes())
        oids = sorted(
            {o for _sha, raw in changes for c in raw if c.path.endswith(".py") for o in (c.old_oid, c.new_oid)}
            - {"0" * len(good)}
        )
        subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=repo.root or repo.git_dir,
            input="".join(f"{o}\n" for o in oids).encode(),
            capture_output=True,
            check=False,
            env={**git_environment(), "GIT_NO_LAZY_FETCH": "1"},
        )
        git_wall, git_cpu = time.perf_counter() - started, children_cpu() - before
        del hunks
        # the baseline: every version of every changed Python file compiled whole (what a reader without the
        # function-at-a-time path, or without the last version's summary, would do)
        blobs = [(o, repo.read_blob_if_present(o)) for o in oids]
        whole_cpu = time.process_time()
        for oid, data in blobs:
            if data is not None:
                summarize(data, oid)
        whole_cpu = time.process_time() - whole_cpu
        del blobs
    runs = []
    cache = FootprintCache()
    for _label in ("cold", "warm"):
        with Repo.discover(repo_path) as repo:
            before_children, cpu, started = children_cpu(), time.process_time(), time.perf_counter()
            read = line_footprints(repo, good, bad, cache)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - started
        runs.append((cpu, wall, children_cpu() - before_children))
        assert len(read) == commits
    whole = cache.full_compiles
    print(f"speed: {commits} commits, {len(oids)} Python blobs ({whole} compiled whole, the rest a function at a time)")
    print(f"  git alone (both logs, every blob): {git_wall:.2f} s wall, {git_cpu:.2f} s CPU")
    print(f"  every version compiled whole:      {whole_cpu:.2f} s CPU ({commits / whole_cpu:.0f} commits/s)")
    for label, (cpu, wall, child) in zip(("cold", "warm (the cache)"), runs, strict=True):
        print(
            f"  {label:<17} {cpu:6.2f} s CPU beyond git ({commits / cpu:7.0f} commits/s), {wall:6.2f} s wall, "
            f"git {child:.2f} s CPU; CPU / git's: {cpu / git_cpu:.2f}x, / compiled whole: {cpu / whole_cpu:.2f}x"
        )


def check(repo_path: Path, tip: str, commits: int) -> None:
    """The fast reading against whole-file compiles, file by file."""
    same = coarser = 0
    wrong: list[str] = []
    with Repo.discover(repo_path) as repo:
        line = first_parent(repo, tip, commits)
        footprints = {f.commit: f for f in line_footprints(repo, line[0], line[-1])}
        for sha, raw in repo.line_changes(line[0], line[-1]):
            for change in raw:
                if path_kind(change.path) is not PathKind.PYTHON or change.status != "M":
                    continue
                if change.old_mode != change.new_mode:
                    continue
                old, new = repo.read_blob_if_present(change.old_oid), repo.read_blob_if_present(change.new_oid)
                if old is None or new is None or change.new_mode == "120000":
                    continue
                whole = python_changes(change.path, old, new)
                got = [c for c in footprints[sha].changes if c.path == change.path]
                if not covers(got, whole):
                    wrong.append(f"{sha[:12]} {change.path}")
                elif {(c.kind, c.qualname) for c in got} == {(c.kind, c.qualname) for c in whole}:
                    same += 1
                else:
                    coarser += 1
    total = same + coarser + len(wrong)
    print(f"check: {total} Python file changes in {commits} commits, read fast and compiled whole")
    print(f"  the same {same}, more conservative {coarser}, less conservative (must be 0) {len(wrong)}")
    for where in wrong[:10]:
        print(f"    {where}")


def covers(fast: Sequence[Change], whole: Sequence[Change]) -> bool:
    """Whether the fast reading says at least what the whole compile says: module level covers a file."""
    if any(c.kind is ChangeKind.MODULE for c in fast):
        return True
    if any(c.kind is ChangeKind.FORMAT for c in fast):
        return all(c.kind is ChangeKind.FORMAT for c in whole)
    said = {(c.kind, c.qualname) for c in fast}
    return all(c.kind is ChangeKind.FORMAT or (c.kind, c.qualname) in said for c in whole)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a clone or mirror of SGLang")
    parser.add_argument("--tip", default="HEAD")
    parser.add_argument("--commits", type=int, default=1500)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--speed-commits", type=int, default=512)
    parser.add_argument("--check", type=int, default=0, help="compare with whole-file compiles over N commits")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.speed_commits:
        speed(args.repo, args.tip, args.speed_commits)
    if args.commits:
        shares(args.repo, args.tip, args.commits, args.window)
    if args.check:
        check(args.repo, args.tip, args.check)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
