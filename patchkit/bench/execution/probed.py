"""``run --probe``'s proof: a command run with the probe in every Python process, then accounted for.

Why here: the steps are the job's own (``job.py``: the probe's environment with the expected
``[bench].env`` names and secrets, the process run, then ``proof.runproof.prove`` at stop), for a
command of the user's instead of a server; ``commands/run.py`` only words the result.  The verdict
is ``prove``'s, the one bench's server gets, so the two cannot drift apart: the same reasons (every
STRAY, every ``[bench].env`` value a process lacked at ``init_process_group``), the same doubts (the
probe's own failures) and the same cache of digests.  What differs is only what a command that has
exited allows: no process is alive to match with the probe's files (``live=()``, so none is named
unprobed), the libraries are the ones ``LibrarySampler`` saw mapped while it ran, and a process ``CMD``
left running (multiprocessing's resource tracker ends a moment after it; a child started as it exits may not
have written its file yet) is waited for (``outliving``) before the files are read, then named if it
outlives the wait.
``run_probed`` returns a frozen ``ProbedRun``; nothing is printed here.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from patchkit.bench.execution.supervisor import run_passthrough
from patchkit.git import Repo
from patchkit.manifest.bench import BenchConfig, render
from patchkit.proof import probe_env
from patchkit.proof.account import TreeFacts
from patchkit.proof.jitcache import jit_caches
from patchkit.proof.libs import LibrarySampler
from patchkit.proof.nccllog import NcclLines, wants_nccl_lines
from patchkit.proof.runproof import OUTLIVE_WAIT, Proof, outliving, proof_cache, prove
from patchkit.redact import is_secret, scrub, secret_values


@dataclass(frozen=True)
class ProbeOptions:
    """What ``run --probe`` was asked for: where to keep the probe's files, and the ``--allow-stray`` globs."""

    directory: str | None  # keep the probe's files here (default: a temporary directory, removed)
    allow_stray: tuple[str, ...]


@dataclass(frozen=True)
class ProbedRun:
    """What a probed command left: its exit code, ``prove``'s verdict at stop (its ``libraries`` those the
    sampler saw mapped while the command ran), NCCL's lines (None when not asked for), and the
    ``[bench].env`` names not checked (their value needs a placeholder only bench sets)."""

    code: int
    proof: Proof
    nccl: NcclLines | None
    skipped: tuple[str, ...]
    outlived: tuple[str, ...] = ()  # one line per process CMD started still running OUTLIVE_WAIT s after it exited


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
    cwd: str | None = None,
) -> ProbedRun:
    """Run CMD (in ``cwd``, default this process's) with the probe in every Python process it starts; once it
    exits, ``prove`` what ran."""
    assert git_repo.root is not None  # run guards a work tree
    expected, skipped = expected_env(bench, git_repo.root)
    nccl = NcclLines() if wants_nccl_lines(env) else None
    sampler = LibrarySampler()
    keep = probe.directory is not None
    out = Path(probe.directory) if probe.directory is not None else Path(tempfile.mkdtemp(prefix="patchkit-probe-"))
    try:
        out.mkdir(parents=True, exist_ok=True)
        code = run_passthrough(command, probed_env(env, out, expected), cwd=cwd, lines=nccl, sampler=sampler)
        left = outliving(out)  # CMD's processes that have not ended yet (the resource tracker): their files final
        tree = TreeFacts.of(git_repo, git_repo.root, commit)
        cache = proof_cache(tree, out)
        proof = prove(
            out,
            live=(),  # CMD has exited: its processes are gone
            tree=tree,
            allow_stray=probe.allow_stray,
            expected=expected,
            when="stop",
            generated=jit_caches(env),
            cache=cache,
        )
        proof = replace(proof, libraries=sampler.libraries(cache))
        cache.save()
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    secrets = secret_values(env)  # a token on a left child's command line is not printed
    outlived = tuple(
        scrub(f"pid {p.pid} ({shlex.join(p.argv) or '?'}) was still running {OUTLIVE_WAIT:g} s after CMD exited: "
              "what it ran after the proof is not in it", secrets)
        for p in left
    )  # fmt: skip
    return ProbedRun(code, proof, nccl, tuple(skipped), outlived)
