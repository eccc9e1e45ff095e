"""What makes a cold range check cheap beyond the parse, held to being invisible:

- ``CodeState.remembered`` shares values across file versions by the exact
  source text a statement was parsed from, but never for a tree a simulated
  APPLY has edited, nor for a def or class (decorators lie outside its lines);
- ``CodeState.def_canon`` shares a def's canonical form by its lines from the
  first decorator (add-methods, add-definitions, replace-function compare it);
- ``evaluate_file`` pauses the cycle collector while it parses and analyses,
  and always restores it.
"""

from __future__ import annotations

import ast
import gc

import pytest
from histories import MODEL_V1, write_manifest

from patchkit.engine.evaluate import evaluate_file, gc_paused
from patchkit.manifest import load_manifest
from patchkit.operations import code, digests
from patchkit.operations.code import CodeState
from patchkit.operations.digests import canon
from patchkit.sources.base import FileRead, FileState


@pytest.fixture(autouse=True)
def empty_memo():
    code.SPAN_MEMO.clear()
    yield
    code.SPAN_MEMO.clear()


def counting(calls: list[ast.AST]):
    def compute(node: ast.AST) -> str:
        calls.append(node)
        return canon(node)

    return compute


def statement(state: CodeState, text: str) -> ast.stmt:
    return next(n for n in ast.walk(state.tree) if isinstance(n, ast.stmt) and ast.unparse(n) == text)


def test_the_same_statement_text_in_another_version_is_not_recomputed() -> None:
    calls: list[ast.AST] = []
    first = CodeState.parse("m.py", "def f():\n    x = g(1)\n")
    second = CodeState.parse("m.py", "import os\n\n\ndef f():\n    y = 0\n    x = g(1)\n")
    a = first.remembered("canon", statement(first, "x = g(1)"), counting(calls))
    b = second.remembered("canon", statement(second, "x = g(1)"), counting(calls))
    assert a == b and len(calls) == 1
    # Different text (even if only the spacing): its own key.
    third = CodeState.parse("m.py", "def f():\n    x = g( 1 )\n")
    assert third.remembered("canon", statement(third, "x = g(1)"), counting(calls)) == a
    assert len(calls) == 2


def test_statements_sharing_a_line_are_told_apart_by_column() -> None:
    state = CodeState.parse("m.py", "a = 1; b = 2\n")
    a = state.remembered("canon", statement(state, "a = 1"), canon)
    b = state.remembered("canon", statement(state, "b = 2"), canon)
    assert a != b
    other = CodeState.parse("m.py", "a = 1; b = 2\n")
    assert other.remembered("canon", statement(other, "b = 2"), lambda n: "wrong") == b


def test_an_edited_tree_never_reads_or_feeds_the_shared_memo() -> None:
    calls: list[ast.AST] = []
    source = "def f():\n    x = g(1)\n"
    first = CodeState.parse("m.py", source)
    first.changed()  # as after a simulated APPLY
    node = statement(first, "x = g(1)")
    node.value.args[0].value = 2  # the simulation may edit any node: its text no longer says what it is
    assert first.remembered("canon", node, counting(calls)) == canon(node)
    second = CodeState.parse("m.py", source)
    fresh = second.remembered("canon", statement(second, "x = g(1)"), counting(calls))
    assert len(calls) == 2 and fresh != canon(node)


def test_a_def_is_not_shared_its_decorators_are_outside_its_lines() -> None:
    calls: list[ast.AST] = []
    one = CodeState.parse("m.py", "@cache\ndef f(): pass\n")
    two = CodeState.parse("m.py", "@other\ndef f(): pass\n")
    assert one.remembered("text", one.tree.body[0], lambda n: counting(calls)(n) and ast.unparse(n)) != (
        two.remembered("text", two.tree.body[0], lambda n: counting(calls)(n) and ast.unparse(n))
    )
    assert len(calls) == 2


def test_evaluate_file_pauses_and_restores_the_collector(tmp_path) -> None:
    manifest = load_manifest(write_manifest(tmp_path / "kit"))
    patches = [p for p in manifest.patches if p.file == "pkg/model.py"]
    seen: list[bool] = []
    original = CodeState.parse.__func__  # type: ignore[attr-defined]

    def parse(cls, path, text):
        seen.append(gc.isenabled())
        return original(cls, path, text)

    CodeState.parse = classmethod(parse)  # type: ignore[method-assign]
    try:
        read = FileRead("pkg/model.py", FileState.OK, MODEL_V1.encode(), "0" * 40)
        evaluate_file(read, patches, {})
        assert seen == [False] and gc.isenabled()
    finally:
        CodeState.parse = classmethod(original)  # type: ignore[method-assign]
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a collector the caller had paused stays paused
    finally:
        gc.enable()


