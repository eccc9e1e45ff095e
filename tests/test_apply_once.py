"""`apply --commit` evaluates the commit once (issue 12 item 5).

The verdicts and rendered files computed from REV's blobs before the move are
reused after the checkout when the checkout holds exactly those bytes; the
files are parsed no more often than by `apply --dry-run --commit`, which
evaluates once.  Parses are counted by wrapping ``CodeState.parse`` (our own
code; git, the file system and libcst are real).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import git
from histories import build_model_history, write_manifest

from patchkit.cli import main
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
