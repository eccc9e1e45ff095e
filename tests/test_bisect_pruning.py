"""The hunt launches only where code that ran changed, end to end (#49): `patchkit bisect` on real git histories
with the stand-in server, a real process that imports the tree's modules and calls their functions
(tests/standin/server.py ``--speed-from``), with the probe in it.

Each history has 12 commits after GOOD: docs, tests and another model's code (never imported), the body of a
function that never runs, a function not yet wired in, a comment, and one regression, planted where the
scenario says: in a function that runs, in a data file the server reads, in a function that only starts running
at the commit that wires it in, in a module-level constant, in a file read by a process that is not Python.
The first bad commit must come out right every time; pruning must skip what could not change what ran, never
the commit that did; and where the probe cannot vouch for what ran (a child that is not Python, a worker
started with ``python -I``) pruning is off and the report says why.  Function granularity runs on a venv of
Python 3.12+ (``sys.monitoring``), file granularity on the default Python (3.11).

Each scenario's hunt runs once (a module fixture, the console script in a subprocess) and two tests read it:
the answer and the execution side alone (``FIRST BAD``; the judge, ``bench.execution.pruning.LineJudge``, asked
directly over the hunt's stored launches; the suspects listed once GOOD and BAD ran), and what the report says
of pruning (``pruning`` in ``bisect --json``, the text), which needs the search to use the judge
(``search.bisect(relevance=...)``).  A scenario is a few seconds: 12 commits, nearly noiseless launches.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from bench_helpers import MODEL, MODEL_TEXT, bench_table, write_bench_kit
from helpers import run_script
from proof_env import monitoring_python

from patchkit.bench.execution.pruning import line_judge
from patchkit.bench.records.store import Store
from patchkit.demo.history import History, HistoryBuilder
from patchkit.git import Repo
from patchkit.report.documents import load_latest_bisect

pytestmark = pytest.mark.slow  # every test here starts servers: left out of `pytest -m "not slow"`

PY312 = monitoring_python()
needs_312 = pytest.mark.skipif(PY312 is None, reason="needs Python 3.12+ (sys.monitoring): none found")
file_python = pytest.mark.skipif(sys.version_info >= (3, 12), reason="file granularity needs a Python before 3.12")

ENGINE = "python/sglang/srt/engine.py"
TUNING = "python/sglang/srt/configs/tuning.json"
FUSED = "python/sglang/srt/fused.py"
OTHER = "python/sglang/srt/models/other.py"
CHILD = "perf/child.txt"
ENGINE_TEXT = '''"""The stand-in engine's speed: what the pruning tests change."""

import json
import os

BLOCK = 64


def decode_cost():
    return kernel_cost() * config_cost()


def kernel_cost():
    return 64 / BLOCK


def config_cost():
    with open(os.path.join(os.path.dirname(__file__), "configs", "tuning.json"), encoding="utf-8") as f:
        return json.load(f)["cost"]


def warmup_plan():
    return "never called"
