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
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rich.console import Console

from patchkit.commands import guard as guard_cmd
from patchkit.commands.apply import show as show_apply
from patchkit.engine.apply import apply_worktree
from patchkit.engine.revert import revert_worktree
from patchkit.errors import ExitCode, UsageError
from patchkit.guard.api import evaluate_guard, open_for_guard, require_python_for_imports
from patchkit.manifest.bench import BenchConfig, render
from patchkit.proof import probe_env
from patchkit.proof.account import TreeFacts, account
from patchkit.proof.check import env_reasons
from patchkit.proof.digests import DigestCache
from patchkit.proof.jitcache import jit_caches
from patchkit.proof.libs import LibrarySampler
from patchkit.proof.nccllog import NcclLines, wants_nccl_lines
from patchkit.proof.records import read_probe_dir
from patchkit.proof.runproof import doubts
from patchkit.proof.show import libraries_table, nccl_table, show_proof
from patchkit.redact import is_secret
from patchkit.render import emit, plural


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
    """What ``run --probe`` was asked for: where to keep the probe's files, and the ``--allow-stray`` globs."""

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
    return _run_probed(
        command, env, console, git_repo=git_repo, commit=report.commit.sha, probe=probe, bisect=bisect,
        bench=getattr(loaded, "bench", None),
    )  # fmt: skip


def expected_env(bench: BenchConfig | None, tree: Path) -> tuple[dict[str, str], list[str]]:
    """``[bench].env`` rendered with ``[bench].vars``, ``{tree}`` and ``{python}``; and the names whose value
    needs a placeholder only ``bench`` knows (``{port}``, a profile's vars), which are not checked."""
    if bench is None:
        return {}, []
    values = {**bench.vars, "tree": str(tree), "python": bench.python}
    expected, skipped = {}, []
    for name, template in bench.env.items():
        try:
            expected[name] = render(template, values)
        except (KeyError, IndexError, ValueError):
            skipped.append(name)
    return expected, skipped


def _run_probed(
    command: Sequence[str], env: dict[str, str], console: Console, *, git_repo: Any, commit: str,
    probe: ProbeOptions, bisect: bool, bench: BenchConfig | None = None,
) -> int:  # fmt: skip
    """Run CMD with the probe in every Python process it starts; account for every file that ran after it exits.

    A STRAY, or a ``[bench].env`` value a process lacked at ``init_process_group``, makes the exit code 1
    (128 under --bisect: the setup is wrong), whatever CMD's own; otherwise CMD's exit code passes through.
    """
    expected, skipped = expected_env(bench, git_repo.root)
    secrets = {name: value for name, value in expected.items() if is_secret(name)}
    nccl = NcclLines() if wants_nccl_lines(env) else None
    sampler = LibrarySampler()
    keep = probe.directory is not None
    out = Path(probe.directory) if probe.directory is not None else Path(tempfile.mkdtemp(prefix="patchkit-probe-"))
    root = str(git_repo.root)
    cache = DigestCache.for_scope("run:" + root)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probed = probe_env(env, out, env_names=sorted(expected), secrets=secrets)
        code = run_passthrough(command, probed, cwd=None, lines=nccl, sampler=sampler)
        processes = read_probe_dir(out)
        tree = TreeFacts.of(git_repo, git_repo.root, commit)
        accounting = account(
            processes, tree=tree, allow_stray=probe.allow_stray, cache=cache, generated=jit_caches(env)
        )
        libraries = sampler.libraries(cache)
        cache.save()
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    show_proof(console, processes, accounting)
    if libraries:
        emit(console, libraries_table(libraries, processes))
    if nccl is not None:
        found = nccl.parse()
        if found:
            emit(console, nccl_table(found, processes))
        else:
            console.print("NCCL: no 'NCCL INFO' line in CMD's output", markup=False)
    for name in skipped:
        console.print(f"[bench].env {name} is not checked: its value needs a placeholder only bench sets", markup=False)
    reasons = env_reasons(processes, expected)
    for line in reasons:
        console.print(line, markup=False, style="bold red")
    failed = doubts(processes)
    if not processes:
        console.print("patchkit run --probe: no Python process ran the probe: nothing is proven", markup=False)
    elif failed and not accounting.strays and not reasons:
        console.print(
            f"patchkit run --probe: not proven: the probe failed in {plural(len(failed), 'process', 'processes')}, "
            "so what it saw is incomplete",
            markup=False,
        )
    if accounting.strays or reasons:
        what = [plural(len(accounting.strays), "STRAY file") + " ran"] if accounting.strays else []
        if reasons:
            what.append(f"{plural(len(reasons), 'process')} without [bench].env's value at init_process_group")
        console.print(
            f"patchkit run --probe: {' and '.join(what)}; exit {128 if bisect else 1} (CMD exited {code})",
            markup=False,
        )
        return int(ExitCode.BISECT_ABORT if bisect else ExitCode.REFUSED)
    return code


_SI_KERNEL = 0x80  # siginfo si_code of a signal the kernel sent (a terminal's Ctrl-C), not kill(2)


def run_passthrough(
    command: Sequence[str],
    env: dict[str, str],
    cwd: str | None,
    *,
    lines: Callable[[bytes], None] | None = None,
    sampler: LibrarySampler | None = None,
) -> int:
    """Run ``command`` on our stdin/stdout/stderr; its exit code (128+N if killed by signal N).

    ``lines``: its stdout and stderr go through pipes, copied to ours as they come, byte for byte, and each
    line is given to ``lines`` too.  ``sampler``: started on its pid while it runs.
    """
    pipe = subprocess.PIPE if lines is not None else None
    try:
        proc = subprocess.Popen(list(command), env=env, cwd=cwd, stdout=pipe, stderr=pipe)
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
    pumps: list[threading.Thread] = []
    try:  # threads started here inherit the blocked mask: every signal comes to sigtimedwait below
        if lines is not None:
            assert proc.stdout is not None and proc.stderr is not None
            pumps = [_pump(proc.stdout, 1, lines), _pump(proc.stderr, 2, lines)]
        if sampler is not None:
            sampler.start(proc.pid)
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
        for pump in pumps:  # a process CMD left behind may hold the pipes open: do not wait for it forever
            pump.join(timeout=5)
        while signal.sigtimedwait(watched - {signal.SIGCHLD}, 0) is not None:
            pass  # a signal that came as the command ended: it was for the command, now gone
    finally:
        if sampler is not None:
            sampler.stop()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if code < 0:
        return 128 - code
    return code


def _pump(source: IO[bytes], fd: int, lines: Callable[[bytes], None]) -> threading.Thread:
    """Copy ``source`` to our ``fd`` as it comes, unchanged, and give each line to ``lines``."""

    def copy() -> None:
        pending = b""
        writing = True
        raw = source.fileno()
        while True:
            try:
                chunk = os.read(raw, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            if writing:
                try:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                except OSError:
                    writing = False  # our side is closed: keep draining, so the command is never blocked
            pending += chunk
            if b"\n" in pending:
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    lines(line)
        if pending:
            lines(pending)

    thread = threading.Thread(target=copy, name=f"patchkit-pump-{fd}", daemon=True)
    thread.start()
    return thread
