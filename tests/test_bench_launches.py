"""Server launches as the replicates, end to end with the stand-in server's seeded launch noise (--noise).

An A/A `noise` run (never `different`, its spread stored per host and
profile), `bench --launches N` interleaved round-robin with the worktree
prepared once per commit and the launch number on every sample, `compare`
over launches with ratio, interval and verdict, and the noise-aware `bisect`
finding a 10 % regression over a 16-commit history at 3 % launch noise, or
answering an honest range when --max-launches is too small.
"""

from __future__ import annotations

import re
import sqlite3

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, build_history, write_bench_kit
from helpers import run_cli

from patchkit.demo.history import History, HistoryBuilder

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

REGRESSION = "sched: chunked prefill by default"  # the planted 10 % drop of the 16-commit history


def noisy_kit(root, state, *, sigma: float, seed: str, launches: int | None = None):
    """The stand-in kit with per-launch noise; one profile, one metric, one warm-up-free measured run per launch."""
    table = bench_table(warmup=0, repeat=1, launches=launches)
    table["vars"] = {
        **table["vars"],
        "server_args": f"--workers 1 --noise {sigma} --noise-seed {seed} --noise-state {state}",
    }
    metrics = [{"name": "output_tok_s", "source": "output-file", "key": "output_throughput", "better": "higher"}]
    return write_bench_kit(root, bench=table, profiles={"std": {}}, metrics=metrics)


def sixteen(path) -> History:
    """16 first-parent commits; throughput 100 tok/s until REGRESSION (the 11th commit), 90 from it on."""
    b = HistoryBuilder(path)
    b.commit(
        "c0",
        "Initial import",
        {
            ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
            "python/sglang/__init__.py": "",
            MODEL: MODEL_TEXT,
            "perf/throughput.txt": "100\n",
            "README.md": "upstream\n",
        },
    )
    b.tag("v0.5.8", "c0")
    for i in range(1, 16):
        if i == 10:
            b.commit(f"c{i}", REGRESSION, {"perf/throughput.txt": "90\n"})
        else:
            b.commit(f"c{i}", f"docs: note {i}", {"README.md": "upstream\n" + "more\n" * i})
    return b.build()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("launches") / "repo")


def cli(capsys, *args):
    result = run_cli(capsys, *args)
    assert "Traceback" not in result.err, result.err
    return result


def test_aa_noise_is_never_different_and_is_stored_as_the_prior(capsys, history, tmp_path):
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.03, seed="aa")
    store = tmp_path / "bench.sqlite"
    result = cli(capsys, "noise", "-m", kit, "--repo", history.path, "--store", store, "--commit", history["base"],
                 "--launches", "6", "--json")  # fmt: skip
    assert result.code == 0, result.err
    (profile,) = result.json["profiles"]
    (row,) = profile["metrics"]
    assert row["metric"] == "output_tok_s" and row["launches"] == 6 and row["df"] == 5
    assert 0.005 < row["sigma"] < 0.1  # a 3 % launch spread, measured from 6 launches
    assert len(set(row["values"])) == 6  # every launch drew its own factor
    assert row["aa"]["verdict"] in {"same", "unknown"} and row["stored"] is True
    with sqlite3.connect(store) as db:
        stored = db.execute("SELECT profile, metric, sigma, df FROM noise").fetchall()
    assert stored == [("std", "output_tok_s", pytest.approx(row["sigma"]), 5)]
    text = cli(capsys, "noise", "-m", kit, "--repo", history.path, "--store", store, "--commit", history["base"],
               "--launches", "3")  # fmt: skip
    assert "A/A (odd vs even)" in text.out and "different" not in text.out


