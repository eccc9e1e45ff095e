"""The docs are the contract: every schema key, reason, status, exit code and command is documented."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli

from patchkit.cli import cli
from patchkit.errors import ExitCode
from patchkit.footprint.kinds import BUILD_NAMES, BUILD_PATTERNS, BUILD_SUFFIXES, SUFFIX_GROUPS
from patchkit.manifest.loader import SCHEMA_PATH
from patchkit.operations import OP_NAMES, registry
from patchkit.results import REASON_MEANING, Reason, Status

ROOT = Path(__file__).resolve().parents[1]
MANIFEST_MD = ROOT / "docs" / "manifest.md"
STATUSES_MD = ROOT / "docs" / "statuses.md"
JSON_MD = ROOT / "docs" / "json.md"
README = ROOT / "README.md"


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def property_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            yield key
            yield from property_names(value)
        for key, value in node.items():
            if key != "properties":
                yield from property_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from property_names(item)


def test_schema_is_valid_against_its_metaschema():
    import jsonschema

    document = schema()
    cls = jsonschema.validators.validator_for(document)
    cls.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_has_keys_to_check():
    keys = set(property_names(schema()))
    assert {"schema", "name", "patch", "id", "op", "file", "class", "anchor", "expect", "item"} <= keys


@pytest.mark.parametrize("key", sorted(set(property_names(schema()))))
def test_every_schema_key_is_documented(key):
    text = MANIFEST_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| `{re.escape(key)}` \|", text, re.M), (
        f"`{key}` has no row in a key table of docs/manifest.md"
    )


@pytest.mark.parametrize("op", OP_NAMES)
def test_every_op_has_a_section(op):
    text = MANIFEST_MD.read_text(encoding="utf-8")
    assert f"### `{op}`" in text


def test_ops_agree_between_schema_registry_and_docs():
    enum = schema()["$defs"]["patch"]["properties"]["op"]["enum"]
    assert list(enum) == list(OP_NAMES) == list(registry())
    documented = re.findall(r"^### `([a-z-]+)`", MANIFEST_MD.read_text(encoding="utf-8"), re.M)
    assert documented == list(OP_NAMES)


@pytest.mark.parametrize("reason", [r.value for r in Reason])
def test_every_reason_is_in_statuses_md(reason):
    text = STATUSES_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| `{reason}` \|", text, re.M), f"{reason} has no row in docs/statuses.md"


def test_statuses_md_lists_no_unknown_reason():
    text = STATUSES_MD.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", text, re.M)) - {s.value for s in Status}
    assert documented == {r.value for r in Reason}


def test_every_reason_has_a_meaning_and_hint_keys_match():
    assert set(REASON_MEANING) == set(Reason)
    hint_keys = schema()["$defs"]["patch"]["properties"]["hints"]["propertyNames"]["enum"]
    # Manifests may give a hint for every reason a patch can get, i.e. all but
    # INTERNAL and NO_VARIANT (a group's reason).
    assert set(hint_keys) == {r.value for r in Reason} - {"INTERNAL", "NO_VARIANT"}


@pytest.mark.parametrize("status", [s.value for s in Status])
def test_every_status_is_in_statuses_md(status):
    assert re.search(rf"^\| `{status}` \|", STATUSES_MD.read_text(encoding="utf-8"), re.M)


@pytest.mark.parametrize("code", [int(c) for c in ExitCode])
def test_every_exit_code_is_in_statuses_md(code):
    assert re.search(rf"^\| {code} \|", STATUSES_MD.read_text(encoding="utf-8"), re.M)


@pytest.mark.parametrize("code", [int(c) for c in ExitCode])
def test_every_exit_code_is_in_help(code, capsys):
    r = run_cli(capsys, "--help")
    assert r.code == 0
    assert re.search(rf"^\s+{code}\s+\S", r.out, re.M), f"exit code {code} is not listed in `patchkit --help`"


def test_json_md_documents_every_json_command():
    text = JSON_MD.read_text(encoding="utf-8")
    for command in (
        "apply",
        "status",
        "revert",
        "check",
        "explain",
        "digest",
        "validate",
        "bench",
        "runs",
        "compare",
        "bisect",
        "noise",
        "report --json",
    ):
        assert f"## `{command}" in text, command


def commands_missing_from(readme: Path) -> list[str]:
    """The CLI commands that ``readme`` does not show as ``patchkit NAME``; a missing README fails."""
    assert readme.is_file(), f"{readme} is missing: the README must document every command"
    text = readme.read_text(encoding="utf-8")
    return [name for name in cli.commands if not re.search(rf"patchkit {re.escape(name)}\b", text)]


def test_every_cli_command_is_in_readme():
    assert commands_missing_from(README) == []


def test_a_missing_readme_fails_rather_than_skips(tmp_path):
    try:
        commands_missing_from(tmp_path / "README.md")
    except AssertionError as exc:
        assert "README.md is missing" in str(exc)
    except BaseException as exc:  # pytest.skip() raises Skipped, which would hide a deleted README
        pytest.fail(f"a missing README must fail the test, not end it with {type(exc).__name__}")
    else:
        pytest.fail("a missing README passed")


def undocumented_dataclasses(source: str) -> list[str]:
    """Classes decorated with ``@dataclass`` (bare or called) that have no docstring."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef) or ast.get_docstring(node) is not None:
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name) and target.id == "dataclass":
                out.append(node.name)
    return out


