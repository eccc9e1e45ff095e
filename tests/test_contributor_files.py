"""The files other tools read: pre-commit's hook list, the manifests' schema hint and Taplo's config."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_HINT = "#:schema ../patchkit/manifest/schema.json"


def hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def test_the_hooks_run_patchkit_validate_and_check():
    found = hooks()
    assert set(found) == {"patchkit-validate", "patchkit-check"}
    for hook in found.values():
        assert hook["language"] == "python" and hook["name"] and isinstance(hook["pass_filenames"], bool)
    assert "patchkit validate -m" in found["patchkit-validate"]["entry"]
    assert found["patchkit-validate"]["pass_filenames"] is True
    assert found["patchkit-check"]["entry"] == "patchkit check"
    assert found["patchkit-check"]["pass_filenames"] is False  # its args name the manifest, repo and range


@pytest.fixture
def patchkit_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `patchkit` on PATH that runs this checkout's patchkit, as the hook's venv would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "patchkit"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m patchkit "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    return bin_dir


def run_hook(hook_id: str, files: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The hook's entry as pre-commit runs it: shlex-split, then the file names appended."""
    argv = shlex.split(hooks()[hook_id]["entry"]) + files
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_validate_hook_passes_the_bundled_manifests(patchkit_on_path):
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "manifests").glob("*.toml"))
    r = run_hook("patchkit-validate", files, ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kimi-k25-eagle3" in r.stdout and "eagle3-verify-timing" in r.stdout


def test_the_validate_hook_fails_on_a_bad_manifest_after_checking_the_rest(patchkit_on_path, tmp_path):
    bad = tmp_path / "manifests" / "bad.toml"
    bad.parent.mkdir()
    bad.write_text(f'{SCHEMA_HINT}\nschema = 1\nname = "bad"\n')  # no [[patch]]
    good = ROOT / "manifests" / "kimi-k25-eagle3.toml"
    r = run_hook("patchkit-validate", [str(bad), str(good)], tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "bad.toml" in r.stderr and "kimi-k25-eagle3" in r.stdout


@pytest.mark.parametrize("manifest", sorted((ROOT / "manifests").glob("*.toml")), ids=lambda p: p.name)
def test_bundled_manifests_carry_the_schema_hint(manifest):
    first = manifest.read_text(encoding="utf-8").splitlines()[0]
    assert first == SCHEMA_HINT
    assert (manifest.parent / first.split(" ", 1)[1]).resolve() == ROOT / "patchkit" / "manifest" / "schema.json"


def test_taplo_maps_the_manifests_to_the_schema():
    config = tomllib.loads((ROOT / ".taplo.toml").read_text(encoding="utf-8"))
    (rule,) = config["rule"]
    assert "manifests/*.toml" in rule["include"]
    assert (ROOT / rule["schema"]["path"]).resolve() == ROOT / "patchkit" / "manifest" / "schema.json"
