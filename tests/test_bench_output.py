"""What the bench verbs print: every number whole on a real pseudo-terminal of 60, 80 and 120 columns,
nothing cut off one, subjects as text, progress lines on stderr, and a closed stdout ending quietly."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest
from bench_helpers import build_history, write_bench_kit
from helpers import patchkit_script

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

TYPO = "[fix typo]: funtion -> function"
WIDTHS = (60, 80, 120)


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """A history whose tip has a subject that looks like console markup, and four stored runs of it."""
    root = tmp_path_factory.mktemp("out")
    history = build_history(root / "repo")
    git = ["git", "-C", str(history.path), "-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", TYPO], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    manifest = write_bench_kit(root / "kit")
    commits = [history["restore-model"], history["slow"], history["break-model"], head]
    bench = cli(history.path, "bench", "-m", str(manifest), *(a for c in commits for a in ("--commit", c)),
                "--profile", "eagle3", "--json")  # fmt: skip
    assert bench.returncode == 1, bench.stderr  # break-model is refused
    return history, manifest, head


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [patchkit_script(), *args, "--repo", str(repo)], capture_output=True, text=True, check=False, env=_env()
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    return env


def on_pty(args: list[str], cols: int) -> tuple[int, list[str]]:
    """Run a command with stdout on a real pseudo-terminal ``cols`` wide; the screen it leaves, as lines."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=subprocess.DEVNULL, close_fds=True, env=_env())
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(), screen(b"".join(chunks).decode("utf-8", "replace"))


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for ``raw``: text, CR, LF, cursor up (A) and erase line (K); styles dropped."""
    lines, row, col = [""], 0, 0
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", raw):
        if not token:
            continue
        if token == "\r":
            col = 0
        elif token == "\n":
            row += 1
            if row == len(lines):
                lines.append("")
        elif token.startswith("\x1b["):
            if token.endswith("A"):
                row = max(0, row - int(token[2:-1] or 1))
            elif token.endswith("K"):
                lines[row] = "" if token[2:-1] == "2" else lines[row][:col]
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
    return [line.rstrip() for line in lines]


def assert_whole(lines: list[str], expected: set[str], cols: int) -> None:
    """Every expected token is a whole word of some line; no line is wider than the terminal; no "…"."""
    words = {word for line in lines for word in line.split()}
    assert not expected - words, (sorted(expected - words), "\n".join(lines))
    assert all(len(line) <= cols for line in lines), "\n".join(lines)
    assert not any("…" in line for line in lines)


def stored(history) -> list[dict]:
    return json.loads(cli(history.path, "runs", "--json").stdout)["runs"]


def numbers(stats: dict) -> set[str]:
    return {f"{s[k]:.2f}" for s in stats.values() for k in ("median", "min", "max") if s[k] is not None}


@pytest.mark.parametrize("cols", (40, *WIDTHS))  # 40: narrower than any table, one block per row
def test_runs_and_compare_keep_every_number_whole(kit, cols):
    history, _manifest, _head = kit
    runs = stored(history)[:4]
    code, lines = on_pty([patchkit_script(), "runs", "--repo", str(history.path)], cols)
    assert code == 0
    expected = {str(r["run"]) for r in runs} | {r["commit"][:10] for r in runs} | {r["outcome"] for r in runs}
    expected |= {f"{s['median']:.2f}" for r in runs for s in r["stats"].values() if s["median"] is not None}
    assert_whole(lines, expected | {"[fix"}, cols)

    a, b = runs[0], runs[1]
    data = json.loads(cli(history.path, "compare", str(a["run"]), str(b["run"]), "--json").stdout)
    code, lines = on_pty(
        [patchkit_script(), "compare", str(a["run"]), str(b["run"]), "--repo", str(history.path)], cols
    )
    assert code == 0
    expected = numbers(a["stats"]) | numbers(b["stats"]) | {a["commit"][:10], b["commit"][:10]}
    expected |= {f"{m['ratio']:.3f}" for m in data["metrics"]}
    assert_whole(lines, expected, cols)


@pytest.mark.parametrize("cols", WIDTHS)
def test_bench_and_bisect_keep_every_number_whole(kit, cols):
    history, manifest, head = kit
    code, lines = on_pty(
        [patchkit_script(), "bench", "-m", str(manifest), "--repo", str(history.path), "--commit", head,
         "--profile", "baseline"], cols,
    )  # fmt: skip
    assert code == 0, "\n".join(lines)
    run = stored(history)[-1]
    assert_whole(lines, numbers(run["stats"]) | {str(run["run"]), head[:10], "ok", "1.000", "[fix"}, cols)

    code, lines = on_pty(
        [patchkit_script(), "bisect", "-m", str(manifest), "--repo", str(history.path), "--good",
         history["restore-model"], "--bad", history["slow"], "--metric", "output_tok_s", "--ratio", "0.9"], cols,
    )  # fmt: skip
    assert code == 0, "\n".join(lines)
    good, bad = stored(history)[-2:]
    expected = {f"{r['stats']['output_tok_s']['median']:.2f}" for r in (good, bad)}
    expected |= {str(good["run"]), str(bad["run"]), good["commit"][:10], bad["commit"][:10], "good", "bad"}
    assert_whole(lines, expected, cols)


def test_off_a_terminal_nothing_is_cut_and_subjects_are_text(kit):
    history, _manifest, head = kit
    listing = cli(history.path, "runs")
    assert listing.returncode == 0
    lines = [line for line in listing.stdout.splitlines() if head[:10] in line]
    assert lines and all(TYPO in line for line in lines)  # nothing cut, nothing read as markup
    assert any(line.split()[-2:] == ["output_tok_s", "65.00"] for line in lines)  # nothing wrapped
    compare = cli(history.path, "compare", "--commit", head, "--commit", history["slow"])
    assert compare.returncode == 0, compare.stderr
    assert f"A = run 4 {head[:10]} {TYPO} (eagle3, ok)" in compare.stdout


def test_compare_without_a_common_ok_run_names_the_runs_it_found(kit):
    history, _manifest, head = kit
    result = cli(history.path, "compare", "--commit", history["break-model"], "--commit", head)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "no profile has ok runs of both commits" in line and "run 3 eagle3 refused" in line


def test_compare_of_a_run_without_data_says_so(kit):
    history, _manifest, _head = kit
    result = cli(history.path, "compare", "3", "4")
    assert result.returncode == 0, result.stderr
    assert "run 3 has no data (refused:" in result.stdout
    assert "A median" not in result.stdout  # no table of dashes


def test_a_piped_bench_prints_timestamped_progress_on_stderr(kit):
    history, manifest, head = kit
    result = cli(history.path, "bench", "-m", str(manifest), "--commit", head, "--profile", "baseline", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["command"] == "bench"  # stdout stays JSON
    known = (
        "preparing worktree|reusing the prepared worktree|applying|guard|reading provenance|starting server"
        "|waiting for health"
        "|checking worker environments|accounting for every file that ran|client|stopping server"
    )
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    pattern = re.compile(rf"^{stamp} bench {head[:10]} baseline: (?P<phase>{known})\b")
    phases = []
    for line in result.stderr.splitlines():
        match = pattern.match(line)
        assert match, line
        phases.append(match["phase"])
    assert phases[:5] == ["preparing worktree", "applying", "guard", "reading provenance", "starting server"]
    assert phases.count("waiting for health") == 1  # at most one line every 30 s
    assert phases[-4:] == ["client", "client", "client", "stopping server"]


@pytest.mark.parametrize("args", [["runs"], ["runs", "--json"], ["--help"]])
def test_a_closed_stdout_ends_quietly_with_141(kit, args):
    history, _manifest, _head = kit
    repo = [] if args == ["--help"] else ["--repo", str(history.path)]
    proc = subprocess.Popen([patchkit_script(), *args, *repo], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line, as with `| head -0`
    err = proc.stderr.read()
    assert proc.wait() == 141
    assert err == b""