def test_the_dataclass_check_sees_a_missing_docstring():
    source = (
        "@dataclass(frozen=True)\nclass A:\n    x: int\n\n"
        '@dataclass\nclass B:\n    """B."""\n\n'
        "@dataclass\nclass C:\n    y: int\n"
    )
    assert undocumented_dataclasses(source) == ["A", "C"]


def test_every_dataclass_says_what_it_is():
    """A docstring says what the value is for; without one, ``dataclass`` also builds one at import time
    from ``inspect.signature``, which every command that imports the class pays for."""
    missing = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "patchkit").rglob("*.py"))
        for name in undocumented_dataclasses(path.read_text(encoding="utf-8"))
    ]
    assert not missing, missing


def test_the_exit_code_table_is_generated_from_the_enum():
    """docs/statuses.md's table is ``patchkit.exit_docs.statuses_table()``: on drift, run
    ``python -m patchkit.exit_docs`` (or add the new code's words there)."""
    from patchkit.exit_docs import DOC_MEANING, HELP_MEANING, committed_table, statuses_table

    assert set(DOC_MEANING) == set(HELP_MEANING) == set(ExitCode)
    assert committed_table(STATUSES_MD.read_text(encoding="utf-8")) == statuses_table()


def test_the_help_epilogues_are_generated_from_the_enum(capsys):
    """click prints an epilogue as it is (``\\b``), indented by two."""
    from patchkit.exit_docs import EXIT_CODES_HELP, verb_epilog

    for args, epilog in (
        (("--help",), EXIT_CODES_HELP),
        (("check", "--help"), verb_epilog("check")),
        (("bench", "--help"), verb_epilog("bench")),
    ):
        r = run_cli(capsys, *args)
        assert textwrap.indent(epilog.removeprefix("\b\n"), "  ") in r.out, args


# The documentation site (mkdocs.yml): its reference pages cover every verb and every exit code.
CLI_MD = ROOT / "docs" / "reference" / "cli.md"
EXIT_CODES_MD = ROOT / "docs" / "reference" / "exit-codes.md"
SCHEMA_MD = ROOT / "docs" / "reference" / "schema.md"


def docs_hooks() -> Any:
    """``tools/docs_hooks.py``, the MkDocs hooks that generate pages at build time, imported by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_verbs(group: Any = cli, prefix: str = "") -> list[str]:
    """Every verb of the click group, sub-groups' verbs as ``group verb``, walked recursively."""
    import click

    out = []
    for name, command in sorted(group.commands.items()):
        out.append(prefix + name)
        if isinstance(command, click.Group):
            out += cli_verbs(command, prefix + name + " ")
    return out


def test_the_cli_walk_finds_the_verbs():
    verbs = cli_verbs()
    assert {"check", "apply", "guard", "bench", "compare", "bisect", "show", "port"} <= set(verbs)


