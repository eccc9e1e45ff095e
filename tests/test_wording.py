"""Counts agree with their nouns and verbs, a label is not said twice, a place says what it is (#47 item 12).

Each message the tour found is rendered by the code that prints it: ``1 commit that touch``, ``1 launches
settle``, ``interrupted: interrupted``, ``already exist(s)``, ``no ok runs of a profile both have for both
commits``, ``no noise prior for vm``.
"""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from helpers import TARGET, d, run_cli, scenario

from patchkit.bench.records.compare import pick_pair
from patchkit.bench.stats.outcome import Outcome
from patchkit.bench.stats.search import Measurement, Step
from patchkit.errors import UsageError
from patchkit.git import Commit
from patchkit.views.bisect import bisect_header, step_line
from patchkit.views.console import make_console
from patchkit.views.noise import show_noise
from patchkit.wording import agree, labelled, place_label, plural

COMMIT = Commit("a" * 40, (), "a <a@x>", "2026-01-01", "subject")


def test_the_helpers() -> None:
    assert [plural(n, "commit") for n in (0, 1, 2)] == ["0 commits", "1 commit", "2 commits"]
    assert [f"{plural(n, 'commit')} that {agree(n, 'touches', 'touch')}" for n in (1, 2)] == [
        "1 commit that touches", "2 commits that touch",
    ]  # fmt: skip
    assert labelled("interrupted", "interrupted (Ctrl-C or SIGTERM); kept") == "interrupted (Ctrl-C or SIGTERM); kept"
    assert labelled("server-failed", "exited 1") == "server-failed: exited 1"
    assert labelled("refused", None) == "refused" and labelled("refused", "refused") == "refused"
    assert labelled("interrupted", "interruptedness") == "interrupted: interruptedness"  # a word, not the label
    assert place_label("vm") == "host vm"
    assert place_label("slurm:gpu,constraint=h100") == "Slurm partition gpu, constraint h100"


def test_an_interrupted_launch_says_interrupted_once() -> None:
    reason = "interrupted (Ctrl-C or SIGTERM); the samples so far are kept"
    step = Step(COMMIT, Measurement(None, Outcome.INTERRUPTED, run=4, why=reason), "skip")
    line = step_line(step, "output_tok_s")
    assert "interrupted: interrupted" not in line and f"({reason})" in line, line


def test_the_noise_plan_agrees_with_one_launch() -> None:
    plan = {"effect": 0.05, "commits": 64, "launches": {"median": 9.0, "p90": 12.0}, "found": 0.97, "per_commit": 1}
    aa = {"verdict": "same", "low": None, "high": None, "ratio": None}
    row = {"metric": "tok_s", "launches": 10, "median": 90.0, "sigma": 0.01, "df": 9, "aa": aa, "stored": True,
           "why": None, "plan": plan}  # fmt: skip
    out = io.StringIO()
    show_noise(make_console(out), {"commit": "b" * 40, "subject": "s", "launches": 10,
                                   "profiles": [{"profile": "p", "host": "vm", "metrics": [row]}]})  # fmt: skip
    text = out.getvalue()
    assert "1 launch settles a probed commit" in text and "launches settle" not in text, text
    assert "host vm: compare and bisect use" in text


@pytest.mark.parametrize(("place", "said"), [("vm", "for host vm"), ("slurm:gpu", "for Slurm partition gpu")])
def test_the_bisect_header_says_what_the_place_is(place, said) -> None:
    plan = SimpleNamespace(
        prior=None, refused_prior=None, place=place, executor=SimpleNamespace(remote=place.startswith("slurm")),
        metric=SimpleNamespace(name="tok_s"), profile="p", rule="--ratio 0.9", line=(COMMIT, COMMIT),
        unpatchable={}, max_launches=3, launch_budget=10, slots=1,
    )  # fmt: skip
    header = bisect_header(plan)  # type: ignore[arg-type]
    assert f"no noise prior {said} (run `patchkit noise" in header, header


def test_compare_without_a_common_profile_says_so_plainly() -> None:
    with pytest.raises(UsageError) as no_profile:
        pick_pair([("A", []), ("B", [])], None)
    assert no_profile.value.message == "no profile has ok runs of both commits (A: no runs; B: no runs)"
    with pytest.raises(UsageError) as named:
        pick_pair([("A", []), ("B", [])], "eagle3")
    assert named.value.message.startswith("profile 'eagle3' has no ok runs of both commits")


def test_capture_over_an_existing_capture_agrees_with_what_exists(tmp_path, capsys) -> None:
    sc = scenario(tmp_path, {TARGET: d("class Model:\n    pass\n")}, [], {})
    (sc.repo / TARGET).write_text("class Model:\n    def extra(self):\n        return 1\n")
    out = tmp_path / "out"
    first = run_cli(capsys, "capture", "--repo", sc.repo, "--name", "mine", "--out", out)
    assert first.code == 0, first.err
    both = run_cli(capsys, "capture", "--repo", sc.repo, "--name", "mine", "--out", out)
    assert both.code == 1 and "already exist;" in both.err and " and " in both.err, both.err
    assert "exist(s)" not in both.err
    (out / "manifests" / "mine.toml").unlink()
    assert (out / "patches" / "mine").is_dir()  # the payload the added method lives in
    one = run_cli(capsys, "capture", "--repo", sc.repo, "--name", "mine", "--out", out)
    assert one.code == 1 and f"{out / 'patches' / 'mine'} already exists;" in one.err, one.err
