"""`patchkit runs --plot METRIC`: the metric over the benchmarked commits in the terminal (plotext).

Real runs of the stand-in server over the small bench history
(tests/bench_helpers.py), and a real bisect, whose first bad commit the plot
marks.  Off a terminal the plot has no colour; on a pseudo-terminal it has.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess

import pytest
from bench_helpers import SLOW_SUBJECT, build_history, write_bench_kit
from helpers import ANSI_ESCAPE, patchkit_script, run_script

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`


@pytest.fixture(scope="module")
def hunted(tmp_path_factory):
    root = tmp_path_factory.mktemp("plot")
    history = build_history(root / "repo")
    manifest = write_bench_kit(root / "kit")
    store = root / "bench.sqlite"
    found = run_script(
        "bisect", "-m", manifest, "--repo", history.path, "--store", store, "--good", history["base"],
        "--bad", history["tip"], "--metric", "output_tok_s", "--ratio", "0.9", "--profile", "eagle3",
    )  # fmt: skip
    assert found.code == 0, found.out + found.err
    refused = run_script("bench", "-m", manifest, "--repo", history.path, "--store", store,
                         "--commit", history["break-model"], "--profile", "eagle3")  # fmt: skip
    assert refused.code == 1
    return history, store


COMMIT_LINE = re.compile(r"^ *(\d+)  ([0-9a-f]{10})  ")


def test_plot_off_a_terminal_marks_the_first_bad_commit_without_colour(hunted):
    history, store = hunted
    result = run_script("runs", "--repo", history.path, "--store", store, "--plot", "output_tok_s")
    assert result.code == 0, result.err
    out = result.out
    print(out)
    assert ANSI_ESCAPE not in out
    lines = out.splitlines()
    assert lines[0].strip() == "output_tok_s over 6 benchmarked commits"  # the first bad commit's parent too
    # The axis: benchmarked commits oldest first, each listed under the plot; the refused one too.
    listed = [m[2] for m in map(COMMIT_LINE.match, lines) if m]
    order = [history[label] for label in history.order]
    assert listed == sorted(listed, key=lambda sha: next(i for i, full in enumerate(order) if full.startswith(sha)))
    assert history["break-model"][:10] in listed
    slow = next(line for line in lines if COMMIT_LINE.match(line) and history["slow"][:10] in line)
    assert slow.endswith(f"{SLOW_SUBJECT}  <- first bad (latest bisect)")
    position = int(slow.split()[0])
    marked = f"  │ at {position}: first bad commit of the latest bisect (output_tok_s, eagle3): {history['slow'][:10]}"
    assert marked in out
    broken = history["break-model"][:10]
    assert any(line.startswith("     run ") and "refused" in line and broken in line for line in lines)
    # The values are drawn: 100 before the slow commit, 65 from it on, as y tick labels and marks in the plot.
    assert "100.0┤" in out and "65.0┤" in out
    assert sum(line.count("•") for line in lines[:24]) >= 4


def test_plot_on_a_terminal_has_colour_and_no_color_removes_it(hunted):
    history, store = hunted

    def on_pty(*extra: str) -> str:
        main, child = pty.openpty()
        env = {**os.environ, "COLUMNS": "100", "LINES": "40"}
        env.pop("NO_COLOR", None)
        proc = subprocess.Popen(
            [patchkit_script(), *extra, "runs", "--repo", history.path, "--store", store, "--plot", "verify_ms"],
            stdin=child, stdout=child, stderr=child, env=env,
        )  # fmt: skip
        os.close(child)
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
        os.close(main)
        return b"".join(chunks).decode("utf-8", "replace")

    coloured = on_pty()
    assert ANSI_ESCAPE in coloured and "verify_ms over" in coloured
    plain = on_pty("--no-color")
    assert ANSI_ESCAPE not in plain and "verify_ms over" in plain


def test_plot_of_an_unknown_metric_is_one_line(hunted):
    history, store = hunted
    result = run_script("runs", "--repo", history.path, "--store", store, "--plot", "tok_s")
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err
    assert "no stored run has the metric 'tok_s'" in result.err
    assert "output_tok_s, output_tok_s_printed, verify_ms" in result.err
