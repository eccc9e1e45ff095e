"""`--json` everywhere the README says, and a clear exit 2 where it cannot be (#47 item 5).

`runs --plot M --json` printed the ASCII plot; `report`, `demo` and `run` had no --json.  Now `report --json`
prints one documented object; `run` (stdout is its command's) and `demo` (a walkthrough) say why they have
none; `--plot` with `--json` or `--pending` is bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import TARGET, d, run_cli, scenario

from patchkit.cli import cli

ROOT = Path(__file__).resolve().parents[1]
WITHOUT = {"run", "demo"}
IMPORT = [{"id": "os", "op": "ensure-import", "file": TARGET, "import": "import os"}]


def test_every_verb_but_run_and_demo_takes_json_and_the_docs_say_which_do_not() -> None:
    for name, command in cli.commands.items():
        shown = {o for p in command.params if not getattr(p, "hidden", False) for o in p.opts}
        assert ("--json" in shown) == (name not in WITHOUT), name
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "every command but two takes `--json`" in readme and "`run`, whose stdout" in readme
    assert "## Commands without `--json`" in (ROOT / "docs" / "json.md").read_text(encoding="utf-8")


def test_run_and_demo_refuse_json_saying_why(capsys, tmp_path) -> None:
    run = run_cli(capsys, "run", "-m", "missing", "--json", "--", "true")
    assert run.code == 2 and run.out == ""
    assert run.err == (
        "patchkit: error: patchkit run has no --json: stdout is CMD's own output, passed through; "
        "`patchkit guard --json` prints the guard's verdict as JSON; CMD can print its own\n"
    )
    demo = run_cli(capsys, "demo", "--keep", tmp_path / "d", "--json")
    assert demo.code == 2 and "patchkit demo has no --json: it is a walkthrough for a person" in demo.err
    assert not (tmp_path / "d").exists()  # refused before anything was built
    for verb in ("run", "demo"):
        assert "--json" in run_cli(capsys, verb, "--help").out  # the help says it has none


def test_runs_plot_takes_no_json(capsys, tmp_path) -> None:
    sc = scenario(tmp_path, {TARGET: d("X = 1\n")}, [], {})
    for extra in (["--json"], ["--pending"]):
        r = run_cli(capsys, "runs", "--repo", sc.repo, "--plot", "output_tok_s", *extra)
        assert r.code == 2 and r.out == "" and f"--plot draws for a person: it takes no {extra[0]}" in r.err


def test_report_json_is_one_documented_object(capsys, tmp_path) -> None:
    sc = scenario(tmp_path, {TARGET: d("X = 1\n")}, IMPORT, {})
    out = tmp_path / "r.html"
    r = run_cli(capsys, "report", "-m", sc.kit.manifest, "--repo", sc.repo, "-o", out, "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["command"] == "report" and data["version"] == 1
    assert data["output"] == str(out.resolve()) and data["bytes"] == out.stat().st_size
    assert data["checked_commits"] == 1 and data["stored_runs"] == 0 and data["bisect"] is False
    documented = (ROOT / "docs" / "json.md").read_text(encoding="utf-8").split("## `report --json`", 1)[1]
    for key in data:
        assert f'"{key}"' in documented.split("## ", 1)[0], key
