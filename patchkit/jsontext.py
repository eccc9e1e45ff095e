"""JSON text, byte for byte as ``json.dumps(value, indent=2, ensure_ascii=False)``, built from fragments.

The standard encoder takes its C fast path only without ``indent``; with it,
every dict and list goes through Python generators.  A range check's
``--json`` object repeats the same per-patch results at thousands of commits
(a results tuple is shared by every commit of a state), so re-encoding them
per commit costs seconds and produces nothing new.  These helpers let a
caller encode such a shared value once, as the text it has at its depth, and
splice that text wherever it occurs.

Nested at depth ``d`` (the number of enclosing containers), json's indented
output is the top-level text with every line after the first prefixed by
``d`` indents, because JSON strings never hold a raw newline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from json.encoder import encode_basestring as encode_str  # what dumps(ensure_ascii=False) uses

INDENT = "  "


def _scalar(value: object) -> str | None:
    """The text of a str, None, bool or int (floats and the rest: None, so the caller uses json)."""
    kind = type(value)
    if kind is str and isinstance(value, str):
        return encode_str(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int and isinstance(value, int):
        return int.__repr__(value)
    return None


def fragment(value: object, depth: int = 0) -> str:
    """``value`` encoded as it reads ``depth`` containers deep."""
    if type(value) is dict:
        pairs = []
        for key, item in value.items():
            text = _scalar(item)
            if text is None or type(key) is not str:
                break
            pairs.append((key, text))
        else:
            return object_text(pairs, depth)
    text = _scalar(value)
    if text is not None:
        return text
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return text.replace("\n", "\n" + INDENT * depth) if depth else text


def object_text(pairs: Iterable[tuple[str, str]], depth: int = 0) -> str:
    """A JSON object from (key, value already encoded at ``depth + 1``) pairs."""
    pad = ",\n" + INDENT * (depth + 1)
    body = pad.join(encode_str(key) + ": " + text for key, text in pairs)
    return "{\n" + INDENT * (depth + 1) + body + "\n" + INDENT * depth + "}" if body else "{}"


def array_text(items: Iterable[str], depth: int = 0) -> str:
    """A JSON array from items already encoded at ``depth + 1``."""
    pad = ",\n" + INDENT * (depth + 1)
    body = pad.join(items)
    return "[\n" + INDENT * (depth + 1) + body + "\n" + INDENT * depth + "]" if body else "[]"


__all__ = ["array_text", "encode_str", "fragment", "object_text"]
