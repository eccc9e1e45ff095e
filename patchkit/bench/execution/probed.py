"""``run --probe``'s proof: a command run with the probe in every Python process, then accounted for.

Why here: the steps are the job's own (``job.py``: the probe's environment with the expected
``[bench].env`` names and secrets, the process run, the probe's files read, every file that ran
accounted for against the tree, the libraries sampled), for a command of the user's instead of
a server; ``commands/run.py`` only words the result.  ``run_probed`` returns a frozen
``ProbedRun``; nothing is printed here.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchkit.bench.execution.supervisor import run_passthrough
from patchkit.git import Repo
from patchkit.manifest.bench import BenchConfig, render
from patchkit.proof import probe_env
from patchkit.proof.account import Accounting, TreeFacts, account
from patchkit.proof.check import env_reasons
from patchkit.proof.digests import DigestCache
from patchkit.proof.jitcache import jit_caches
from patchkit.proof.libs import LibrarySampler, MappedLibrary
from patchkit.proof.nccllog import NcclLines, wants_nccl_lines
from patchkit.proof.records import LocalKey, ProcessFacts, read_probe_dir
from patchkit.redact import is_secret


@dataclass(frozen=True)
class ProbeOptions:
    """What ``run --probe`` was asked for: where to keep the probe's files, and the ``--allow-stray`` globs."""

    directory: str | None  # keep the probe's files here (default: a temporary directory, removed)
    allow_stray: tuple[str, ...]


@dataclass(frozen=True)
class ProbedRun:
    """What a probed command left: its exit code, the processes the probe saw, their accounting, the
    libraries they mapped, NCCL's lines (None when not asked for), the ``[bench].env`` names not
    checked, and each process that lacked a ``[bench].env`` value at ``init_process_group``."""

    code: int
    processes: Sequence[ProcessFacts]
    accounting: Accounting
    libraries: Mapping[LocalKey, tuple[MappedLibrary, ...]]  # (pid, start) -> its notable libraries
    nccl: NcclLines | None
    skipped: tuple[str, ...]
    reasons: tuple[str, ...]


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


def probed_env(env: Mapping[str, str], probe_dir: Path, expected: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the probe first on PYTHONPATH, writing to ``probe_dir``, told which ``[bench].env`` names
    to record at ``init_process_group`` (``expected``) and which of their values are secrets (kept out of
    its files).  The one way a process is started under the probe: a bench server (``job.py``) and
    ``run --probe``'s command alike."""
    secrets = {name: value for name, value in expected.items() if is_secret(name)}
    return probe_env(env, probe_dir, env_names=sorted(expected), secrets=secrets)


def run_probed(
    command: Sequence[str],
    env: dict[str, str],
    *,
    git_repo: Repo,
    commit: str,
    probe: ProbeOptions,
    bench: BenchConfig | None = None,
) -> ProbedRun:
    """Run CMD with the probe in every Python process it starts; account for every file that ran after it exits."""
    assert git_repo.root is not None  # run guards a work tree
    expected, skipped = expected_env(bench, git_repo.root)
    nccl = NcclLines() if wants_nccl_lines(env) else None
    sampler = LibrarySampler()
    keep = probe.directory is not None
    out = Path(probe.directory) if probe.directory is not None else Path(tempfile.mkdtemp(prefix="patchkit-probe-"))
    root = str(git_repo.root)
    cache = DigestCache.for_scope("run:" + root)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probed = probed_env(env, out, expected)
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
    reasons = tuple(env_reasons(processes, expected))
    return ProbedRun(code, processes, accounting, libraries, nccl, tuple(skipped), reasons)
