"""`patchkit run`: guard the tree, then run a benchmark command in it.

Order: (``--apply``) apply the manifest at HEAD; guard; run ``CMD`` in the
directory ``--repo`` names (the tree just guarded, so that ``sh -c 'pwd; git
status'`` and a relative ``./bench.sh`` see that tree whatever directory
patchkit was started from; ``--repo`` defaults to the current directory) with
the caller's stdin, stdout and stderr, so its output and exit code pass through
untouched (patchkit's own lines go to stderr, and only on failure more than
one).  ``CMD`` gets ``PATCHKIT_COMMIT``, ``PATCHKIT_MANIFEST``,
``PATCHKIT_MANIFEST_DIGEST`` and ``PATCHKIT_GUARD=ok`` in its environment.

What ``--apply`` wrote is reverted when ``CMD`` exits, whatever its exit code,
and also when patchkit is interrupted: Ctrl-C reaches ``CMD`` through the
terminal's process group (a second Ctrl-C sends it SIGTERM), SIGTERM/SIGHUP
sent to patchkit are forwarded to it; patchkit waits for it, reverts, and exits 128+signal unless ``CMD`` already
gave an exit code.  ``--keep`` leaves the edits.  If this run's apply wrote
nothing (the tree was already patched), nothing is reverted; if it wrote, the
manifest's whole record is reverted (``revert_worktree``).

With ``--probe`` (items 1-3 of the proof, for a command of the user's own):
the probe runs in every Python process ``CMD`` starts; while it runs, the
``libnccl``/``libcudart``/``libcuda`` each of its processes maps are sampled
(psutil); with ``NCCL_DEBUG=INFO`` (or TRACE) in its environment its stdout
and stderr pass through patchkit, byte for byte, so that NCCL's own
``set by environment`` and version lines can be read (they are then pipes,
not the terminal); after it exits, every file that ran is accounted for, and
when the manifest has a ``[bench].env``, each process that called
``init_process_group`` must have had those values then.  A STRAY or such a
variable makes the exit code 1 (128 under ``--bisect``) whatever ``CMD``'s.

With ``--bisect``: a refused apply or a guard that finds a required FAIL at
this commit exits 125 (``git bisect`` skips the commit); any other guard
failure or patchkit error exits 128 (the bisect stops); otherwise ``CMD``'s
exit code is the verdict.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.execution.probed import ProbeOptions, run_probed
from patchkit.bench.execution.supervisor import run_passthrough
from patchkit.commands import guard as guard_cmd
from patchkit.commands.apply import show as show_apply
from patchkit.engine.apply import apply_worktree
from patchkit.engine.revert import revert_worktree
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.guard.api import evaluate_guard, open_for_guard, require_python_for_imports
from patchkit.manifest import Manifest
from patchkit.manifest.bench import BenchConfig
from patchkit.proof.check import stray_reasons
from patchkit.views.console import emit
from patchkit.views.proof import libraries_table, nccl_table, show_proof
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def run(
    *,
    manifest: str,
    repo: str,
    apply: bool,
    keep: bool,
    python: str | None,
    imports: Sequence[str],
    allow_dirty: bool,
    strict: bool,
    bisect: bool,
    command: Sequence[str],
    console: Console,
    probe: bool = False,
    probe_dir: str | None = None,
    allow_stray: Sequence[str] = (),
) -> int:
    with guard_cmd.bisect_errors(bisect):
        if not command:
            raise UsageError("no command to run", hint="give it after --, e.g. patchkit run -m M -- ./bench.sh")
        require_python_for_imports(python, imports)
        git_repo, loaded = open_for_guard(repo, manifest)
        git_repo.require_worktree("run")  # before --apply, whose own refusal would name apply's options
        where = str(Path(repo).resolve())  # CMD runs in --repo's directory, the tree it was guarded in
        wrote = False
        if apply:
            applied = apply_worktree(loaded, git_repo, strict=strict)
            if applied.refused:
                show_apply(applied, console)
                skip = "; exit 125: this commit cannot be patched, git bisect skips it" if bisect else ""
                console.print(f"patchkit run: the command was not started{skip}: {shlex.join(command)}", markup=False)
                return int(ExitCode.BISECT_SKIP if bisect else ExitCode.REFUSED)
            wrote = bool(applied.written)
        try:
            return _guard_and_run(
                loaded, git_repo, command, console, where,
                python=python, imports=imports, allow_dirty=allow_dirty, strict=strict, bisect=bisect,
                probe=ProbeOptions(probe_dir, tuple(allow_stray)) if probe else None,
            )  # fmt: skip
        finally:
            if wrote and not keep:
                revert_worktree(loaded.name, git_repo)


def _guard_and_run(
    loaded: Manifest,
    git_repo: Repo,
    command: Sequence[str],
    console: Console,
    where: str,
    *,
    python: str | None,
    imports: Sequence[str],
    allow_dirty: bool,
    strict: bool,
    bisect: bool,
    probe: ProbeOptions | None = None,
) -> int:
    report = evaluate_guard(
        git_repo, loaded, python=python, imports=imports, allow_dirty=allow_dirty, strict=strict, bisect=bisect
    )
    if not report.ok:
        guard_cmd.show(report, console, bisect=bisect)
        console.print(f"patchkit run: the command was not started: {shlex.join(command)}", markup=False)
        return report.exit_code(bisect=bisect)
    assert report.commit is not None  # the commit check passed
    console.print(
        f"patchkit run: guard ok (manifest {loaded.name} at {report.commit.sha}); running in {where}: "
        f"{shlex.join(command)}",
        markup=False,
    )
    env = dict(os.environ)
    env.update(
        {
            "PATCHKIT_COMMIT": report.commit.sha,
            "PATCHKIT_MANIFEST": loaded.name,
            "PATCHKIT_MANIFEST_DIGEST": loaded.digest,
            "PATCHKIT_GUARD": "ok",
        }
    )
    if probe is None:
        return run_passthrough(command, env, cwd=where)
    return _run_probed(
        command, env, console, where=where, git_repo=git_repo, commit=report.commit.sha, probe=probe, bisect=bisect,
        bench=getattr(loaded, "bench", None),
    )  # fmt: skip


def _run_probed(
    command: Sequence[str], env: dict[str, str], console: Console, *, where: str, git_repo: Repo, commit: str,
    probe: ProbeOptions, bisect: bool, bench: BenchConfig | None = None,
) -> int:  # fmt: skip
    """Run CMD with the probe in every Python process it starts (``execution.probed.run_probed``), then say what
    the proof found: the verdict is ``proof.runproof.prove``'s at stop, the one a bench server gets.

    A STRAY, or a ``[bench].env`` value a process lacked at ``init_process_group`` (``Proof.reasons``), makes
    the exit code 1 (128 under --bisect: the setup is wrong), whatever CMD's own; otherwise CMD's exit code
    passes through.  The probe's own failures (``Proof.doubts``), and a process CMD started still running once the
    wait for CMD's processes to end is over (``ProbedRun.outlived``), leave it not proven, not refused.
    """
    refused = ExitCode.BISECT_ABORT if bisect else ExitCode.REFUSED
    done = run_probed(command, env, cwd=where, git_repo=git_repo, commit=commit, probe=probe, bench=bench)
    proof, code, nccl = done.proof, done.code, done.nccl
    processes, accounting = proof.processes, proof.accounting
    show_proof(console, processes, accounting)  # every STRAY, in a table with who loaded it
    if proof.libraries:
        emit(console, libraries_table(proof.libraries, processes))
    if nccl is not None:
        found = nccl.parse()
        if found:
            emit(console, nccl_table(found, processes))
        else:
            console.print("NCCL: no 'NCCL INFO' line in CMD's output", markup=False)
    for name in done.skipped:
        console.print(f"[bench].env {name} is not checked: its value needs a placeholder only bench sets", markup=False)
    tabled = set(stray_reasons(accounting, processes))  # already in the STRAY table: not said twice
    lacking = [line for line in proof.reasons if line not in tabled]
    for line in lacking:
        console.print(line, markup=False, style="bold red")
    for line in done.outlived:
        console.print(line, markup=False, style="yellow")
    if not processes:
        console.print("patchkit run --probe: no Python process ran the probe: nothing is proven", markup=False)
    elif done.outlived and not proof.reasons:
        left = plural(len(done.outlived), "process", "processes")
        console.print(
            f"patchkit run --probe: not proven: {left} of CMD still ran when the proof was made, so what ran "
            "after it is not in it; stop them before CMD exits (join or wait for them)",
            markup=False,
        )
    elif proof.doubts and not proof.reasons:
        failed = plural(len(proof.doubts), "process", "processes")
        console.print(
            f"patchkit run --probe: not proven: the probe failed in {failed}, so what it saw is incomplete",
            markup=False,
        )
    if proof.reasons:
        what = [plural(len(accounting.strays), "STRAY file") + " ran"] if accounting.strays else []
        if lacking:
            what.append(f"{plural(len(lacking), 'process')} without [bench].env's value at init_process_group")
        console.print(
            f"patchkit run --probe: {' and '.join(what)}; exit {int(refused)} (CMD exited {code})",
            markup=False,
        )
        return int(refused)
    return code
