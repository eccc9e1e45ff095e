"""Each file version is parsed once: in a range check, and by `apply --commit`.

A patch held back by ``requires`` makes its file be evaluated again only if
it was APPLY (only a simulated APPLY changes what later patches see).
`apply --commit` reuses the verdicts and rendered files computed from REV's
blobs before the move when the checkout holds exactly those bytes, so it
parses no more often than `apply --dry-run --commit`.  Parses are counted by
wrapping ``CodeState.parse`` (our own code; git, the file system and libcst
are real).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import git
from histories import build_model_history, write_manifest

from patchkit.cli import main
from patchkit.demo.history import HistoryBuilder
from patchkit.operations.code import CodeState


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = CodeState.parse.__func__  # type: ignore[attr-defined]

    def counting(cls: type[CodeState], path: str, text: str) -> CodeState:
        seen.append(path)
        return original(cls, path, text)

    monkeypatch.setattr(CodeState, "parse", classmethod(counting))
    return seen


def test_apply_commit_parses_as_often_as_its_dry_run(tmp_path: Path, capsys, parses: list[str]) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = str(write_manifest(tmp_path / "m"))
    repo = str(history.path)
    assert main(["apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--dry-run"]) == 0
    dry = len(parses)
    assert dry > 0
    parses.clear()
    capsys.readouterr()
    assert main(["apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["written"] == ["pkg/model.py"]
    assert len(parses) == dry  # evaluated (and its output verified) once, before the move
    assert "def hook(self)" in (history.path / "pkg/model.py").read_text()
    assert git(history.path, "rev-parse", "HEAD").strip() == history["add"]
    # Moving on from a patched tree: patchkit's own edits are reverted first, and still one evaluation.
    parses.clear()
    assert main(["apply", "-m", manifest, "--repo", repo, "--commit", history["fix"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == ["pkg/model.py"]
    assert len(parses) == dry
    assert main(["status", "-m", manifest, "--repo", repo]) == 0


def test_apply_commit_at_the_current_commit_parses_once(tmp_path: Path, capsys, parses: list[str]) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = str(write_manifest(tmp_path / "m"))
    repo = str(history.path)
    git(history.path, "checkout", "-q", "--detach", history["add"])
    assert main(["apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--dry-run"]) == 0
    dry = len(parses)
    parses.clear()
    capsys.readouterr()
    assert main(["apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == ["pkg/model.py"]
    assert len(parses) == dry
    # Already patched: the record exists, so the tree is evaluated itself (SKIP ALREADY_APPLIED, no write).
    assert main(["apply", "-m", manifest, "--repo", repo, "--commit", history["add"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == []


def test_a_checkout_that_differs_from_the_blobs_is_evaluated_again(tmp_path: Path, capsys, parses) -> None:
    history = build_model_history(tmp_path / "repo")
    manifest = str(write_manifest(tmp_path / "m"))
    # A smudge filter rewrites the file on checkout: the blobs' verdicts must not be trusted for it.
    git(history.path, "config", "filter.pad.smudge", "sed -e 's/^class Model:/class Model:  # smudged/'")
    git(history.path, "config", "filter.pad.clean", "cat")
    (history.path / ".git" / "info").mkdir(exist_ok=True)
    (history.path / ".git" / "info" / "attributes").write_text("*.py filter=pad\n")
    assert main(["apply", "-m", manifest, "--repo", str(history.path), "--commit", history["add"], "--dry-run"]) == 0
    dry = len(parses)
    parses.clear()
    capsys.readouterr()
    assert main(["apply", "-m", manifest, "--repo", str(history.path), "--commit", history["add"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == ["pkg/model.py"]
    assert len(parses) > dry
    text = (history.path / "pkg/model.py").read_text()
    assert "# smudged" in text and "def hook(self)" in text


HELD_MANIFEST = """schema = 1
name = "held"

[[patch]]
id = "timer"
op = "insert"
file = "pkg/worker.py"
function = "Worker.verify"
anchor = "result = self.forward(batch, is_verify=True)"
position = "before"
source = "payload.py"
body_of = "start"
required = false

[[patch]]
id = "timer-import"
op = "ensure-import"
file = "pkg/worker.py"
import = "import time"
requires = ["timer"]
required = false
"""


def test_a_held_back_patch_does_not_parse_its_file_again(tmp_path: Path, capsys, parses: list[str]) -> None:
    b = HistoryBuilder(tmp_path / "repo")
    for i in range(6):
        call = "result = self.forward(batch, is_verify=True)" if i % 2 else "out = self.forward(batch)"
        b.commit(
            f"c{i}",
            f"v{i}",
            {
                "pkg/worker.py": "import time\n\n\nclass Worker:\n    def verify(self, batch):\n"
                f"        x = {i}\n        {call}\n"
            },
        )
    b.build()
    (tmp_path / "payload.py").write_text("import time\n\n\ndef start():\n    t0 = time.perf_counter()\n")
    (tmp_path / "held.toml").write_text(HELD_MANIFEST)
    assert main(["check", "-m", str(tmp_path / "held.toml"), "--repo", str(tmp_path / "repo"), "--range", "HEAD",
                 "--json", "--no-cache", "--jobs", "1"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    by_commit = [[(r["status"], r["reason"]) for r in c["results"]] for c in data["commits"]]
    # The anchor is missing at every other version, so the import is held back there; it is in place
    # already, so it reads SKIP either way, and nothing had to be evaluated again.
    assert [row[0] for row in by_commit] == [("WARN", "ANCHOR_NOT_FOUND"), ("APPLY", None)] * 3
    assert {row[1] for row in by_commit} == {("SKIP", "ALREADY_APPLIED")}
    assert len(parses) == 6  # every version parsed exactly once
