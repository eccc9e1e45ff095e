"""An edited payload replaces patchkit's own older code; it is never "upstream's"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import git_bytes, head_content, make_repo, result_of, run_cli

ROOT = Path(__file__).resolve().parents[1]
KIMI = "python/sglang/srt/models/kimi_k25.py"
OLD_LINE = "return forward()"  # the end of get_embed_and_head
NEW_LINE = "embed, head = forward()\n        return embed, head"


def bundled_copy(kit: Path, name: str, payload: str) -> tuple[Path, Path]:
    """A bundled manifest and its payload, copied (same layout) so the payload can be edited."""
    (kit / "manifests").mkdir(parents=True)
    (kit / "patches").mkdir()
    shutil.copy(ROOT / "manifests" / f"{name}.toml", kit / "manifests")
    shutil.copy(ROOT / "patches" / payload, kit / "patches")
    return kit / "manifests" / f"{name}.toml", kit / "patches" / payload


@pytest.fixture(scope="module")
def kimi_file(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from patchkit.demo.sglang import build_sglang_history

    history = build_sglang_history(tmp_path_factory.mktemp("sglang") / "repo")
    return git_bytes(history.path, "show", f"{history['verify-nvtx']}:{KIMI}")


@pytest.fixture
def kit(tmp_path: Path, kimi_file: bytes) -> tuple[Path, Path, Path]:
    """The bundled Kimi manifest (on_conflict = "keep-upstream") with its payload, copied so it can be edited."""
    manifest, payload = bundled_copy(tmp_path / "kit", "kimi-k25-eagle3", "kimi_k25_eagle3.py")
    repo = make_repo(tmp_path / "repo", {KIMI: kimi_file})
    return repo, manifest, payload


def test_edited_payload_is_applied_as_an_update(kit, capsys: Any) -> None:
    repo, manifest, payload = kit
    first = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    assert first.code == 0 and first.json["written"] == [KIMI]
    applied_at = json.loads((repo / ".git/patchkit/applied/kimi-k25-eagle3.json").read_text())["applied_at"]
    text = payload.read_text()
    assert text.count(OLD_LINE) == 1
    payload.write_text(text.replace(OLD_LINE, NEW_LINE))

    # status: out of date, not COMPLETE.
    st = run_cli(capsys, "status", "-m", manifest, "--repo", repo, "--json")
    assert st.code == 1 and st.json["complete"] is False
    assert st.json["out_of_date"] == ["eagle3-hooks"]
    assert result_of(st.json, "eagle3-hooks")["state"] == "out of date"
    human = run_cli(capsys, "status", "-m", manifest, "--repo", repo)
    assert "OUT OF DATE: eagle3-hooks" in human.out

    # apply: APPLY, naming the previous version and when patchkit wrote it; never "upstream's".
    second = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    assert second.code == 0 and second.json["written"] == [KIMI]
    hooks = result_of(second.json, "eagle3-hooks")
    assert hooks["status"] == "APPLY"
    assert "replaces the previous version of get_embed_and_head" in hooks["message"]
    assert applied_at in hooks["message"]
    assert "upstream" not in hooks["message"]
    body = (repo / KIMI).read_text()
    assert "embed, head = forward()" in body
    assert body.count("def get_embed_and_head") == 1

    st = run_cli(capsys, "status", "-m", manifest, "--repo", repo, "--json")
    assert st.code == 0 and st.json["complete"] is True and st.json["out_of_date"] == []
    # One record, one revert back to upstream's file.
    assert run_cli(capsys, "revert", "-m", manifest, "--repo", repo).code == 0
    assert (repo / KIMI).read_bytes() == head_content(repo, KIMI)


def test_upstream_code_is_still_kept(kit, capsys: Any) -> None:
    """Without a record of writing it, a different definition stays upstream's (keep-upstream)."""
    repo, manifest, payload = kit
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    shutil.rmtree(repo / ".git/patchkit")  # forget: the code is now nobody's we know of
    payload.write_text(payload.read_text().replace(OLD_LINE, NEW_LINE))
    r = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    hooks = result_of(r.json, "eagle3-hooks")
    assert hooks["status"] == "SKIP" and r.json["written"] == []
    assert "keeps upstream's get_embed_and_head" in hooks["message"]


EAGLE = "python/sglang/srt/speculative/eagle_worker.py"


def test_edited_insert_body_replaces_the_old_statements(tmp_path: Path, capsys: Any) -> None:
    """The timing manifest's inserts: a new body replaces the old one, never a second copy next to it."""
    from patchkit.demo.sglang import build_sglang_history

    history = build_sglang_history(tmp_path / "sglang")
    repo = make_repo(tmp_path / "repo", {EAGLE: git_bytes(history.path, "show", f"{history['verify-nvtx']}:{EAGLE}")})
    manifest, payload = bundled_copy(tmp_path / "kit", "eagle3-verify-timing", "eagle3_verify_timing.py")
    assert run_cli(capsys, "apply", "-m", manifest, "--repo", repo).code == 0
    old = "    if _pk_t0 is not None:\n        _patchkit_verify_timer_stop(_pk_t0)\n"
    new = "    if _pk_t0 is not None:\n        _pk_ms = _patchkit_verify_timer_stop(_pk_t0)\n        del _pk_ms\n"
    assert payload.read_text().count(old) == 1
    payload.write_text(payload.read_text().replace(old, new))
    r = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    assert r.code == 0 and r.json["written"] == [EAGLE]
    stop = result_of(r.json, "verify-timer-stop")
    assert stop["status"] == "APPLY" and "replaces the previous version of the 1 statement(s)" in stop["message"]
    text = (repo / EAGLE).read_text()
    assert text.count("_patchkit_verify_timer_stop(_pk_t0)") == 1 and "del _pk_ms" in text
    assert text.count("_pk_t0 = _patchkit_verify_timer_start()") == 1
    again = run_cli(capsys, "apply", "-m", manifest, "--repo", repo, "--json")
    assert again.json["written"] == []
