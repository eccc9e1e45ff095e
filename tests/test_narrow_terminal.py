"""On a terminal 60, 80 or 120 columns wide nothing patchkit prints cuts a name, a number or a verdict in two.

Each view is rendered in process on a console that is a terminal of that width (the suite pins
COLUMNS=200: each test sets its own), on the demo's SGLang-shaped history and bundled manifest, and on
stored runs with its long subjects.  The checks: every line fits the width; every identifier of the data
(a patch id, a reason, a class name inside a message, a path's parts, a metric, a commit, a number) is whole
on one line, and a whole column's cell (a status, an outcome, a verdict) is whole too; a line too long for
the terminal goes on with a hanging indent, never back at column 0; a subject is not squeezed into a
narrow cell many lines tall.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_bench_store import record

from patchkit.bench.records.compare import compare
from patchkit.bench.records.rows import table_rows
from patchkit.bench.stats.delta import between
from patchkit.bench.stats.search import Measurement, bisect
from patchkit.commands.check import show as show_check
from patchkit.demo.sglang import build_sglang_history
from patchkit.engine.check import check_range
from patchkit.engine.status import status_worktree
from patchkit.git import Commit, Repo
from patchkit.guard.api import evaluate_guard
from patchkit.manifest import load_manifest
from patchkit.views.bench import fmt
from patchkit.views.bench import results_table as bench_table
from patchkit.views.bisect import show_bisect
from patchkit.views.compare import show_comparison
from patchkit.views.console import emit, make_console
from patchkit.views.grid import Grid, cell_pieces
from patchkit.views.guard import show as show_guard
from patchkit.views.patches import results_table
from patchkit.views.runs import runs_table
from patchkit.views.text import cell_width

WIDTHS = (60, 80, 120)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PUNCTUATION = "()[]{},;:.'\"`"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def sglang(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("narrow") / "sglang"
    build_sglang_history(path)
    return path


def render(monkeypatch: pytest.MonkeyPatch, width: int, draw: Callable[[Any], object]) -> list[str]:
    """What ``draw`` prints on a terminal ``width`` columns wide, styles dropped; no line wider than that."""
    monkeypatch.setenv("COLUMNS", str(width))
    out = Terminal()
    draw(make_console(out))
    lines = ANSI.sub("", out.getvalue()).splitlines()
    assert lines
    too_wide = [line for line in lines if cell_width(line) > width]
    assert not too_wide, "\n".join(lines)
    return lines


def identifiers(text: str) -> list[str]:
    """The names and numbers in ``text``: its words without the punctuation around them, a path's parts apart
    (a path longer than a line breaks after a ``/``, never inside a part)."""
    out = []
    for word in text.split():
        for part in word.strip(PUNCTUATION).split("/"):
            part = part.strip(PUNCTUATION)
            if part:
                out.append(part)
    return out


def assert_whole(lines: list[str], names: Iterable[str]) -> None:
    cut = sorted({name for name in names if not any(name in line for line in lines)})
    assert not cut, (cut, "\n".join(lines))


def grid_names(grid: Grid) -> tuple[list[str], list[str]]:
    """(the identifiers of every cell and heading, the cells of the whole columns, each line of them); a prose
    column's heading may be left out, with its prose under each row."""
    names = [name for column in grid.columns if not column.prose for name in identifiers(column.name)]
    cells = []
    for row in grid.rows:
        for column, cell in zip(grid.columns, row, strict=True):
            text = "".join(t for t, _ in cell_pieces(cell))
            names += identifiers(text)
            if column.whole:
                cells += [line for line in text.split("\n") if line.strip()]
    return names, cells


def assert_grid_whole(lines: list[str], grid: Grid) -> None:
    names, cells = grid_names(grid)
    assert_whole(lines, names)
    assert_whole(lines, cells)


def assert_hanging(lines: list[str], heads: Iterable[str]) -> None:
    """Only the lines that start a record begin at column 0: a wrapped line goes on indented."""
    starts = tuple(heads)
    at_zero = [line for line in lines if line and not line[0].isspace() and not line.startswith(starts)]
    assert not at_zero, (at_zero, "\n".join(lines))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_patch_table_and_the_guard_keep_every_name_whole(sglang, monkeypatch, width):
    """The kimi manifest at main: UPSTREAM_PROVIDES with a message that names KimiK25ForConditionalGeneration
    and a hint; the guard's table, checks and verdict."""
    manifest = load_manifest("kimi-k25-eagle3")
    with Repo.discover(sglang) as repo:
        report = status_worktree(manifest, repo)
    states = [report.state_of(r) for r in report.results]
    table = results_table(report.results, extra={"state": states})
    lines = render(monkeypatch, width, lambda console: emit(console, table))
    assert_grid_whole(lines, table)
    assert "KimiK25ForConditionalGeneration" in "\n".join(lines)

    guard = evaluate_guard(sglang, manifest)
    lines = render(monkeypatch, width, lambda console: show_guard(guard, console))
    assert_grid_whole(lines, table)
    assert_whole(lines, [c.check for c in guard.checks] + [w for c in guard.checks for w in identifiers(c.message)])
    assert_whole(lines, identifiers(guard.commit.subject if guard.commit else ""))


