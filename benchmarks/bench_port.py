"""Benchmark: carry real upstream changes forward with `port`, against `git merge-file`.

The question: when a structured manifest stops applying because upstream
moved on, does ``port`` carry it where a line merge does, to the same code,
and where a line merge cannot?  On a real history (a clone the caller
fetched; nothing is downloaded here), with ``bench_replay.py``'s fixed
selection rule:

1. **Selection.** First-parent, non-merge commits that only modify 1-4
   existing ``.py`` files with at most ``--max-lines`` changed lines, newest
   first, the first ``--commits`` of them (``bench_replay.selectable``).
2. **A local change written at an older commit.** For each selected commit C
   (parent P) and each older first-parent commit Q = P~k (k in ``BACK``),
   C's change is put on Q's files with ``git merge-file`` (base P, ours C,
   theirs Q): that is the change as a user would have written it at Q.  A
   cell is dropped when Q already has it.  Where that merge conflicts
   (upstream moved or rewrote the code between Q and P), the change is put
   on Q by patchkit instead: C's change captured with ``import-diff`` at P,
   applied at Q (``engine.evaluate`` and ``render``); a cell is dropped when
   that does not apply either.  These cells are the ones where a line merge
   cannot follow the code, so git's merge in step 3 conflicts there too:
   the cells where git conflicts but port may succeed, checked against C
   itself.  The change is captured with the real ``import-diff`` at Q.
3. **A port cell** is one where that manifest FAILs at P (upstream moved
   between Q and P in a way the manifest cannot take as it is).  There:
   * git: ``git merge-file`` of each file (base Q, ours Q + change, theirs P);
   * patchkit: ``port --from Q --to P`` (``patchkit.port.port``, the code the
     command runs), the ported manifest applied at P in memory
     (``engine.evaluate`` and ``render``, what ``apply`` writes).
   Files are compared by syntax tree (``ast.dump``): port's against git's
   merge, and both against C itself (the change as upstream wrote it at P).

It prints the counts of each step, the table of port cells (git merges
cleanly / git conflicts, by what port did), and every cell where port
refused or gave other code than git's clean merge, and the cells where git
conflicts and port succeeds, each with what port changed, to be read by
hand.  Counts only, no timings.

    python benchmarks/bench_port.py /tmp/replay-repo [--commits 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import first_parent_list, git, selectable

import patchkit
from patchkit.capture.import_diff import import_diff
from patchkit.capture.textdiff import unified_diff
from patchkit.engine.evaluate import evaluate, render
from patchkit.errors import PatchkitError
from patchkit.git import Repo, merge_texts
from patchkit.manifest import Manifest, load_manifest
from patchkit.port import port
from patchkit.sources.commit import CommitSource

BACK = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89)


@dataclass
class PortCell:
    """One port cell: the commit C, the older commit Q the change was written at, what git and port did."""

    commit: str
    written_at: str
    back: int
    git_clean: bool
    port: str  # "ported" | "refused" | "error"
    how: dict[str, str] = field(default_factory=dict)  # patch -> how
    same_as_git: bool | None = None  # port's files AST-equal to git's clean merge
    same_as_commit: bool | None = None  # port's files AST-equal to C's
    git_same_as_commit: bool | None = None
    why: str = ""
    renamed: bool = False  # a file of the change was renamed between Q and P (git's rename detection)
    placed_by: str = "git"  # how the change was put on Q: git merge-file, or patchkit (C's change applied at Q)


@dataclass
class Tally:
    """The counts of each step, and the port cells."""

    commits: int = 0
    pairs: int = 0
    git_cannot_place: int = 0  # neither git merge-file nor C's change as a manifest puts it on Q
    ops_placed: int = 0  # git merge-file conflicts, C's change as a manifest applies at Q
    already_there: int = 0
    import_refused: int = 0
    applies_as_is: int = 0
    cells: list[PortCell] = field(default_factory=list)


def show_file(repo: Path, rev: str, path: str) -> str | None:
    out = git(repo, "show", f"{rev}:{path}", check=False)
    return out.stdout.decode("utf-8", "surrogateescape") if out.returncode == 0 else None


def renamed_between(repo: Path, older: str, newer: str) -> dict[str, str]:
    """Files git's rename detection calls renamed from ``older`` to ``newer``: new path -> old path."""
    out = git(repo, "diff", "-M", "--name-status", "--diff-filter=R", "-z", older, newer).stdout.decode()
    fields = out.split("\0")
    found: dict[str, str] = {}
    for i in range(0, len(fields) - 2, 3):
        if fields[i].startswith("R"):
            found[fields[i + 2]] = fields[i + 1]
    return found


def same_code(a: str | None, b: str | None, path: str) -> bool:
    if a is None or b is None:
        return a == b
    if not path.endswith(".py"):
        return a == b
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except SyntaxError:
        return a == b


