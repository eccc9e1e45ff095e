"""`patchkit demo`: a regression hunt, end to end, on a generated SGLang-shaped upstream.

Builds a small git repository shaped like SGLang around the Kimi-K2.5 and
EAGLE-3 changes of early 2026 (see ``patchkit.demo.sglang``), then replays
the story of a throughput drop: a range check of the Kimi manifest (and the
timing manifest's windows, one line per group), the refused apply at a
renamed class (and ``port`` carrying a copy of the manifest there, then a
second manifest over a pull that moves the function it replaces to a new
module: ``patchkit.demo.pull``), a bench
of a good and a bad commit (two launches each, interleaved), compare with its verdict and what changed between them, a
half-patched tree refused by the guard, and a bisect that names the commit.
The server and client are the demo's stand-ins (``patchkit/demo/standin/``,
127.0.0.1 only): their throughput comes from the benchmarked tree's code, so
the slow commit is found, not planted in a table.  Each step is checked: the
demo exits non-zero if patchkit did not behave as shown.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.execution.launches import BenchArgs
from patchkit.commands import apply as apply_cmd
from patchkit.commands import check as check_cmd
from patchkit.commands import compare as compare_cmd
from patchkit.commands.bench import bench as bench_cmd
from patchkit.commands.bisect import bisect as bisect_cmd
from patchkit.commands.guard import guard as guard_cmd
from patchkit.commands.port import port as port_cmd
from patchkit.demo.hunt import (
    BAD,
    GOOD,
    PLANTED,
    RANGE_START,
    condensed_windows,
    standin_python,
    write_bench_manifest,
)
from patchkit.demo.pull import FUNCTION, MOVE_BRANCH, ROPE_MODULE, move_commit, write_rope_manifest
from patchkit.demo.sglang import KIMI_K25, MAIN, RENAME_BRANCH, build_sglang_history
from patchkit.engine.apply import apply_worktree
from patchkit.engine.check import check_range
from patchkit.engine.commit_apply import apply_at_commit
from patchkit.errors import ExitCode, InternalError, UsageError
from patchkit.git import Repo
from patchkit.manifest import Manifest, load_manifest
from patchkit.report.documents import load_latest_bisect

if TYPE_CHECKING:
    from patchkit.views.console import Console


def demo(*, keep: str | None, console: Console) -> int:
    if keep is not None:
        work = Path(keep).resolve()
        if work.exists():
            raise UsageError(f"{work} already exists", hint="--keep takes a new directory")
        work.mkdir(parents=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="patchkit-demo-"))
    try:
        good, bad, compared = _run(work, console)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    closing(console, work if keep is not None else None, good, bad, compared)
    return int(ExitCode.OK)


def closing(console: Console, kept: Path | None, good: str, bad: str, compared: tuple[int, int]) -> None:
    """The lines that end the demo: with ``--keep``, where it kept everything and the commands to try on it (each
    left whole for the terminal to wrap, so that it copies as one line); without, how to keep it.

    Each command reproduces the step it follows: compare names step 4's two runs by number, because
    ``--commit A --commit B`` takes each commit's latest runs, and after step 6 those are the bisect's."""
    console.print()
    if kept is None:
        console.print(
            "Run `patchkit demo --keep DIR` to keep the repository and the bench store, then try runs, show, "
            "compare and bisect on them yourself: the last lines name the commands.",
            markup=False,
        )
        return
    repo, store, manifest = kept / "sglang", kept / "bench.sqlite", kept / "manifests" / "kimi-k25-eagle3.toml"
    console.print(f"The demo's repository, manifest and bench store are kept in {kept}. Try next:", markup=False)
    for line in (
        f"patchkit runs --repo {repo} --store {store}",
        f"patchkit show last --repo {repo} --store {store}",
        f"patchkit compare {compared[0]} {compared[1]} --repo {repo} --store {store}"
        f"   # step 4 (--commit {good} --commit {bad} now takes the bisect's runs, the latest)",
        f"patchkit runs --commit {bad} --repo {repo} --store {store} --json",
        f"patchkit report -m {manifest} --repo {repo} --store {store} --range {good}~1..{bad} "
        f"-o {kept / 'report.html'}",
        f"patchkit bisect -m {manifest} --repo {repo} --store {store} --good {good} --bad {bad} "
        "--metric output_tok_s --ratio 0.85",
        f"patchkit check -m eagle3-verify-timing --range {RANGE_START}..{MAIN} --repo {repo}",
    ):
        console.print(f"  {line}", markup=False, soft_wrap=True)


def timing_windows(console: Console, name: str, span: str, windows: Iterable[str]) -> None:
    """The timing manifest's windows, one line per group (``condensed_windows``): a line longer than the
    terminal goes on indented, as ``check``'s window lines do."""
    console.print(f"{name}: where each group's variants apply on {span}, one line per group", markup=False)
    for line in windows:
        console.print(f"  {line}", markup=False)
    console.print(f"  full view: patchkit check -m {name} --range {span}", markup=False)


