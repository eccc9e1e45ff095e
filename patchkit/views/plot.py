"""``patchkit runs --plot METRIC``: one metric over commits, in the terminal (plotext).

For people on a GPU host over ssh who want a look before copying a report
off.  The x axis is the benchmarked commits in topological order (parents
first, as ``check`` lists them); per profile, every measured value is a dot
and the medians are joined by a line.  Runs that are not ``ok`` have no
value; they are listed under the plot with their reason.  The first bad
commit of the store's latest bisect is marked with a vertical line.

Colours only on a terminal (``NO_COLOR`` and ``--no-color`` turn them off
too); off one, the plot is plain text, 80 columns unless ``COLUMNS`` says
otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.errors import ExitCode, PatchkitError, UsageError
from patchkit.git import Repo
from patchkit.report.documents import StoredRuns
from patchkit.wording import labelled

if TYPE_CHECKING:
    from patchkit.views.console import Console

HEIGHT = 22
MAX_TICKS = 6
MARKERS = ("•", "x", "+", "o", "*", "#")  # per profile: they tell the profiles apart without colour


@dataclass(frozen=True)
class Axis:
    """The commits of the plotted runs, oldest first: position 1.. on the x axis."""

    shas: tuple[str, ...]
    subjects: dict[str, str]

    def position(self, sha: str) -> int:
        return self.shas.index(sha) + 1


def commit_axis(repo: Repo, records: Sequence[RunRecord]) -> Axis:
    """The runs' commits in topological order; commits git no longer has go last, by author date."""
    wanted = {r.commit.sha: r.commit for r in records}
    present = []
    for sha in wanted:
        try:
            repo.resolve(sha)
        except PatchkitError:  # a commit that is gone (a rewritten branch) is placed by date
            continue
        present.append(sha)
    order = [c.sha for c in repo.rev_list(present) if c.sha in wanted] if present else []
    rest = sorted((sha for sha in wanted if sha not in order), key=lambda sha: wanted[sha].date)
    return Axis(tuple(order + rest), {sha: wanted[sha].subject for sha in wanted})


def plot_text(stored: StoredRuns, axis: Axis, metric: str, *, color: bool, width: int | None = None) -> str:
    """The plot and the lines under it, as text (ANSI colours only with ``color``)."""
    import plotext

    fig = plotext.figure
    fig.clear()
    fig.plot_size(width or 100, HEIGHT)
    fig.theme("default" if color else "colorless")
    with_metric = [r for r in stored.records if metric in r.samples]
    profiles = list(dict.fromkeys(r.profile for r in with_metric))
    fig.legend(active=False)  # it would cover the oldest commits: the key is printed under the plot
    key: list[str] = []
    for number, profile in enumerate(profiles):
        marker = MARKERS[number % len(MARKERS)]
        xs: list[int] = []
        ys: list[float] = []
        medians: dict[int, list[float]] = {}
        for r in with_metric:
            if r.profile != profile or r.outcome is not Outcome.OK:
                continue
            x = axis.position(r.commit.sha)
            values = [v for v in r.samples[metric] if v is not None]
            xs += [x] * len(values)
            ys += values
            median = r.stats()[metric]["median"]
            if median is not None:
                medians.setdefault(x, []).append(median)
        if medians:
            line_x = sorted(medians)
            line_y = [sum(medians[x]) / len(medians[x]) for x in line_x]
            fig.draw(fig.signal(line_x, line_y, marker="braille").lines())
        if xs:
            fig.draw(fig.signal(xs, ys, marker=marker))
            key.append(f"{marker} {profile}")
    first_bad = _first_bad(stored, axis)
    if first_bad is not None:
        fig.line(axis.position(first_bad), orientation="vertical")
    count = len(axis.shas)
    step = max(1, -(-count // MAX_TICKS))
    ticks = list(range(1, count + 1, step))
    fig.ruler("x").ticks(ticks, [axis.shas[t - 1][:7] for t in ticks])
    fig.ruler("x").lim(0.5, count + 0.5)
    fig.title(f"{metric} over {count} benchmarked commit{'s' if count != 1 else ''}")
    fig.label("commit (oldest first)", axis="x")
    lines = [fig.build().string(colorless=not color).rstrip("\n")]
    lines = [line.replace("\x1b[0m", "") if not color else line for line in lines]
    lines.append("  " + "  ".join(key) + ": measured values; the lines join each run's median" if key else "  no value")
    if first_bad is not None:
        bisect = stored.bisect or {}
        lines.append(
            f"  │ at {axis.position(first_bad)}: first bad commit of the latest bisect "
            f"({bisect.get('metric')}, {bisect.get('profile')}): {first_bad[:10]}"
        )
    lines.append("")
    for index, sha in enumerate(axis.shas, start=1):
        mark = "  <- first bad (latest bisect)" if sha == first_bad else ""
        lines.append(f"{index:>3}  {sha[:10]}  {axis.subjects.get(sha, '')}{mark}")
    not_ok = [r for r in with_metric if r.outcome is not Outcome.OK] + [
        r for r in stored.records if metric not in r.samples and r.outcome is not Outcome.OK
    ]
    for r in not_ok:
        why = labelled(r.outcome.value, r.reason or "-")
        lines.append(f"     run {r.run_id} {r.commit.sha[:10]} {r.profile}: {why}")
    return "\n".join(lines) + "\n"


def _first_bad(stored: StoredRuns, axis: Axis) -> str | None:
    first = (stored.bisect or {}).get("first_bad")
    sha = first.get("commit") if isinstance(first, dict) else None
    return sha if isinstance(sha, str) and sha in axis.shas else None


def plot_metric(repo: Repo, stored: StoredRuns, metric: str, console: Console) -> int:
    """Print the plot of ``metric``; a metric no stored run has is bad input (the known ones are named)."""
    known = sorted({name for r in stored.records for name in r.samples})
    if metric not in known:
        raise UsageError(
            f"no stored run has the metric {metric!r} (store {stored.path})",
            hint=f"metrics in the store: {', '.join(known)}"
            if known
            else "no runs are stored yet: run `patchkit bench`",
        )
    chosen = [r for r in stored.records if metric in r.samples or r.outcome is not Outcome.OK]
    axis = commit_axis(repo, chosen)
    color = bool(console.is_terminal) and not getattr(console, "no_color", False) and not os.environ.get("NO_COLOR")
    width = console.width if console.is_terminal else None
    console.file.write(plot_text(stored, axis, metric, color=color, width=width))
    console.file.flush()
    return int(ExitCode.OK)
