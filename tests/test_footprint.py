"""What each commit changes (patchkit.footprint): two versions of a file compared as strings, then whole lines
of commits read from real git histories built in temp dirs."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from patchkit.bench.stats.relevance import Change, ChangeKind, Footprint
from patchkit.demo.history import Executable, HistoryBuilder, Symlink
from patchkit.footprint.code import Summary, python_changes, summarize
from patchkit.footprint.kinds import PathKind, path_kind
from patchkit.footprint.line import FootprintCache, line_footprints, path_change
from patchkit.footprint.regions import Hunk, update
from patchkit.git import RawChange, Repo
from tests.helpers import git

BODY, MODULE, DATA, BUILD, FORMAT = (
    ChangeKind.BODY,
    ChangeKind.MODULE,
    ChangeKind.DATA,
    ChangeKind.BUILD,
    ChangeKind.FORMAT,
)

V0 = '''"""A module."""
import os
import time

LIMIT = 4


def helper(x):
    return x + 1


def outer(a):
    def inner(b):
        return b * 2

    return inner(a)


class Layer:
    size = 3

    def forward(self, x, scale=1):
        """Scale the helper's answer."""
        started = time.time()
        return helper(x) * scale + started * 0

    @property
    def name(self):
        return "layer"

    @staticmethod
    def pick(items):
        return [i for i in items if i]


@triton.jit
def kernel(x_ptr):
    return x_ptr + 1
