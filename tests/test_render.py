"""Off a terminal, patchkit prints its tables without rich (``Grid.plain_lines``):
those lines must be exactly what rich prints for the same table there."""

from __future__ import annotations

import io

import pytest
from helpers import rich_off_terminal
from rich.console import Console

from patchkit.results import PatchResult, Reason, Status
from patchkit.views.console import PlainConsole, emit, make_console, write_pieces
from patchkit.views.grid import Grid
from patchkit.views.patches import results_table


def rich_lines(grid: Grid) -> list[str]:
    console = rich_off_terminal(io.StringIO())
    with console.capture() as captured:
        console.print(grid.to_rich())
    return [line.rstrip() for line in captured.get().splitlines()]


CELLS = [
    "plain",
    "",
    "two\nlines",
    ("styled", "bold red"),
    [("message", ""), ("\nhint: look here", "dim")],
    "tab\there\tand\tthere",
    "ab\t\tc",
    "bell\x07 cr\r bs\x08 ff\x0c vt\x0b",
    "wide 漢字 and é",
    "combining e\u0301",
    "[bold]not markup[/bold] [link=x]",
    "trailing spaces   ",
    "\nleading newline",
]


@pytest.mark.parametrize("rows", [0, 1, 3, 12])
def test_plain_lines_match_rich(rows: int) -> None:
    grid = Grid()
    grid.add_column("#", justify="right", style="dim")
    grid.add_column("name")
    grid.add_column("wide header here")
    grid.add_column("message")
    for index in range(rows):
        grid.add_row(str(index), CELLS[index % len(CELLS)], CELLS[(index + 3) % len(CELLS)], CELLS[-1 - index % 5])
    assert grid.plain_lines() == rich_lines(grid)


@pytest.mark.parametrize("cell", CELLS)
def test_every_cell_kind_matches_rich(cell: object) -> None:
    grid = Grid()
    grid.add_column("a")
    grid.add_column("b", justify="right")
    grid.add_row(cell, cell)  # type: ignore[arg-type]
    grid.add_row("x", "y")
    assert grid.plain_lines() == rich_lines(grid)


def test_results_table_matches_rich() -> None:
    results = [
        PatchResult(
            "typing-imports", "ensure_import", Status.SKIP, Reason.ALREADY_APPLIED, True, "a.py", 26, "imported"
        ),
        PatchResult(
            "hooks", "add_methods", Status.FAIL, Reason.TARGET_NOT_FOUND, False, "b.py", None, "gone", hint="in c.py:12"
        ),
    ]
    grid = results_table(results, extra={"state": ["applied", "not applied"]})
    assert grid.plain_lines() == rich_lines(grid)


def test_a_row_of_the_wrong_length_is_a_bug() -> None:
    grid = Grid()
    grid.add_column("a")
    with pytest.raises(ValueError):
        grid.add_row("x", "y")


def test_plain_console_prints_what_rich_prints() -> None:
    out = io.StringIO()
    console = make_console(out)
    assert isinstance(console, PlainConsole)
    grid = Grid()
    grid.add_column("check")
    grid.add_column("message")
    grid.add_row("clean", "no changes")
    console.print("plain [not markup]\r", markup=False, style="bold")
    console.print()
    emit(console, grid)
    console.print("[bold]no markup[/bold] [/x]", style="bold")  # patchkit prints no markup: text as written
    assert out.getvalue() == "plain [not markup]\n\ncheck  message\nclean  no changes\n[bold]no markup[/bold] [/x]\n"


@pytest.mark.parametrize("text", [cell for cell in CELLS if isinstance(cell, str)])
def test_plain_console_lines_match_rich(text: str) -> None:
    """A line printed off a terminal without rich (``print`` of a string, ``write_pieces``) is what rich
    prints there: no markup read, control codes dropped, tabs expanded from the line's start."""
    plain = io.StringIO()
    console = make_console(plain)
    rich = rich_off_terminal(io.StringIO())
    with rich.capture() as captured:
        for target in (console, rich):
            target.print(text, style="bold")
            target.print(text)
            write_pieces(target, [("lead\t", "bold"), (text, "dim"), ("\tend", "")])  # type: ignore[arg-type]
    assert "rich" not in type(console).__module__
    assert plain.getvalue() == captured.get()


def test_a_narrow_terminal_wraps_but_never_cuts() -> None:
    """On a 60-column terminal the table wraps; codes stay whole and no cell is cut short with "…"."""
    results = [
        PatchResult(
            "a-rather-long-patch-name",
            "add_methods",
            Status.FAIL,
            Reason.TARGET_NOT_FOUND,
            True,
            "python/sglang/srt/models/deeply/nested/kimi_k25.py",
            1234,
            "class KimiK25ForConditionalGeneration is not in this file any more " * 2,
        )
    ]
    console = Console(file=io.StringIO(), width=60, color_system=None, highlight=False, emoji=False)
    with console.capture() as captured:
        console.print(results_table(results).to_rich())
    text = captured.get()
    assert "…" not in text
    assert "TARGET_NOT_FOUND" in text and "FAIL" in text
    lines = text.splitlines()

    def column(name: str, following: str) -> str:
        start, end = lines[0].index(name), lines[0].index(following)
        return "".join(line[start:end].strip() for line in lines[1:])

    assert column("where", "message") == "python/sglang/srt/models/deeply/nested/kimi_k25.py:1234"
    assert column("patch", "status") == "a-rather-long-patch-name"
