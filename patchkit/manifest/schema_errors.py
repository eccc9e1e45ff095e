"""The JSON Schema check of a manifest's tables, and the wording of its first error."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.errors import ManifestError
from patchkit.manifest.locate import Lines, key_path
from patchkit.manifest.resolve import close_matches
from patchkit.results import Reason

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

SCHEMA_PATH = Path(__file__).with_name("schema.json")


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


@lru_cache(maxsize=1)
def _validator() -> Validator:
    import jsonschema

    schema = _schema()
    # The schema itself is checked against its metaschema by the test suite,
    # not on every run (it costs as much as validating a manifest).
    return jsonschema.validators.validator_for(schema)(schema)


_PRIORITY = {"unevaluatedProperties": 9, "additionalProperties": 8, "if": 10, "allOf": 10}

_PATTERN_MESSAGES = {
    "id": "must start with a lowercase letter or digit and use only a-z, 0-9, '.', '_' and '-'",
    "name": "must start with a lowercase letter or digit and use only a-z, 0-9 and '-'",
    "file": "must be a repo-relative path to a .py file, without a leading '/' or '..' parts",
    "class": "must be a class name, dotted for nested classes (Outer.Inner)",
    "function": "must be a function name, or Class.method (dotted for nested classes)",
    "payload_class": "must be a class name, dotted for nested classes",
    "payload_function": "must be a function name or Class.method",
    "body_of": "must be a function name or Class.method in the payload",
    "target": "must be a Python identifier",
    "before": "must be a Python identifier",
    "from": "must be a dotted module path (leading dots for a relative import)",
    "to": "must be a dotted module path (leading dots for a relative import)",
}


_BENCH_PATTERN_MESSAGES = {
    "name": "must start with a letter or digit and use only letters, digits, '_', '.' and '-'",
    "version_file": "must be a tree-relative path to a .py file, without a leading '/' or '..' parts",
    "scm_version_file": "must be a tree-relative path to a .py file, without a leading '/' or '..' parts",
    "import_check": "must be a module name (dotted)",
    "inherit": "must be an environment variable name",
    "pythonpath": "must be a tree-relative directory, without a leading '/' or '..' parts",
}


def validate_schema(data: Mapping[str, Any], display: str, lines: Lines) -> None:
    errors = list(_validator().iter_errors(data))
    if not errors:
        return
    # When an op's own keys fail, 2020-12 also reports them as "unevaluated";
    # such an error that names no actually unknown key is noise.
    errors = [e for e in errors if not _spurious(e)] or errors
    errors.sort(key=lambda e: (_PRIORITY.get(str(e.validator), 0), _sort_path(e.absolute_path)))
    error = errors[0]
    path = list(error.absolute_path)
    message, key, hint, line_key = _word(error)
    if key is not None:
        path.append(key)
    row = path[1] if len(path) >= 2 and path[0] in ("patch", "group") and isinstance(path[1], int) else None
    table = path[0] if row is not None else None
    leaf = path[-1] if path and isinstance(path[-1], str) else None
    if table is not None and row is not None:
        leaf = path[2] if len(path) > 2 and isinstance(path[2], str) else None
        line = lines.line_of(row + 1, line_key or leaf, table=str(table))
    elif path[:1] == ["bench"]:
        line = lines.bench_line_of(path)
    else:
        line = lines.top_line_of(leaf)
        if line is None and line_key is not None and "." in line_key:  # a top-level key written under a table
            line = lines.nested_line_of(*line_key.split(".", 1))
    raise ManifestError(message, file=display, key_path=key_path(path) or None, line=line, hint=hint)


def _spurious(error: ValidationError) -> bool:
    if error.validator != "unevaluatedProperties" or not isinstance(error.instance, dict):
        return False
    known = _known_keys(error, error.instance)
    return all(k in known for k in error.instance)


def _sort_path(path: Iterable[str | int]) -> tuple[tuple[int, str | int], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


Worded = tuple[str, str | int | None, str | None, str | None]
"""(message, extra key to append to the path, hint, key whose line to show if not the path's)."""


def _leaf(error: ValidationError) -> str | int | None:
    path = list(error.absolute_path)
    return path[-1] if path else None


def _op_of(instance: object) -> object:
    return instance.get("op") if isinstance(instance, dict) else None


def _required(error: ValidationError) -> Worded:
    instance = error.instance
    missing = re.search(r"'([^']+)' is a required property", error.message)
    name = missing.group(1) if missing else "?"
    op = _op_of(instance)
    common = _schema()["$defs"]["patch"]["properties"]
    what = f" for op {op!r}" if op and name not in common and _leaf(error) != "patch" else ""
    hint = None
    typo: list[str] = []
    if isinstance(instance, dict):
        known = _known_keys(error, instance)
        typo = close_matches(name, [k for k in instance if k not in known])
        if typo:
            hint = f"the table has {typo[0]!r}: did you mean {name!r}?"
    line_key = typo[0] if typo else None
    if not typo and not list(error.absolute_path) and isinstance(instance, dict):
        # A top-level key: a new user's likeliest slip is to put it under a table of their own ([manifest]),
        # or to leave out the format's version, which no other tool asks for.
        nested = [t for t, v in instance.items() if isinstance(v, dict) and name in v]
        if nested:
            hint = f"{name!r} is under [{nested[0]}]: top-level keys go at the top of the file, before any [table]"
            line_key = f"{nested[0]}.{name}"
        else:
            hint = _TOP_LEVEL_HINTS.get(name)
    return f"missing required key {name!r}{what}", name, hint, line_key


_TOP_LEVEL_HINTS = {
    "schema": "add `schema = 1` at the top of the file, before any [table]: the manifest format's version",
    "name": 'add `name = "..."` at the top of the file, before any [table]: it names the record `apply` keeps',
    "patch": "add at least one [[patch]] table with id, op, file and the op's keys (docs/manifest.md)",
}


def _unknown_key(error: ValidationError) -> Worded:
    instance = error.instance
    known = _known_keys(error, instance)
    extra = sorted(k for k in instance if k not in known) if isinstance(instance, dict) else []
    name = extra[0] if extra else "?"
    close = close_matches(name, sorted(known))
    op = _op_of(instance)
    scope = f" for op {op!r}" if op else ""
    hint = f"did you mean {close[0]!r}?" if close else f"allowed keys{scope}: {', '.join(sorted(known))}"
    return f"unknown key{scope}", name, hint, None


def _enum(error: ValidationError) -> Worded:
    instance, leaf = error.instance, _leaf(error)
    if leaf == "hints" and isinstance(instance, str):
        # propertyNames: the bad *key* of the hints table
        return f"{instance!r} is not a reason code", instance, _reason_codes(), None
    allowed = error.validator_value if isinstance(error.validator_value, list) else []
    options = [str(a) for a in allowed]
    close = (
        close_matches(str(instance), options)
        or [o for o in options if str(instance) and o.startswith(str(instance))][:1]
    )
    hint = f"did you mean {close[0]!r}?" if close else None
    label = "op" if leaf == "op" else "value"
    return f"unknown {label} {instance!r}; expected one of: {', '.join(map(str, allowed))}", None, hint, None


def _const(error: ValidationError) -> Worded:
    if _leaf(error) == "schema":
        message = f"schema must be {error.validator_value} (this patchkit reads schema 1), got {error.instance!r}"
        return message, None, None, None
    return f"must be {error.validator_value!r}", None, None, None


def _type(error: ValidationError) -> Worded:
    return f"must be {_a(error.validator_value)}, got {_type_name(error.instance)}", None, None, None


def _pattern(error: ValidationError) -> Worded:
    instance, path = error.instance, list(error.absolute_path)
    leaf = _leaf(error)
    if path[:1] == ["bench"]:
        if path[-1:] == ["profiles"]:  # propertyNames: the bad key itself
            key = instance if isinstance(instance, str) else None
            return f"{instance!r} is not a profile name", key, "use a-z, 0-9, '.', '_' and '-'", None
        named = next((p for p in reversed(path) if isinstance(p, str)), "")
        return f"{instance!r} {_BENCH_PATTERN_MESSAGES.get(named, 'has the wrong form')}", None, None, None
    if len(path) >= 2 and path[-2] in ("members", "requires"):  # an id in a list
        leaf = "id"
    if leaf == "file" and ".py" not in str(error.validator_value):
        return f"{instance!r} must be a repo-relative path, without a leading '/' or '..' parts", None, None, None
    if leaf == "name" and path[:1] == ["patch"]:
        return f"{instance!r} must be a Python identifier", None, None, None
    return f"{instance!r} {_PATTERN_MESSAGES.get(str(leaf), 'has the wrong form')}", None, None, None


def _not_empty(error: ValidationError) -> Worded:
    return "must not be empty", None, None, None


def _exclusive_minimum(error: ValidationError) -> Worded:
    return f"must be more than {error.validator_value}, got {error.instance!r}", None, None, None


def _minimum(error: ValidationError) -> Worded:
    return f"must be at least {error.validator_value}, got {error.instance!r}", None, None, None


def _unique_items(error: ValidationError) -> Worded:
    return "lists the same value twice", None, None, None


def _one_of(error: ValidationError) -> Worded:
    instance = error.instance
    if _leaf(error) != "expect":
        return _as_jsonschema_says(error)
    hint = "run `patchkit digest FILE QUALNAME` on the upstream file"
    if isinstance(instance, list) and instance:
        pattern = re.compile(r"^sha256:[0-9a-f]{64}$")
        bad = next((i for i, v in enumerate(instance) if not (isinstance(v, str) and pattern.match(v))), None)
        if bad is not None:
            return f"{instance[bad]!r} is not a digest 'sha256:<64 hex digits>'", bad, hint, None
    return "must be a digest 'sha256:<64 hex digits>' or a list of them", None, hint, None


def _not(error: ValidationError) -> Worded:
    return "give either `position` or `before`, not both", "before", None, None


def _property_names(error: ValidationError) -> Worded:
    return f"{error.instance!r} is not a reason code", None, _reason_codes(), None


def _as_jsonschema_says(error: ValidationError) -> Worded:
    return error.message, None, None, None


_WORDING: dict[str, Callable[[ValidationError], Worded]] = {
    "required": _required,
    "unevaluatedProperties": _unknown_key,
    "additionalProperties": _unknown_key,
    "enum": _enum,
    "const": _const,
    "type": _type,
    "pattern": _pattern,
    "minProperties": _not_empty,
    "minItems": _not_empty,
    "minLength": _not_empty,
    "exclusiveMinimum": _exclusive_minimum,
    "minimum": _minimum,
    "uniqueItems": _unique_items,
    "oneOf": _one_of,
    "not": _not,
    "propertyNames": _property_names,
}
"""A validator's name -> how its error reads to a manifest's author; any other says what jsonschema says."""


def _word(error: ValidationError) -> Worded:
    return _WORDING.get(str(error.validator), _as_jsonschema_says)(error)


def _known_keys(error: ValidationError, instance: object) -> set[str]:
    schema = _schema()
    if error.validator == "additionalProperties":
        return set(error.schema.get("properties", {})) if isinstance(error.schema, Mapping) else set()
    known = set(schema["$defs"]["patch"]["properties"])
    op = instance.get("op") if isinstance(instance, dict) else None
    op_schema = schema["$defs"].get(f"op-{op}")
    if op_schema:
        known |= set(op_schema.get("properties", {}))
    return known


def _a(kind: object) -> str:
    names = {
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a table",
        "integer": "an integer",
        "number": "a number",
    }
    if isinstance(kind, list):
        return " or ".join(names.get(k, str(k)) for k in kind)
    return names.get(str(kind), str(kind))


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _reason_codes() -> str:
    return "reason codes: " + ", ".join(r.value for r in Reason)
