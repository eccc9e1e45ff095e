"""Benchmark: replay real upstream changes at older and newer commits, against `git apply`.

The question is whether patchkit's structured patches keep applying while
upstream moves at least as well as a plain diff does, and never differently.
On a real history (a clone the caller fetched; nothing is downloaded here):

1. **Selection (a fixed rule).** First-parent, non-merge commits of HEAD's
   history that only modify 1-4 existing ``.py`` files (no added, deleted or
   renamed file) with at most ``--max-lines`` changed lines, newest first,
   the first ``--commits`` of them.
2. **Capture.** Each commit C's diff against its first parent P is captured
   with ``import-diff`` at P (the real ``patchkit.capture.import_diff``).
3. **Replay.** The manifest is evaluated and rendered (``engine.evaluate``,
   the code `check` and `apply` run) at first-parent commits before P
   (P~1, P~2, P~3, P~5, ... up to ``--back``) and at C and after it.
4. **Oracle.** At the same commits, in a scratch index (``GIT_INDEX_FILE``):
   ``git apply --cached --check`` forward and reverse, and the bytes of a
   real ``git apply --cached``.

It prints how many selected commits ``import-diff`` refused (each with its
words), the cell classes, the op mix, the share of Python file changes
carried by structured ops (a refused commit's files count in the denominator:
they are changes patchkit did not carry), a table of the causes of the rest
(``diff`` fallbacks by cause, and the refused commits' files), and every cell
where git applies and patchkit refuses (with patchkit's reason) so each can
be judged.  Run it against another checkout of patchkit with ``PYTHONPATH``
(e.g. main's code, for a before/after): the first line names the patchkit
that ran.

    python benchmarks/bench_replay.py /tmp/replay-repo [--commits 60] [--json out.json]

No timings: only counts, so the shared machine's load does not matter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import patchkit
from patchkit.capture.import_diff import import_diff
from patchkit.engine.evaluate import evaluate, render
from patchkit.errors import PatchkitError
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.results import Status
from patchkit.sources.commit import CommitSource
from patchkit.wording import plural

BACK = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144)
FORWARD = (0, 1, 2, 4, 8, 16, 32, 64)  # 0: C itself (the change is there)


def git(
    repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env, check=check)


def first_parent_list(repo: Path) -> list[str]:
    out = git(repo, "rev-list", "--first-parent", "HEAD").stdout.decode().split()
    return out[::-1]  # oldest first


def selectable(repo: Path, sha: str, max_lines: int) -> bool:
    parents = git(repo, "rev-list", "--parents", "-n1", sha).stdout.decode().split()[1:]
    if len(parents) != 1:
        return False
    rows = git(repo, "diff", "--no-renames", "--name-status", parents[0], sha).stdout.decode().splitlines()
    if not 1 <= len(rows) <= 4:
        return False
    if any(not r.startswith("M\t") or not r.endswith(".py") for r in rows):
        return False
    stat = git(repo, "diff", "--numstat", parents[0], sha).stdout.decode().splitlines()
    total = 0
    for line in stat:
        added, removed, _ = line.split("\t", 2)
        if added == "-":
            return False
        total += int(added) + int(removed)
    return 0 < total <= max_lines


@dataclass
class Cell:
    commit: str
    target: str
    offset: int  # negative: before P; 0: C; positive: after C
    git_forward: bool
    git_reverse: bool
    patchkit: str  # "apply" | "present" | "refuse"
    reasons: tuple[str, ...] = ()
    same_bytes: bool | None = None
    klass: str = ""


@dataclass
class Report:
    commits: list[str] = field(default_factory=list)
    capture_failed: dict[str, str] = field(default_factory=dict)
    capture_failed_files: int = 0  # the Python file changes of the refused commits (not carried at all)
    ops: Counter[str] = field(default_factory=Counter)
    py_files: int = 0
    py_files_structured: int = 0
    fallbacks: list[tuple[str, str, str]] = field(default_factory=list)  # commit, file, why
    cells: list[Cell] = field(default_factory=list)
    summaries: list[tuple[str, str, str, str]] = field(default_factory=list)  # commit, file, op, why


class Oracle:
    """`git apply` in a scratch index at a commit."""

    def __init__(self, repo: Path, scratch: Path) -> None:
        self.repo = repo
        self.env = {**os.environ, "GIT_INDEX_FILE": str(scratch / "index")}

    def run(self, target: str, patch: Path, files: Sequence[str]) -> tuple[bool, bool, dict[str, bytes] | None]:
        git(self.repo, "read-tree", target, env=self.env)
        fwd = git(self.repo, "apply", "--cached", "--check", str(patch), env=self.env, check=False).returncode == 0
        rev = (
            git(self.repo, "apply", "--cached", "--check", "-R", str(patch), env=self.env, check=False).returncode == 0
        )
        out: dict[str, bytes] | None = None
        if fwd:
            git(self.repo, "apply", "--cached", str(patch), env=self.env)
            out = {f: git(self.repo, "show", f":{f}", env=self.env).stdout for f in files}
        return fwd, rev, out


def cause(why: str) -> str:
    """A fallback's cause bucket (the same rule for every version of patchkit)."""
    rules = [
        (r"import", "imports that cannot be placed"),
        (r"byte for byte", "would not reproduce it byte for byte"),
        (r"middle of class", "method added in the middle of a class"),
        (r"only formatting or comments", "formatting or comments only"),
        (r"^no structured op fits: (deletes|removes)", "deleted definition or statement"),
        (r"__main__", "changed `if __name__` block"),
        (r"would be (FAIL|SKIP|WARN)|could not render|would not load", "structured ops refused at the base"),
        (r"changes def |changes class |header of class", "changed def or class shape"),
        (r"changes `", "changed module-level statement"),
        (r"adds ", "added a statement that is not a definition"),
    ]
    for pattern, bucket in rules:
        if re.search(pattern, why):
            return bucket
    return "other"


