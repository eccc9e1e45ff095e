"""`patchkit bisect`: the first commit on the first-parent line from GOOD to BAD where a metric is bad.

The verb lists the line (``Repo.commit_range``), checks every manifest at all
of its commits from the blobs (``check_range``, no checkout: a commit where a
required patch FAILs is skipped, never prepared nor benchmarked), and hands
the search to ``patchkit.bench.bisect.bisect`` with a ``measure`` that
benchmarks one commit in the session (every run is stored).

Criteria: ``--min X`` (bad when the median is below X), ``--max X`` (bad when
above X), ``--ratio R`` (bad when median / GOOD's median is below R for a
``better = "higher"`` metric, above R for ``better = "lower"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from patchkit.bench.bisect import Measurement, Step, criterion
from patchkit.bench.bisect import bisect as search
from patchkit.bench.session import Interrupted, Session, parse_sets, sigterm_as_interrupt
from patchkit.commands._bench_output import progress, say, show_bisect, step_line
from patchkit.engine.check import check_range
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest, load_manifest
from patchkit.render import print_json

if TYPE_CHECKING:
    from rich.console import Console


def bisect(
    *,
    manifests: Sequence[str],
    repo: str,
    good: str,
    bad: str,
    metric: str,
    min_value: float | None,
    max_value: float | None,
    ratio: float | None,
    profile: str | None,
    repeat: int | None,
    sets: Sequence[str],
    worktree_root: str | None,
    store: str | None,
    json_out: bool,
    console: Console,
    allow_dirty: bool = False,
) -> int:
    given = [(k, v) for k, v in (("min", min_value), ("max", max_value), ("ratio", ratio)) if v is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --min X, --max X, --ratio R", hint="e.g. --ratio 0.9")
    kind: Literal["min", "max", "ratio"] = given[0][0]  # type: ignore[assignment]
    threshold = given[0][1]
    assert threshold is not None
    loaded = [load_manifest(m) for m in manifests]
    with Repo.discover(Path(repo)) as git_repo:
        good_c, bad_c = git_repo.commit(good), git_repo.commit(bad)
        session = Session.open(
            git_repo,
            loaded,
            store=store,
            worktree_root_dir=worktree_root,
            sets=parse_sets(sets),
            repeat=repeat,
            allow_dirty=allow_dirty,
        )
        the_metric = session.config.metric(metric)
        chosen = profile or session.config.profile_names()[0]
        session.config.profile(chosen)
        listed = git_repo.commit_range(good_c.sha, bad_c.sha)
        if not listed or listed[-1].sha != bad_c.sha:
            raise UsageError(
                f"{bad} is not a first-parent descendant of {good}",
                hint="give --good an older commit on the first-parent line of --bad",
            )
        unpatchable = _unpatchable(loaded, git_repo, [good_c, *listed])
        for end, label in ((good_c, "--good"), (bad_c, "--bad")):
            if end.sha in unpatchable:
                raise UsageError(
                    f"the manifests cannot apply at {label} {end.short} ({unpatchable[end.sha]})",
                    hint="pick an end point where `patchkit check` says every required patch applies",
                )

        def measure(commit: Commit) -> Measurement:
            record = session.run(commit, chosen)
            return Measurement(record.median(the_metric.name), record.outcome, record.run_id, record.reason)

        def on_step(step: Step) -> None:
            if not json_out:
                say(console, step_line(step, the_metric.name))

        code = 0
        with session.store, progress(console, "bisect", live=not json_out) as show, sigterm_as_interrupt():
            session.progress = show
            if not json_out:
                say(
                    console,
                    f"patchkit bisect  {the_metric.name} ({chosen}), --{kind} {threshold:g}; "
                    f"{len(listed)} first-parent commits after {good_c.short}, {len(unpatchable)} cannot apply "
                    "(skipped)",
                )
            try:
                report = search(
                    [good_c, *listed],
                    measure,
                    criterion(kind, threshold, the_metric.better),
                    skipped=unpatchable,
                    on_step=on_step,
                )
            except Interrupted as stop:
                say(console, f"interrupted: run {stop.record.run_id} is stored as interrupted", "bold yellow")
                code = 130
        if code:
            return code
    result = {
        "version": 1,
        "command": "bisect",
        "metric": the_metric.name,
        "profile": chosen,
        "criterion": {
            "min": min_value,
            "max": max_value,
            "ratio": ratio,
            "good_median": report.good_value,
            "allow_dirty": allow_dirty,
        },
        **report.to_json(),
    }
    if json_out:
        print_json(result)
    else:
        show_bisect(console, report, the_metric.name)
    return int(ExitCode.OK if report.first_bad is not None else ExitCode.REFUSED)


def _unpatchable(manifests: Sequence[Manifest], repo: Repo, commits: Sequence[Commit]) -> dict[str, str]:
    """The commits where a manifest cannot apply (a required FAIL), with the failing patches."""
    out: dict[str, str] = {}
    for manifest in manifests:
        report = check_range(manifest, repo, commits=[c.sha for c in commits], hints=False)
        for row in report.commits:
            if row.failed and row.commit.sha not in out:
                out[row.commit.sha] = ", ".join(
                    f"{manifest.name}:{r.patch} {r.reason.value if r.reason else ''}".rstrip()
                    for r in row.results
                    if r.status.value == "FAIL"
                )
    return out
