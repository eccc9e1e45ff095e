"""`bench --without PATCH`: evidence for dropping a patch, end to end with the stand-in server and client.

The stand-in client is 25 % faster when the tree's model.py has the ``hooks``
patch's method (``--slow-if-contains ... --slow-factor 1.25``), so that
leaving ``hooks`` out is worse (keep), and leaving ``typing`` out (an import)
changes nothing (drop).  The launches alternate with / without, the without
runs name the patch in their records and trees, and runs / compare / show
never mix the two sides.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, build_history, write_bench_kit
from helpers import run_cli

from patchkit.bench.records.record import RunRecord
from patchkit.demo.history import HistoryBuilder
from patchkit.report.trends import verdicts_document

SHORT = 10  # Commit.short
FAST_WITH_HOOKS = f"--slow-if-contains {MODEL}=set_eagle3_layers_to_capture --slow-factor 1.25"


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("without") / "repo")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    table = bench_table(warmup=0, repeat=1)
    table["vars"] = {**table["vars"], "server_args": "--workers 1", "client_args": FAST_WITH_HOOKS}
    metrics = [{"name": "output_tok_s", "source": "output-file", "key": "output_throughput", "better": "higher"}]
    return write_bench_kit(tmp_path_factory.mktemp("kit"), bench=table, profiles={"std": {}}, metrics=metrics)


def cli(capsys, *args):
    result = run_cli(capsys, *args)
    assert "Traceback" not in result.err, result.err
    return result


def bench(capsys, history, manifest, store, *args):
    return cli(capsys, "bench", "-m", manifest, "--repo", history.path, "--store", store, "--commit", history["base"],
               *args)  # fmt: skip


def test_without_a_patch_that_helps_says_keep_and_never_mixes_the_sides(capsys, history, manifest, tmp_path):
    store = tmp_path / "bench.sqlite"
    result = bench(capsys, history, manifest, store, "--without", "hooks", "--launches", "2", "--json")
    assert result.code == 0, result.err
    data = result.json
    runs = data["runs"]
    assert data["without"] == {"manifest": "standin", "patch": "hooks"}
    # interleaved: with, without, with, without; every without record names the patch it lacks
    assert [r["without"] for r in runs] == [None, data["without"], None, data["without"]]
    assert [r["outcome"] for r in runs] == ["ok"] * 4
    with_tree, without_tree = (Path(runs[i]["commands"]["cwd"]) for i in (0, 1))
    assert with_tree != without_tree and runs[2]["commands"]["cwd"] == str(with_tree)
    assert "set_eagle3_layers_to_capture" in (with_tree / MODEL).read_text()
    assert "set_eagle3_layers_to_capture" not in (without_tree / MODEL).read_text()
    states = {r["patch"]: r["state"] for r in runs[1]["manifests"][0]["results"]}
    assert states == {"typing": "applied", "hooks": "left out (bench --without)"}
    assert [r["output_tok_s"]["median"] for r in (x["stats"] for x in runs)] == [125.0, 100.0, 125.0, 100.0]
    (item,) = data["evidence"]
    assert item["decision"] == "keep" and item["patch"] == "hooks" and item["profile"] == "std"
    assert item["launches"] == {"with": [runs[0]["run"], runs[2]["run"]], "without": [runs[1]["run"], runs[3]["run"]]}
    (metric,) = item["metrics"]
    assert metric["verdict"]["call"] == "different (worse)" and metric["ratio"] == pytest.approx(0.8)
    assert "output_tok_s DIFFERENT (-20.0 %" in item["line"] and item["line"].endswith(
        "-> keep (without it output_tok_s is worse)"
    )

    # compare: each side's launches are its own (2, not 4); the provenance names the patch left out
    compared = cli(capsys, "compare", str(runs[0]["run"]), str(runs[1]["run"]), "--repo", history.path, "--store",
                   store, "--json")  # fmt: skip
    assert compared.code == 0, compared.err
    assert compared.json["launches"] == {"a": item["launches"]["with"], "b": item["launches"]["without"]}
    assert compared.json["b"]["without"] == data["without"] and compared.json["a"]["without"] is None
    (change,) = compared.json["provenance"]["patches"]
    assert change["patch"] == "hooks" and change["a"].startswith("applied sha256:")
    assert change["b"] == "left out (bench --without)"
    # compare --commit and the report's levels take the runs with every patch only
    picked = cli(capsys, "compare", "--commit", history["base"], "--commit", history["base"], "--repo", history.path,
                 "--store", store, "--json")  # fmt: skip
    assert picked.code == 0, picked.err
    assert picked.json["a"]["without"] is None and picked.json["b"]["without"] is None
    records = [RunRecord.from_json(r) for r in runs]
    (level,) = verdicts_document(records, [history["base"]], ["output_tok_s"])["levels"]
    assert level["runs"] == item["launches"]["with"] and level["median"] == 125.0
    # runs and show say which side a run is
    listed = cli(capsys, "runs", "--repo", history.path, "--store", store)
    assert listed.code == 0 and listed.out.count("std without hooks") == 2
    shown = cli(capsys, "show", str(runs[1]["run"]), "--repo", history.path, "--store", store)
    assert shown.code == 0 and "profile std without standin:hooks" in shown.out
    shown = cli(capsys, "show", str(runs[1]["run"]), "--repo", history.path, "--store", store, "--json")
    assert shown.json["header"]["without"] == data["without"]


def test_without_a_patch_that_changes_nothing_says_drop(capsys, history, manifest, tmp_path):
    result = bench(capsys, history, manifest, tmp_path / "s.sqlite", "--without", "typing", "--launches", "2")
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("typing: with vs without")]
    assert len(lines) == 1, result.out
    assert "output_tok_s SAME (+0.0 % [" in lines[0] and lines[0].endswith("-> drop"), lines[0]
    assert lines[0].startswith(f"typing: with vs without at {history['base'][:SHORT]} (std): ")
    assert "std without typing" in result.out  # the table's rows say which side they are


def test_one_launch_a_side_is_undecided_and_says_what_would_decide(capsys, history, manifest, tmp_path):
    result = bench(capsys, history, manifest, tmp_path / "s.sqlite", "--without", "hooks", "--json")
    assert result.code == 0, result.err
    (item,) = result.json["evidence"]
    assert item["decision"] == "undecided"
    assert "launch each side at least twice" in item["why"]
    assert item["metrics"][0]["verdict"]["call"] == "unknown"


def test_bad_input_is_one_line_and_exit_2(capsys, history, manifest, tmp_path):
    store = tmp_path / "s.sqlite"
    result = bench(capsys, history, manifest, store, "--without", "nope")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "standin.toml has no patch 'nope' (its patches: typing, hooks)" in lines[0]
    result = bench(capsys, history, manifest, store, "--without", "other:hooks")
    assert result.code == 2 and "no -m manifest is named 'other'" in result.err
    result = bench(capsys, history, manifest, store, "--without", "hooks", "--commit", history["tip"])
    assert result.code == 2 and "one commit" in result.err
    result = bench(capsys, history, manifest, store, "--without", "hooks", "--executor", "slurm")
    assert result.code == 2 and "slurm" in result.err
    assert not store.exists() or "hooks" not in store.read_bytes().decode("latin-1")  # nothing was launched


def test_help_names_without(capsys):
    result = cli(capsys, "bench", "--help")
    assert "--without PATCH" in result.out and "--threshold" in result.out


def test_a_patch_upstream_provides_says_so_and_drops(capsys, manifest, tmp_path):
    """Where upstream already has the hooks, both trees hold the same code (the fast one): the line says
    upstream has it, and the verdict is drop."""
    builder = HistoryBuilder(tmp_path / "repo")
    builder.commit("base", "Initial import", {
        ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
        "python/sglang/__init__.py": "",
        MODEL: MODEL_TEXT + "\n    def set_eagle3_layers_to_capture(self, layers):\n        self.layers = layers\n",
        "perf/throughput.txt": "100\n",
    })  # fmt: skip
    history = builder.build()
    result = bench(capsys, history, manifest, tmp_path / "s.sqlite", "--without", "hooks", "--launches", "2", "--json")
    assert result.code == 0, result.err
    (item,) = result.json["evidence"]
    short = history["base"][:SHORT]
    assert item["line"].startswith(f"hooks: upstream has its code at {short}; with vs without (std): "), item["line"]
    assert [r["stats"]["output_tok_s"]["median"] for r in result.json["runs"]] == [125.0] * 4
    assert item["decision"] == "drop" and item["line"].endswith("-> drop")
