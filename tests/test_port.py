"""`patchkit port`: a manifest carried forward on real git histories of SGLang-shaped files.

Every port is checked the way a user would check it: the ported manifest is
applied at the target commit (``apply --commit``) and each patched file's
syntax tree is compared with the code the change was meant to give there,
written out by hand below.  A refused port must leave every byte of the
manifest and its payloads as it was.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

import pytest
from helpers import Kit, d, git, run_cli, src, tree_state

from patchkit.demo.history import History, HistoryBuilder

LINEAR = "python/sglang/srt/layers/linear.py"
WEIGHTS = "python/sglang/srt/layers/fused/weights.py"
KIMI = "python/sglang/srt/models/kimi_k25.py"
EAGLE = "python/sglang/srt/speculative/eagle_worker.py"

LINEAR_V1 = d(
    '''
    """Linear layers."""
    import torch


    def fuse_weights(q, k, v):
        """Stack the q, k, v projections into one weight."""
        out = torch.cat([q, k, v], dim=0)
        return out.contiguous()


    class QKVParallelLinear(torch.nn.Module):
        def __init__(self, q, k, v):
            super().__init__()
            self.weight = fuse_weights(q, k, v)
    '''
)

LINEAR_V2 = d(
    '''
    """Linear layers."""
    import torch

    from sglang.srt.layers.fused.weights import fuse_weights


    class QKVParallelLinear(torch.nn.Module):
        def __init__(self, q, k, v):
            super().__init__()
            self.weight = fuse_weights(q, k, v)
    '''
)

WEIGHTS_V2 = d(
    '''
    """Fused weight helpers, moved out of linear.py."""
    import torch


    def shard_size(n, tp):
        return n // tp


    def fuse_weights(q, k, v):
        """Stack the q, k, v projections into one weight."""
        out = torch.cat([q, k, v], dim=0)
        return out.contiguous()
    '''
)

FUSE_PAYLOAD = d(
    '''
    import torch


    def fuse_weights(q, k, v):
        """Stack the q, k, v projections into one weight."""
        out = torch.cat([q, k, v], dim=0).to(torch.bfloat16)
        return out.contiguous()
    '''
)

KIMI_V1 = d(
    '''
    """Kimi-K2.5."""
    from typing import Optional, Tuple

    import torch


    class KimiK25ForConditionalGeneration(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.language_model = None

        def forward(self, input_ids, positions):
            return self.language_model(input_ids, positions)

        def load_weights(self, weights):
            for name, tensor in weights:
                self.language_model.load(name, tensor)


    EntryClass = [KimiK25ForConditionalGeneration]
    '''
)

KIMI_V2 = KIMI_V1.replace("KimiK25ForConditionalGeneration", "KimiK25VLForConditionalGeneration")

HOOKS_PAYLOAD = d(
    """
    class KimiK25ForConditionalGeneration:
        def set_eagle3_layers_to_capture(self, layer_ids=None):
            self.language_model.set_eagle3_layers_to_capture(layer_ids)

        def get_embed_and_head(self):
            return self.language_model.get_embed_and_head()
    """
)

EAGLE_V1 = d(
    '''
    """EAGLE speculative decoding worker."""
    import torch


    class EAGLEWorker:
        def __init__(self, target_worker, draft_worker):
            self.target_worker = target_worker
            self.draft_worker = draft_worker

        def verify(self, batch, spec_info):
            spec_info.prepare_for_verify(batch, self.page_size)
            model_worker_batch = batch.get_model_worker_batch()
            logits_output = self.target_worker.forward_batch_generation(model_worker_batch, is_verify=True)
            res = spec_info.verify(batch, logits_output, self.token_to_kv_pool_allocator)
            logits_output.next_token_logits = logits_output.next_token_logits[res.accepted_indices]
            batch.forward_mode = "decode"
            return logits_output, res
    '''
)

# Ours: a synchronize after the target forward (and, for the multi-commit case, a tag on the mode).
OURS_SYNC = EAGLE_V1.replace(
    "        res = spec_info.verify",
    "        torch.cuda.synchronize()\n        res = spec_info.verify",
)


def verify_payload(source: str) -> str:
    """The payload of a replace-function of EAGLEWorker.verify: the class with just that method."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    method = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "verify")
    lines = source.splitlines(keepends=True)
    return "import torch\n\n\nclass EAGLEWorker:\n" + "".join(lines[method.lineno - 1 : method.end_lineno])


def digest_at(capsys: Any, repo: Path, rev: str, file: str, qualname: str) -> str:
    result = run_cli(capsys, "digest", file, qualname, "--repo", repo, "--commit", rev, "--json")
    assert result.code == 0, result.err
    return str(result.json["digest"])


def build(tmp_path: Path, steps: list[tuple[str, str, dict[str, str | None]]]) -> History:
    builder = HistoryBuilder(tmp_path / "sglang")
    for label, message, files in steps:
        builder.commit(label, message, files)
    return builder.build()


def manifest_bytes(kit: Kit) -> dict[str, tuple[str, int, bool]]:
    return tree_state(kit.root)


