"""Edit a manifest's TOML as text, so that its comments, order and layout survive.

``port`` changes a few keys of a few ``[[patch]]`` tables (``file``, ``class``,
``function``, ``expect``) and may drop a table.  A TOML writer would rewrite
the whole file and lose what people wrote around the keys (the Kimi manifest
is mostly comments), so each change is made on the lines of the one key: the
key's line (or, for a value over several lines, its lines) is replaced, a new
key goes after the table's last key, a dropped table takes its own lines and
the comment block right above its header.  Every edit is checked by parsing
the result: the new text must load to exactly the old data with that one
change, or the edit is a bug (``InternalError``), never a silently different
manifest.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib

from patchkit.errors import InternalError

_TABLE = re.compile(r"^\s*\[")
_HEADER = re.compile(r"^\s*\[\[\s*patch\s*\]\]\s*(#.*)?$")


def toml_literal(value: object) -> str:
    """A TOML value for a string or a list of strings (a JSON string is a valid TOML basic string)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
    raise InternalError(f"port writes strings and lists of strings only, not {value!r}")


class ManifestText:
    """A manifest's text with the ``[[patch]]`` table edits ``port`` makes; ``text`` is the result so far."""

    def __init__(self, text: str) -> None:
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.lines = text.splitlines(keepends=True)
        self.data = tomllib.loads(text)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def _table(self, index: int) -> tuple[int, int]:
        """(header line, end) 0-based of the ``index``-th (1-based) ``[[patch]]`` table."""
        headers = [i for i, line in enumerate(self.lines) if _HEADER.match(line)]
        if index - 1 >= len(headers):
            raise InternalError(f"the manifest has no patch[{index}] table to edit")
        start = headers[index - 1]
        end = next((i for i in range(start + 1, len(self.lines)) if _TABLE.match(self.lines[i])), len(self.lines))
        return start, end

    def _key_extent(self, start: int, end: int, key: str) -> tuple[int, int] | None:
        """[first, last) lines of ``key = value`` in the table, or None when the table does not set it."""
        pattern = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
        for i in range(start + 1, end):
            if pattern.match(self.lines[i]):
                for j in range(i + 1, end + 1):  # a multi-line array ends where the lines parse
                    try:
                        tomllib.loads("".join(self.lines[i:j]))
                    except tomllib.TOMLDecodeError:
                        continue
                    return i, j
                raise InternalError(f"cannot find the end of the value of {key!r} (line {i + 1})")
        return None

    def set(self, index: int, key: str, value: object) -> None:
        """Set ``patch[index].key`` to ``value`` (a string or a list of strings)."""
        start, end = self._table(index)
        expected = copy.deepcopy(self.data)
        expected["patch"][index - 1][key] = value
        extent = self._key_extent(start, end, key)
        if extent is None:
            last = max((i for i in range(start, end) if self.lines[i].strip() and not self._comment(i)), default=start)
            indent = re.match(r"\s*", self.lines[last]).group(0) if last > start else ""  # type: ignore[union-attr]
            new = [f"{indent}{key} = {toml_literal(value)}{self.newline}"]
            if not self.lines[last].endswith(("\n", "\r")):
                self.lines[last] += self.newline
            self._replace(last + 1, last + 1, new, expected)
            return
        first, stop = extent
        head = self.lines[first]
        indent = re.match(r"\s*", head).group(0)  # type: ignore[union-attr]
        ending = self.newline if self.lines[stop - 1].endswith(("\n", "\r")) else ""
        comment = self._trailing_comment(first) if stop - first == 1 else ""
        written = key if head.lstrip().startswith(key) else head.lstrip().split("=", 1)[0].rstrip()
        new = [f"{indent}{written} = {toml_literal(value)}{comment}{ending}"]
        self._replace(first, stop, new, expected)

    def remove(self, index: int) -> None:
        """Drop the ``index``-th ``[[patch]]`` table: its lines and the comment lines right above its header."""
        start, end = self._table(index)
        expected = copy.deepcopy(self.data)
        del expected["patch"][index - 1]
        # The comment block right above the next header (no blank line between) belongs to that table.
        while end > start + 1 and self._comment(end - 1):
            end -= 1
        while start > 0 and self._comment(start - 1):
            start -= 1
        while end < len(self.lines) and not self.lines[end].strip() and start > 0 and not self.lines[start - 1].strip():
            end += 1  # one blank line between tables, not two
        self._replace(start, end, [], expected)

    def _comment(self, i: int) -> bool:
        return self.lines[i].lstrip().startswith("#")

    def _trailing_comment(self, i: int) -> str:
        """`` # ...`` after a one-line value, or ''.  Found by parsing: a ``#`` inside a string is no comment."""
        line = self.lines[i].rstrip("\r\n")
        for match in re.finditer(r"\s*#", line):
            try:
                tomllib.loads(line[: match.start()])
            except tomllib.TOMLDecodeError:
                continue
            return line[match.start() :]
        return ""

    def _replace(self, first: int, stop: int, new: list[str], expected: dict[str, object]) -> None:
        lines = self.lines[:first] + new + self.lines[stop:]
        try:
            got = tomllib.loads("".join(lines))
        except tomllib.TOMLDecodeError as exc:
            raise InternalError(f"a manifest edit made invalid TOML: {exc}") from None
        if got != expected:
            raise InternalError("a manifest edit changed more than the key it meant to change")
        self.lines = lines
        self.data = got
