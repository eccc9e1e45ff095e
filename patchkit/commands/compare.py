"""`patchkit compare RUN_A RUN_B` (or `--commit A --commit B`): metrics side by side, then what changed.

The comparison itself is ``patchkit.bench.records.compare.compare`` (pure); this verb
picks the two runs (``pick_pair``: the latest ``ok`` run of each commit with
a common profile), takes each one's launches (the runs of its series, commit
and profile), the noise priors stored where each side ran (``RunRecord.place``:
its host, or its Slurm partition) for its profile, lists the first-parent commits
between them (``Repo.commit_range``) and prints or emits the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.records.compare import Comparison, pick_pair
from patchkit.bench.records.compare import compare as compare_runs
from patchkit.bench.records.hygiene import differences, side_warnings
from patchkit.bench.records.record import RunRecord
from patchkit.bench.records.store import Store, open_store
from patchkit.bench.stats.delta import Between, between
from patchkit.bench.stats.verdict import Noise
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.views.bench import show_gpu_hygiene
from patchkit.views.compare import show_comparison
from patchkit.views.console import print_json

if TYPE_CHECKING:
    from patchkit.views.console import Console


def compare(
    *,
    runs: Sequence[str],
    commits: Sequence[str],
    profile: str | None,
    threshold: float,
    repo: str,
    store: str | None,
    json_out: bool,
    console: Console,
) -> int:
    result, gpus = compared(runs=runs, commits=commits, profile=profile, threshold=threshold, repo=repo, store=store)
    show(result, gpus, json_out=json_out, console=console)
    return int(ExitCode.OK)


def compared(
    *, runs: Sequence[str], commits: Sequence[str], profile: str | None, threshold: float, repo: str, store: str | None
) -> tuple[Comparison, dict[str, object]]:
    """The comparison ``compare`` shows, and its GPU hygiene: the values, for a caller that checks them (the demo)
    rather than reading a table a narrow terminal wraps."""
    with Repo.discover(Path(repo)) as git_repo:
        with open_store(git_repo, store, create=False) as opened:
            a, b = _pick(opened, git_repo, runs, commits, profile)
            side_a, side_b = opened.launches(a), opened.launches(b)
            noise = noise_priors(opened, a)
            # Each side's own prior where the two ran in different places; one shared prior otherwise.
            noise_b = noise_priors(opened, b) if b.place != a.place else None
        result = compare_runs(
            a,
            b,
            threshold=threshold,
            between=_between(git_repo, a, b),
            launches_a=side_a,
            launches_b=side_b,
            noise=noise,
            noise_b=noise_b,
        )
    return result, gpu_warnings(side_a, side_b)


def show(result: Comparison, gpus: dict[str, object], *, json_out: bool, console: Console) -> None:
    if json_out:
        print_json({**result.to_json(), "gpu_hygiene": gpus})
    else:
        show_comparison(console, result)
        show_gpu_hygiene(console, gpus)


def gpu_warnings(side_a: Sequence[RunRecord], side_b: Sequence[RunRecord]) -> dict[str, object]:
    """GPU hygiene of the two sides (bench/records/hygiene.py): each launch's problems, and what differs between the
    sides' first launches; ``facts`` False when neither side has nvidia-smi's answers."""
    first_a = next((r for r in side_a if r.gpu_hygiene is not None), None)
    first_b = next((r for r in side_b if r.gpu_hygiene is not None), None)
    diffs = [] if first_a is None or first_b is None else differences(first_a.gpu_hygiene, first_b.gpu_hygiene)
    return {
        "facts": any(r.gpus is not None for r in (*side_a, *side_b)),
        "problems": side_warnings([*side_a, *side_b]),
        "differences": diffs,
    }


def noise_priors(store: Store, record: RunRecord) -> dict[str, Noise]:
    """The launch-to-launch spread `patchkit noise` stored where this run ran (``RunRecord.place``: its host,
    or its Slurm partition) and for its profile, per metric."""
    out = {}
    for metric in record.samples:
        found = store.noise(record.place, record.profile, metric)
        if found is not None:
            out[metric] = found
    return out


def _between(repo: Repo, a: RunRecord, b: RunRecord) -> Between:
    if a.commit.sha == b.commit.sha:
        return between((), (), same=True)
    return between(repo.commit_range(a.commit.sha, b.commit.sha), repo.commit_range(b.commit.sha, a.commit.sha))


def _pick(
    store: Store, repo: Repo, runs: Sequence[str], commits: Sequence[str], profile: str | None
) -> tuple[RunRecord, RunRecord]:
    if runs and commits:
        raise UsageError("give two run numbers or two --commit options, not both")
    if runs:
        if len(runs) != 2:
            raise UsageError(f"compare needs two runs, got {len(runs)}", hint="e.g. `patchkit compare 3 7`")
        ids = []
        for value in runs:
            try:
                ids.append(int(value))
            except ValueError:
                raise UsageError(f"{value!r} is not a run number", hint="see `patchkit runs`") from None
        store.require_runs()
        return store.get(ids[0]), store.get(ids[1])
    if len(commits) != 2:
        raise UsageError("compare needs RUN_A RUN_B or --commit A --commit B", hint="see `patchkit runs`")
    store.require_runs()
    found = [(rev, store.runs(commits=[repo.resolve(rev)])) for rev in commits]
    return pick_pair(found, profile)