'''
FUSED_TEXT = "def fused_cost():\n    return 1.0\n"
OTHER_TEXT = "class OtherModel:\n    def forward(self, x):\n        return x\n"

# Each scenario's regression: the files its planted commit writes, from the base's texts.
PLANTS = {
    "function": {ENGINE: ENGINE_TEXT.replace("    return 64 / BLOCK", "    return 2 * 64 / BLOCK")},
    "data": {TUNING: '{"cost": 2.0}\n'},
    "constant": {ENGINE: ENGINE_TEXT.replace("BLOCK = 64", "BLOCK = 32")},
    "wired": {
        ENGINE: ENGINE_TEXT.replace("import os\n", "import os\n\nfrom sglang.srt.fused import fused_cost\n").replace(
            "kernel_cost() * config_cost()", "kernel_cost() * config_cost() * fused_cost()"
        )
    },
    "child": {CHILD: "2.0\n"},
}
# Commits that change only what the server never runs: inert wherever the probe can vouch for what ran.
NEVER_RUN = ["docs-1", "other-1", "tests-1", "docs-2", "other-2", "tests-2", "comment", "docs-3"]


def build(path: Path, plant: str) -> History:
    """GOOD (``base``), then 12 commits, BAD last; the regression at ``plant`` (the 7th)."""
    b = HistoryBuilder(path)
    b.commit(
        "base",
        "Initial import",
        {
            ".gitignore": "python/sglang/_version.py\n__pycache__/\n",
            "python/sglang/__init__.py": "",
            "python/sglang/srt/__init__.py": "",
            MODEL: MODEL_TEXT,
            ENGINE: ENGINE_TEXT,
            TUNING: '{"cost": 1.0}\n',
            FUSED: FUSED_TEXT,
            OTHER: OTHER_TEXT,
            CHILD: "1.0\n",
            "docs/index.md": "# engine\n",
            "test/test_engine.py": "def test_cost():\n    assert True\n",
        },
    )
    edit = ENGINE_TEXT
    b.commit("docs-1", "docs: the engine's cost model", {"docs/index.md": "# engine\n\ncost model\n"})
    b.commit("other-1", "other model: scale the input", {OTHER: OTHER_TEXT.replace("return x", "return x * 2")})
    b.commit("tests-1", "test: the cost is positive", {"test/test_engine.py": "def test_cost():\n    assert 1 > 0\n"})
    edit = edit.replace('return "never called"', 'return "still never called"')
    b.commit("unused-body", "engine: a warm-up plan nobody calls yet", {ENGINE: edit})
    b.commit("fused-slow", "fused: a slower, exact reduction", {FUSED: FUSED_TEXT.replace("1.0", "2.0")})
    b.commit("docs-2", "docs: tuning", {"docs/index.md": "# engine\n\ncost model\n\ntuning\n"})
    planted = dict(PLANTS[plant])
    if ENGINE in planted:  # on top of the edits before it
        planted[ENGINE] = planted[ENGINE].replace('return "never called"', 'return "still never called"')
        edit = planted[ENGINE]
    b.commit("planted", f"the regression ({plant})", planted)
    b.commit("other-2", "other model: a docstring", {OTHER: OTHER_TEXT.replace("return x * 2", "return x * 3")})
    b.commit("tests-2", "test: more", {"test/test_engine.py": "def test_cost():\n    assert 2 > 0\n"})
    b.commit("comment", "engine: a comment", {ENGINE: edit.replace("BLOCK =", "# tile width\nBLOCK =")})
    b.commit("docs-3", "docs: more", {"docs/index.md": "# engine\n\ncost model\n\ntuning\n\nmore\n"})
    b.commit("tip", "other model: tip", {OTHER: OTHER_TEXT.replace("return x", "return -x")})
    return b.build()


@dataclass(frozen=True)
class Hunt:
    history: History
    store: Path
    manifest: Path
    out: str  # the text report
    document: dict  # bisect --json, as the latest bisect was kept

    def labels(self, commits: list[dict]) -> set[str]:
        return {self.history.label_of(c["commit"]) for c in commits}


# scenario: (the plant, Python 3.12+ or the default one, more server arguments, --every-commit)
SCENARIOS = {
    "function-312": ("function", "312", "", False),
    "data-312": ("data", "312", "", False),
    "wired-312": ("wired", "312", "", False),
    "constant-312": ("constant", "312", "", False),
    "function-311": ("function", "default", "", False),
    "constant-311": ("constant", "default", "", False),
    "child-311": ("child", "default", "", False),
    "isolated-311": ("function", "default", "--workers 1 --worker-flag=-I", False),
    "every-commit-311": ("data", "default", "", True),
}
PRUNED = ["function-312", "data-312", "wired-312", "constant-312", "function-311", "constant-311"]
BLIND = {
    "child-311": "is not Python: the probe cannot see what it ran",
    "isolated-311": "ran without the probe: started with -I",
}


@pytest.fixture(scope="module")
def hunts(tmp_path_factory: pytest.TempPathFactory):
    """Each scenario's hunt, run once when a test first asks for it."""
    done: dict[str, Hunt] = {}
    venv: list[Path] = []

    def get(name: str) -> Hunt:
        plant, python, server, every = SCENARIOS[name]
        if python == "312":
            if PY312 is None:
                pytest.skip("needs Python 3.12+ (sys.monitoring): none found")
            if not venv:
                path = tmp_path_factory.mktemp("py312") / "venv"
                subprocess.run([str(PY312), "-m", "venv", "--without-pip", str(path)], check=True)
                venv.append(path / "bin" / "python")
        elif sys.version_info >= (3, 12):
            pytest.skip("file granularity needs a Python before 3.12")
        if name not in done:
            done[name] = hunt(tmp_path_factory.mktemp(name), plant, str(venv[0]) if python == "312" else None,
                              server, every)  # fmt: skip
        return done[name]

    return get


def hunt(tmp_path: Path, plant: str, python: str | None, server: str, every: bool) -> Hunt:
    """The history of ``plant`` and a bisect of it (the console script, text); its report kept as JSON."""
    history = build(tmp_path / "repo", plant)
    speed = f"--speed-from-child {CHILD}" if plant == "child" else "--speed-from sglang.srt.engine:decode_cost"
    args = f"--workers 0 {speed} --noise 0.004 --noise-seed {plant} --noise-state {tmp_path / 'starts'} {server}"
    table = bench_table(ready_timeout=60, repeat=1, warmup=0, env=None)
    if python is not None:
        table["python"] = python
    table["vars"] = {**table["vars"], "server_args": args}
    metric = {"name": "output_tok_s", "source": "output-file", "key": "output_throughput", "better": "higher"}
    manifest = write_bench_kit(tmp_path / "kit", bench=table, profiles={}, metrics=[metric])
    store = tmp_path / "bench.sqlite"
    argv = ["bisect", "-m", manifest, "--repo", history.path, "--store", store, "--metric", "output_tok_s"]
    argv += ["--good", history["base"], "--bad", history["tip"], "--ratio", "0.8", "--max-launches", "4"]
    result = run_script(*argv, *(["--every-commit"] if every else []))
    assert "Traceback" not in result.err, result.err
    document = load_latest_bisect(store)
    assert document is not None, result.out + result.err
    return Hunt(history, store, manifest, result.out, document)


def judged(h: Hunt) -> tuple[set[str], str | None]:
    """The execution side alone: the judge over the hunt's stored launches, asked directly, as the search asks
    it after its last round; (the inert commits' labels, BAD left out: an end, always launched; why pruning is
    off)."""
    runs = {step["run"] for step in h.document["steps"] if step["run"] is not None}
    with Repo.discover(h.history.path) as repo, Store(h.store, create=False) as opened:
        line = [repo.commit(h.history["base"]), *repo.commit_range(h.history["base"], h.history["tip"])]
        judge = line_judge(opened, repo, line)
        judge.launched(opened.get(run) for run in sorted(runs))
        verdict = judge()
    assert [r.commit for r in verdict.relevances] == [c.sha for c in line]
    return {h.history.label_of(r.commit) for r in verdict.relevances[1:-1] if r.inert}, verdict.off


def expected_inert(name: str) -> set[str]:
    """What no launch ran: docs, tests, another model, a comment; at function granularity the body of a function
    that never runs; the fused body until the commit that wires it in (from there BAD runs fused_cost)."""
    plant, python, _server, _every = SCENARIOS[name]
    return {*NEVER_RUN, *(("unused-body",) if python == "312" else ()), *(() if plant == "wired" else ("fused-slow",))}


def assert_found(h: Hunt) -> None:
    first = h.document["first_bad"]
    assert first is not None and first["commit"] == h.history["planted"], h.out


@pytest.mark.parametrize("name", PRUNED)
def test_the_first_bad_commit_is_right_and_the_judge_skips_only_what_never_ran(hunts, name):
    h = hunts(name)
    assert_found(h)
    assert judged(h) == (expected_inert(name), None)
    plant, python, _server, _every = SCENARIOS[name]
    reason, path = {"function": ("ran", ENGINE), "data": ("read", TUNING)}.get(plant, ("imported", ENGINE))
    if python != "312":
        reason = "file-granularity" if plant == "function" else reason
    suspects = h.document["suspects"]
    assert suspects["unknown"] is None and suspects["lower_bound"] is None, suspects
    assert suspects["granularity"] == ("function" if python == "312" else "file")
    listed = {c["commit"]: c for c in suspects["commits"]}
    assert {(ch["path"], ch["reason"]) for ch in listed[h.history["planted"]]["changes"]} >= {(path, reason)}
    assert not h.labels(suspects["commits"]) & expected_inert(name)
    assert "suspects: " in h.out and "after GOOD changed what GOOD's and BAD's launches ran" in h.out
    if plant == "wired":  # the body changed before the wiring: BAD runs it, so it is a suspect, by its function
        changes = listed[h.history["fused-slow"]]["changes"]
        assert [(ch["qualname"], ch["reason"]) for ch in changes] == [("fused_cost", "ran")]
    if python != "312":  # only files recorded: the uncalled function's commit is a suspect, engine.py having run
        assert "(module files only: this Python records no functions)" in h.out
        changes = listed[h.history["unused-body"]]["changes"]
        assert [(ch["qualname"], ch["reason"]) for ch in changes] == [("warmup_plan", "file-granularity")]


@pytest.mark.parametrize("name", PRUNED)
def test_the_report_lists_each_skipped_commit_with_its_rule_and_the_parent_was_launched(hunts, name):
    """The finished feature (the search uses the judge): pruning on, the inert commits listed each with its
    rule, the planted one never among them, none of them launched but the named commit's direct parent."""
    h = hunts(name)
    assert_found(h)
    pruning = h.document["pruning"]
    assert pruning["state"] == "on", pruning
    inert = expected_inert(name)
    measured = {h.history.label_of(step["commit"]) for step in h.document["steps"]}
    assert "docs-2" in measured  # the named commit's direct parent is measured, although it is inert
    assert not (measured - {"docs-2"}) & inert
    # skipped: the inert commits never launched; BAD (an end) and the parent were launched, so neither counts
    assert h.labels(pruning["inert"]) == inert - {"docs-2"} and "tip" not in h.labels(pruning["inert"])
    assert pruning["inert_count"] == len(inert) - 1
    assert all(change["reason"] for c in pruning["inert"] for change in c["changes"])
    assert f"pruning: skipped {len(inert) - 1} commits as inert" in h.out  # the same count as the JSON's


@pytest.mark.parametrize("name", sorted(BLIND))
def test_where_the_probe_cannot_see_the_judge_calls_nothing_inert_and_says_why(hunts, name):
    """A file read by ``sh`` (then ``sleep``), which no probe sees; a worker started with ``python -I``: nothing
    is inert, and the hunt still names the commit."""
    h = hunts(name)
    assert_found(h)
    inert, off = judged(h)
    assert inert == set() and off is not None and off.startswith("the probe cannot vouch for what ran: ")
    assert BLIND[name] in off
    assert h.document["suspects"]["lower_bound"] is not None  # listed as if the probe saw everything
    assert "  a lower bound: " in h.out and BLIND[name] in h.out


@pytest.mark.parametrize("name", sorted(BLIND))
def test_where_the_probe_cannot_see_the_report_says_pruning_was_off_and_why(hunts, name):
    h = hunts(name)
    pruning = h.document["pruning"]
    assert pruning["state"] == "off" and BLIND[name] in pruning["why"], pruning
    assert pruning["inert"] == []
    assert "pruning off: the probe cannot vouch for what ran: " in h.out


def test_every_commit_turns_pruning_off_and_dry_run_lists_the_suspects_from_stored_runs(hunts):
    h = hunts("every-commit-311")
    assert_found(h)
    assert h.document["pruning"]["state"] == "off" and h.document["pruning"]["why"].startswith("--every-commit")
    assert h.document["suspects"] is None and "pruning off (--every-commit)" in h.out and "suspects: " not in h.out
    argv = ["bisect", "-m", h.manifest, "--repo", h.history.path, "--store", h.store, "--metric", "output_tok_s"]
    argv += ["--good", h.history["base"], "--bad", h.history["tip"], "--dry-run", "--threshold", "0.2"]
    noise = ["noise", "-m", h.manifest, "--repo", h.history.path, "--store", h.store, "--commit", h.history["base"]]
    assert run_script(*noise, "--launches", "3").code == 0  # a prior: the dry run plans the hunt
    shown = run_script(*argv)
    assert shown.code == 0, shown.err
    # file granularity: the uncalled function's commit is a suspect too, engine.py having run
    assert "suspects: 2 of 12 commits after GOOD changed what GOOD's and BAD's launches ran" in shown.out
    assert f"{h.history['planted'][:10]}  {TUNING}: read" in shown.out
    # the pruned hunt itself simulated on the suspects' mask, beside the same hunts with --every-commit
    assert ("with pruning, the step on one of the 2 relevant commits: 30 simulated hunts, each run pruned and "
            "with --every-commit") in shown.out  # fmt: skip
    assert "2 of 12 commits relevant: about " in shown.out and " with --every-commit (within " in shown.out
    data = json.loads(run_script(*argv, "--json").out)
    assert h.labels(data["suspects"]["commits"]) == {"planted", "unused-body"}
    assert data["relevant"] == 2  # the suspects: BAD, inert here, is launched but not a candidate
    (pruned,) = data["plans_pruned"]
    assert set(pruned) == {"commits", "relevant", "pruned", "every_commit"} and pruned["commits"] == 13
    assert pruned["relevant"] == 2 and pruned["pruned"]["effect"] == pruned["every_commit"]["effect"] == 0.2
    assert pruned["pruned"]["simulated_hunts"] == pruned["every_commit"]["simulated_hunts"] == 30
    assert pruned["pruned"]["expected"] <= pruned["every_commit"]["expected"]