@pytest.mark.parametrize("width", WIDTHS)
def test_check_windows_go_on_indented_and_keep_subjects_whole(sglang, monkeypatch, width):
    """Each window line names its first commit with its subject: wrapped, it goes on indented, never at
    column 0, and no commit id, subject word or reason is cut."""
    manifest = load_manifest("kimi-k25-eagle3")
    with Repo.discover(sglang) as repo:
        report = check_range(manifest, repo, ranges=["v0.5.8..main"])
    lines = render(monkeypatch, width, lambda console: show_check(report, console, "v0.5.8..main"))
    plain = io.StringIO()
    show_check(report, make_console(plain), "v0.5.8..main")  # off a terminal: every line whole, unwrapped
    assert_whole(lines, identifiers(plain.getvalue()))
    heads = [p.id for p in manifest.patches] + ["group ", "patchkit check", "last commit", "OK:", "FAILED:", "no "]
    assert_hanging(lines, heads)


def runs_of(sglang: Path) -> list:
    """Four stored runs of the demo's good and bad commits (their long subjects), two metrics each."""
    with Repo.discover(sglang) as repo:
        commits = repo.rev_list(["main"])
    good = next(c for c in commits if c.subject == "model: support Kimi-K2.5 (#17789)")
    bad = next(c for c in commits if "DeepseekV2WeightLoaderMixin" in c.subject)
    out = []
    for run, commit, value in ((1, good, 93.74), (2, bad, 59.6), (3, good, 92.85), (4, bad, 60.19)):
        out.append(
            record(
                run=run,
                commit={"sha": commit.sha, "subject": commit.subject, "date": commit.date},
                outcome="ok",
                reason=None,
                missing=[],
                profile="eagle3-speculative-decoding",
                samples={"output_tok_s": [value, value + 0.4], "verify_latency_ms": [18.05, 18.25]},
                started_at=f"2026-11-30T10:0{run}:00.000+00:00",
            )
        )
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_bench_runs_and_compare_keep_names_numbers_and_verdicts_whole(sglang, monkeypatch, width):
    records = runs_of(sglang)
    for table in (bench_table(table_rows(records)), runs_table(records)):
        lines = render(monkeypatch, width, lambda console, table=table: emit(console, table))
        assert_grid_whole(lines, table)

    a, b = records[0], records[1]
    result = compare(a, b, threshold=0.05, between=between((), ()), launches_a=records[::2], launches_b=records[1::2])
    lines = render(monkeypatch, width, lambda console: show_comparison(console, result))
    names = [m.metric for m in result.metrics] + [m.call for m in result.metrics]
    names += [fmt(m.shown_ratio, 3) for m in result.metrics]
    names += [fmt(s.get(k)) for m in result.metrics for s in (m.a, m.b) if s for k in ("median", "min", "max")]
    names += identifiers(a.commit.subject) + identifiers(b.commit.subject) + [a.commit.short, b.commit.short]
    assert_whole(lines, names)


@pytest.mark.parametrize("width", WIDTHS)
def test_bisect_keeps_its_table_whole_and_its_subjects_readable(sglang, monkeypatch, width):
    """The launch table's commits, numbers and verdicts whole; each subject readable as text: at least its first
    20 characters on one line (not an 8-character cell many lines tall)."""
    with Repo.discover(sglang) as repo:
        line = [c for c in repo.rev_list(["main"]) if c.parents][:16]  # parents first, as check lists them
    seen: dict[str, int] = {}

    def measure(commit: Commit) -> Measurement:
        seen[commit.sha] = seen.get(commit.sha, 0) + 1
        at = line.index(commit)
        return Measurement((60.0 if at >= 9 else 93.0) * (1 + 0.002 * (seen[commit.sha] % 3)))

    report = bisect(line, measure)
    assert report.first_bad is not None
    lines = render(monkeypatch, width, lambda console: show_bisect(console, report, "output_tok_s"))
    names = [s.commit.short for s in report.steps] + [s.verdict for s in report.steps]
    names += [fmt(s.measurement.value) for s in report.steps] + ["output_tok_s"]
    names += [w for s in report.steps for w in identifiers(s.commit.subject) + identifiers(s.why)]
    assert_whole(lines, names)
    text = "\n".join(lines)
    for step in report.steps:
        assert step.commit.subject[:20] in text, (step.commit.subject, text)


