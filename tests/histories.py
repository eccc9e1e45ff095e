"""Deterministic upstream histories for the commit-aware tests (one commit per step)."""

from __future__ import annotations

from pathlib import Path

from patchkit.demo.history import History, HistoryBuilder

MODEL_V1 = '''"""A model."""
import os
from typing import List


class Model:
    def __init__(self, language_model):
        self.language_model = language_model

    def forward(self, x):
        return self.language_model(x)
'''

MODEL_V2 = MODEL_V1.replace("return self.language_model(x)", "y = self.language_model(x)\n        return y")

MODEL_BROKEN = MODEL_V2.replace("def forward(self, x):", "def forward(self, x)")

MODEL_RENAMED = MODEL_V2.replace("class Model:", "class LanguageModelWrapper:")

MODEL_UPSTREAMED = (
    MODEL_V2
    + """
    def hook(self):
        # upstream's own version
        return self.language_model.hook()
"""
)

PAYLOAD = """from typing import Optional


class Model:
    def hook(self) -> Optional[int]:
        if self.language_model is None:
            raise AttributeError("Model.hook: language_model is missing")
        return self.language_model.hook()
"""

MANIFEST = """schema = 1
name = "hooks"

[[patch]]
id = "typing"
op = "ensure-import"
file = "pkg/model.py"
import = "from typing import Optional"

[[patch]]
id = "hook"
op = "add-methods"
file = "pkg/model.py"
class = "Model"
source = "payload.py"
on_conflict = "keep-upstream"
"""


def write_manifest(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "payload.py").write_text(PAYLOAD)
    path = folder / "hooks.toml"
    path.write_text(MANIFEST)
    return path


def edit_payload(manifest: Path) -> None:
    """A new version of the hook's payload (the manifest written by ``write_manifest``): a tree patched
    with the old one is then OUT OF DATE."""
    payload = manifest.parent / "payload.py"
    text = payload.read_text()
    assert text.count('"Model.hook: language_model is missing"') == 1
    payload.write_text(text.replace('"Model.hook: language_model is missing"', '"Model.hook: no language model"'))


def build_model_history(path: Path) -> History:
    """main: add -> churn -> edit -> syntax error -> fix -> churn -> merge(side) -> re-add upstreamed.

    side (from `fix`): rename the class, then move the file.
    """
    b = HistoryBuilder(path)
    b.commit("base", "Initial layout", {"README.md": "upstream\n", "pkg/other.py": "X = 0\n"})
    b.commit("add", "Add the model", {"pkg/model.py": MODEL_V1})
    b.commit("churn1", "Tweak other", {"pkg/other.py": "X = 1\n"})
    b.commit("edit", "Refactor forward", {"pkg/model.py": MODEL_V2})
    b.commit("broken", "WIP: broken forward", {"pkg/model.py": MODEL_BROKEN})
    b.commit("fix", "Fix the syntax error", {"pkg/model.py": MODEL_V2})
    b.start_branch("side", "fix")
    b.commit("rename", "Rename the model class", {"pkg/model.py": MODEL_RENAMED}, branch="side")
    b.commit(
        "move",
        "Move the model into pkg/models",
        {"pkg/model.py": None, "pkg/models/model.py": MODEL_RENAMED},
        branch="side",
    )
    b.commit("churn2", "Tweak other again", {"pkg/other.py": "X = 2\n"})
    b.commit("merge", "Merge branch 'side'", {}, merge="move")
    b.commit("upstreamed", "Bring the model back with a native hook", {"pkg/model.py": MODEL_UPSTREAMED})
    return b.build()