@pytest.mark.slow
def test_close_matches_are_difflibs_own() -> None:
    """The insert op scores each candidate statement once per run; the suggestions must be exactly
    ``difflib.get_close_matches(wanted, texts, n=2, cutoff=0.5)``, ties and order included."""
    import difflib
    import random

    from patchkit.operations.wording import close_matches

    rng = random.Random(12)
    words = ["self.model", " = get_model(", "x", "verify(", "torch.cuda.synchronize()", "spec_info", "batch", ")"]

    def text() -> str:
        return "".join(rng.choice(words) for _ in range(rng.randint(1, 5)))

    for _ in range(2000):
        wanted = text()
        texts = tuple(dict.fromkeys(text() for _ in range(rng.randint(0, 12))))
        assert close_matches(wanted, texts) == difflib.get_close_matches(wanted, list(texts), n=2, cutoff=0.5)
    # A tie at the second place, where the later candidate's bound equals the score to beat:
    # "abdcx" (ratio 2/3, quick_ratio 8/9) is scored first, and "cd" (2/3, 2/3) wins the tie.
    assert close_matches("abcd", ("abcd", "abdcx", "cd")) == ["abcd", "cd"]
    # Many near ties (one word changed), where stopping early must still keep difflib's pick.
    for _ in range(500):
        base = [rng.choice(words) for _ in range(4)]
        wanted = "".join(base)
        texts = tuple(
            dict.fromkeys("".join(w if rng.random() < 0.7 else rng.choice(words) for w in base) for _ in range(20))
        )
        assert close_matches(wanted, texts) == difflib.get_close_matches(wanted, list(texts), n=2, cutoff=0.5)


def test_after_a_splice_only_simple_statements_are_shared() -> None:
    """A simulated APPLY that splices statements in may have grown any block, never edited a
    simple statement: those keep being shared across versions, blocks are computed afresh."""
    source = "def f():\n    x = g(1)\n    if x:\n        y = 2\n"
    calls: list[ast.AST] = []
    first = CodeState.parse("m.py", source)
    first.remembered("canon", statement(first, "x = g(1)"), counting(calls))
    block = next(n for n in ast.walk(first.tree) if isinstance(n, ast.If))
    first.remembered("canon", block, counting(calls))
    assert len(calls) == 2
    second = CodeState.parse("m.py", source)
    second.changed(in_place=False)
    second.remembered("canon", statement(second, "x = g(1)"), counting(calls))
    assert len(calls) == 2  # shared
    second.remembered("canon", next(n for n in ast.walk(second.tree) if isinstance(n, ast.If)), counting(calls))
    assert len(calls) == 3  # a block may have received statements: not shared


WORKER_TEXT = """class Worker:
    def verify(self, batch):
        x = self.prepare(batch)
        if x:
            y = self.forward(batch, 1)
        return self.finish(y)
"""


@pytest.mark.parametrize(
    "anchor",
    ["y = self.forward(batch)", "zzz = qqq"],  # something close, then nothing close
)
def test_a_missing_anchor_is_explained_once_per_text_of_the_function(tmp_path, anchor: str) -> None:
    """The second version has the same function lower down: its message is what a fresh
    analysis says (lines moved with the def), and no statement was compared again."""
    from helpers import Kit, src

    from patchkit.operations import insert, wording

    kit = Kit(tmp_path)
    path = kit.write(
        [
            {"id": "timing", "op": "insert", "file": "pkg/worker.py", "function": "Worker.verify", "anchor": anchor,
             "position": "before", "source": src("t.py"), "body_of": "start_timer"},
        ],
        {"t.py": "def start_timer(self):\n    self.timer.start()\n"},
    )  # fmt: skip
    patches = load_manifest(path).patches

    def message(text: str) -> str:
        read = FileRead("pkg/worker.py", FileState.OK, text.encode(), "0" * 40)
        (result,) = evaluate_file(read, patches, {}).results
        assert result.reason is not None and result.reason.value == "ANCHOR_NOT_FOUND"
        return result.message

    insert.CLOSEST.clear()
    insert.NO_MATCH.clear()
    first = message(WORKER_TEXT)
    lower = "import os\nimport sys\n\n\n" + WORKER_TEXT
    compared = wording.close_ratio.cache_info().misses
    remembered = message(lower)
    assert wording.close_ratio.cache_info().misses == compared  # nothing compared again
    assert len(insert.CLOSEST) == 1 and len(insert.NO_MATCH) == 1
    insert.CLOSEST.clear()
    insert.NO_MATCH.clear()
    code.SPAN_MEMO.clear()
    assert remembered == message(lower)  # what a fresh analysis says
    import re

    numbers = re.compile(r"(?<=line )\d+|(?<=lines )\d+|(?<=-)\d+(?=\))")
    assert remembered != first and numbers.sub(lambda m: str(int(m[0]) - 4), remembered) == first


