"""Every manifest error: exit 2, one stderr line naming the file, line and key path; nothing touched.

Contract (docs/manifest.md): "Every error is one line naming the file, the
line where it can be found, and the key path ... A bad manifest exits with
code 2 and touches nothing."  Key paths count [[patch]] tables and list items
from 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import TARGET, Kit, make_repo, run_cli, run_script, src, tree_state

TARGET_TEXT = "import os\n\n\nclass Model:\n    def forward(self, x):\n        return x\n\n\nEntryClass = [Model]\n"

PAYLOAD = "class Model:\n    def get_embed(self):\n        return self.embed\n\n\ndef start():\n    x = 1\n"

DISPLAY = "manifests/test.toml"
ERROR_PREFIX = "patchkit: error: "


def good(**over) -> dict:
    base = {"id": "hooks", "op": "add-methods", "file": TARGET, "class": "Model", "source": src("p.py")}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def imp(**over) -> dict:
    base = {"id": "imp", "op": "ensure-import", "file": TARGET, "import": "import sys"}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def ins(**over) -> dict:
    base = {
        "id": "ins",
        "op": "insert",
        "file": TARGET,
        "function": "Model.forward",
        "anchor": "return x",
        "position": "before",
        "source": src("p.py"),
        "body_of": "start",
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def rf(**over) -> dict:
    base = {
        "id": "rf",
        "op": "replace-function",
        "file": TARGET,
        "function": "Model.forward",
        "source": src("rf.py"),
        "expect": "sha256:" + "a" * 64,
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def defs(**over) -> dict:
    base = {"id": "defs", "op": "add-definitions", "file": TARGET, "source": src("p.py")}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


RF_PAYLOAD = "class Model:\n    def forward(self, x):\n        return x + 1\n"


@dataclass
class Case:
    name: str
    key_path: str | None  # None: no key path (a TOML syntax error)
    line: int | None  # the line the error names, when it names one
    patches: list[dict] | None = None
    text: str | None = None  # raw manifest text instead of patches
    payloads: dict = field(default_factory=dict)
    message: tuple[str, ...] = ()  # substrings the line must contain
    top: dict = field(default_factory=dict)  # manifest_text() keywords


def header(extra: str = "") -> str:
    return 'schema = 1\nname = "test"\n' + extra


CASES = [
    Case("bad-toml", None, 5, text=header('\n[[patch]]\nid = "x\n'), message=("invalid TOML",)),
    Case(
        "bad-toml-dup-key",
        None,
        7,
        text=header('\n[[patch]]\nid = "a"\nop = "ensure-import"\nid = "b"\n'),
        message=("invalid TOML",),
    ),
    Case(
        "missing-schema",
        "schema",
        None,
        text='name = "test"\n\n[[patch]]\nid = "a"\nop = "ensure-import"\nfile = "pkg/mod.py"\nimport = "import os"\n',
        message=("missing required key 'schema'; add `schema = 1` at the top of the file",),
    ),
    Case(
        "name-under-a-table",
        "name",
        4,
        text='schema = 1\n\n[manifest]\nname = "test"\n\n[[patch]]\nid = "a"\nop = "ensure-import"\n'
        'file = "pkg/mod.py"\nimport = "import os"\n',
        message=("missing required key 'name'; 'name' is under [manifest]: top-level keys go at the top",),
    ),
    Case(
        "missing-name",
        "name",
        None,
        text='schema = 1\n\n[[patch]]\nid = "a"\nop = "ensure-import"\nfile = "pkg/mod.py"\nimport = "import os"\n',
        message=("missing required key",),
    ),
    Case(
        "missing-patch",
        "patch",
        None,
        text=header(),
        message=("missing required key 'patch'; add at least one [[patch]]",),
    ),
    Case("empty-patch-list", "patch", 3, text=header("patch = []\n"), message=("empty",)),
    Case("wrong-schema", "schema", 1, patches=[imp()], top={"schema": 2}, message=("schema 1", "2")),
    Case("schema-as-string", "schema", 1, patches=[imp()], top={"schema": "1"}),
    Case(
        "bad-name",
        "name",
        2,
        text=header().replace('"test"', '"Bad_Name"')
        + '\n[[patch]]\nid = "a"\nop = "ensure-import"\nfile = "pkg/mod.py"\nimport = "import os"\n',
        message=("Bad_Name",),
    ),
    Case(
        "name-not-string",
        "name",
        2,
        text=header().replace('"test"', "7")
        + '\n[[patch]]\nid = "a"\nop = "ensure-import"\nfile = "pkg/mod.py"\nimport = "import os"\n',
        message=("must be a string",),
    ),
    Case(
        "unknown-top-key",
        "sumary",
        3,
        text=header(
            'sumary = "x"\n\n[[patch]]\nid = "a"\nop = "ensure-import"\nfile = "pkg/mod.py"\nimport = "import os"\n'
        ),
        message=("unknown key", "did you mean 'summary'?"),
    ),
    Case(
        "unknown-op",
        "patch[1].op",
        7,
        patches=[good(op="add-method")],
        message=("unknown op 'add-method'", "did you mean 'add-methods'?"),
    ),
    Case(
        "missing-op",
        "patch[1].op",
        5,
        patches=[{"id": "x", "file": TARGET, "import": "import os"}],
        message=("missing required key",),
    ),
    Case(
        "missing-id",
        "patch[2].id",
        11,
        patches=[imp(), {"op": "ensure-import", "file": TARGET, "import": "import os"}],
        message=("missing required key",),
    ),
    Case("missing-file", "patch[1].file", 5, patches=[imp(file=None)], message=("missing required key",)),
    Case(
        "missing-op-key",
        "patch[2].class",
        11,
        patches=[imp(), good(**{"class": None})],
        message=("missing required key 'class' for op 'add-methods'",),
    ),
    Case(
        "missing-insert-key",
        "patch[1].body_of",
        5,
        patches=[ins(body_of=None)],
        message=("missing required key 'body_of' for op 'insert'",),
    ),
    Case(
        "missing-expect",
        "patch[1].expect",
        5,
        patches=[rf(expect=None)],
        payloads={"rf.py": RF_PAYLOAD},
        message=("missing required key 'expect' for op 'replace-function'",),
    ),
    Case(
        "unknown-key",
        "patch[1].metods",
        11,
        patches=[good(metods=["get_embed"])],
        message=("unknown key", "did you mean 'methods'?"),
    ),
    Case("key-of-other-op", "patch[1].anchor", 10, patches=[imp(anchor="x = 1")], message=("unknown key",)),
    Case(
        "required-not-bool",
        "patch[1].required",
        11,
        patches=[good(required="yes")],
        message=("must be true or false", "a string"),
    ),
    Case("methods-not-list", "patch[1].methods", 11, patches=[good(methods="get_embed")], message=("must be a list",)),
    Case(
        "requires-item-not-string",
        "patch[1].requires[1]",
        11,
        patches=[good(requires=[3])],
        message=("must be a string",),
    ),
    Case("bad-id-pattern", "patch[1].id", 6, patches=[good(id="Bad ID")], message=("'Bad ID'",)),
    Case(
        "duplicate-id",
        "patch[2].id",
        13,
        patches=[good(), imp(id="hooks")],
        message=("duplicate id 'hooks'", "patch[1]"),
    ),
    Case("file-absolute", "patch[1].file", 8, patches=[good(file="/etc/mod.py")], message=("'/etc/mod.py'",)),
    Case("file-dotdot", "patch[1].file", 8, patches=[good(file="pkg/../../mod.py")]),
    Case("file-not-py", "patch[1].file", 8, patches=[good(file="pkg/mod.txt")]),
    Case("file-backslash", "patch[1].file", 8, patches=[good(file="pkg\\mod.py")]),
    Case(
        "missing-payload",
        "patch[1].source",
        10,
        patches=[good(source=src("nope.py"))],
        message=("nope.py", "does not exist"),
    ),
    Case(
        "inline-payload",
        "patch[1].source",
        10,
        patches=[good(source="def get_embed(self):\n    return 1\n")],
        message=("source holds code with line breaks", "'def get_embed(self):'"),
    ),
    Case(
        "payload-without-class",
        "patch[1].class",
        9,
        patches=[good(**{"class": "Other"})],
        message=("no class 'Other'",),
    ),
    Case(
        "payload-without-payload-class",
        "patch[1].payload_class",
        11,
        patches=[good(payload_class="Other")],
        message=("no class 'Other'",),
    ),
    Case(
        "payload-without-method",
        "patch[1].methods[2]",
        11,
        patches=[good(methods=["get_embed", "set_embed"])],
        message=("no method 'set_embed'",),
    ),
    Case(
        "payload-without-function",
        "patch[1].function",
        9,
        patches=[rf(function="Model.backward")],
        payloads={"rf.py": RF_PAYLOAD},
        message=("no function",),
    ),
    Case(
        "payload-without-body-of",
        "patch[1].body_of",
        13,
        patches=[ins(body_of="stop")],
        message=("no function 'stop'",),
    ),
    Case("payload-without-name", "patch[1].names[2]", 10, patches=[defs(names=["start", "stop"])], message=("'stop'",)),
    Case(
        "payload-syntax-error",
        "patch[1].source",
        10,
        patches=[good()],
        payloads={"p.py": "class Model(:\n"},
        message=("not valid Python", "line 1"),
    ),
    Case(
        "bad-expect",
        "patch[1].expect",
        11,
        patches=[rf(expect="sha256:abc")],
        payloads={"rf.py": RF_PAYLOAD},
        message=("sha256:",),
    ),
    Case(
        "bad-expect-in-list",
        "patch[1].expect[2]",
        11,
        patches=[rf(expect=["sha256:" + "b" * 64, "md5:00"])],
        payloads={"rf.py": RF_PAYLOAD},
    ),
    Case(
        "requires-unknown",
        "patch[2].requires[1]",
        17,
        patches=[good(), imp(requires=["hook"])],
        message=("no patch or group has id 'hook'", "did you mean 'hooks'?"),
    ),
    Case(
        "requires-self",
        "patch[1].requires[1]",
        11,
        patches=[good(requires=["hooks"])],
        message=("cannot require itself",),
    ),
    Case(
        "position-and-before",
        "patch[1].before",
        11,
        patches=[defs(position="end", before="EntryClass")],
        message=("position", "before"),
    ),
    Case(
        "bad-position", "patch[1].position", 11, patches=[ins(position="around")], message=("'around'", "before, after")
    ),
    Case(
        "bad-on-conflict",
        "patch[1].on_conflict",
        11,
        patches=[good(on_conflict="keep")],
        message=("'keep'", "did you mean 'keep-upstream'?"),
    ),
    Case("star-import", "patch[1].import", 9, patches=[imp(**{"import": "from os import *"})], message=("star",)),
    Case("import-not-import", "patch[1].import", 9, patches=[imp(**{"import": "x = 1"})], message=("not an import",)),
    Case(
        "import-syntax-error",
        "patch[1].import",
        9,
        patches=[imp(**{"import": "from os import"})],
        message=("not valid Python",),
    ),
    Case(
        "import-two-statements",
        "patch[1].import",
        9,
        patches=[imp(**{"import": "import os\nimport sys"})],
        message=("exactly one statement",),
    ),
    Case(
        "anchor-syntax-error", "patch[1].anchor", 10, patches=[ins(anchor="return (x")], message=("not valid Python",)
    ),
    Case(
        "anchor-two-statements",
        "patch[1].anchor",
        10,
        patches=[ins(anchor="a = 1; b = 2")],
        message=("exactly one statement",),
    ),
    Case(
        "bad-item",
        "patch[1].item",
        10,
        patches=[{"id": "reg", "op": "ensure-list-item", "file": TARGET, "target": "EntryClass", "item": "Foo("}],
        message=("not a Python expression",),
    ),
    Case(
        "bad-hint-reason",
        "patch[1].hints.FILE_MISSING",
        10,
        patches=[imp(hints={"FILE_MISSING": "x"})],
        message=("FILE_MISSING",),
    ),
]


def write_case(tmp_path: Path, case: Case) -> tuple[Path, Kit]:
    repo = make_repo(tmp_path / "repo", {TARGET: TARGET_TEXT})
    kit = Kit(tmp_path / "kit")
    payloads = {"p.py": PAYLOAD, **case.payloads}
    if case.text is not None:
        kit.write(text=case.text, payloads=payloads)
    else:
        kit.write(case.patches, payloads, **case.top)
    return repo, kit


def check_error_line(err: str, case: Case) -> str:
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    line = err.rstrip("\n")
    assert line.startswith(ERROR_PREFIX), line
    where = DISPLAY if case.line is None else f"{DISPLAY}:{case.line}"
    if case.key_path is None:
        assert line.startswith(f"{ERROR_PREFIX}{where}: "), line
    else:
        assert line.startswith(f"{ERROR_PREFIX}{where}: {case.key_path}: "), line
    for part in case.message:
        assert part in line, (part, line)
    return line


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_manifest_error(tmp_path, capsys, monkeypatch, case):
    repo, kit = write_case(tmp_path, case)
    monkeypatch.chdir(kit.root)
    before = tree_state(repo, include_git=True)
    r = run_cli(capsys, "apply", "-m", DISPLAY, "--repo", repo)
    assert r.code == 2, (r.out, r.err)
    assert r.out == ""
    check_error_line(r.err, case)
    assert tree_state(repo, include_git=True) == before


@pytest.mark.parametrize("verb", ["validate", "status", "apply --dry-run", "apply --json"])
def test_every_verb_reports_the_same_manifest_error(tmp_path, capsys, monkeypatch, verb):
    case = next(c for c in CASES if c.name == "missing-op-key")
    repo, kit = write_case(tmp_path, case)
    monkeypatch.chdir(kit.root)
    before = tree_state(repo, include_git=True)
    argv = [*verb.split(), "-m", DISPLAY]
    if verb != "validate":
        argv += ["--repo", str(repo)]
    r = run_cli(capsys, *argv)
    assert r.code == 2
    assert r.out == ""
    check_error_line(r.err, case)
    assert tree_state(repo, include_git=True) == before


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_range_check_reports_the_same_manifest_error(tmp_path, capsys, monkeypatch, case):
    """check starts git on the target files once the tables pass the schema, before the payloads
    load (``load_manifest(on_files=)``): an error found after that still gets the same one line."""
    repo, kit = write_case(tmp_path, case)
    monkeypatch.chdir(kit.root)
    before = tree_state(repo, include_git=True)
    r = run_cli(capsys, "check", "-m", DISPLAY, "--repo", repo, "--range", "HEAD", "--json")
    assert r.code == 2, (r.out, r.err)
    assert r.out == ""
    check_error_line(r.err, case)
    after = tree_state(repo, include_git=True)
    # Only patchkit's own note that these tables passed the JSON Schema (they did) may be new.
    assert {k: v for k, v in after.items() if not k.startswith(".git/patchkit/schema-checked/")} == before


def test_manifest_error_from_the_console_script(tmp_path):
    case = next(c for c in CASES if c.name == "unknown-op")
    repo, kit = write_case(tmp_path, case)
    before = tree_state(repo, include_git=True)
    r = run_script("apply", "-m", DISPLAY, "--repo", repo, cwd=kit.root)
    assert r.code == 2
    assert r.out == ""
    line = check_error_line(r.err, case)
    assert re.search(r"did you mean 'add-methods'\?$", line)
    assert tree_state(repo, include_git=True) == before


def test_error_names_the_manifest_as_given_from_elsewhere(tmp_path, capsys, monkeypatch):
    case = next(c for c in CASES if c.name == "duplicate-id")
    _repo, _kit = write_case(tmp_path, case)
    monkeypatch.chdir(tmp_path)
    r = run_cli(capsys, "validate", "-m", "kit/manifests/test.toml")
    assert r.code == 2
    assert r.err.startswith(f"{ERROR_PREFIX}kit/manifests/test.toml:13: patch[2].id: ")


def test_missing_key_next_to_a_typo_points_at_the_typo(tmp_path):
    """`clas = ...` is both an unknown key and a missing `class`: one line says both."""
    kit = Kit(tmp_path / "kit")
    kit.write(
        [{"id": "a", "op": "add-methods", "file": TARGET, "clas": "Model", "source": src("p.py")}],
        {"p.py": "class Model:\n    def f(self):\n        return 1\n"},
    )
    repo = make_repo(tmp_path / "repo", {TARGET: "class Model:\n    pass\n"})
    result = run_script("validate", "-m", str(kit.manifest))
    assert result.code == 2
    assert "patch[1].class: missing required key 'class' for op 'add-methods'" in result.err
    assert "the table has 'clas': did you mean 'class'?" in result.err
    line = next(i for i, text in enumerate(kit.manifest.read_text().splitlines(), start=1) if text.startswith("clas"))
    assert f".toml:{line}: patch[1].class" in result.err
    assert repo.exists()


@pytest.mark.parametrize(
    ("encoded", "where", "message"),
    [
        (
            header().encode("utf-16"),
            "",
            "the manifest is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8",
        ),
        (b"\xef\xbb\xbf" + header().encode(), ":1", "the manifest starts with a UTF-8 byte-order mark"),
        (
            'schema = 1\nname = "café"\n'.encode("latin-1"),
            ":2",
            "not UTF-8: byte 0xe9 at column 12; save the manifest as UTF-8",
        ),
    ],
    ids=["utf-16", "utf-8-bom", "latin-1"],
)
def test_a_manifest_in_another_encoding_says_which_and_where(tmp_path, capsys, monkeypatch, encoded, where, message):
    """A manifest saved by an editor in another encoding: one line that says which, and the line of the first
    byte that is not UTF-8, instead of a byte offset."""
    kit = Kit(tmp_path / "kit")
    kit.write(text=header(), payloads={})
    kit.manifest.write_bytes(encoded)
    monkeypatch.chdir(kit.root)
    r = run_cli(capsys, "validate", "-m", DISPLAY)
    assert r.code == 2
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert r.err.startswith(f"{ERROR_PREFIX}{DISPLAY}{where}: {message}"), r.err