def test_launches_interleave_prepare_once_and_number_every_sample(capsys, history, tmp_path):
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.0, seed="x", launches=2)
    store = tmp_path / "bench.sqlite"
    a, b = history["restore-model"], history["docs-2"]
    # No --launches: [bench].launches = 2.
    result = cli(capsys, "bench", "-m", kit, "--repo", history.path, "--store", store, "--commit", a, "--commit", b,
                 "--json")  # fmt: skip
    assert result.code == 0, result.err
    order = [(r["commit"]["sha"], r["launch"]) for r in result.json["runs"]]
    assert order == [(a, 1), (b, 1), (a, 2), (b, 2)]
    assert len({r["series"] for r in result.json["runs"]}) == 1
    # Prepared once per commit: the second launch reuses the first's apply (APPLY), not a re-apply (SKIP).
    statuses = {(r["commit"]["sha"], r["launch"]): [p["status"] for m in r["manifests"] for p in m["results"]]
                for r in result.json["runs"]}  # fmt: skip
    assert statuses[(a, 2)] == statuses[(a, 1)] == ["APPLY", "APPLY"]
    said = [line.split(": ", 1)[1] for line in result.err.splitlines() if f" {a[:10]} " in line and ": " in line]
    assert said.count("preparing worktree") == 1 and said.count("reusing the prepared worktree") == 1, said
    apart = cli(capsys, "bench", "-m", kit, "--repo", history.path, "--store", store, "--commit", a, "--commit", b,
                "--launches", "2", "--no-interleave", "--json")  # fmt: skip
    assert [(r["commit"]["sha"], r["launch"]) for r in apart.json["runs"]] == [(a, 1), (a, 2), (b, 1), (b, 2)]
    with sqlite3.connect(store) as db:
        launches = db.execute("SELECT r.launch, s.launch FROM samples s JOIN runs r ON r.id = s.run_id").fetchall()
    assert launches and all(run == sample for run, sample in launches) and {s for _, s in launches} == {1, 2}


def test_compare_over_launches_gives_interval_and_verdict(capsys, history, tmp_path):
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.02, seed="cmp")
    store = tmp_path / "bench.sqlite"
    a, b, c = history["restore-model"], history["docs-2"], history["base"]
    ran = cli(capsys, "bench", "-m", kit, "--repo", history.path, "--store", store, "--commit", a, "--commit", b,
              "--commit", c, "--launches", "4", "--json")  # fmt: skip
    assert ran.code == 0, ran.err
    slow = cli(capsys, "compare", "--commit", a, "--commit", b, "--repo", history.path, "--store", store, "--json")
    (row,) = slow.json["metrics"]
    verdict = row["verdict"]
    assert len(row["launches"]["a"]) == len(row["launches"]["b"]) == 4
    assert verdict["verdict"] == "different" and verdict["call"] == "different (worse)"
    assert verdict["low"] < 0.65 < verdict["high"] < 0.95  # the planted 100 -> 65 drop, inside its interval
    aa = cli(capsys, "compare", "--commit", c, "--commit", a, "--repo", history.path, "--store", store, "--json")
    assert aa.json["metrics"][0]["verdict"]["verdict"] in {"same", "unknown"}  # same code, same throughput
    text = cli(capsys, "compare", "--commit", a, "--commit", b, "--repo", history.path, "--store", store)
    assert "different (worse)" in text.out and "interval" in text.out and "launches: A 4" in text.out


def test_one_launch_per_side_is_unknown_with_the_launches_needed(capsys, history, tmp_path):
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.03, seed="one")
    store = tmp_path / "bench.sqlite"
    a, b = history["base"], history["docs"]
    cli(capsys, "bench", "-m", kit, "--repo", history.path, "--store", store, "--commit", a, "--commit", b)
    alone = cli(capsys, "compare", "--commit", a, "--commit", b, "--repo", history.path, "--store", store, "--json")
    assert alone.json["metrics"][0]["verdict"]["verdict"] == "unknown"
    assert "noise prior" in alone.json["metrics"][0]["verdict"]["why"]
    decide = "run `patchkit noise` for a noise prior, or launch each side at least twice"
    assert alone.json["metrics"][0]["verdict"]["next"] == decide
    table = cli(capsys, "compare", "--commit", a, "--commit", b, "--repo", history.path, "--store", store)
    assert f"unknown ({decide})" in " ".join(table.out.split())  # the table says what would decide it
    cli(capsys, "noise", "-m", kit, "--repo", history.path, "--store", store, "--commit", a, "--launches", "4")
    primed = cli(capsys, "compare", "--commit", a, "--commit", b, "--repo", history.path, "--store", store, "--json")
    verdict = primed.json["metrics"][0]["verdict"]
    assert verdict["prior_used"] is True and verdict["low"] is not None
    assert verdict["verdict"] != "different"
    if verdict["verdict"] == "unknown" and verdict["launches_needed"]:  # still unclear: the launches that decide
        assert verdict["next"] == f"about {verdict['launches_needed']} launches per side"


@pytest.fixture(scope="module")
def sixteen_commits(tmp_path_factory):
    return sixteen(tmp_path_factory.mktemp("sixteen") / "repo")


