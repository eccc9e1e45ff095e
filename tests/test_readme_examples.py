"""The example output in the README and the documentation pages is the real output of the code.

The refused-apply example (in the README and in docs/getting-started.md) is re-run on the demo repository that
``patchkit demo --keep`` leaves and compared line by line (in ``test_demo.py``,
on its one kept demo run); the range-check example,
recorded on a real SGLang clone that tests cannot fetch, is checked for what
the code decides: the manifest digest and the header naming the range as
written on the command line.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import documented_pages, readme_commands, run_cli

from patchkit.demo.sglang import RENAME_BRANCH, build_sglang_history
from patchkit.manifest.loader import load_manifest
from patchkit.manifest.resolve import resolve_manifest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED = "\n".join(page.read_text(encoding="utf-8") for page in documented_pages())


def test_readme_has_the_examples():
    verbs = [argv[0] for argv, _ in readme_commands()]
    assert "apply" in verbs and "check" in verbs


def test_every_manifest_digest_in_the_readme_is_the_current_one():
    digests = {name: load_manifest(name).digest for name in ("kimi-k25-eagle3", "eagle3-verify-timing")}
    shown = re.findall(r"manifest ([\w-]+) \((sha256:[0-9a-f]+)…\)", DOCUMENTED)
    assert shown
    for name, prefix in shown:
        assert digests[name].startswith(prefix), f"the docs show {name} {prefix}…, the manifest is {digests[name]}"


def test_check_example_header_names_the_range_of_its_command():
    for argv, output in readme_commands():
        if argv[0] != "check":
            continue
        ranges = [argv[i + 1] for i, a in enumerate(argv) if a == "--range"]
        header = output[0]
        assert header.startswith("patchkit check  manifest ")
        assert f"…)  {' '.join(ranges)}: " in header, (argv, header)


def _readme_sh_command(verb: str) -> list[str]:
    """The argv (after ``patchkit``) of the README's ```sh example of ``verb``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        command = block.replace("\\\n", " ").strip()
        if command.startswith(f"patchkit {verb} "):
            return shlex.split(command)[1:]
    raise AssertionError(f"the README has no `patchkit {verb}` example")


@contextmanager
def _guarding(*own: Path) -> Iterator[None]:
    """Fails the test if patchkit's own files changed, and puts them back: a port that rewrites them (the
    defect these tests catch) must not leave the checkout's manifest ported for every later test."""
    before = {path: path.read_bytes() for path in own}
    try:
        yield
    finally:
        changed = [path for path, data in before.items() if path.read_bytes() != data]
        for path in changed:
            path.write_bytes(before[path])
    assert changed == [], f"port rewrote patchkit's own {changed}"


def test_the_readme_port_example_works_as_printed_and_leaves_patchkits_own_manifest_alone(
    tmp_path, capsys, monkeypatch
):
    """Run from a project directory next to ``../sglang`` (whose origin/main renamed the Kimi class), the
    README's `port -m NAME` writes a ported copy under ./manifests/ and ./patches/, never the manifest
    patchkit found by that name in its own checkout; `check -m NAME` then finds the copy."""
    argv = _readme_sh_command("port")
    name = argv[argv.index("-m") + 1]
    repo = tmp_path / Path(argv[argv.index("--repo") + 1]).name
    build_sglang_history(repo)
    renamed = subprocess.run(["git", "rev-parse", RENAME_BRANCH], cwd=repo, capture_output=True, text=True).stdout
    subprocess.run(["git", "update-ref", "refs/remotes/origin/main", renamed.strip()], cwd=repo, check=True)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    own = resolve_manifest(name)
    own_payload = own.parent.parent / "patches" / "kimi_k25_eagle3.py"
    before = own_payload.read_bytes()
    with _guarding(own, own_payload):
        r = run_cli(capsys, *argv)
    assert r.code == 0, r.out + r.err
    copy, payload = project / "manifests" / f"{name}.toml", project / "patches" / "kimi_k25_eagle3.py"
    assert f"wrote manifests/{name}.toml, patches/kimi_k25_eagle3.py (a ported copy" in r.out, r.out
    assert str(own) in r.out and "never rewrites" in r.out
    assert "KimiK25VLForConditionalGeneration" in copy.read_text(encoding="utf-8")
    assert payload.read_bytes() == before
    assert resolve_manifest(name) == copy.resolve()
    check = run_cli(capsys, "check", "-m", name, "--repo", repo, "--commit", "origin/main")
    assert check.code == 0, check.out + check.err


def test_port_by_name_refuses_to_overwrite_a_different_payload_in_the_project(tmp_path, capsys, monkeypatch):
    repo = build_sglang_history(tmp_path / "sglang").path
    project = tmp_path / "project"
    (project / "patches").mkdir(parents=True)
    mine = project / "patches" / "kimi_k25_eagle3.py"
    mine.write_text("# my own file\n", encoding="utf-8")
    monkeypatch.chdir(project)
    own = resolve_manifest("kimi-k25-eagle3")
    with _guarding(own, own.parent.parent / "patches" / "kimi_k25_eagle3.py"):
        r = run_cli(capsys, "port", "-m", "kimi-k25-eagle3", "--repo", repo, "--to", RENAME_BRANCH)
    assert r.code == 2, r.out + r.err
    assert r.err.count("\n") == 1 and "patches/kimi_k25_eagle3.py exists" in r.err, r.err
    assert mine.read_text(encoding="utf-8") == "# my own file\n" and not (project / "manifests").exists()


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_port_by_name_dry_run_names_the_copy_it_would_write_and_writes_nothing(tmp_path, capsys, monkeypatch, json_out):
    repo = build_sglang_history(tmp_path / "sglang").path
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    argv = ["port", "-m", "kimi-k25-eagle3", "--repo", str(repo), "--to", RENAME_BRANCH, "--dry-run"]
    r = run_cli(capsys, *argv, *(["--json"] if json_out else []))
    assert r.code == 0, r.out + r.err
    assert list(project.iterdir()) == []
    if json_out:
        data = json.loads(r.out)
        assert [f["path"] for f in data["files"]] == ["manifests/kimi-k25-eagle3.toml", "patches/kimi_k25_eagle3.py"]
        assert data["copied_from"] == str(resolve_manifest("kimi-k25-eagle3")) and data["written"] is False
    else:
        assert "dry run: 2 files would be written (a ported copy" in r.out, r.out