def _step(console: Console, title: str) -> None:
    console.print()
    console.print(f"== {title}", style="bold", markup=False)


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise InternalError(f"the demo did not go as designed: {what}")


def _run(work: Path, shown: Console) -> tuple[str, str, tuple[int, int]]:
    """The six steps; returns the good and the bad commit (short ids) and the two runs step 4 compared, for the
    closing lines."""
    console = shown
    path = work / "sglang"
    history = build_sglang_history(path, extra=[move_commit()])
    store = work / "bench.sqlite"
    good, bad = history[GOOD], history[BAD]
    with Repo.discover(path) as repo:
        kimi = load_manifest("kimi-k25-eagle3")
        timing = load_manifest("eagle3-verify-timing")
        console.print(
            f"Built an SGLang-shaped upstream at {path}: {len(history.order)} commits on {MAIN}, "
            f"{RENAME_BRANCH} (a branch that renames the Kimi-K2.5 class) and {MOVE_BRANCH} (a pull on it that "
            f"moves {FUNCTION} to a module of its own), tag v0.5.8."
        )

        span = f"{RANGE_START}..{MAIN}"
        _step(console, f"1. patchkit check -m {kimi.name} --range {span}")
        kimi_report = check_range(kimi, repo, ranges=[span])
        check_cmd.show(kimi_report, console, span)
        _expect(any(not row.failed for row in kimi_report.commits), "the kimi manifest applies nowhere")
        console.print()
        timing_windows(console, timing.name, span, condensed_windows(check_range(timing, repo, ranges=[span])))

        _step(console, f"2. patchkit apply -m kimi-k25-eagle3 --commit {RENAME_BRANCH}   (the class is renamed there)")
        head = repo.head()
        refused = apply_at_commit(kimi, repo, RENAME_BRANCH)
        apply_cmd.show(refused, console)
        _expect(refused.refused, "the apply on the rename branch was not refused")
        _expect(repo.head() == head and not repo.changed_tracked_files(), "the refused apply changed the tree")
        console.print("Nothing was written: the tree is as it was.")
        ported = _copy_manifest(kimi, work / "ported")
        console.print()
        console.print(
            f"After a pull of {RENAME_BRANCH}, `port` carries the manifest there (a copy of it, in {ported.parent}):",
            markup=False,
        )
        console.print(f"$ patchkit port -m {ported} --to {RENAME_BRANCH}", markup=False, soft_wrap=True)
        code = port_cmd(
            manifest=str(ported), repo=str(path), to=RENAME_BRANCH, start=None, dry_run=False,
            drop_upstreamed=False, json_out=False, console=console,
        )  # fmt: skip
        _expect(code == 0, f"port to {RENAME_BRANCH} exited {code}")
        _expect(
            "KimiK25VLForConditionalGeneration" in ported.read_text(encoding="utf-8"), "port did not follow the rename"
        )
        _expect(repo.head() == head and not repo.changed_tracked_files(), "port changed the upstream tree")
        _port_moved_function(console, repo, work / "ported")

    try:
        python = standin_python(work)
    except OSError as exc:
        raise UsageError(
            f"could not create a venv for the demo's stand-in server in {work / 'venv'}: {exc}",
            hint="the demo needs Python's venv module (on Debian: apt-get install python3-venv)",
        ) from exc
    manifest = write_bench_manifest(work, kimi, python)
    manifests, repo_dir, store_file = [str(manifest)], str(path), str(store)
    _step(console, f"3. patchkit bench --commit {good[:10]} --commit {bad[:10]} --launches 3   (interleaved)")
    console.print(
        f"The stand-in server runs in a fresh venv ({work / 'venv'}): the probe refuses a run that loads any file "
        "it cannot account for, and this keeps your own site-packages out of the demo. "
        "`patchkit guard --python PY --site` checks a real server's.",
        markup=False,
    )
    console.print(
        f"From here on -m kimi-k25-eagle3 is {manifest}: the same patches with a [bench] table that runs the "
        "stand-ins, so its digest is not the bundled manifest's of steps 1 and 2.",
        markup=False,
    )
    args = BenchArgs(manifests=tuple(manifests), repo=repo_dir, store=store_file)
    code = bench_cmd(args, commits=[good, bad], profiles=[], json_out=False, launches=3, console=console)
    _expect(code == 0, f"bench exited {code}")

    _step(console, f"4. patchkit compare --commit {good[:10]} --commit {bad[:10]}")
    compared, gpus = compare_cmd.compared(
        runs=[], commits=[good, bad], profile=None, threshold=0.05, repo=str(path), store=str(store)
    )
    compare_cmd.show(compared, gpus, json_out=False, console=console)
    _expect(any(m.call == "different (worse)" for m in compared.metrics), "compare did not call the bad commit worse")

    _step(
        console,
        "5. patchkit guard -m kimi-k25-eagle3 on a half-patched tree   (step 3's manifest; bench refuses the tree: "
        "nothing starts)",
    )
    with Repo.discover(path) as repo:
        half = replace(kimi, patches=kimi.patches[:1])
        repo.checkout_detached(good)
        apply_worktree(half, repo)
        code = guard_cmd(
            manifest=str(manifest), repo=str(path), python=None, imports=[], allow_dirty=False, strict=False,
            bisect=False, json_out=False, console=console,
        )  # fmt: skip
        _expect(code != 0, "the guard passed a half-patched tree")
        repo.git("checkout", "--", ".")
        repo.checkout_branch(MAIN)

    _step(console, f"6. patchkit bisect --good {good[:10]} --bad {bad[:10]} --metric output_tok_s --ratio 0.85")
    console.print(
        "The probe records what every launch ran. The stand-in server imports nothing of the tree and reads two "
        "of its files: the all-reduce dispatch in parallel_state.py and the model it serves, kimi_k25.py. Once GOOD "
        "and BAD have run, bisect lists the commits that changed those (the suspects), and skips the others.",
        markup=False,
    )
    code = bisect_cmd(
        args, good=good, bad=bad, metric="output_tok_s", min_value=None, max_value=None, ratio=0.85, profile=None,
        json_out=False, max_launches=3, console=console,
    )  # fmt: skip
    _expect(code == 0, f"bisect exited {code}")
    with Repo.discover(path) as repo:
        planted = repo.commit(history[PLANTED])
    found = load_latest_bisect(store) or {}
    first_bad = found.get("first_bad")
    _expect(isinstance(first_bad, dict) and first_bad.get("commit") == planted.sha, f"bisect did not name {PLANTED}")
    pruning = found.get("pruning")
    skipped = [c.get("commit") for c in pruning.get("inert", ())] if isinstance(pruning, dict) else []
    _expect(planted.sha not in skipped, f"bisect skipped {PLANTED} as inert")
    assert compared.a.run_id is not None and compared.b.run_id is not None  # stored runs have their numbers
    return good[:10], bad[:10], (compared.a.run_id, compared.b.run_id)


