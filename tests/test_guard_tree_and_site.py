"""`patchkit guard -m M --python PY --site`: the tree and a real venv's site directories in one call, one verdict,
one exit code (what a pre-benchmark hook runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import make_repo, run_cli
from histories import MODEL_V1, write_manifest
from proof_env import make_venv, site_packages, wheels, write_source


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("both-venv") / "venv", wheels(tmp_path_factory.mktemp("wheels")))


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # guard --site's stat cache: this test's own
    repo = make_repo(tmp_path / "repo", {"README.md": "upstream\n", "pkg/model.py": MODEL_V1})
    return repo, write_manifest(tmp_path / "kit")


def both(capsys, repo: Path, manifest: Path, venv: Path, *extra: str):
    result = run_cli(capsys, "guard", "-m", manifest, "--repo", repo, "--python", venv, "--site", *extra)
    assert "Traceback" not in result.err
    return result


def test_a_patched_tree_and_a_clean_venv_is_one_ok(capsys, tree, venv) -> None:
    repo, manifest = tree
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    result = both(capsys, repo, manifest, venv)
    assert result.code == 0, result.out
    verdicts = [line for line in result.out.splitlines() if line.startswith("GUARD")]
    assert verdicts == [
        "GUARD OK: this tree may be benchmarked, and every file of PY's site directories is accounted for."
    ]
    assert "patchkit guard --site: " in result.out and "RECORD digests checked" in result.out  # the site part ran
    data = both(capsys, repo, manifest, venv, "--json").json
    assert data["ok"] and data["tree_ok"] and data["site"]["ok"] and data["exit_code"] == 0
    assert data["verdict"] == "good" and data["command"] == "guard"
    assert {d["name"] for d in data["site"]["distributions"]} >= {"torch", "alpha-dist"}


def test_an_edited_venv_fails_the_patched_tree_and_stops_a_bisect(capsys, tree, venv) -> None:
    repo, manifest = tree
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    nccl = site_packages(venv) / "torch" / "cuda" / "nccl.py"
    original = nccl.read_text()
    write_source(nccl, original.replace("(2, 27, 5)", "(2, 27, 3)"))
    try:
        result = both(capsys, repo, manifest, venv)
        data = both(capsys, repo, manifest, venv, "--json").json
        bisect = both(capsys, repo, manifest, venv, "--bisect")
    finally:
        write_source(nccl, original)
    assert result.code == 1
    assert [line for line in result.out.splitlines() if line.startswith("GUARD")] == [
        "GUARD FAILED: site: 1 file not accounted for."
    ]
    assert any(line.startswith("EDITED") and str(nccl) in line for line in result.out.splitlines())
    assert not data["ok"] and data["tree_ok"] and data["exit_code"] == 1 and data["verdict"] == "refused"
    assert [f["path"] for f in data["site"]["findings"]] == [str(nccl)]
    assert bisect.code == 128 and "exit 128: the setup is wrong" in bisect.out


def test_an_unpatched_tree_fails_with_a_clean_venv(capsys, tree, venv) -> None:
    repo, manifest = tree
    result = both(capsys, repo, manifest, venv)
    assert result.code == 1
    assert [line for line in result.out.splitlines() if line.startswith("GUARD")] == ["GUARD FAILED: patches."]
    data = both(capsys, repo, manifest, venv, "--json").json
    assert not data["ok"] and not data["tree_ok"] and data["site"]["ok"]


def test_site_with_a_manifest_needs_python_and_import_needs_a_manifest(capsys, tree, venv) -> None:
    repo, manifest = tree
    no_python = run_cli(capsys, "guard", "-m", manifest, "--repo", repo, "--site")
    assert no_python.code == 2 and "--site needs --python PY" in no_python.err
    no_manifest = run_cli(capsys, "guard", "--repo", repo, "--python", venv, "--site", "--import", "pkg")
    assert no_manifest.code == 2 and "--import checks the tree: it needs -m M" in no_manifest.err
