"""`patchkit run`: guard the tree, then run a benchmark command in it.

Order: (``--apply``) apply the manifest at HEAD; guard; run ``CMD`` with the
caller's stdin, stdout and stderr, so its output and exit code pass through
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

With ``--bisect``: a refused apply or a guard that finds a required FAIL at
this commit exits 125 (``git bisect`` skips the commit); any other guard
failure or patchkit error exits 128 (the bisect stops); otherwise ``CMD``'s
exit code is the verdict.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from patchkit.commands import guard as guard_cmd
from patchkit.commands.apply import show as show_apply
from patchkit.engine.apply import apply_worktree
from patchkit.engine.revert import revert_worktree
from patchkit.errors import ExitCode, UsageError
from patchkit.guard.api import evaluate_guard, open_for_guard, require_python_for_imports
from patchkit.proof import probe_env
from patchkit.proof.account import TreeFacts, account
from patchkit.proof.digests import DigestCache
from patchkit.proof.records import read_probe_dir
from patchkit.proof.runproof import doubts
from patchkit.proof.show import show_proof
from patchkit.render import plural


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
                loaded, git_repo, command, console,
                python=python, imports=imports, allow_dirty=allow_dirty, strict=strict, bisect=bisect,
                probe=ProbeOptions(probe_dir, tuple(allow_stray)) if probe else None,
            )  # fmt: skip
        finally:
            if wrote and not keep:
                revert_worktree(loaded.name, git_repo)


@dataclass(frozen=True)
class ProbeOptions:
    directory: str | None  # keep the probe's files here (default: a temporary directory, removed)
    allow_stray: tuple[str, ...]


def _guard_and_run(
    loaded: Any,
    git_repo: Any,
    command: Sequence[str],
    console: Console,
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
        f"patchkit run: guard ok (manifest {loaded.name} at {report.commit.sha}); running: {shlex.join(command)}",
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
        return run_passthrough(command, env, cwd=None)
    return _run_probed(command, env, console, git_repo=git_repo, commit=report.commit.sha, probe=probe, bisect=bisect)


def _run_probed(
    command: Sequence[str], env: dict[str, str], console: Console, *, git_repo: Any, commit: str,
    probe: ProbeOptions, bisect: bool,
) -> int:  # fmt: skip
    """Run CMD with the probe in every Python process it starts; account for every file that ran after it exits.

    A STRAY makes the exit code 1 (128 under --bisect: the setup is wrong),
    whatever CMD's own; otherwise CMD's exit code passes through.
    """
    keep = probe.directory is not None
    out = Path(probe.directory) if probe.directory is not None else Path(tempfile.mkdtemp(prefix="patchkit-probe-"))
    try:
        out.mkdir(parents=True, exist_ok=True)
        code = run_passthrough(command, probe_env(env, out), cwd=None)
        processes = read_probe_dir(out)
        tree = TreeFacts.of(git_repo, git_repo.root, commit)
        root = str(git_repo.root)
        accounting = account(
            processes, tree=tree, allow_stray=probe.allow_stray, cache=DigestCache.for_scope("run:" + root)
        )
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    show_proof(console, processes, accounting)
    failed = doubts(processes)
    if not processes:
        console.print("patchkit run --probe: no Python process ran the probe: nothing is proven", markup=False)
    elif failed and not accounting.strays:
        console.print(
            f"patchkit run --probe: not proven: the probe failed in {plural(len(failed), 'process', 'processes')}, "
            "so what it saw is incomplete",
            markup=False,
        )
    if accounting.strays:
        console.print(
            f"patchkit run --probe: {plural(len(accounting.strays), 'STRAY file')} ran; exit "
            f"{128 if bisect else 1} (CMD exited {code})",
            markup=False,
        )
        return int(ExitCode.BISECT_ABORT if bisect else ExitCode.REFUSED)
    return code


_SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel sent (a terminal's Ctrl-C), not kill(2)


def run_passthrough(command: Sequence[str], env: dict[str, str], cwd: str | None) -> int:
    """Run ``command`` on our stdin/stdout/stderr; its exit code (128+N if killed by signal N)."""
    try:
        proc = subprocess.Popen(list(command), env=env, cwd=cwd)
    except FileNotFoundError:
        raise UsageError(f"command not found: {command[0]}", hint="give a path or a command on PATH after --") from None
    except PermissionError:
        raise UsageError(
            f"command not executable: {command[0]}", hint="chmod +x it, or run it via its interpreter"
        ) from None
    # The signals are taken synchronously (blocked, then sigtimedwait) to see who sent each one: a
    # Ctrl-C comes from the kernel (si_code SI_KERNEL) to the whole foreground group, so the command
    # has it already; a SIGINT sent to patchkit's pid by a process (kill, a scheduler) reached only
    # patchkit and is passed on.  SIGCHLD wakes the wait when the command ends.
    watched = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    received: list[int] = []
    try:
        while proc.poll() is None:
            info = signal.sigtimedwait(watched, 0.5)
            if info is None or info.si_signo == signal.SIGCHLD or proc.poll() is not None:
                continue
            received.append(info.si_signo)
            if info.si_signo != signal.SIGINT:
                proc.send_signal(info.si_signo)
            elif info.si_code != _SI_KERNEL:
                proc.send_signal(signal.SIGINT)  # sent to patchkit alone: the command has not seen it
            elif received.count(signal.SIGINT) > 1:
                proc.terminate()  # a second Ctrl-C: the command ignored the first
        code = proc.wait()
        while signal.sigtimedwait(watched - {signal.SIGCHLD}, 0) is not None:
            pass  # a signal that came as the command ended: it was for the command, now gone
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if code < 0:
        return 128 - code
    return code