def test_bisect_finds_a_10_percent_regression_at_3_percent_launch_noise(capsys, sixteen_commits, tmp_path):
    h = sixteen_commits
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.03, seed="hunt")
    store = tmp_path / "bench.sqlite"
    assert cli(capsys, "noise", "-m", kit, "--repo", h.path, "--store", store, "--commit", h["c0"],
               "--launches", "6").code == 0  # fmt: skip
    result = cli(capsys, "bisect", "-m", kit, "--repo", h.path, "--store", store, "--good", h["c0"], "--bad",
                 h["c15"], "--metric", "output_tok_s", "--max-launches", "8", "--json")  # fmt: skip
    assert result.code == 0, result.err
    data = result.json
    assert data["first_bad"]["commit"] == h["c10"] and data["first_bad"]["subject"] == REGRESSION
    assert data["search"]["answer"] == "found" and data["search"]["probability"] >= 0.999
    assert data["search"]["evidence"]["verdict"] == "different"
    per_commit = {c["commit"]: len(c["launches"]) for c in data["search"]["commits"]}
    assert max(per_commit.values()) <= 8
    assert data["criterion"]["noise"]["df"] == 5  # the A/A spread was the prior
    assert data["criterion"]["noise"]["launches"] == 6 and data["criterion"]["noise"]["measured_at"]
    search = data["search"]
    assert search["spread"]["prior"] == pytest.approx(data["criterion"]["noise"]["sigma"])
    assert search["budget"] == 60 and search["drift"]["launches"] == len(data["steps"])
    assert all("order" in s and "outlier" in s for s in data["steps"])
    assert [s["order"] for s in data["steps"]] == list(range(len(data["steps"])))
    # The same bisect, planned: everything checked, nothing launched, what it would likely cost.
    before = cli(capsys, "runs", "--repo", h.path, "--store", store, "--json").json
    plan = cli(capsys, "bisect", "-m", kit, "--repo", h.path, "--store", store, "--good", h["c0"], "--bad",
               h["c15"], "--metric", "output_tok_s", "--threshold", "0.1", "--dry-run", "--json")  # fmt: skip
    assert plan.code == 0 and plan.json["dry_run"] is True and plan.json["commits"] == 16
    (only,) = plan.json["plans"]
    assert only["effect"] == 0.1 and only["launches"]["median"] <= only["launches"]["p90"] <= only["budget"]
    assert 0 <= only["found"] <= 1 and only["per_commit"] >= 1
    assert cli(capsys, "runs", "--repo", h.path, "--store", store, "--json").json == before  # no launch
    people = cli(capsys, "bisect", "-m", kit, "--repo", h.path, "--store", store, "--good", h["c0"], "--bad",
                 h["c15"], "--metric", "output_tok_s", "--dry-run")  # fmt: skip
    assert "nothing was launched (--dry-run)" in people.out and people.out.count("step over 16 commits") == 3


def test_noise_plans_a_hunt_at_the_spread_it_measured(capsys, history, tmp_path):
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.02, seed="plan")
    store = tmp_path / "bench.sqlite"
    result = cli(capsys, "noise", "-m", kit, "--repo", history.path, "--store", store, "--commit", history["base"],
                 "--launches", "4", "--plan-step", "0.1", "--plan-commits", "32", "--json")  # fmt: skip
    assert result.code == 0, result.err
    rows = [row for item in result.json["profiles"] for row in item["metrics"] if row["stored"]]
    assert rows and all(row["plan"]["commits"] == 32 and row["plan"]["effect"] == 0.1 for row in rows)
    assert all(row["plan"]["sigma"] == row["sigma"] and row["outliers"] == [] for row in rows)