def port_json(capsys: Any, kit: Kit, repo: Path, rev: str, *extra: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(capsys, "port", "-m", kit.manifest, "--repo", repo, "--to", rev, "--json", *extra)
    assert result.err == "" or result.code != 0, result.err
    return result.code, result.json


def by_patch(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["patch"]: p for p in data["patches"]}


def applied_tree(capsys: Any, kit: Kit, repo: Path, rev: str, file: str) -> str:
    """``apply --commit REV`` of the (ported) manifest, then the file's text."""
    result = run_cli(capsys, "apply", "-m", kit.manifest, "--repo", repo, "--commit", rev, "--json")
    assert result.code == 0, result.out + result.err
    text = (repo / file).read_text()
    run_cli(capsys, "revert", "-m", kit.manifest, "--repo", repo)
    return text


def same_ast(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def table(kit: Kit, index: int = 0) -> dict[str, Any]:
    return tomllib.loads(kit.manifest.read_text())["patch"][index]


# -- a function moved to a new module ----------------------------------------------------------------


def test_function_moved_to_a_new_module(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [
            ("base", "Add linear layers", {LINEAR: LINEAR_V1}),
            ("move", "Move fuse_weights to layers/fused/weights.py (#18001)", {LINEAR: LINEAR_V2, WEIGHTS: WEIGHTS_V2}),
        ],
    )
    repo = history.path
    kit = fuse_kit(tmp_path, capsys, repo, history["base"])
    before = manifest_bytes(kit)
    dry = run_cli(capsys, "port", "-m", kit.manifest, "--repo", repo, "--to", history["move"], "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert f'+file = "{WEIGHTS}"' in dry.out and "dry run" in dry.out
    assert manifest_bytes(kit) == before  # --dry-run changes no byte

    code, data = port_json(capsys, kit, repo, history["move"])
    assert code == 0, data["patches"]
    port = by_patch(data)["bf16-fuse"]
    assert port["how"] == "moved"
    assert [(c["key"], c["from"], c["to"], c["commit"], c["subject"]) for c in port["changes"]] == [
        ("file", LINEAR, WEIGHTS, history["move"], "Move fuse_weights to layers/fused/weights.py (#18001)")
    ]
    assert data["from"]["commit"] == history["base"] and data["check"]["failed"] is False
    assert table(kit)["file"] == WEIGHTS and table(kit)["function"] == "fuse_weights"
    intended = WEIGHTS_V2.replace("torch.cat([q, k, v], dim=0)", "torch.cat([q, k, v], dim=0).to(torch.bfloat16)")
    assert same_ast(applied_tree(capsys, kit, repo, history["move"], WEIGHTS), intended)


@pytest.mark.parametrize(("staying", "verb"), [(["os-import"], "targets"), (["os-import", "sys-import"], "target")])
def test_a_moved_patch_names_the_patches_left_on_its_file(
    tmp_path: Path, capsys: Any, staying: list[str], verb: str
) -> None:
    """The note of a patch that moved to another file names the ones that stay, with a verb that agrees."""
    history = build(
        tmp_path,
        [
            ("base", "Add linear layers", {LINEAR: LINEAR_V1}),
            ("move", "Move fuse_weights to layers/fused/weights.py (#18001)", {LINEAR: LINEAR_V2, WEIGHTS: WEIGHTS_V2}),
        ],
    )
    kit = fuse_kit(tmp_path, capsys, history.path, history["base"])
    fuse = tomllib.loads(kit.manifest.read_text())["patch"][0]
    imports = [{"id": i, "op": "ensure-import", "file": LINEAR, "import": f"import {i.split('-')[0]}"} for i in staying]
    kit.write([fuse, *imports], {"fuse.py": FUSE_PAYLOAD})
    code, data = port_json(capsys, kit, history.path, history["move"], "--dry-run")
    assert code == 0, data["patches"]
    (change,) = by_patch(data)["bf16-fuse"]["changes"]
    assert change["note"] == f"the same code; {', '.join(staying)} still {verb} {LINEAR}"


# -- a class renamed ------------------------------------------------------------------------------------


def test_class_renamed(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [
            ("base", "Support Kimi-K2.5", {KIMI: KIMI_V1}),
            ("rename", "kimi: call the model Kimi-K2.5 VL", {KIMI: KIMI_V2}),
        ],
    )
    repo = history.path
    kit = Kit(tmp_path / "kit")
    kit.write(
        text=d(
            f"""
            # Kimi-K2.5 with an EAGLE-3 draft model.
            schema = 1
            name = "test"

            [[patch]]
            id = "typing-imports"
            op = "ensure-import"
            file = "{KIMI}"
            import = "from typing import List"

            # The hooks the EAGLE-3 worker calls.
            [[patch]]
            id = "eagle3-hooks"
            op = "add-methods"
            file = "{KIMI}"
            class = "KimiK25ForConditionalGeneration"  # the model class
            source = "../patches/hooks.py"
            """
        )
    )
    kit.payload_path("hooks.py").parent.mkdir(parents=True, exist_ok=True)
    kit.payload_path("hooks.py").write_text(HOOKS_PAYLOAD)
    code, data = port_json(capsys, kit, repo, history["rename"])
    assert code == 0, data["patches"]
    port = by_patch(data)["eagle3-hooks"]
    assert port["how"] == "renamed"
    assert [(c["key"], c["from"], c["to"]) for c in port["changes"]] == [
        ("class", "KimiK25ForConditionalGeneration", "KimiK25VLForConditionalGeneration")
    ]
    assert by_patch(data)["typing-imports"]["how"] == "unchanged"
    text = kit.manifest.read_text()
    assert 'class = "KimiK25VLForConditionalGeneration"  # the model class' in text  # comments survive
    assert "# The hooks the EAGLE-3 worker calls." in text and text.startswith("# Kimi-K2.5")
    assert table(kit, 1)["payload_class"] == "KimiK25ForConditionalGeneration"
    hooks = HOOKS_PAYLOAD.split("\n", 1)[1]
    intended = KIMI_V2.replace("import torch\n", "import torch\nfrom typing import List\n")
    intended = intended.replace(
        "            self.language_model.load(name, tensor)\n",
        "            self.language_model.load(name, tensor)\n\n" + hooks,
    )
    assert same_ast(applied_tree(capsys, kit, repo, history["rename"], KIMI), intended)


# -- upstream edited the replaced function on other lines -------------------------------------------------


EAGLE_V2 = EAGLE_V1.replace('batch.forward_mode = "decode"', "batch.forward_mode = ForwardMode.DECODE")


def fuse_kit(tmp_path: Path, capsys: Any, repo: Path, base: str) -> Kit:
    """A kit with one replace-function of linear.py's fuse_weights (bf16 weights), pinned to ``base``."""
    kit = Kit(tmp_path / "kit")
    kit.write(
        [
            {
                "id": "bf16-fuse",
                "op": "replace-function",
                "file": LINEAR,
                "function": "fuse_weights",
                "source": src("fuse.py"),
                "expect": digest_at(capsys, repo, base, LINEAR, "fuse_weights"),
            }
        ],
        {"fuse.py": FUSE_PAYLOAD},
    )
    return kit


def hooks_kit(tmp_path: Path) -> Kit:
    """A kit with one add-methods of the EAGLE-3 hooks on the Kimi-K2.5 class."""
    kit = Kit(tmp_path / "kit")
    kit.write(
        [
            {
                "id": "eagle3-hooks",
                "op": "add-methods",
                "file": KIMI,
                "class": "KimiK25ForConditionalGeneration",
                "source": src("hooks.py"),
            }
        ],
        {"hooks.py": HOOKS_PAYLOAD},
    )
    return kit


def eagle_kit(tmp_path: Path, capsys: Any, repo: Path, base: str, ours: str) -> Kit:
    kit = Kit(tmp_path / "kit")
    kit.write(
        [
            {
                "id": "verify-sync",
                "op": "replace-function",
                "file": EAGLE,
                "function": "EAGLEWorker.verify",
                "source": src("verify.py"),
                "expect": digest_at(capsys, repo, base, EAGLE, "EAGLEWorker.verify"),
            }
        ],
        {"verify.py": verify_payload(ours)},
    )
    return kit


def test_replace_function_merges_upstream_edit_on_other_lines(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [
            ("base", "Add the EAGLE worker", {EAGLE: EAGLE_V1}),
            ("mode", "Use ForwardMode in verify (#18100)", {EAGLE: EAGLE_V2}),
        ],
    )
    repo = history.path
    kit = eagle_kit(tmp_path, capsys, repo, history["base"], OURS_SYNC)
    code, data = port_json(capsys, kit, repo, history["mode"])
    assert code == 0, data["patches"]
    port = by_patch(data)["verify-sync"]
    assert port["how"] == "merged"
    (change,) = port["changes"]
    assert change["key"] == "expect" and change["commit"] == history["mode"]
    assert change["to"] == digest_at(capsys, repo, history["mode"], EAGLE, "EAGLEWorker.verify")
    assert "edit-function" in change["note"]  # a one-line change: the report says edit-function fits it better
    assert port["evidence"] is None  # upstream's edit made none of our lines: nothing to measure
    assert table(kit)["expect"] == change["to"]
    intended = EAGLE_V2.replace(
        "        res = spec_info.verify",
        "        torch.cuda.synchronize()\n        res = spec_info.verify",
    )
    assert same_ast(applied_tree(capsys, kit, repo, history["mode"], EAGLE), intended)


# -- upstream took the change -----------------------------------------------------------------------------


def test_upstreamed_patch_is_reported_and_dropped(tmp_path: Path, capsys: Any) -> None:
    kimi_hooked = KIMI_V1.replace(
        "            self.language_model.load(name, tensor)\n",
        "            self.language_model.load(name, tensor)\n\n" + HOOKS_PAYLOAD.split("\n", 1)[1],
    )
    history = build(
        tmp_path,
        [
            ("base", "Support Kimi-K2.5", {KIMI: KIMI_V1}),
            ("churn", "Touch the model", {KIMI: KIMI_V1.replace('"""Kimi-K2.5."""', '"""Kimi-K2.5 model."""')}),
            ("hooks", "kimi: EAGLE-3 hooks (#17850)", {KIMI: kimi_hooked}),
        ],
    )
    repo = history.path
    kit = Kit(tmp_path / "kit")
    kit.write(
        [
            {
                "id": "eagle3-hooks",
                "op": "add-methods",
                "file": KIMI,
                "class": "KimiK25ForConditionalGeneration",
                "source": src("hooks.py"),
            },
            {"id": "typing-imports", "op": "ensure-import", "file": KIMI, "import": "from typing import List"},
        ],
        {"hooks.py": HOOKS_PAYLOAD},
    )
    before = manifest_bytes(kit)
    code, data = port_json(capsys, kit, repo, history["hooks"])
    assert code == 0, data["patches"]
    port = by_patch(data)["eagle3-hooks"]
    assert port["how"] == "upstreamed" and not port["dropped"], port
    assert port["upstreamed_at"] == history["hooks"], port
    assert manifest_bytes(kit) == before  # nothing else to change: nothing written

    code, data = port_json(capsys, kit, repo, history["hooks"], "--drop-upstreamed")
    assert code == 0, data["patches"]
    assert by_patch(data)["eagle3-hooks"]["dropped"] is True
    tables = tomllib.loads(kit.manifest.read_text())["patch"]
    assert [t["id"] for t in tables] == ["typing-imports"]


def hooks_history(tmp_path: Path, *, typing_too: bool) -> History:
    """Kimi-K2.5, a commit that touches it, then upstream's own EAGLE-3 hooks (and, ``typing_too``, the
    ``List`` import the hooks use) at "hooks"."""
    kimi_hooked = KIMI_V1.replace(
        "            self.language_model.load(name, tensor)\n",
        "            self.language_model.load(name, tensor)\n\n" + HOOKS_PAYLOAD.split("\n", 1)[1],
    )
    if typing_too:
        kimi_hooked = kimi_hooked.replace("from typing import Optional", "from typing import List, Optional")
    return build(
        tmp_path,
        [
            ("base", "Support Kimi-K2.5", {KIMI: KIMI_V1}),
            ("churn", "Touch the model", {KIMI: KIMI_V1.replace('"""Kimi-K2.5."""', '"""Kimi-K2.5 model."""')}),
            ("hooks", "kimi: EAGLE-3 hooks (#17850)", {KIMI: kimi_hooked}),
        ],
    )


# The manifest of the two tests below, as a person writes one: comments, a [patch.hints] subtable after the hooks'
# keys, and a section after the patches.
HOOKS_MANIFEST = d(
    f"""
    # EAGLE-3 for Kimi-K2.5.
    schema = 1
    name = "{Kit.name}"

    # The hooks: upstream takes them at "hooks".
    [[patch]]
    id = "eagle3-hooks"
    op = "add-methods"
    file = "{KIMI}"
    class = "KimiK25ForConditionalGeneration"
    source = "../patches/hooks.py"

    [patch.hints]
    UPSTREAM_PROVIDES = "upstream took the hooks: drop this patch"

    [[patch]]
    id = "typing-imports"
    op = "ensure-import"
    file = "{KIMI}"
    import = "from typing import List"

    # -- a section after the patches: nobody's patch ----------------------------
    """
)


def test_a_dropped_patch_takes_its_subtables_and_leaves_every_other_byte(tmp_path: Path, capsys: Any) -> None:
    history = hooks_history(tmp_path, typing_too=False)
    kit = Kit(tmp_path / "kit")
    kit.write(text=HOOKS_MANIFEST, payloads={"hooks.py": HOOKS_PAYLOAD})
    code, data = port_json(capsys, kit, history.path, history["hooks"], "--drop-upstreamed")
    assert code == 0, data["patches"]
    assert by_patch(data)["eagle3-hooks"]["dropped"] is True and not data["retired"]
    hooks = HOOKS_MANIFEST.index("# The hooks")
    assert (
        kit.manifest.read_text()
        == HOOKS_MANIFEST[:hooks] + HOOKS_MANIFEST[HOOKS_MANIFEST.index('[[patch]]\nid = "typing') :]
    )


def test_every_patch_upstreamed_retires_the_manifest(tmp_path: Path, capsys: Any) -> None:
    """Upstream took every patch: nothing is dropped (a manifest keeps at least one) and nothing written (the
    manifest as it is serves the commits before); port says the manifest is retired, since when, and what to do
    with its files, with or without --drop-upstreamed and --dry-run."""
    history = hooks_history(tmp_path, typing_too=True)
    kit = Kit(tmp_path / "kit")
    kit.write(text=HOOKS_MANIFEST, payloads={"hooks.py": HOOKS_PAYLOAD})
    before = manifest_bytes(kit)
    for extra in ((), ("--drop-upstreamed",), ("--drop-upstreamed", "--dry-run")):
        code, data = port_json(capsys, kit, history.path, history["hooks"], "--from", history["base"], *extra)
        assert code == 0, (extra, data)
        assert data["retired"] is True and data["retired_since"] == history["hooks"], extra
        assert [(p["how"], p["dropped"]) for p in data["patches"]] == [("upstreamed", False)] * 2, extra
        assert data["files"] == [] and data["written"] is False, extra
        assert manifest_bytes(kit) == before, extra

        result = run_cli(capsys, "port", "-m", kit.manifest, "--repo", history.path, "--to", "main", *extra)
        assert result.code == 0, result.out + result.err
        since = f"since {history['hooks'][:10]} 'kimi: EAGLE-3 hooks (#17850)'"
        assert f"upstream has had every patch of {Kit.name} {since}." in result.out, result.out
        assert "stop applying it from" in result.out and "and its payload" in result.out, result.out
        assert "--drop-upstreamed removes it" not in result.out, result.out
        assert ("--drop-upstreamed drops no patch of it" in result.out) == ("--drop-upstreamed" in extra)
        assert manifest_bytes(kit) == before, extra


# -- ours and upstream's edit the same line: refused, nothing written ---------------------------------------


def test_same_line_conflict_is_refused_and_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    theirs = EAGLE_V1.replace(
        "logits_output = self.target_worker.forward_batch_generation(model_worker_batch, is_verify=True)",
        "logits_output = self.target_worker.forward_batch_generation(model_worker_batch, is_verify=True, skip=1)",
    )
    ours = EAGLE_V1.replace("is_verify=True)", "is_verify=True, sync=True)")
    history = build(
        tmp_path,
        [("base", "Add the EAGLE worker", {EAGLE: EAGLE_V1}), ("skip", "verify: skip one (#18200)", {EAGLE: theirs})],
    )
    repo = history.path
    kit = eagle_kit(tmp_path, capsys, repo, history["base"], ours)
    before = manifest_bytes(kit)
    code, data = port_json(capsys, kit, repo, history["skip"])
    assert code == 1
    port = by_patch(data)["verify-sync"]
    assert port["how"] == "conflict" and data["refused"] is True and data["written"] is False
    conflict = port["conflict"]
    assert conflict["file"] == EAGLE and conflict["commit"] == history["skip"]
    assert conflict["line"] == 13  # the line in eagle_worker.py at that commit
    assert any("sync=True" in line for line in conflict["ours"])
    assert any("skip=1" in line for line in conflict["upstream"])
    assert manifest_bytes(kit) == before

    human = run_cli(capsys, "port", "-m", kit.manifest, "--repo", repo, "--to", history["skip"])
    assert human.code == 1
    assert f"{EAGLE}:13" in human.out and "REFUSED" in human.out and "nothing was written" in human.out
    assert "sync=True" in human.out and "skip=1" in human.out
    assert manifest_bytes(kit) == before


# -- several commits: one jump would conflict, step by step merges -------------------------------------------


def test_step_by_step_where_one_jump_conflicts(tmp_path: Path, capsys: Any) -> None:
    # Ours changes two lines; upstream first takes one of them as it is, then edits that line further.
    ours = EAGLE_V1.replace('batch.forward_mode = "decode"', 'batch.forward_mode = "spec_decode"')
    ours = ours.replace("is_verify=True)", "is_verify=True, sync=True)")
    took_one = EAGLE_V1.replace("is_verify=True)", "is_verify=True, sync=True)")
    edited = took_one.replace("sync=True)", "sync=True, stream=None)")
    history = build(
        tmp_path,
        [
            ("base", "Add the EAGLE worker", {EAGLE: EAGLE_V1}),
            ("take", "verify: sync after the target forward (#18300)", {EAGLE: took_one}),
            ("other", "Add a README", {"README.md": "sglang\n"}),
            ("stream", "verify: pass the stream (#18301)", {EAGLE: edited}),
        ],
    )
    repo = history.path
    kit = eagle_kit(tmp_path, capsys, repo, history["base"], ours)

    # One jump (base -> stream) with git merge-file: a conflict on the forward call.
    work = tmp_path / "jump"
    work.mkdir()
    for name, text in (("base", EAGLE_V1), ("ours", ours), ("theirs", edited)):
        (work / name).write_text(text)
    jump = git_merge_file(work)
    assert jump > 0

    shown = run_cli(capsys, "port", "-m", kit.manifest, "--repo", repo, "--to", history["stream"], "--dry-run")
    assert "upstream made 1 of its 2 changed lines at" in shown.out, shown.out
    assert "does the rest still earn its place?" in shown.out and "--without verify-sync" in shown.out
    code, data = port_json(capsys, kit, repo, history["stream"])
    assert code == 0, data["patches"]
    port = by_patch(data)["verify-sync"]
    assert port["how"] == "merged"
    assert [c["commit"] for c in port["changes"]] == [history["take"], history["stream"]]
    assert data["walked"] == 3 and data["stops"] == 2  # the README commit touches no target file
    # upstream took one of our two lines at "take": port asks for the evidence that the rest is still needed
    evidence = port["evidence"]
    assert evidence["commit"] == history["take"] and (evidence["made"], evidence["of"]) == (1, 2)
    short = history["stream"][:10]
    assert evidence["command"] == f"patchkit bench -m {data['manifest']['path']} --without verify-sync --commit {short}"
    intended = edited.replace('batch.forward_mode = "decode"', 'batch.forward_mode = "spec_decode"')
    assert same_ast(applied_tree(capsys, kit, repo, history["stream"], EAGLE), intended)


def git_merge_file(work: Path) -> int:
    """``git merge-file`` of ours/base/theirs in ``work``; the number of conflicts."""
    import subprocess

    proc = subprocess.run(["git", "merge-file", "-p", "ours", "base", "theirs"], cwd=work, capture_output=True)
    return proc.returncode


# -- bad input --------------------------------------------------------------------------------------------


def test_from_must_be_an_ancestor_where_the_manifest_applies(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [("base", "Support Kimi-K2.5", {KIMI: KIMI_V1}), ("rename", "kimi: rename", {KIMI: KIMI_V2})],
    )
    kit = hooks_kit(tmp_path)
    before = manifest_bytes(kit)
    bad = run_cli(
        capsys, "port", "-m", kit.manifest, "--repo", history.path, "--to", history["base"], "--from", history["rename"]
    )
    assert bad.code == 2 and "not an ancestor" in bad.err and "Traceback" not in bad.err
    assert len(bad.err.strip().splitlines()) <= 2
    assert manifest_bytes(kit) == before
    assert git(history.path, "status", "--porcelain") == ""


# -- an edit-function whose context upstream edited --------------------------------------------------------


def function_text(source: str, name: str) -> str:
    tree = ast.parse(source)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
    return "".join(source.splitlines(keepends=True)[node.lineno - 1 : node.end_lineno])


def test_edit_function_merges_upstream_edit_next_to_ours(tmp_path: Path, capsys: Any) -> None:
    from patchkit.capture.textdiff import unified_diff

    theirs = EAGLE_V1.replace("batch.get_model_worker_batch()", "batch.get_model_worker_batch(spec=True)")
    history = build(
        tmp_path,
        [
            ("base", "Add the EAGLE worker", {EAGLE: EAGLE_V1}),
            ("spec", "verify: a spec batch (#18400)", {EAGLE: theirs}),
        ],
    )
    repo = history.path
    diff = unified_diff(EAGLE, function_text(EAGLE_V1, "verify"), function_text(OURS_SYNC, "verify"))
    payload = "# edit-function EAGLEWorker.verify: hunk line numbers count from the function's first line\n" + "".join(
        line for line in diff.splitlines(keepends=True) if not line.startswith("diff --git")
    )
    kit = Kit(tmp_path / "kit")
    kit.write(
        [
            {
                "id": "verify-sync",
                "op": "edit-function",
                "file": EAGLE,
                "function": "EAGLEWorker.verify",
                "source": src("verify.diff"),
            }
        ],
        {"verify.diff": payload},
    )
    check = run_cli(capsys, "check", "-m", kit.manifest, "--repo", repo, "--commit", history["spec"], "--json")
    assert check.json["commits"][0]["results"][0]["reason"] == "CONFLICT"  # the op itself cannot take it
    code, data = port_json(capsys, kit, repo, history["spec"])
    assert code == 0, data["patches"]
    port = by_patch(data)["verify-sync"]
    assert port["how"] == "merged" and port["changes"][0]["commit"] == history["spec"]
    new = kit.payload_path("verify.diff").read_text()
    assert new.startswith("# edit-function EAGLEWorker.verify") and f"--- a/{EAGLE}" in new
    assert "get_model_worker_batch(spec=True)" in new  # the hunk's context is upstream's line now
    intended = theirs.replace(
        "        res = spec_info.verify", "        torch.cuda.synchronize()\n        res = spec_info.verify"
    )
    assert same_ast(applied_tree(capsys, kit, repo, history["spec"], EAGLE), intended)


# -- the manifest's bytes: CRLF line endings are kept ------------------------------------------------------------


def test_crlf_manifest_keeps_its_line_endings(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [("base", "Support Kimi-K2.5", {KIMI: KIMI_V1}), ("rename", "kimi: rename", {KIMI: KIMI_V2})],
    )
    kit = hooks_kit(tmp_path)
    kit.manifest.write_bytes(kit.manifest.read_bytes().replace(b"\n", b"\r\n"))
    kit.manifest.chmod(0o640)
    code, data = port_json(capsys, kit, history.path, history["rename"])
    assert code == 0, data["patches"]
    raw = kit.manifest.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") and b'class = "KimiK25VLForConditionalGeneration"\r\n' in raw
    assert kit.manifest.stat().st_mode & 0o777 == 0o640
    assert not list(kit.manifest.parent.glob("*.patchkit-tmp"))


def test_a_schema_hint_on_the_first_line_is_kept(tmp_path: Path, capsys: Any) -> None:
    """The bundled manifests open with Taplo's `#:schema` hint: a port rewrites the manifest around it."""
    history = build(
        tmp_path,
        [("base", "Support Kimi-K2.5", {KIMI: KIMI_V1}), ("rename", "kimi: rename", {KIMI: KIMI_V2})],
    )
    kit = hooks_kit(tmp_path)
    hint = b"#:schema ../patchkit/manifest/schema.json"
    kit.manifest.write_bytes((hint + b"\n" + kit.manifest.read_bytes()).replace(b"\n", b"\r\n"))
    code, data = port_json(capsys, kit, history.path, history["rename"])
    assert code == 0, data["patches"]
    raw = kit.manifest.read_bytes()
    assert raw.startswith(hint + b"\r\n") and b'class = "KimiK25VLForConditionalGeneration"\r\n' in raw


# -- a file renamed: `file` and an edit-function diff's header paths follow ----------------------------------------


def test_file_renamed_moves_every_patch_of_it(tmp_path: Path, capsys: Any) -> None:
    from patchkit.capture.textdiff import unified_diff

    moved = "python/sglang/srt/speculative/eagle_worker_v1.py"
    history = build(
        tmp_path,
        [
            ("base", "Add the EAGLE worker", {EAGLE: EAGLE_V1}),
            ("mv", "Rename eagle_worker.py to eagle_worker_v1.py (#18500)", {EAGLE: None, moved: EAGLE_V1}),
        ],
    )
    repo = history.path
    diff = unified_diff(EAGLE, function_text(EAGLE_V1, "verify"), function_text(OURS_SYNC, "verify"))
    kit = Kit(tmp_path / "kit")
    kit.write(
        [
            {"id": "typing", "op": "ensure-import", "file": EAGLE, "import": "from typing import List"},
            {
                "id": "verify-sync",
                "op": "edit-function",
                "file": EAGLE,
                "function": "EAGLEWorker.verify",
                "source": src("verify.diff"),
            },
        ],
        {"verify.diff": diff},
    )
    code, data = port_json(capsys, kit, repo, history["mv"])
    assert code == 0, data["patches"]
    for patch_id in ("typing", "verify-sync"):
        port = by_patch(data)[patch_id]
        assert port["how"] == "moved"
        assert [(c["key"], c["from"], c["to"]) for c in port["changes"]] == [("file", EAGLE, moved)]
    assert [t["file"] for t in tomllib.loads(kit.manifest.read_text())["patch"]] == [moved, moved]
    payload = kit.payload_path("verify.diff").read_text()
    assert f"--- a/{moved}\n+++ b/{moved}\n" in payload and EAGLE not in payload
    intended = OURS_SYNC.replace("import torch\n", "import torch\nfrom typing import List\n")
    assert same_ast(applied_tree(capsys, kit, repo, history["mv"], moved), intended)


# -- a function moved within its file (into a class) ---------------------------------------------------------------


def test_function_moved_within_its_file(tmp_path: Path, capsys: Any) -> None:
    inside = d(
        '''
        """Linear layers."""
        import torch


        class QKVParallelLinear(torch.nn.Module):
            def __init__(self, q, k, v):
                super().__init__()
                self.weight = self.fuse_weights(q, k, v)

            @staticmethod
            def fuse_weights(q, k, v):
                """Stack the q, k, v projections into one weight."""
                out = torch.cat([q, k, v], dim=0)
                return out.contiguous()
        '''
    )
    history = build(
        tmp_path,
        [
            ("base", "Add linear layers", {LINEAR: LINEAR_V1}),
            ("in", "Make fuse_weights a static method", {LINEAR: inside}),
        ],
    )
    repo = history.path
    kit = fuse_kit(tmp_path, capsys, repo, history["base"])
    code, data = port_json(capsys, kit, repo, history["in"])
    assert code == 0, data["patches"]
    port = by_patch(data)["bf16-fuse"]
    assert [(c["how"], c["key"], c["to"]) for c in port["changes"]][:1] == [
        ("moved", "function", "QKVParallelLinear.fuse_weights")
    ]
    assert port["how"] == "merged"  # the decorator upstream added is merged into the payload too
    assert table(kit)["payload_function"] == "fuse_weights"
    intended = inside.replace("torch.cat([q, k, v], dim=0)", "torch.cat([q, k, v], dim=0).to(torch.bfloat16)")
    assert same_ast(applied_tree(capsys, kit, repo, history["in"], LINEAR), intended)


# -- an edit-imports whose block upstream edited next to ours (the replay's case) ------------------------------------


def test_edit_imports_merges_upstream_edit_in_the_block(tmp_path: Path, capsys: Any) -> None:
    from patchkit.capture.textdiff import unified_diff

    block = "import os\nimport sys\n\nimport torch\nimport triton\n\nfrom sglang.srt.utils import get_bool_env_var\n"
    body = "\n\ndef enabled():\n    return get_bool_env_var('SGLANG_FUSED')\n"
    ours_block = block.replace("import triton\n", "import triton.language as tl\n")
    theirs_block = block.replace("import sys\n", "import sys\nimport time\n")
    file = "python/sglang/srt/layers/fused_moe.py"
    history = build(
        tmp_path,
        [
            ("base", "Add fused MoE", {file: block + body}),
            ("time", "fused_moe: import time (#18600)", {file: theirs_block + body}),
        ],
    )
    repo = history.path
    diff = unified_diff(file, block, ours_block)
    kit = Kit(tmp_path / "kit")
    kit.write(
        [{"id": "tl-import", "op": "edit-imports", "file": file, "source": src("imports.diff")}], {"imports.diff": diff}
    )
    check = run_cli(capsys, "check", "-m", kit.manifest, "--repo", repo, "--commit", history["time"], "--json")
    assert check.json["commits"][0]["results"][0]["reason"] == "CONFLICT"
    code, data = port_json(capsys, kit, repo, history["time"])
    assert code == 0, data["patches"]
    assert by_patch(data)["tl-import"]["how"] == "merged"
    intended = theirs_block.replace("import triton\n", "import triton.language as tl\n") + body
    assert same_ast(applied_tree(capsys, kit, repo, history["time"], file), intended)


# -- a [[group]]'s variants -------------------------------------------------------------------------------

FP8 = "python/sglang/srt/layers/fused/fp8.py"
FP8_V1 = d(
    '''
    """FP8 weight helpers."""
    import torch


    def fuse_weights(q, k, v):
        """Stack the q, k, v projections into one weight, in fp8."""
        out = torch.cat([q, k, v], dim=0)
        return out.to(torch.float8_e4m3fn)
    '''
)
FP8_PAYLOAD = FP8_V1.replace("return out.to(torch.float8_e4m3fn)", "return out.to(torch.float8_e4m3fn).contiguous()")


def group_kit(tmp_path: Path, capsys: Any, repo: Path, base: str, fp8_at: str) -> Kit:
    """One change in two variants: linear.py's fuse_weights (in effect at ``base``), and the fp8 module's (written
    against ``fp8_at``, where that file exists)."""
    kit = Kit(tmp_path / "kit")
    linear = digest_at(capsys, repo, base, LINEAR, "fuse_weights")
    fp8 = digest_at(capsys, repo, fp8_at, FP8, "fuse_weights")
    kit.write(
        text=d(
            f'''
            schema = 1
            name = "test"

            [[group]]
            id = "fuse"
            members = ["bf16-fuse", "fp8-fuse"]

            [[patch]]
            id = "bf16-fuse"
            op = "replace-function"
            file = "{LINEAR}"
            function = "fuse_weights"
            source = "../patches/fuse.py"
            expect = "{linear}"

            [[patch]]
            id = "fp8-fuse"
            op = "replace-function"
            file = "{FP8}"
            function = "fuse_weights"
            source = "../patches/fp8.py"
            expect = "{fp8}"
            '''
        ),
        payloads={"fuse.py": FUSE_PAYLOAD, "fp8.py": FP8_PAYLOAD},
    )
    return kit


def test_group_variant_in_effect_is_carried_when_no_variant_fits(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [
            ("base", "Add linear layers", {LINEAR: LINEAR_V1}),
            ("fp8", "Add the fp8 helpers (#17990)", {FP8: FP8_V1}),
            ("hide", "Drop the fp8 helpers for now (#17995)", {FP8: None}),
            ("move", "Move fuse_weights to layers/fused/weights.py (#18001)", {LINEAR: LINEAR_V2, WEIGHTS: WEIGHTS_V2}),
        ],
    )
    repo = history.path
    kit = group_kit(tmp_path, capsys, repo, history["base"], history["fp8"])
    before = table(kit, 1)
    code, data = port_json(capsys, kit, repo, history["move"], "--from", history["hide"])
    assert code == 0, data["patches"]
    ports = by_patch(data)
    # the variant in effect (bf16, in linear.py) was left with no variant fitting at "move": port carries it
    assert ports["bf16-fuse"]["how"] == "moved"
    assert [(c["key"], c["from"], c["to"]) for c in ports["bf16-fuse"]["changes"]] == [("file", LINEAR, WEIGHTS)]
    # the unused variant (its file is gone) stays as written, for the commits it serves
    assert ports["fp8-fuse"]["how"] == "unchanged" and ports["fp8-fuse"]["changes"] == []
    assert table(kit, 0)["file"] == WEIGHTS and table(kit, 1) == before
    assert tomllib.loads(kit.manifest.read_text())["group"] == [{"id": "fuse", "members": ["bf16-fuse", "fp8-fuse"]}]
    intended = WEIGHTS_V2.replace("torch.cat([q, k, v], dim=0)", "torch.cat([q, k, v], dim=0).to(torch.bfloat16)")
    assert same_ast(applied_tree(capsys, kit, repo, history["move"], WEIGHTS), intended)


def test_group_variant_is_left_alone_while_another_variant_fits(tmp_path: Path, capsys: Any) -> None:
    history = build(
        tmp_path,
        [
            ("base", "Add linear layers", {LINEAR: LINEAR_V1}),
            ("fp8", "Add the fp8 helpers (#17990)", {FP8: FP8_V1}),
            ("move", "Move fuse_weights to layers/fused/weights.py (#18001)", {LINEAR: LINEAR_V2, WEIGHTS: WEIGHTS_V2}),
        ],
    )
    repo = history.path
    kit = group_kit(tmp_path, capsys, repo, history["base"], history["fp8"])
    before = manifest_bytes(kit)
    code, data = port_json(capsys, kit, repo, history["move"], "--from", history["fp8"])
    assert code == 0, data["patches"]
    ports = by_patch(data)
    assert ports["bf16-fuse"]["how"] == "unchanged" and ports["bf16-fuse"]["reason"] == "OTHER_VARIANT"
    assert ports["fp8-fuse"]["how"] == "unchanged" and ports["fp8-fuse"]["status"] == "APPLY"
    assert data["files"] == [] and manifest_bytes(kit) == before  # the group already covers the target


# -- the carrying's bound at one commit is said, not silent ----------------------------------------------------------


def test_the_carry_bound_at_one_commit_is_reported(tmp_path: Path, capsys: Any) -> None:
    """17 functions move to a new file at one commit: each is one carry, and port stops carrying at 16. The
    patch left is not carried, and the plan says the bound stopped it, not a verdict of its own."""
    many = "python/sglang/srt/layers/many.py"
    moved = "python/sglang/srt/layers/moved.py"
    body = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(17))
    history = build(
        tmp_path,
        [
            ("base", "Add the helpers", {many: '"""Helpers."""\n\n\n' + body}),
            ("mv", "Move the helpers to moved.py", {many: '"""Helpers."""\n', moved: body}),
        ],
    )
    insert = {"op": "insert", "file": many, "position": "after", "source": src("double.py"), "body_of": "double"}
    kit = Kit(tmp_path / "kit")
    kit.write(
        [{**insert, "id": f"p{i}", "function": f"f{i}", "anchor": f"y = x + {i}"} for i in range(17)],
        {"double.py": "def double(y):\n    y = y * 2\n"},
    )
    before = manifest_bytes(kit)
    code, data = port_json(capsys, kit, history.path, history["mv"])
    assert code == 1 and data["refused"] and manifest_bytes(kit) == before
    ports = by_patch(data)
    assert all(ports[f"p{i}"]["how"] == "moved" for i in range(16))
    assert ports["p16"]["how"] == "failed" and ports["p16"]["failed_at"] == history["mv"]
    assert "bound of 16 carries at one commit was reached" in ports["p16"]["message"]
    assert [(b["commit"], b["carries"], b["patches"]) for b in data["bound_reached"]] == [(history["mv"], 16, ["p16"])]
    assert "after 16 carries" in data["bound_reached"][0]["message"]
    shown = run_cli(capsys, "port", "-m", kit.manifest, "--repo", history.path, "--to", history["mv"])
    assert shown.code == 1 and "carries at one commit" in " ".join(shown.out.split())


def test_port_names_no_op() -> None:
    """What an op is to port lives with the op (``port_traits``): no module of port/ names an op, imports an
    op's module, or decides by a patch's op name; every op declares its traits in its own class."""
    from patchkit.operations import MODULES, registry

    op_modules = {f"patchkit.operations.{module}" for module, _cls in MODULES.values()}
    port_dir = Path(__file__).resolve().parents[1] / "patchkit" / "port"
    for path in sorted(port_dir.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        named = [name for name in MODULES if "-" in name and name in text]
        assert named == [], f"{path.name} names the ops {named}"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not set(modules) & op_modules, f"{path.name}:{node.lineno} imports an op's module"
            if isinstance(node, (ast.Compare, ast.Dict, ast.Subscript)):  # an op name read to decide or look up
                values = {ast.Compare: lambda n: [n.left, *n.comparators], ast.Dict: lambda n: n.keys,
                          ast.Subscript: lambda n: [n.slice]}[type(node)](node)  # fmt: skip
                for sub in (s for value in values if value is not None for s in ast.walk(value)):
                    assert not (isinstance(sub, ast.Attribute) and sub.attr == "op_name"), (
                        f"{path.name}:{node.lineno} decides by a patch's op name"
                    )
            key = node.slice if isinstance(node, ast.Subscript) else None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                key = node.args[0] if node.args else None
            assert not (isinstance(key, ast.Constant) and key.value == "op"), f"{path.name}:{node.lineno} reads an op"
    for name, cls in registry().items():
        assert "port_traits" in vars(cls), f"{name} does not declare its port traits"
        traits = cls.port_traits
        assert not traits.follows or traits.key, f"{name}: port follows its {traits.anchor.value} by a key"
