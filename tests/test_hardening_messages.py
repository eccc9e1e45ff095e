"""Not-found messages always show what the file has, and where an anchor differs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from helpers import TARGET, d, make_repo, result_of, run_script, scenario, src

from patchkit.demo.sglang import KIMI_K25, file_text

ROOT = Path(__file__).resolve().parents[1]


def kimi_renamed_repo(tmp_path: Path) -> Path:
    text = file_text(KIMI_K25).replace("KimiK25ForConditionalGeneration", "KimiK25ForCausalLM")
    assert "KimiK25ForConditionalGeneration" not in text
    return make_repo(tmp_path / "sglang", {KIMI_K25: text}, message="kimi: rename the model class")


def test_kimi_manifest_on_a_class_renamed_to_kimik25forcausallm(tmp_path):
    repo = kimi_renamed_repo(tmp_path)
    r = run_script("apply", "-m", "kimi-k25-eagle3", "--repo", repo, "--json", cwd=ROOT)
    assert r.code == 1
    hooks = result_of(r.json, "eagle3-hooks")
    assert (hooks["status"], hooks["reason"]) == ("FAIL", "CLASS_NOT_FOUND")
    message = hooks["message"]
    assert message.startswith(f"class KimiK25ForConditionalGeneration is not defined in {KIMI_K25}; ")
    # the renamed class is named first, with its line, then a handful more and the count of the rest
    listed = re.search(r"most alike first: (.*)$", message)
    assert listed, message
    names = re.findall(r"(\w+) \(line (\d+)\)", listed.group(1))
    assert names[0][0] == "KimiK25ForCausalLM"
    line = int(names[0][1])
    assert (repo / KIMI_K25).read_text().splitlines()[line - 1].startswith("class KimiK25ForCausalLM(")
    assert len(names) == 5
    total = int(re.search(r"; the (\d+) classes in this file, most alike first: ", message).group(1))
    assert message.endswith(f" and {total - 5} more")
    # the hint promises a list: the list is there
    assert "the message lists the classes this file defines" in hooks["hint"]
    human = run_script("apply", "-m", "kimi-k25-eagle3", "--repo", repo, cwd=ROOT)
    assert "KimiK25ForCausalLM (line " in human.out


def test_no_hint_promises_a_list_the_message_lacks():
    # Every bundled hint that says "the message lists ..." belongs to a reason whose message always lists.
    listing = {"CLASS_NOT_FOUND", "FUNCTION_NOT_FOUND", "TARGET_NOT_FOUND", "ANCHOR_NOT_FOUND", "ANCHOR_AMBIGUOUS"}
    for path in (ROOT / "manifests").glob("*.toml"):
        data = tomllib.loads(path.read_text())
        for patch in data.get("patch", []):
            for reason, hint in (patch.get("hints") or {}).items():
                if "message lists" in hint:
                    assert reason in listing, (path.name, reason)
                    assert "closest" not in hint, (path.name, reason, "a renamed name is often not close")


MANY = d("""
    import os


    def alpha():
        return 1


    def beta():
        return 2


    def gamma():
        return 3


    def delta():
        return 4


    def epsilon():
        return 5


    def zeta():
        return 6


    def eta():
        return 7


    class Omega:
        pass


    REGISTRY = [alpha]
    OTHER = 2
""")


def test_function_not_found_with_nothing_close_lists_a_handful_and_how_many_more(tmp_path):
    sc = scenario(
        tmp_path,
        {TARGET: MANY},
        [
            {
                "id": "rf",
                "op": "replace-function",
                "file": TARGET,
                "function": "completely_different",
                "source": src("r.py"),
                "expect": "sha256:" + "0" * 64,
            }
        ],
        {"r.py": "def completely_different():\n    return 0\n"},
    )
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    res = result_of(r.json, "rf")
    assert res["reason"] == "FUNCTION_NOT_FOUND"
    assert "; the 7 functions in this file, most alike first: " in res["message"]
    assert res["message"].endswith(" and 2 more")
    assert len(re.findall(r"\w+ \(line \d+\)", res["message"])) == 5


def test_target_not_found_with_nothing_close_lists_the_module_names(tmp_path):
    sc = scenario(
        tmp_path,
        {TARGET: MANY},
        [{"id": "reg", "op": "ensure-list-item", "file": TARGET, "target": "EntryClass", "item": "Omega"}],
    )
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    res = result_of(r.json, "reg")
    assert res["reason"] == "TARGET_NOT_FOUND"
    # os, 7 functions, Omega, REGISTRY, OTHER: 11 names
    assert "; the 11 names in this file, most alike first: " in res["message"], res
    assert res["message"].endswith(" and 6 more")


def test_class_not_found_in_a_file_without_classes_says_so(tmp_path):
    sc = scenario(
        tmp_path,
        {TARGET: "def f():\n    return 1\n"},
        [{"id": "m", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("m.py")}],
        {"m.py": "class Model:\n    def extra(self):\n        return 1\n"},
    )
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    assert (
        result_of(r.json, "m")["message"]
        == f"class Model is not defined in {TARGET}; there are no classes in this file"
    )


# -- 15. ANCHOR_NOT_FOUND shows both in full, and where they differ ------------------------------

# One line as long as SGLang's: over 120 columns, where the old message cut both texts.
CALL = "logits_output, next_token_ids, can_run_cuda_graph = self.target_worker.forward_batch_generation"
WORKER = (
    "class Worker:\n"
    "    def verify(self, batch, prepared):\n"
    f"        {CALL}(prepared, is_verify=True)\n"
    "        return logits_output\n"
)

ANCHOR = f"{CALL}(prepared, is_verify=True, extra=1)"


def _insert(anchor: str) -> list[dict]:
    return [
        {
            "id": "t",
            "op": "insert",
            "file": TARGET,
            "function": "Worker.verify",
            "anchor": anchor,
            "position": "before",
            "source": src("t.py"),
            "body_of": "start",
        }
    ]


def test_anchor_not_found_shows_anchor_and_closest_statement_in_full_and_the_first_difference(tmp_path):
    sc = scenario(tmp_path, {TARGET: WORKER}, _insert(ANCHOR), {"t.py": "def start():\n    timer.start()\n"})
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    res = result_of(r.json, "t")
    assert res["reason"] == "ANCHOR_NOT_FOUND"
    message = res["message"]
    found = ANCHOR.replace(", extra=1", "")
    assert f"matches the anchor `{ANCHOR}`" in message
    assert f"closest: line 3: `{found}`" in message
    column = len(found) - 1  # 0-based index of the ")" that the anchor has as ","
    assert f"they first differ at character {column + 1}: " in message
    assert message.endswith("the anchor has `…_verify=True, extra=1)`, the statement has `…_verify=True)`)"), message


def test_anchor_not_found_with_nothing_close_lists_statements(tmp_path):
    sc = scenario(tmp_path, {TARGET: WORKER}, _insert("zzz = qqq()"), {"t.py": "def start():\n    timer.start()\n"})
    r = run_script("apply", "-m", sc.kit.manifest, "--repo", sc.repo, "--json")
    res = result_of(r.json, "t")
    assert res["reason"] == "ANCHOR_NOT_FOUND"
    assert "nothing close among its 2 statements, most alike first: line " in res["message"], res["message"]
    assert "line 4: `return logits_output`" in res["message"]