def test_too_few_launches_answer_an_honest_range(capsys, sixteen_commits, tmp_path):
    h = sixteen_commits
    kit = noisy_kit(tmp_path / "kit", tmp_path / "state", sigma=0.03, seed="short")
    store = tmp_path / "bench.sqlite"
    result = cli(capsys, "bisect", "-m", kit, "--repo", h.path, "--store", store, "--good", h["c0"], "--bad",
                 h["c15"], "--metric", "output_tok_s", "--max-launches", "2", "--json")  # fmt: skip
    data = result.json
    order = [h[f"c{i}"] for i in range(16)]
    if data["first_bad"] is not None:  # two launches a side can suffice: then it is the planted commit, confirmed
        assert result.code == 0 and data["first_bad"]["commit"] == h["c10"]
        return
    assert result.code == 1
    assert data["search"]["answer"] in {"range", "no-step"} and data["search"]["why"]
    if data["search"]["answer"] == "range":
        first, last = (order.index(data["search"]["range"][k]) for k in ("first", "last"))
        assert first <= 10 <= last and last > first
        likely = data["search"]["likely"]  # the most likely first bad commit, with its posterior mass
        assert first <= order.index(likely["commit"]) <= last and likely["probability"] < 0.999
        assert data["search"]["unclear"] and all(u["launches"] == 2 for u in data["search"]["unclear"])
    text = cli(capsys, "bisect", "-m", kit, "--repo", h.path, "--store", store, "--good", h["c0"], "--bad",
               h["c15"], "--metric", "output_tok_s", "--max-launches", "2")  # fmt: skip
    if "FIRST BAD" in text.out:  # this run's launches draw other noise: a confirmed answer, then the planted one
        assert f"FIRST BAD: {h['c10'][:10]}" in text.out
        return
    assert "RANGE:" in text.out or "NO RESULT:" in text.out
    if "RANGE:" in text.out:
        assert "of the posterior), not narrowed:" in text.out and "  most likely: " in text.out


WRONG_PLURAL = re.compile(r"\b1 ([a-z]+s)\b")
SINGULAR = {"ms", "is", "was", "has", "this", "its", "as", "yes", "does", "process", "class", "status", "pass"}


def plural_slips(text: str) -> list[str]:
    """Counts written wrong ("1 launches", "1 slots") and the "patch(es)" that dodges the choice."""
    slips = [m.group(0) for m in WRONG_PLURAL.finditer(text) if m.group(1) not in SINGULAR]
    return slips + re.findall(r"\w+\((?:s|es)\)", text)


def test_bench_bisect_and_noise_write_every_count_with_its_plural(capsys, history, sixteen_commits, tmp_path):
    """987bdba's plural clean-up missed "after 1 launches", "in 1 launches each", "1 required patch(es)"."""
    h = sixteen_commits

    def kit(name: str):  # each command its own seeded launch noise: the draws do not depend on the others
        return noisy_kit(tmp_path / name, tmp_path / f"{name}.state", sigma=0.03, seed="short")

    texts = []
    for args in (
        ["bench", "-m", kit("a"), "--repo", history.path, "--store", tmp_path / "a.sqlite", "--commit",
         history["break-model"], "--commit", history["base"]],
        ["noise", "-m", kit("b"), "--repo", history.path, "--store", tmp_path / "a.sqlite", "--commit",
         history["base"], "--launches", "3"],
        ["bisect", "-m", kit("c"), "--repo", h.path, "--store", tmp_path / "c.sqlite", "--good", h["c0"], "--bad",
         h["c15"], "--metric", "output_tok_s", "--max-launches", "2"],
        ["bisect", "-m", kit("d"), "--repo", h.path, "--store", tmp_path / "d.sqlite", "--good", h["c0"], "--bad",
         h["c15"], "--metric", "output_tok_s", "--max-launches", "1"],
        ["bench", "-m", kit("e"), "--repo", history.path, "--store", tmp_path / "e.sqlite", "--shared-dir", tmp_path],
    ):  # fmt: skip
        result = cli(capsys, *args)
        texts.append(result.out + result.err)
    text = "\n".join(texts)
    # What each command had to count once: a refused patch, a launch per commit, a launch each.
    assert "1 required patch cannot apply or is not in place" in text
    assert "after 1 launch]" in text or "after 1 launch " in text
    assert "could not be told apart in 1 launch each" in text
    assert "--shared-dir only applies with --executor slurm" in text
    assert plural_slips(text) == []


def test_help_says_how_many_launches_to_plan(capsys):
    """The --help of bench, bisect and noise plans launches; bench's factors are the verdict's own arithmetic."""
    import math

    from patchkit.bench.stats.verdict import t_critical

    bench = " ".join(cli(capsys, "bench", "--help").out.split())
    for n in (1, 2, 3, 7):  # a 10-launch prior (9 df), 99 %: the interval's half-width in sigmas, n launches a side
        factor = t_critical(0.99, 9 + 2 * (n - 1)) * math.sqrt(2 / n)
        assert f"{factor:.1f}σ with {n}" in bench or f"{factor:.1f}σ with {n} launch" in bench, (n, factor)
    assert "Planning launches: run `patchkit noise` once" in bench
    assert "Planning launches: `--dry-run`, or benchmarks/bench_hunt.py" in " ".join(
        cli(capsys, "bisect", "--help").out.split()
    )
    assert "Run it before planning launches" in " ".join(cli(capsys, "noise", "--help").out.split())