PAYLOAD_HOOK = "class Hooks:\n    @staticmethod\n    def hook(x):\n        return x + 1\n"


def hook_results(tmp_path, versions: list[str]) -> list[tuple[str, str | None, str]]:
    """add-methods of ``hook`` into Model, evaluated on each version in turn (one process, one memo)."""
    from helpers import Kit, src

    kit = Kit(tmp_path)
    path = kit.write(
        [{"id": "hook", "op": "add-methods", "file": "pkg/model.py", "class": "Model", "source": src("h.py"),
          "payload_class": "Hooks"}],
        {"h.py": PAYLOAD_HOOK},
    )  # fmt: skip
    (patch,) = load_manifest(path).patches
    out = []
    for text in versions:
        read = FileRead("pkg/model.py", FileState.OK, text.encode(), "0" * 40)
        (result,) = evaluate_file(read, [patch], {}).results
        out.append((result.status.value, result.reason.value if result.reason else None, result.message))
    return out


def test_an_existing_def_is_canonicalised_once_per_text_and_decorators_count(tmp_path, monkeypatch) -> None:
    """``CodeState.def_canon`` keys a def's canon() by its lines from the first decorator: the same
    method lower down in another version is not walked again; the same lines under another
    decorator are, and give their own verdict (what a fresh analysis gives)."""
    same = "class Model:\n    @staticmethod\n    def hook(x):\n        return x + 1\n"
    moved = "import os\n\n\n" + same
    other = same.replace("@staticmethod", "@classmethod")
    calls: list[ast.AST] = []
    real = digests.canon

    def counted(node):
        calls.append(node)
        return real(node)

    monkeypatch.setattr(code, "canon", counted)
    monkeypatch.setattr(digests, "canon", counted)
    results = hook_results(tmp_path / "a", [same, moved, other])
    walked = [n for n in calls if isinstance(n, ast.FunctionDef) and n.name == "hook"]
    # The payload's def once, the upstream def once per text: same (moved reuses it), other.
    assert len(walked) == 3
    assert [r[:2] for r in results] == [("SKIP", "ALREADY_APPLIED"), ("SKIP", "ALREADY_APPLIED"), ("FAIL", "CONFLICT")]
    code.SPAN_MEMO.clear()
    digests.PAYLOAD_CANON.clear()
    assert hook_results(tmp_path / "b", [other]) == results[2:]


def test_a_memo_keeps_at_most_its_bound_and_the_newer_half_when_full() -> None:
    from patchkit.operations.memo import Memo

    memo: Memo[int, str] = Memo("test", 10)
    for key in range(10):
        memo[key] = str(key)
    assert memo.get(0) == "0"  # a read keeps no order: 0 is still the oldest
    memo[3] = "three"  # replacing a value is not adding: nothing goes
    assert len(memo) == 10
    memo[10] = "10"
    assert sorted(memo) == [5, 6, 7, 8, 9, 10] and memo[10] == "10"
    for key in range(11, 1000):
        memo[key] = str(key)
        assert len(memo) <= 10
    memo.clear()
    assert not memo


def test_every_process_wide_analysis_memo_is_bounded() -> None:
    """A payload's canonical forms were kept for every payload node a process ever compared (a
    long pytest session with the guard's plugin loads many manifests): now at most the bound."""
    from patchkit.operations import insert

    nodes = [ast.parse(f"x = {i}").body[0] for i in range(digests.PAYLOAD_CANON.bound + 10)]
    for node in nodes:
        digests.payload_canon(node)
    assert len(digests.PAYLOAD_CANON) <= digests.PAYLOAD_CANON.bound
    assert digests.payload_canon(nodes[-1]) == canon(nodes[-1]) and digests.payload_canon(nodes[0]) == canon(nodes[0])
    for memo in (code.SPAN_MEMO, digests.PAYLOAD_CANON, insert.NO_MATCH, insert.CLOSEST):
        assert 2 <= memo.bound <= 200_000
    digests.PAYLOAD_CANON.clear()