def run(repo_path: Path, n_commits: int, max_lines: int, save: Path | None = None) -> Tally:
    tally = Tally()
    order = first_parent_list(repo_path)
    index = {sha: i for i, sha in enumerate(order)}
    # lazily: a long history (SGLang's ~15k first-parent commits) is not scanned past the newest n
    chosen = list(islice((sha for sha in reversed(order) if selectable(repo_path, sha, max_lines)), n_commits))
    tally.commits = len(chosen)
    scratch = Path(tempfile.mkdtemp(prefix="bench-port-"))
    at_p: dict[str, Manifest | None] = {}  # C's change captured at P, once per commit
    done = 0
    try:
        with Repo.discover(repo_path) as repo:
            for sha in chosen:
                parent = order[index[sha] - 1]
                files = [
                    line.split("\t", 1)[1]
                    for line in git(repo_path, "diff", "--name-status", parent, sha).stdout.decode().splitlines()
                ]
                for k in BACK:
                    if index[parent] - k < 0:
                        break
                    older = order[index[parent] - k]
                    tally.pairs += 1
                    one(repo, repo_path, sha, parent, older, k, files, scratch, tally, at_p)
                done += 1
                if save is not None:  # after each commit, so that a run cut short keeps what it did
                    save.write_text(json.dumps({"commits_done": done, **asdict(tally)}, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return tally


def one(
    repo: Repo,
    repo_path: Path,
    sha: str,
    parent: str,
    older: str,
    k: int,
    files: list[str],
    scratch: Path,
    tally: Tally,
    at_p: dict[str, Manifest | None],
) -> None:
    was = renamed_between(repo_path, older, parent)  # path at P -> its path at Q, for files git calls renamed
    placed_by = "git"
    placed = place_by_git(repo_path, sha, parent, older, files, was)
    if placed is None:
        placed_by = "patchkit"
        placed = place_by_ops(repo, repo_path, sha, parent, older, files, was, scratch, at_p)
        if placed is None:
            tally.git_cannot_place += 1
            return
        tally.ops_placed += 1
    at_q, ours_q = placed
    if all(at_q[p] == ours_q[p] for p in files):
        tally.already_there += 1
        return
    work = scratch / f"{sha[:10]}-{k}"
    work.mkdir()
    patch = work / "change.patch"
    patch.write_text("".join(unified_diff(was.get(p, p), at_q[p], ours_q[p]) for p in files), encoding="utf-8")
    try:
        captured = import_diff(repo, patch, name="local", base=older, out=work / "kit", force=True)
    except PatchkitError:
        tally.import_refused += 1
        return
    manifest = load_manifest(captured.manifest)
    target = repo.commit(parent)
    if not evaluate(manifest, CommitSource(repo, target), hints=False).refused():
        tally.applies_as_is += 1
        return
    git_merged: dict[str, str | None] = {}
    for path in files:
        merged, conflicts = merge_texts(
            at_q[path], ours_q[path], show_file(repo_path, parent, path) or "", ("o", "b", "t")
        )
        git_merged[path] = None if conflicts else merged
    git_clean = all(v is not None for v in git_merged.values())
    cell = PortCell(
        sha[:10], older[:10], k, git_clean, "refused", renamed=any(p in was for p in files), placed_by=placed_by
    )
    truth = {p: show_file(repo_path, sha, p) for p in files}
    if git_clean:
        cell.git_same_as_commit = all(same_code(git_merged[p], truth[p], p) for p in files)
    try:
        plan = port(manifest, repo, parent, start=older)
    except PatchkitError as exc:
        cell.port, cell.why = "error", exc.one_line()
        tally.cells.append(cell)
        return
    cell.how = {p.patch: p.how.value for p in plan.patches}
    if plan.refused:
        cell.why = " | ".join(f"{p.patch}: {p.how.value}: {p.message}"[:300] for p in plan.patches if not p.result.ok)
        tally.cells.append(cell)
        return
    for change in plan.files:
        change.path.write_bytes(change.after)
    ported = load_manifest(captured.manifest)
    evaluation = evaluate(ported, CommitSource(repo, target), hints=False)
    rendered, evaluation = render(evaluation)
    if evaluation.refused():
        cell.why = "the ported manifest does not render at P"
        tally.cells.append(cell)
        return
    cell.port = "ported"
    got = {r.path: r.after.decode("utf-8", "surrogateescape") for r in rendered}
    result = {p: got.get(p, show_file(repo_path, parent, p)) for p in files}
    cell.same_as_commit = all(same_code(result[p], truth[p], p) for p in files)
    if git_clean:
        cell.same_as_git = all(same_code(result[p], git_merged[p], p) for p in files)
    tally.cells.append(cell)


Placed = tuple[dict[str, str], dict[str, str]]  # per file of the change: its text at Q, and with the change


def place_by_git(
    repo_path: Path, sha: str, parent: str, older: str, files: list[str], was: dict[str, str]
) -> Placed | None:
    """C's change put on Q's files with ``git merge-file`` (base P, ours C, theirs Q); None where it conflicts."""
    at_q: dict[str, str] = {}
    ours_q: dict[str, str] = {}
    for path in files:
        base, ours = (show_file(repo_path, rev, path) for rev in (parent, sha))
        theirs = show_file(repo_path, older, was.get(path, path))
        if base is None or ours is None or theirs is None:
            return None
        merged, conflicts = merge_texts(base, ours, theirs, ("c", "p", "q"))
        if conflicts:
            return None
        at_q[path], ours_q[path] = theirs, merged
    return at_q, ours_q


def place_by_ops(
    repo: Repo,
    repo_path: Path,
    sha: str,
    parent: str,
    older: str,
    files: list[str],
    was: dict[str, str],
    scratch: Path,
    at_p: dict[str, Manifest | None],
) -> Placed | None:
    """C's change put on Q by patchkit: captured with ``import-diff`` at P (once per commit), evaluated and
    rendered at Q.  None where a file was renamed in between (the line merge's case), or it does not apply."""
    if any(p in was for p in files):
        return None
    if sha not in at_p:
        work = scratch / f"{sha[:10]}-at-p"
        work.mkdir()
        patch = work / "change.patch"
        texts = [(p, show_file(repo_path, parent, p), show_file(repo_path, sha, p)) for p in files]
        patch.write_text("".join(unified_diff(p, a or "", b or "") for p, a, b in texts), encoding="utf-8")
        try:
            at_p[sha] = load_manifest(
                import_diff(repo, patch, name="at-p", base=parent, out=work / "kit", force=True).manifest
            )
        except PatchkitError:
            at_p[sha] = None
    manifest = at_p[sha]
    if manifest is None:
        return None
    rendered, evaluation = render(evaluate(manifest, CommitSource(repo, repo.commit(older)), hints=False))
    if evaluation.refused():
        return None
    got = {r.path: r.after.decode("utf-8", "surrogateescape") for r in rendered}
    at_q = {p: show_file(repo_path, older, p) for p in files}
    if any(text is None for text in at_q.values()):
        return None
    return {p: t or "" for p, t in at_q.items()}, {p: got.get(p, at_q[p] or "") for p in files}


def show(tally: Tally) -> None:
    print(f"patchkit from {Path(patchkit.__file__).parent}")
    print(f"{tally.commits} commits selected; {tally.pairs} (commit, older commit) pairs")
    print(
        f"  {tally.git_cannot_place:>5}  the change cannot be put on the older commit (git merge-file conflicts, "
        "and C's change as a manifest does not apply there)"
    )
    print(
        f"  {tally.ops_placed:>5}  git merge-file conflicts there, C's change as a manifest applies: put on by patchkit"
    )
    print(f"  {tally.already_there:>5}  the older commit has it already")
    print(f"  {tally.import_refused:>5}  import-diff refused it there")
    print(f"  {tally.applies_as_is:>5}  the manifest applies at the parent as it is (nothing to port)")
    print(f"  {len(tally.cells):>5}  port cells: the manifest FAILs at the parent")
    print()
    clean = [c for c in tally.cells if c.git_clean]
    conflicted = [c for c in tally.cells if not c.git_clean]
    rows = [
        ("git merge-file merges cleanly", clean),
        ("git merge-file conflicts", conflicted),
    ]
    print(f"{'cells':<32}{'n':>5}{'ported':>8}{'= git':>8}{'= C':>8}{'refused':>9}")
    for label, cells in rows:
        ported = [c for c in cells if c.port == "ported"]
        print(
            f"{label:<32}{len(cells):>5}{len(ported):>8}"
            f"{sum(bool(c.same_as_git) for c in ported):>8}{sum(bool(c.same_as_commit) for c in ported):>8}"
            f"{len(cells) - len(ported):>9}"
        )
    if clean:
        equal = sum(bool(c.same_as_git) for c in clean)
        git_c = sum(bool(c.git_same_as_commit) for c in clean)
        print(
            f"where git merges cleanly: port gives git's code (AST) in {equal} of {len(clean)} "
            f"({equal / len(clean):.1%}); git's merge equals C itself in {git_c} of {len(clean)}"
        )
    renamed = [c for c in tally.cells if c.renamed]
    carried = sum(c.port == "ported" for c in renamed)
    same = sum(bool(c.same_as_commit) for c in renamed)
    print(
        f"cells where a file of the change was renamed in between: {len(renamed)}, ported {carried}, same as C {same}"
    )
    hows = Counter(h for c in tally.cells for h in c.how.values())
    print("how patches were carried (all port cells): " + ", ".join(f"{h} {n}" for h, n in hows.most_common()))
    print()
    for c in tally.cells:
        if c.git_clean and not c.same_as_git:
            print(
                f"  git merges, port {'differs' if c.port == 'ported' else c.port}: {c.commit} written at "
                f"{c.written_at} (P~{c.back}): {c.why or c.how}"
            )
    for c in conflicted:
        print(
            f"  git conflicts, port {'carries it' if c.port == 'ported' else c.port}: {c.commit} written at "
            f"{c.written_at} (P~{c.back}, placed by {c.placed_by}): {c.why or c.how}; same as C: {c.same_as_commit}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--max-lines", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    tally = run(args.repo, args.commits, args.max_lines, save=args.json)
    show(tally)


if __name__ == "__main__":
    main()