def replay(repo_path: Path, n_commits: int, max_lines: int, back: int) -> Report:
    report = Report()
    order = first_parent_list(repo_path)
    index = {sha: i for i, sha in enumerate(order)}
    chosen = [sha for sha in reversed(order) if selectable(repo_path, sha, max_lines)][:n_commits]
    scratch = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    oracle = Oracle(repo_path, scratch)
    try:
        with Repo.discover(repo_path) as repo:
            for sha in chosen:
                replay_one(repo, repo_path, sha, order, index, back, scratch, oracle, report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report


def replay_one(
    repo: Repo,
    repo_path: Path,
    sha: str,
    order: list[str],
    index: dict[str, int],
    back: int,
    scratch: Path,
    oracle: Oracle,
    report: Report,
) -> None:
    short = sha[:10]
    report.commits.append(short)
    parent = order[index[sha] - 1]
    patch = scratch / f"{short}.patch"
    patch.write_bytes(git(repo_path, "diff", "--no-renames", "--full-index", parent, sha).stdout)
    files = [
        line.split("\t", 1)[1]
        for line in git(repo_path, "diff", "--name-status", parent, sha).stdout.decode().splitlines()
    ]
    out = scratch / f"out-{short}"
    try:
        captured = import_diff(repo, patch, name=f"c-{short}", base=parent, out=out, force=True)
    except PatchkitError as exc:
        report.capture_failed[short] = exc.one_line()
        report.capture_failed_files += sum(path.endswith(".py") for path in files)
        return
    by_file: dict[str, list[str]] = defaultdict(list)
    for p in captured.patches:
        report.ops[p.op] += 1
        by_file[p.file].append(p.op)
        report.summaries.append((short, p.file, p.op, p.why))
        if p.op == "diff":
            report.fallbacks.append((short, p.file, p.why))
    for path, ops in by_file.items():
        if path.endswith(".py"):
            report.py_files += 1
            report.py_files_structured += "diff" not in ops
    manifest = load_manifest(captured.manifest)
    here = index[sha]
    targets = [(-k, order[index[parent] - k]) for k in BACK if k <= back and index[parent] - k >= 0]
    targets += [(k, order[here + k]) for k in FORWARD if here + k < len(order)]
    for offset, target in targets:
        report.cells.append(cell(repo, oracle, manifest, patch, files, short, offset, target))


def cell(
    repo: Repo, oracle: Oracle, manifest, patch: Path, files: list[str], short: str, offset: int, target: str
) -> Cell:  # type: ignore[no-untyped-def]
    fwd, rev, git_bytes = oracle.run(target, patch, files)
    commit = repo.commit(target)
    evaluation = evaluate(manifest, CommitSource(repo, commit), hints=False)
    results = evaluation.results
    failed = [r for r in results if r.status is Status.FAIL]
    c = Cell(short, target[:10], offset, fwd, rev, "refuse")
    if failed:
        c.reasons = tuple(
            f"{r.patch}: {r.status.value} {r.reason.value if r.reason else ''} {r.message}" for r in failed
        )
    elif any(r.status is Status.APPLY for r in results):
        c.patchkit = "apply"
        rendered, evaluation = render(evaluation)
        bad = [r for r in evaluation.results if r.status is Status.FAIL]
        if bad:
            c.patchkit = "refuse"
            c.reasons = tuple(f"{r.patch}: FAIL {r.reason.value if r.reason else ''} {r.message}" for r in bad)
        elif git_bytes is not None:
            got = {r.path: r.after for r in rendered}
            c.same_bytes = all(
                got[f] == git_bytes[f] if f in got else _unchanged(repo, commit.sha, f, git_bytes) for f in files
            )
    else:
        c.patchkit = "present"
    c.klass = classify(c)
    return c


def _unchanged(repo: Repo, sha: str, path: str, want: dict[str, bytes]) -> bool:
    """A file patchkit did not render (its patches SKIP) is compared as the commit's own bytes."""
    entry = repo.ls_tree(sha, [path]).get(path)
    base = repo.read_blob(entry.oid) if entry is not None else None
    return base == want[path]


def classify(c: Cell) -> str:
    if c.patchkit == "apply" and c.git_forward:
        return "both apply, identical files" if c.same_bytes else "both apply, DIFFERENT files"
    if c.patchkit == "apply":
        return "patchkit applies, git cannot" + (" (git: reverse applies)" if c.git_reverse else "")
    if c.patchkit == "present" and c.git_reverse and not c.git_forward:
        return "already present: agree"
    if c.patchkit == "present" and c.git_forward:
        return "patchkit: present, git: applies"
    if c.patchkit == "present":
        return "patchkit: present, git: neither"
    if c.git_forward:
        return "git applies, patchkit refuses"
    if c.git_reverse:
        return "git: present, patchkit refuses"
    return "both refuse"


REFUSED = "commit refused by import-diff"


def causes_table(report: Report) -> list[tuple[str, int]]:
    """(cause, Python file changes) of every change not carried by structured ops alone, most first:
    each ``diff`` fallback by ``cause``, and the files of the commits ``import-diff`` refused."""
    counts = Counter(cause(why) for _short, _path, why in report.fallbacks)
    if report.capture_failed_files:
        counts[REFUSED] = report.capture_failed_files
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def show(report: Report) -> None:
    print(f"patchkit from {Path(patchkit.__file__).parent}")
    captured = len(report.commits) - len(report.capture_failed)
    print(
        f"{len(report.commits)} commits selected: {captured} captured at their parent, "
        f"{len(report.capture_failed)} refused by import-diff"
    )
    for short, why in report.capture_failed.items():
        print(f"  import-diff refused {short}: {why}")
    print()
    print("cell classes (one cell = one commit's captured manifest at one other commit)")
    classes = Counter(c.klass for c in report.cells)
    for klass, n in sorted(classes.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>5}  {klass}")
    print(f"  {len(report.cells):>5}  total")
    print()
    refusals = [c for c in report.cells if c.klass == "git applies, patchkit refuses"]
    print(f"git applies, patchkit refuses: {len(refusals)} cells, by reason")
    reasons = Counter(_reason_kind(r) for c in refusals for r in c.reasons)
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>5}  {reason}")
    for c in refusals:
        print(f"    {c.commit} at {c.target} ({c.offset:+d}): {' | '.join(r[:300] for r in c.reasons)}")
    different = [c for c in report.cells if c.klass == "both apply, DIFFERENT files"]
    for c in different:
        print(f"  DIFFERENT: {c.commit} at {c.target} ({c.offset:+d})")
    print()
    print("op mix (patches captured)")
    for op, n in sorted(report.ops.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>5}  {op}")
    total = report.py_files + report.capture_failed_files
    share = report.py_files_structured / total if total else 0.0
    refused = (
        f", counting the {plural(report.capture_failed_files, 'file change')} of the "
        f"{plural(len(report.capture_failed), 'commit')} import-diff refused"
        if report.capture_failed
        else ""
    )
    print(
        f"Python file changes carried by structured ops only: {report.py_files_structured} of {total}{refused} "
        f"({share:.0%})"
    )
    print()
    table = causes_table(report)
    print(f"Python file changes not carried by structured ops alone, by cause ({sum(n for _, n in table)})")
    width = max([len("cause"), *(len(c) for c, _ in table)])
    print(f"  {'cause':<{width}}  count")
    for bucket, n in table:
        print(f"  {bucket:<{width}}  {n:>5}")
    print()
    print("each diff fallback")
    causes: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for item in report.fallbacks:
        causes[cause(item[2])].append(item)
    for bucket, items in sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {bucket}")
        for short, path, why in items:
            print(f"    {short} {path}: {why[:260]}")


def _reason_kind(reason: str) -> str:
    match = re.match(r"[^:]+: (\w+ \w+)", reason)
    return match.group(1) if match else reason[:40]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a clone with the history to replay (not modified)")
    parser.add_argument("--commits", type=int, default=60, help="how many selected commits to replay")
    parser.add_argument("--max-lines", type=int, default=200, help="most changed lines of a selected commit")
    parser.add_argument("--back", type=int, default=144, help="furthest first-parent commit before the parent")
    parser.add_argument("--json", type=Path, help="write every cell and capture summary here")
    args = parser.parse_args()
    report = replay(args.repo.resolve(), args.commits, args.max_lines, args.back)
    show(report)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "cells": [c.__dict__ for c in report.cells],
                    "summaries": report.summaries,
                    "capture_failed": report.capture_failed,
                    "causes": dict(causes_table(report)),
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