'''

EDITS = {
    "body": (V0.replace("return x + 1", "return x + 2"), {(BODY, "helper")}),
    "body grows": (V0.replace("return x + 1", "y = x\n    return y + 1"), {(BODY, "helper")}),
    "added function": (
        V0.replace("\n\ndef outer", "\n\ndef added():\n    return 0\n\n\ndef outer"),
        {(MODULE, None), (BODY, "added")},
    ),
    "removed function": (V0.replace("def helper(x):\n    return x + 1\n\n\n", ""), {(MODULE, None), (BODY, "helper")}),
    # outer calls inner: it uses the function object, so inner's body counts as outer's (outer might hand it to
    # a compiler, which would never run it as Python); inner exists only where outer ran
    "nested function": (V0.replace("return b * 2", "return b * 3"), {(BODY, "outer")}),
    "nested def line": (V0.replace("def inner(b):", "def inner(b, c=1):"), {(BODY, "outer")}),
    "method": (V0.replace("* scale +", "* scale * 2 +"), {(BODY, "Layer.forward")}),
    "docstring": (V0.replace("Scale the helper's answer.", "Scale it."), {(BODY, "Layer.forward")}),
    "comprehension": (V0.replace("if i]", "if not i]"), {(BODY, "Layer.pick")}),
    "parameter renamed": (
        V0.replace("def helper(x):\n    return x + 1", "def helper(y):\n    return y + 1"),
        {(BODY, "helper")},
    ),
    "decorator": (V0.replace("@property", "@cached"), {(MODULE, "Layer")}),
    "default value": (V0.replace("scale=1", "scale=2"), {(MODULE, "Layer")}),
    "class attribute": (V0.replace("size = 3", "size = 4"), {(MODULE, "Layer")}),
    "module constant": (V0.replace("LIMIT = 4", "LIMIT = 4.0"), {(MODULE, None)}),
    "import": (V0.replace("import os\n", "import os\nimport sys\n"), {(MODULE, None)}),
    "compiled kernel": (V0.replace("return x_ptr + 1", "return x_ptr + 2"), {(MODULE, "kernel")}),
    "comment": (V0.replace("LIMIT = 4", "LIMIT = 4  # the most\n\n# a note"), {(FORMAT, None)}),
    "syntax error": (V0.replace("def helper(x):", "def helper(x)"), {(MODULE, None)}),
    "crlf": (V0.replace("\n", "\r\n"), {(FORMAT, None)}),
}


def kinds(changes: tuple[Change, ...]) -> set[tuple[ChangeKind, str | None]]:
    return {(c.kind, c.qualname) for c in changes}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_two_versions_compared(edit: str) -> None:
    new, expected = EDITS[edit]
    found = python_changes("pkg/mod.py", V0.encode(), new.encode())
    assert {c.path for c in found} == {"pkg/mod.py"}
    if edit == "import":
        # CPython 3.11 compiles `time.time()` one way where `time` is imported at module level, another where it is
        # not: a module-level import changes the code of functions that use the name; module level covers them.
        assert (MODULE, None) in kinds(found)
        return
    assert kinds(found) == expected


def test_a_changed_body_under_a_compiling_decorator_counts_at_module_level() -> None:
    (change,) = python_changes("k.py", V0.encode(), EDITS["compiled kernel"][0].encode())
    assert change.kind is MODULE and change.qualname == "kernel" and "@triton.jit" in change.detail


def test_decorators_known_to_call_the_function_leave_its_body_its_own() -> None:
    before = "import functools\nfrom functools import lru_cache\nimport torch\n\n"
    for decorator in ("@functools.lru_cache(maxsize=1)", "@lru_cache", "@torch.no_grad()", "@staticmethod"):
        old = f"{before}class A:\n    {decorator}\n    def f(x):\n        return 1\n"
        found = python_changes("a.py", old.encode(), old.replace("return 1", "return 2").encode())
        assert kinds(found) == {(BODY, "A.f")}, decorator
    # a bare name that is not imported from the module it names is unknown
    old = "def lru_cache(f):\n    return f\n\n@lru_cache\ndef f():\n    return 1\n"
    assert kinds(python_changes("a.py", old.encode(), old.replace("return 1", "return 2").encode())) == {(MODULE, "f")}


def test_a_class_decorator_that_may_read_its_methods_charges_them_at_module_level() -> None:
    old = "@torch.jit.script\nclass A:\n    def f(self):\n        return 1\n"
    assert kinds(python_changes("a.py", old.encode(), old.replace("return 1", "return 2").encode())) == {
        (MODULE, "A.f")
    }


def test_added_and_removed_files_and_unreadable_versions_are_module_level() -> None:
    assert kinds(python_changes("a.py", None, V0.encode())) == {(MODULE, None)}
    assert kinds(python_changes("a.py", V0.encode(), None)) == {(MODULE, None)}
    assert kinds(python_changes("a.py", V0.encode(), b"\x00")) == {(MODULE, None)}
    latin = b"# -*- coding: latin-1 -*-\n" + V0.encode()
    (change,) = python_changes("a.py", latin, latin.replace(b"x + 1", b"x + 2"))
    assert change.kind is MODULE and "latin-1" in change.detail
    utf8 = b"# -*- coding: utf-8 -*-\n" + V0.encode()
    assert kinds(python_changes("a.py", utf8, utf8.replace(b"x + 1", b"x + 2"))) == {(BODY, "helper")}


def test_qualified_names_are_cpythons() -> None:
    source = (
        "class A:\n    class B:\n        def m(self):\n            def f():\n                class C:\n"
        "                    def n(self):\n                        return 1\n                return C\n"
        "            return f\n"
    )
    namespace: dict[str, object] = {}
    exec(compile(source, "a.py", "exec"), namespace)
    cls = namespace["A"].B().m()().n  # type: ignore[attr-defined]
    (change,) = python_changes("a.py", source.encode(), source.replace("return 1", "return 2").encode())
    assert cls.__code__.co_qualname == "A.B.m.<locals>.f.<locals>.C.n"
    # m returns f, so what f defines counts as m's body
    assert change.qualname == "A.B.m" and change.detail.startswith("A.B.m.<locals>.f.<locals>.C.n: body changed")
    plain = "class A:\n    class B:\n        def m(self):\n            return 1\n"
    (change,) = python_changes("a.py", plain.encode(), plain.replace("return 1", "return 2").encode())
    assert change.qualname == "A.B.m"


# -- comparing only the functions a change is in ---------------------------------------------------------------


def hunks(old: str, new: str) -> list[Hunk]:
    matcher = difflib.SequenceMatcher(None, old.split("\n"), new.split("\n"), autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def fast(old: str, new: str, summary: Summary | None = None) -> tuple[tuple[Change, ...], Summary] | None:
    before = summary or summarize(old.encode(), "pkg/mod.py")
    assert isinstance(before, Summary)
    return update("pkg/mod.py", before, (old.encode(), new.encode()), hunks(old, new))


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_compiling_only_the_changed_functions_agrees_with_compiling_the_file(edit: str) -> None:
    new, _expected = EDITS[edit]
    done = fast(V0, new)
    if done is None:  # the fast path gave up: the caller compiles the whole file
        assert edit in {"syntax error", "crlf"}
        return
    changes, _summary = done
    assert kinds(changes) == kinds(python_changes("pkg/mod.py", V0.encode(), new.encode())) or (
        (MODULE, None) in kinds(changes)
    )


@pytest.mark.parametrize(
    "edit", ["body", "body grows", "nested function", "method", "docstring", "comprehension", "compiled kernel"]
)
def test_a_body_change_compiles_only_its_function(edit: str) -> None:
    new, expected = EDITS[edit]
    done = fast(V0, new)
    assert done is not None
    changes, derived = done
    assert kinds(changes) == expected
    # the summary derived for the new version is the one compiling all of it gives
    exact = summarize(new.encode(), "pkg/mod.py")
    assert isinstance(exact, Summary)
    assert derived.exact and set(derived.units) == set(exact.units) and derived.covered == exact.covered


QUIET = """\"\"\"Module.

# a heading in the docstring
\"\"\"
import os

X = 1  # one


@register(\"\"\"
# a line of a decorator's string
\"\"\")
class A:
    y = 2

    # between methods
    def f(self):
        return os.sep

    def g(self):
        return 2
"""


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("X = 1  # one", "X = 1  # uno", {(FORMAT, None)}),
        ("    # between methods", "    # between the methods\n", {(FORMAT, None)}),
        ("# a heading in the docstring", "# another heading", {(MODULE, None)}),
        ("# a line of a decorator's string", "# another line", {(MODULE, None)}),
        ('"""Module.', '# -*- coding: latin-1 -*-\n"""Module.', {(MODULE, None)}),
        ("X = 1  # one", "X = 1 + \\\n    2", {(MODULE, None)}),
    ],
)
def test_comment_lines_outside_functions(old: str, new: str, expected: set[tuple[ChangeKind, str | None]]) -> None:
    edited = QUIET.replace(old, new)
    assert edited != QUIET
    oracle = kinds(python_changes("q.py", QUIET.encode(), edited.encode()))
    done = fast(QUIET, edited)
    got = oracle if done is None else kinds(done[0])
    assert {kind for kind, _name in got} == {kind for kind, _name in expected}
    assert {kind for kind, _name in oracle} == {kind for kind, _name in expected}


def test_a_blank_line_after_a_backslash_is_not_a_comment_change() -> None:
    old = "import os, \\\n    sys\n\n\ndef f():\n    return 1\n"
    new = old.replace("import os, \\\n", "import os, \\\n\n")
    assert kinds(python_changes("b.py", old.encode(), new.encode())) == {(MODULE, None)}  # it does not compile
    done = fast(old, new)
    assert done is None or kinds(done[0]) == {(MODULE, None)}


def test_a_summary_derived_from_the_last_version_serves_the_next() -> None:
    first = EDITS["body"][0]
    second = first.replace("* scale +", "* scale * 2 +")
    third = second.replace("LIMIT = 4", "LIMIT = 5")
    fourth = third.replace("return b * 2", "return b * 5")
    done = fast(V0, first)
    assert done is not None
    for old, new in ((first, second), (second, third), (third, fourth)):
        _changes, derived = done
        done = fast(old, new, derived)
        assert done is not None
        assert kinds(done[0]) == kinds(python_changes("pkg/mod.py", old.encode(), new.encode())) or (
            (MODULE, None) in kinds(done[0])
        )
    assert kinds(done[0]) == {(BODY, "outer")}


def test_a_change_inside_a_stale_span_needs_the_whole_file() -> None:
    added = V0.replace("LIMIT = 4\n", "LIMIT = 4\n\n\ndef late():\n    return 1\n")
    done = fast(V0, added)
    assert done is not None and not done[1].exact and done[1].stale
    assert fast(added, added.replace("return 1\n", "return 2\n", 1), done[1]) is None


# -- path kinds ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("python/pyproject.toml", PathKind.BUILD),
        ("python/pyproject_xpu.toml", PathKind.BUILD),
        ("setup.py", PathKind.BUILD),
        ("requirements-dev.txt", PathKind.BUILD),
        ("sgl-kernel/csrc/gemm/fp8.cu", PathKind.BUILD),
        ("sgl-kernel-xpu/csrc/flash_attn.dp.cpp", PathKind.BUILD),  # SYCL: C++ suffixes (SYCLomatic's .dp.cpp)
        ("sgl-kernel/include/utils.h", PathKind.BUILD),
        ("sgl-kernel/CMakeLists.txt", PathKind.BUILD),
        ("python/sglang/jit_kernel/include/sgl_kernel/utils.cuh", PathKind.BUILD),
        ("sgl-model-gateway/bindings/python/pyproject.toml", PathKind.BUILD),
        ("sgl-model-gateway/Cargo.toml", PathKind.DATA),
        ("sgl-model-gateway/src/main.rs", PathKind.DATA),
        ("docker/Dockerfile", PathKind.DATA),
        ("docker/rocm.Dockerfile", PathKind.DATA),
        ("sgl-kernel/Makefile", PathKind.DATA),
        ("python/sglang/srt/grpc/sglang_scheduler.proto", PathKind.DATA),
        ("python/sglang/srt/server_args.py", PathKind.PYTHON),
        ("python/sglang/srt/configs/E=384.json", PathKind.DATA),
        ("docs/index.mdx", PathKind.DATA),
        ("python/sglang/srt/stubs.pyi", PathKind.DATA),
        (".github/workflows/ci.yml", PathKind.DATA),
    ],
)
def test_path_kinds(path: str, kind: PathKind) -> None:
    assert path_kind(path) is kind


def test_a_submodule_and_a_symbolic_link_are_never_inert() -> None:
    zero, sha = "0" * 40, "1" * 40
    (change,) = path_change(RawChange("3rdparty/cutlass", "M", "160000", "160000", sha, "2" * 40)) or ()
    assert change.kind is BUILD and change.detail == "submodule"
    (change,) = path_change(RawChange("LICENSE", "A", "000000", "120000", zero, sha)) or ()
    assert change.kind is BUILD and change.detail == "symbolic link"


# -- lines of commits from real git histories ------------------------------------------------------------------


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list[str]]:
    b = HistoryBuilder(tmp_path_factory.mktemp("footprint") / "repo")
    b.commit(
        "base",
        "base",
        {
            "pkg/mod.py": V0,
            "pkg/other.py": "def f():\n    return 1\n",
            "pkg/crlf.py": "def f():\r\n    return 1\r\n",
            "docs/index.md": "# Docs\n",
            "pkg/config.json": "{}\n",
            "python/pyproject.toml": "[project]\nname = 'pkg'\n",
        },
    )
    for label in sorted(EDITS):
        b.commit(label, label, {"pkg/mod.py": EDITS[label][0]})
        b.commit(f"{label} undone", "undo", {"pkg/mod.py": V0})
    b.commit("rename", "rename", {"pkg/other.py": None, "pkg/renamed.py": "def f():\n    return 1\n"})
    b.commit("deletion", "deletion", {"pkg/renamed.py": None})
    b.commit("data", "data", {"pkg/config.json": '{"a": 1}\n', "docs/index.md": "# Docs!\n"})
    b.commit("build", "build", {"python/pyproject.toml": "[project]\nname = 'pkg2'\n", "csrc/k.cu": "// k\n"})
    b.commit("crlf body", "crlf", {"pkg/crlf.py": "def f():\r\n    return 2\r\n"})
    b.commit("mode", "mode", {"pkg/crlf.py": Executable("def f():\r\n    return 2\r\n")})
    b.commit("link", "link", {"pkg/link.py": Symlink("mod.py")})
    b.commit("empty", "nothing", {})
    built = b.build()
    return built.path, built.shas, built.order


def by_label(history: tuple[Path, dict[str, str], list[str]]) -> dict[str, Footprint]:
    path, shas, order = history
    with Repo.discover(path) as repo:
        line = line_footprints(repo, shas[order[0]], shas[order[-1]])
    labels = {sha: label for label, sha in shas.items()}
    assert [labels[f.commit] for f in line] == order[1:]  # oldest first, GOOD's own not in it
    return {labels[f.commit]: f for f in line}


def test_each_commit_of_the_line_as_its_blobs_say(history: tuple[Path, dict[str, str], list[str]]) -> None:
    line = by_label(history)
    for label in EDITS:
        if label == "import":
            assert (MODULE, None) in kinds(line[label].changes)
        else:
            assert kinds(line[label].changes) == EDITS[label][1], label
        assert {c.path for c in line[label].changes} == {"pkg/mod.py"}
    rename = line["rename"].changes
    assert [(c.path, c.kind, c.detail) for c in rename] == [
        ("pkg/other.py", MODULE, "file deleted (renamed to pkg/renamed.py)"),
        ("pkg/renamed.py", MODULE, "file added (renamed from pkg/other.py)"),
    ]
    assert [(c.path, c.kind, c.detail) for c in line["deletion"].changes] == [
        ("pkg/renamed.py", MODULE, "file deleted")
    ]
    assert [(c.path, c.kind) for c in line["data"].changes] == [("docs/index.md", DATA), ("pkg/config.json", DATA)]
    assert [(c.path, c.kind) for c in line["build"].changes] == [("csrc/k.cu", BUILD), ("python/pyproject.toml", BUILD)]
    assert kinds(line["crlf body"].changes) == {(BODY, "f")}
    assert [(c.kind, c.detail) for c in line["mode"].changes] == [(MODULE, "mode 100644 -> 100755")]
    assert [(c.path, c.kind) for c in line["link"].changes] == [("pkg/link.py", BUILD)]
    assert line["empty"].changes == ()


def test_a_second_reading_comes_from_the_cache(history: tuple[Path, dict[str, str], list[str]]) -> None:
    path, shas, order = history
    cache = FootprintCache()
    with Repo.discover(path) as repo:
        first = line_footprints(repo, shas[order[0]], shas[order[-1]], cache)
        compiled = cache.full_compiles
        assert compiled < len(EDITS)  # most versions were compared a function at a time
        again = line_footprints(repo, shas[order[0]], shas[order[-1]], cache)
    assert again == first and cache.full_compiles == compiled


def test_the_fast_reading_agrees_with_compiling_every_version(history: tuple[Path, dict[str, str], list[str]]) -> None:
    path, shas, order = history
    line = by_label(history)
    with Repo.discover(path) as repo:
        for label in order[1:]:
            for raw in dict(repo.line_changes(shas[order[0]], shas[order[-1]]))[shas[label]]:
                if path_kind(raw.path) is not PathKind.PYTHON or "000000" in (raw.old_mode, raw.new_mode):
                    continue
                if raw.old_mode != raw.new_mode or raw.new_mode == "120000":
                    continue
                oracle = python_changes(raw.path, repo.read_blob(raw.old_oid), repo.read_blob(raw.new_oid))
                got = tuple(c for c in line[label].changes if c.path == raw.path)
                assert kinds(got) == kinds(oracle) or (MODULE, None) in kinds(got), label


def test_a_blob_missing_from_the_repository_is_module_level(tmp_path: Path) -> None:
    b = HistoryBuilder(tmp_path / "repo")
    b.commit("base", "base", {"pkg/mod.py": V0})
    built = b.build()
    root = built.path
    (root / "pkg" / "mod.py").write_text(EDITS["body"][0])
    git(root, "commit", "-q", "-am", "loose objects")  # not packed: its blob can be taken away
    new_blob = git(root, "rev-parse", "HEAD:pkg/mod.py").strip()
    os.remove(root / ".git" / "objects" / new_blob[:2] / new_blob[2:])
    with Repo.discover(root) as repo:
        assert repo.read_blob_if_present(new_blob) is None
        (footprint,) = line_footprints(repo, built["base"], "HEAD")
    assert [(c.kind, c.detail) for c in footprint.changes] == [
        (MODULE, "blob missing from this repository (partial clone)")
    ]


USED = """import torch


class A:
    @property
    def x(self):
        return 1

    @x.setter
    def x(self, v):
        self.v = v

    def m(self):
        return 1

    alias = m


def f():
    return 1


g = torch.compile(f)


def h():
    return 1
"""


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("        return 1\n\n    @x.setter", "        return 2\n\n    @x.setter", {(BODY, "A.x")}),
        ("self.v = v", "self.v = -v", {(BODY, "A.x")}),
        ("    def m(self):\n        return 1", "    def m(self):\n        return 2", {(MODULE, "A.m")}),
        ("def f():\n    return 1", "def f():\n    return 2", {(MODULE, "f")}),
        ("def h():\n    return 1", "def h():\n    return 2", {(BODY, "h")}),
    ],
)
def test_a_function_the_code_around_it_uses_counts_where_that_code_runs(
    old: str, new: str, expected: set[tuple[ChangeKind, str | None]]
) -> None:
    edited = USED.replace(old, new)
    assert edited != USED
    assert kinds(python_changes("u.py", USED.encode(), edited.encode())) == expected
    done = fast(USED, edited)
    assert done is not None and kinds(done[0]) == expected


def test_a_function_a_module_level_change_names_is_not_known_any_more() -> None:
    compiled = USED.replace("g = torch.compile(f)\n", "g = torch.compile(f)\nk = torch.compile(h)\n")
    done = fast(USED, compiled)
    assert done is not None and kinds(done[0]) == {(MODULE, None)}
    edited = compiled.replace("def h():\n    return 1", "def h():\n    return 2")
    assert kinds(python_changes("u.py", compiled.encode(), edited.encode())) == {(MODULE, "h")}
    later = fast(compiled, edited, done[1])
    assert later is None or kinds(later[0]) == {(MODULE, "h")}


def test_a_use_added_just_after_another_function_is_seen() -> None:
    # the new module-level line comes right after b, so it is compiled with b's region; it names a
    first = "import torch\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 1\n"
    second = first + "\n\nc = torch.compile(a)\n"
    third = second.replace("def a():\n    return 1", "def a():\n    return 2")
    done = fast(first, second)
    assert done is not None and (MODULE, None) in kinds(done[0])
    assert kinds(python_changes("u.py", second.encode(), third.encode())) == {(MODULE, "a")}
    later = fast(second, third, done[1])
    assert later is None or kinds(later[0]) == {(MODULE, "a")}


def test_a_function_renamed_to_a_name_the_module_uses_is_not_known_any_more() -> None:
    padding = "".join(f"\n\ndef pad{i}():\n    return {i}\n" for i in range(10))
    first = "import torch\n\n\ndef _old():\n    return -1\n" + padding + "\n\ndef run():\n    return 0\n" + padding
    first += "\n\nc = torch.compile(run)\n"
    second = first.replace("\n\ndef run():\n    return 0\n", "").replace("def _old():", "def run():")
    third = second.replace("return -1", "return -2")
    done = fast(first, second)
    assert done is not None and (MODULE, None) in kinds(done[0])
    assert kinds(python_changes("u.py", second.encode(), third.encode())) == {(MODULE, "run")}
    later = fast(second, third, done[1])
    assert later is None or kinds(later[0]) == {(MODULE, "run")}


def test_a_function_whose_body_becomes_module_code_uses_what_it_called() -> None:
    padding = "".join(f"\n\ndef pad{i}():\n    return {i}\n" for i in range(10))
    first = (
        "def run():\n    return -1\n"
        + padding
        + "\n\ndef main():\n    run()\n\n\nif __name__ == '__main__':\n    main()\n"
    )
    # `def main():` becomes `if __name__ == "__main__":`: main's body, which calls run, is module code now
    second = first.replace("def main():", "if __name__ == '__main__':").replace(
        "\n\n\nif __name__ == '__main__':\n    main()\n", "\n"
    )
    third = second.replace("return -1", "return -2")
    assert kinds(python_changes("u.py", second.encode(), third.encode())) == {(MODULE, "run")}
    done = fast(first, second)
    assert done is not None
    later = fast(second, third, done[1])
    assert later is None or kinds(later[0]) == {(MODULE, "run")}