@pytest.mark.parametrize("width", WIDTHS)
def test_bisect_suspects_and_pruning_keep_paths_functions_and_subjects_whole(sglang, monkeypatch, width):
    """The suspects of the demo's line (each with a path and the functions that ran: long names), and the
    pruning line under the answer: no path part, function, commit or count cut in two."""
    from patchkit.bench.execution.pruning import Suspects
    from patchkit.bench.stats.pruning import PruningReport
    from patchkit.bench.stats.relevance import Ran, judge, suspects
    from patchkit.footprint.line import line_footprints
    from patchkit.views.bisect import show_pruning, show_suspects

    with Repo.discover(sglang) as repo:
        main = [c for c in repo.rev_list(["main"]) if c.parents]
        good = next(c for c in main if c.subject == "model: support Kimi-K2.5 (#17789)")
        line = [good, *repo.commit_range(good.sha, main[-1].sha)][:16]
        footprints = line_footprints(repo, line[0].sha, line[-1].sha)
    functions = {(c.path, c.qualname) for fp in footprints for c in fp.changes if c.qualname}
    ran = Ran("function", frozenset(functions), frozenset(c.path for fp in footprints for c in fp.changes),
              frozenset())  # fmt: skip
    listed = Suspects(suspects(footprints, ran), len(line) - 1, "function")
    assert listed.commits
    lines = render(monkeypatch, width, lambda console: show_suspects(console, listed, line))
    names = [
        w for r in listed.commits for j in r.why for w in identifiers(f"{j.change.path} {j.change.qualname or ''}")
    ]
    names += [c.short for c in line if c.sha in {r.commit for r in listed.commits}]
    # a name wider than a line is cut (after its hanging indent), and only such a one: 68 characters at 60
    assert_whole(lines, [name for name in names if cell_width(name) <= width - 12])
    text = "\n".join(lines)
    for commit in line:
        if commit.sha in {r.commit for r in listed.commits}:
            assert commit.subject[:20] in text, (commit.subject, text)

    nothing = Ran("function", frozenset(), frozenset(), frozenset())
    inert = tuple(r for r in (judge(fp, nothing) for fp in footprints[:-1]) if r.inert)  # skipped: never BAD
    with Repo.discover(sglang) as repo:
        report = bisect(line, lambda commit: Measurement(60.0 if line.index(commit) >= 9 else 93.0))
    report = replace(report, pruning=PruningReport("on", "", inert))
    lines = render(monkeypatch, width, lambda console: show_pruning(console, report, True))
    assert_whole(lines, ["pruning:", "`--json`", "`--every-commit`", f"skipped {len(inert)} commits"])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demos_timing_windows_and_closing_sentence_go_on_indented(sglang, monkeypatch, width):
    """The timing manifest's window lines (once left to the terminal to wrap back at column 0) and the closing
    sentence (once with a hard line break in the source, after "then try runs,") read as one line each,
    wrapped with a hanging indent."""
    from patchkit.commands.demo import closing, timing_windows
    from patchkit.demo.hunt import condensed_windows

    timing = load_manifest("eagle3-verify-timing")
    with Repo.discover(sglang) as repo:
        windows = list(condensed_windows(check_range(timing, repo, ranges=["v0.5.8..main"])))
    lines = render(monkeypatch, width, lambda console: timing_windows(console, timing.name, "v0.5.8..main", windows))
    assert_whole(lines, [name for window in windows for name in identifiers(window)])
    assert_hanging(lines, [timing.name])
    shown = [" ".join(part.strip() for part in paragraph) for paragraph in paragraphs(lines)]
    assert shown[1:-1] == windows, "\n".join(lines)

    lines = render(monkeypatch, width, lambda console: closing(console, None, "4d8f7a7178", "476af6dc99", (5, 6)))
    assert paragraphs(lines) == [lines[1:]] and " ".join(line.strip() for line in lines[1:]) == (
        "Run `patchkit demo --keep DIR` to keep the repository and the bench store, then try runs, show, compare "
        "and bisect on them yourself: the last lines name the commands."
    )


def paragraphs(lines: list[str]) -> list[list[str]]:
    """Lines grouped as a terminal shows them: a line and the lines that go on from it, 4 columns further in."""
    out: list[list[str]] = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        if out and line.strip() and indent >= len(out[-1][0]) - len(out[-1][0].lstrip(" ")) + 4:
            out[-1].append(line)
        elif line.strip():
            out.append([line])
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_show_code_keeps_each_process_command_line_whole_in_its_parts(monkeypatch, width):
    """``show --code``'s process table: a server's command line (long paths) goes under its row where the table is
    narrow, so no path part, option or number is cut in two."""
    from patchkit.commands.show import show_code

    argv = (
        "/work/main/patchkit/demo/standin/server.py --port 40407 --tree "
        "/tmp/dk2/sglang/.git/patchkit/worktrees/e32339868eb0 --noise 0.01 --noise-state /tmp/dk2/noise-state"
    )
    data = {"recorded": True, "granularity": "file", "tree": [], "outside": [], "reads": [], "blind": [],
            "processes": [{"pid": 16538, "core": "file", "granularity": "file", "functions": 0, "modules": 107,
                           "reads": 2, "label": argv, "why": None}]}  # fmt: skip
    lines = render(monkeypatch, width, lambda console: show_code(console, data))
    assert_whole(lines, [word for word in argv.split() if cell_width(word) <= width - 12])  # each path whole
    assert_whole(lines, ["16538", "file (files)", "107"])
