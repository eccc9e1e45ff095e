"""`patchkit demo`: the whole workflow on a generated SGLang-shaped upstream.

Builds a small git repository shaped like SGLang around the Kimi-K2.5 and
EAGLE-3 changes of early 2026 (see ``patchkit.demo.sglang``), then runs what
a user would: a range check of the bundled manifests, an apply at a commit
that needs the patches, the same apply again (nothing to do), and an apply at
a commit where the class was renamed (refused, nothing written).  Each step
is checked: the demo exits non-zero if patchkit did not behave as shown.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rich.console import Console

from patchkit.commands import apply as apply_cmd
from patchkit.commands import check as check_cmd
from patchkit.demo.sglang import MAIN, RENAME_BRANCH, build_sglang_history
from patchkit.engine.apply import apply_worktree
from patchkit.engine.check import check_range
from patchkit.engine.commit_apply import apply_at_commit
from patchkit.errors import ExitCode, InternalError, UsageError
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.results import Status


def demo(*, keep: str | None, console: Console) -> int:
    if keep is not None:
        work = Path(keep).resolve()
        if work.exists():
            raise UsageError(f"{work} already exists", hint="--keep takes a new directory")
        work.mkdir(parents=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="patchkit-demo-"))
    try:
        _run(work, console)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if keep is not None:
        console.print(
            f"\nThe demo repository is kept at {work / 'sglang'}; try e.g.\n"
            f"  patchkit explain -m kimi-k25-eagle3 eagle3-hooks --repo {work / 'sglang'} "
            f"--commit {RENAME_BRANCH}"
        )
    return int(ExitCode.OK)


def _step(console: Console, title: str) -> None:
    console.print()
    console.print(f"== {title}", style="bold", markup=False)


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise InternalError(f"the demo did not go as designed: {what}")


def _run(work: Path, console: Console) -> None:
    path = work / "sglang"
    history = build_sglang_history(path)
    with Repo.discover(path) as repo:
        kimi = load_manifest("kimi-k25-eagle3")
        timing = load_manifest("eagle3-verify-timing")
        console.print(
            f"Built an SGLang-shaped upstream at {path}: {len(history.order)} commits on {MAIN} and "
            f"{RENAME_BRANCH} (a branch that renames the Kimi-K2.5 class), tag v0.5.8."
        )

        checks = [(kimi, f"v0.5.8..{MAIN}"), (kimi, f"{MAIN}..{RENAME_BRANCH}"), (timing, f"v0.5.8..{MAIN}")]
        for number, (manifest, span) in enumerate(checks, start=1):
            _step(console, f"1.{number} patchkit check -m {manifest.name} --range {span}")
            check_cmd.show(check_range(manifest, repo, ranges=[span]), console, span)

        # A commit where the patches are needed: Kimi-K2.5 exists, upstream has no hooks yet.
        report = check_range(kimi, repo, ranges=[f"v0.5.8..{MAIN}"])
        needs = [
            row.commit
            for row in report.commits
            if not row.failed and any(r.status is Status.APPLY for r in row.results)
        ]
        _expect(bool(needs), "no commit on main needs the kimi patches")
        target = needs[-1]

        _step(
            console, f"2. patchkit apply -m kimi-k25-eagle3 --commit {target.short}   (moves the tree, then patches it)"
        )
        first = apply_at_commit(kimi, repo, target.sha)
        apply_cmd.show(first, console)
        _expect(not first.refused and bool(first.written), "the first apply did not write")

        _step(console, "3. patchkit apply -m kimi-k25-eagle3   (again: nothing to do, no byte changes)")
        second = apply_worktree(kimi, repo)
        apply_cmd.show(second, console)
        _expect(
            not second.written and all(r.status is Status.SKIP for r in second.results),
            "the second apply was not all SKIP",
        )

        _step(console, f"4. patchkit apply -m kimi-k25-eagle3 --commit {RENAME_BRANCH}   (the class is renamed there)")
        before = (path / kimi.patches[-1].file).read_bytes()
        refused = apply_at_commit(kimi, repo, RENAME_BRANCH)
        apply_cmd.show(refused, console)
        _expect(refused.refused, "the apply on the rename branch was not refused")
        _expect(
            (path / kimi.patches[-1].file).read_bytes() == before and repo.head() == target.sha,
            "the refused apply changed the tree",
        )
        console.print()
        console.print(f"The tree is still at {target.short} with the patches applied: the refused run wrote nothing.")