@pytest.mark.parametrize("verb", cli_verbs())
def test_every_cli_verb_is_in_the_cli_reference(verb):
    text = CLI_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| `patchkit {re.escape(verb)}\b", text, re.M), (
        f"`patchkit {verb}` has no row in the command table of docs/reference/cli.md"
    )


def test_the_cli_reference_renders_the_click_group():
    """mkdocs-click renders every verb's --help from the group itself, so a new verb is on the site."""
    text = CLI_MD.read_text(encoding="utf-8")
    assert re.search(r"^::: mkdocs-click\n    :module: patchkit\.cli\n    :command: cli\n", text, re.M)


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: c.name)
def test_every_exit_code_is_in_the_exit_code_reference(code):
    page = docs_hooks().render_markers(EXIT_CODES_MD.read_text(encoding="utf-8"))
    row = re.search(rf"^\| {int(code)} \| `{code.name}` \| (.*) \|$", page, re.M)
    assert row, f"exit code {int(code)} ({code.name}) has no row in the generated docs/reference/exit-codes.md"
    assert row.group(1).strip(), f"ExitCode.{code.name} has no comment to say what it means"


def test_the_schema_reference_has_every_object_and_key():
    page = docs_hooks().render_markers(SCHEMA_MD.read_text(encoding="utf-8"))
    assert "<!-- generated:" not in page
    for name in schema()["$defs"]:
        assert f"## `{name}` {{ #{name} }}" in page, name
    for key in set(property_names(schema())):
        assert f"| `{key}` |" in page, key


def test_an_unknown_generated_block_is_an_error():
    with pytest.raises(ValueError, match="unknown generated block"):
        docs_hooks().render_markers("<!-- generated: no-such-page -->\n")


def test_every_page_is_in_the_site_navigation():
    """mkdocs --strict reports a page missing from ``nav``; this says which, without MkDocs installed."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    listed = set(re.findall(r":\s+([\w/.-]+\.md)\s*$", config, re.M))
    assert pages == listed, (sorted(pages - listed), sorted(listed - pages))


@pytest.mark.parametrize("op", OP_NAMES)
def test_every_op_is_in_the_concepts_table(op):
    text = (ROOT / "docs" / "concepts" / "manifests.md").read_text(encoding="utf-8")
    assert f"| [`{op}`](../manifest.md#{op}) |" in text


def test_the_cli_reference_labels_a_whole_page_by_its_title():
    """A link to a whole page (no anchor) reads as that page's title (its heading, or its name in the site's
    navigation), so a renamed page (port.md became "Drop a patch upstream took") is not left behind a label
    that names what it used to be."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = {path: name for name, path in re.findall(r"^\s*- ([^:\n]+): ([\w/.-]+\.md)\s*$", config, re.M)}
    stale = []
    for label, target in re.findall(r"\[([^\]]+)\]\(([^)#]+\.md)\)", CLI_MD.read_text(encoding="utf-8")):
        page = (CLI_MD.parent / target).resolve()
        heading = page.read_text(encoding="utf-8").splitlines()[0].removeprefix("# ")
        titles = {heading.lower(), nav.get(str(page.relative_to(ROOT / "docs")), "").lower()}
        if label.lower() not in titles:
            stale.append(f"[{label}]({target}): the page is {heading!r}")
    assert not stale, stale


def test_hunt_md_lists_the_build_inputs_that_footprint_kinds_holds() -> None:
    """docs/hunt.md's "Never inert" table is footprint/kinds.py's lists, each suffix row one of its language groups
    under the same label: a family named there (once, SYCL) with no suffix of its own cannot drift in."""
    text = (ROOT / "docs" / "hunt.md").read_text(encoding="utf-8")
    table = text[text.index("### Never inert") : text.index("### When pruning is off")]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and "`" in cells[1]:
            rows[cells[0]] = re.findall(r"`([^`]+)`", cells[1])
    assert {name.lower() for name in rows.pop("file name")} == BUILD_NAMES
    assert tuple(rows.pop("file-name pattern")) == BUILD_PATTERNS
    suffixes = [
        (label.removeprefix("suffix: "), tuple(items)) for label, items in rows.items() if label.startswith("suffix: ")
    ]
    assert suffixes == [(label, group) for label, group in SUFFIX_GROUPS]
    assert {s for _, group in suffixes for s in group} == BUILD_SUFFIXES