def _port_moved_function(console: Console, repo: Repo, folder: Path) -> None:
    """The second pull: upstream moves a function our kimi-rope manifest replaces to a new module, and `port`
    follows it there (``file`` changes; the payload and ``expect`` stay, the code being the same)."""
    rope = write_rope_manifest(folder, repo)
    head = repo.head()
    console.print()
    console.print(
        f"The next pull ({MOVE_BRANCH}) moves {FUNCTION} out of {KIMI_K25} into {ROPE_MODULE}. Our kimi-rope "
        f"manifest (in {rope.parent}) replaces that function; `port` finds where it went:",
        markup=False,
    )
    console.print(f"$ patchkit port -m {rope} --to {MOVE_BRANCH}", markup=False, soft_wrap=True)
    code = port_cmd(
        manifest=str(rope), repo=str(repo.root), to=MOVE_BRANCH, start=None, dry_run=False,
        drop_upstreamed=False, json_out=False, console=console,
    )  # fmt: skip
    _expect(code == 0, f"port to {MOVE_BRANCH} exited {code}")
    _expect(f'file = "{ROPE_MODULE}"' in rope.read_text(encoding="utf-8"), "port did not follow the moved function")
    _expect(repo.head() == head and not repo.changed_tracked_files(), "port changed the upstream tree")


def _copy_manifest(manifest: Manifest, folder: Path) -> Path:
    """A copy of a bundled manifest and its payloads under ``folder`` (``manifests/``, ``patches/``), for port
    to rewrite: the bundled files are never written."""
    target = folder / "manifests" / manifest.path.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(manifest.path, target)
    payloads = manifest.path.parent.parent / "patches"
    shutil.copytree(payloads, folder / "patches")
    return target
