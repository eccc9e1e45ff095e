"""MkDocs hooks (``hooks:`` in mkdocs.yml): the pages generated from the code at build time.

A page asks for a generated block with a marker line of its own:

- ``<!-- generated: exit-codes -->``: a table of every ``patchkit.errors.ExitCode`` member, its value
  and the comment its definition carries, so a member added to the enum is on the site at the next build;
- ``<!-- generated: exit-codes-by-command -->``: each command and the codes it can return
  (``patchkit.exit_docs.VERB_CODES``, from which each verb's ``--help`` epilogue is made too);
- ``<!-- generated: manifest-schema -->``: every object of ``patchkit/manifest/schema.json`` as a table of
  its keys (type, required, constraints), then the schema itself.

The renderers are plain functions of the code, importable without MkDocs (``tests/test_docs.py`` calls
them), and they import ``patchkit.errors``, ``patchkit.exit_docs`` and the schema file only: nothing from the
bench packages, whose modules move.
"""

from __future__ import annotations

import inspect
import io
import json
import re
import sys
import tokenize
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "patchkit" / "manifest" / "schema.json"

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


def _import_exit_code() -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from patchkit.errors import ExitCode

    return ExitCode


def member_comments(enum_class: type) -> dict[str, str]:
    """``NAME = value  # comment``: each member's trailing comment, read from the class's source."""
    comments: dict[str, str] = {}
    source = inspect.getsource(enum_class)
    last_name: str | None = None
    line_of_name = -1
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.start[1] == 4 and token.string.isupper():
            last_name, line_of_name = token.string, token.start[0]
        elif token.type == tokenize.COMMENT and last_name and token.start[0] == line_of_name:
            comments[last_name] = token.string.lstrip("#").strip()
    return comments


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def exit_codes_markdown() -> str:
    """A table of every exit code: value, ``ExitCode`` member and what it means."""
    exit_code = _import_exit_code()
    comments = member_comments(exit_code)
    rows = ["| code | `ExitCode` member | meaning |", "| --- | --- | --- |"]
    for member in exit_code:
        meaning = comments.get(member.name, "")
        rows.append(f"| {int(member)} | `{member.name}` | {_cell(meaning)} |")
    return "\n".join(rows) + "\n"


def _type_of(node: dict[str, Any]) -> str:
    if "$ref" in node:
        target = node["$ref"].rsplit("/", 1)[-1]
        return f"[`{target}`](#{target})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type_of(n) for n in node.get("oneOf", node.get("anyOf", [])))
    kind = node.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and isinstance(node.get("items"), dict):
        return f"array of {_type_of(node['items'])}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"table of {_type_of(node['additionalProperties'])}"
    return kind


def _constraints(node: dict[str, Any]) -> str:
    parts = []
    for key in ("pattern", "minimum", "maximum", "exclusiveMinimum", "minItems", "minLength", "default"):
        if key in node:
            parts.append(f"{key} `{json.dumps(node[key])}`")
    return ", ".join(parts)


def _object_table(node: dict[str, Any]) -> list[str]:
    required = set(node.get("required", []))
    rows = ["| key | type | required | constraints | description |", "| --- | --- | --- | --- | --- |"]
    for key, value in node.get("properties", {}).items():
        rows.append(
            f"| `{key}` | {_cell(_type_of(value))} | {'yes' if key in required else ''} "
            f"| {_cell(_constraints(value))} | {_cell(value.get('description', ''))} |"
        )
    return rows


def manifest_schema_markdown() -> str:
    """The manifest's JSON Schema as one key table per object, then the schema text."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    out = [f"Schema `{schema['$id']}`, draft 2020-12: {schema.get('title', '')}.", ""]
    out += ["## The manifest", "", *_object_table(schema), ""]
    for name, node in schema.get("$defs", {}).items():
        out += [f"## `{name}` {{ #{name} }}", ""]
        if node.get("description"):
            out += [node["description"], ""]
        if node.get("properties"):
            out += [*_object_table(node), ""]
        else:
            out += ["(no keys of its own)", ""]
    out += [
        "## The schema file",
        "",
        '??? note "patchkit/manifest/schema.json"',
        "",
        "    ```json",
        *("    " + line for line in json.dumps(schema, indent=2).splitlines()),
        "    ```",
        "",
    ]
    return "\n".join(out)


def exit_codes_by_command_markdown() -> str:
    """Each command and the exit codes it can return (``patchkit.exit_docs.VERB_CODES``, its --help's too)."""
    _import_exit_code()  # puts the checkout on sys.path
    from patchkit.exit_docs import by_command_table

    return by_command_table()


GENERATORS = {
    "exit-codes": exit_codes_markdown,
    "exit-codes-by-command": exit_codes_by_command_markdown,
    "manifest-schema": manifest_schema_markdown,
}


def render_markers(markdown: str) -> str:
    """Replace every ``<!-- generated: NAME -->`` line with NAME's block; an unknown NAME is an error."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated block {name!r} (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    """MkDocs event: fill in the generated blocks before the page is rendered."""
    return render_markers(markdown)
