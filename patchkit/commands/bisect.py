"""`patchkit bisect`: binary search over first-parent history for the first commit where a metric is bad.

1. The first-parent commits after GOOD up to BAD are listed, and every
   manifest is checked at all of them from the blobs (``check_range``, no
   checkout).  Commits where a manifest cannot apply (a required FAIL) are
   skipped: they are never prepared nor benchmarked.
2. GOOD is benchmarked (``--ratio`` needs its median), then BAD; BAD must be
   bad by the criterion, GOOD must not be.
3. Binary search over the remaining commits.  A run that is not ``ok``
   (server or client failed, metric missing) makes its commit skipped too.
4. The first bad commit is reported with its subject; when skipped commits lie
   right before it, the answer names them (the first bad one may be among
   them).  Every run is stored.

Criteria: ``--min X`` (bad when the median is below X), ``--max X`` (bad when
above X), ``--ratio R`` (bad when median / GOOD's median is below R for a
``better = "higher"`` metric, above R for ``better = "lower"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from patchkit.bench.job import RunRecord
from patchkit.bench.session import Session, parse_sets, sigterm_as_interrupt
from patchkit.commands.bench import fmt, live_progress
from patchkit.engine.check import check_range
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Commit, Repo
from patchkit.manifest import load_manifest
from patchkit.manifest.bench import Metric
from patchkit.render import emit, print_json
from patchkit.report.documents import save_latest_bisect


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
) -> int:
    given = [name for name, v in (("--min", min_value), ("--max", max_value), ("--ratio", ratio)) if v is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --min X, --max X, --ratio R", hint="e.g. --ratio 0.9")
    loaded = [load_manifest(m) for m in manifests]
    with Repo.discover(Path(repo)) as git_repo:
        good_c, bad_c = git_repo.commit(good), git_repo.commit(bad)
        session = Session.open(
            git_repo, loaded, store=store, worktree_root_dir=worktree_root, sets=parse_sets(sets), repeat=repeat
        )
        the_metric = session.config.metric(metric)
        chosen = profile or session.config.profile_names()[0]
        session.config.profile(chosen)

        listed = git_repo.rev_list(["--first-parent", f"{good_c.sha}..{bad_c.sha}"])
        if not listed or listed[-1].sha != bad_c.sha:
            raise UsageError(
                f"{bad} is not a first-parent descendant of {good}",
                hint="give --good an older commit on the first-parent line of --bad",
            )
        shas = [good_c.sha, *(c.sha for c in listed)]
        unpatchable: dict[str, str] = {}
        for manifest in loaded:
            report = check_range(manifest, git_repo, commits=shas, hints=False)
            for row in report.commits:
                if row.failed and row.commit.sha not in unpatchable:
                    fails = [f"{manifest.name}:{r.patch} {r.reason.value if r.reason else ''}" for r in row.results]
                    unpatchable[row.commit.sha] = ", ".join(
                        f for f, r in zip(fails, row.results, strict=True) if r.status.value == "FAIL"
                    )
        for end, label in ((good_c, "--good"), (bad_c, "--bad")):
            if end.sha in unpatchable:
                raise UsageError(
                    f"the manifests cannot apply at {label} {end.short} ({unpatchable[end.sha]})",
                    hint="pick an end point where `patchkit check` says every required patch applies",
                )

        steps: list[dict[str, Any]] = []
        skipped: dict[str, str] = {c.sha: unpatchable[c.sha] for c in listed if c.sha in unpatchable}
        good_median: float | None = None

        def verdict(record: RunRecord) -> tuple[str, float | None]:
            median = record.stats().get(the_metric.name, {}).get("median")
            if record.outcome != "ok" or median is None:
                return "skip", median
            return ("bad" if _is_bad(the_metric, median, min_value, max_value, ratio, good_median) else "good"), median

        def step(commit: Commit) -> str:
            record = session.run(commit, chosen)
            result, median = verdict(record)
            steps.append(
                {
                    "commit": commit.sha,
                    "subject": commit.subject,
                    "run": record.run_id,
                    "outcome": record.outcome,
                    "median": median,
                    "verdict": result,
                }
            )
            if not json_out:
                console.print(
                    f"  {commit.short} {commit.subject[:50]:<50} {the_metric.name}={fmt(median)}  {result}"
                    + (f" ({record.outcome}: {record.reason})" if record.outcome != "ok" else ""),
                    markup=False,
                    highlight=False,
                )
            if result == "skip":
                skipped[commit.sha] = f"{record.outcome}: {record.reason}"
            return result

        outcome: dict[str, Any] = {}
        with session.store, live_progress(console, session, enabled=not json_out), sigterm_as_interrupt():
            if not json_out:
                console.print(
                    f"patchkit bisect  {the_metric.name} ({chosen}), {given[0]} "
                    f"{min_value if min_value is not None else max_value if max_value is not None else ratio}; "
                    f"{len(listed)} first-parent commits after {good_c.short}, {len(skipped)} cannot apply (skipped)",
                    markup=False,
                    highlight=False,
                )
            first = step(good_c)
            if first != "skip":
                good_median = steps[-1]["median"]
                first = (
                    "good" if not _is_bad(the_metric, good_median, min_value, max_value, ratio, good_median) else "bad"
                )
                steps[-1]["verdict"] = first
            if first != "good":
                outcome = {"error": f"--good {good_c.short} is not good ({first}): cannot bisect"}
            elif step(bad_c) != "bad":
                outcome = {"error": f"--bad {bad_c.short} is not bad by the criterion ({steps[-1]['verdict']})"}
            else:
                line = [good_c] + [c for c in listed[:-1] if c.sha not in skipped] + [bad_c]
                lo, hi = 0, len(line) - 1
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    result = step(line[mid])
                    if result == "skip":
                        line.pop(mid)
                        hi -= 1
                    elif result == "bad":
                        hi = mid
                    else:
                        lo = mid
                order = [c.sha for c in listed]
                first_bad = line[hi]
                last_good = line[lo]
                start = order.index(last_good.sha) + 1 if last_good.sha in order else 0
                maybe = [c for c in listed[start : order.index(first_bad.sha)] if c.sha in skipped]
                outcome = {
                    "first_bad": {"commit": first_bad.sha, "subject": first_bad.subject, "date": first_bad.date},
                    "last_good": {"commit": last_good.sha, "subject": last_good.subject},
                    "maybe": [{"commit": c.sha, "subject": c.subject, "why": skipped[c.sha]} for c in maybe],
                }
        result_json = {
            "version": 1,
            "command": "bisect",
            "metric": the_metric.name,
            "profile": chosen,
            "criterion": {"min": min_value, "max": max_value, "ratio": ratio, "good_median": good_median},
            "good": good_c.sha,
            "bad": bad_c.sha,
            "skipped": [{"commit": sha, "why": why} for sha, why in skipped.items()],
            "steps": steps,
            "first_bad": outcome.get("first_bad"),
            "maybe": outcome.get("maybe", []),
            "error": outcome.get("error"),
        }
        save_latest_bisect(session.store.path, result_json)  # `runs --plot` and `report` mark its first bad commit
        if json_out:
            print_json(result_json)
        else:
            show(console, result_json, listed)
        return int(ExitCode.OK if result_json["first_bad"] else ExitCode.REFUSED)


def _is_bad(
    metric: Metric,
    median: float | None,
    min_value: float | None,
    max_value: float | None,
    ratio: float | None,
    good_median: float | None,
) -> bool:
    if median is None:
        return False
    if min_value is not None:
        return median < min_value
    if max_value is not None:
        return median > max_value
    assert ratio is not None
    if not good_median:
        return False
    value = median / good_median
    return value < ratio if metric.better == "higher" else value > ratio


def show(console: Console, result: dict[str, Any], listed: Sequence[Commit]) -> None:
    if result["skipped"]:
        subjects = {c.sha: c.subject for c in listed}
        console.print("skipped (never benchmarked, or the run failed):", style="bold")
        for item in result["skipped"]:
            console.print(f"  {item['commit'][:10]} {subjects.get(item['commit'], '')}: {item['why']}", markup=False)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name in ("step", "run", "commit", result["metric"], "verdict"):
        table.add_column(name, no_wrap=True)
    for index, s in enumerate(result["steps"], start=1):
        table.add_row(
            str(index), str(s["run"]), f"{s['commit'][:10]} {s['subject'][:50]}", fmt(s["median"]), s["verdict"]
        )
    emit(console, table)
    if result["error"]:
        console.print(f"NO RESULT: {result['error']}", style="bold red", markup=False)
        return
    first = result["first_bad"]
    console.print(f"FIRST BAD: {first['commit'][:10]} {first['subject']}", style="bold", markup=False)
    if result["maybe"]:
        names = ", ".join(f"{m['commit'][:10]} {m['subject']}" for m in result["maybe"])
        console.print(f"  or one of the skipped commits just before it: {names}", markup=False)
