"""Edit a manifest's TOML as text, so that its comments, order and layout survive.

``port`` changes a few keys of a few ``[[patch]]`` tables (``file``, ``class``,
``function``, ``expect``) and may drop a table.  A TOML writer would rewrite
the whole file and lose what people wrote around the keys (the Kimi manifest
is mostly comments), so each change is made on the lines of the one key: the
key's line (or, for a value over several lines, its lines) is replaced, a new
key goes after the table's last key, a dropped table takes its own lines, its
subtables (``[patch.hints]``, any ``[patch.X]`` or ``[[patch.X]]`` up to the
next table that is not one of them), the comments inside it and the comment
block right above its header; a comment block right above the next table's
header is that table's, and one after a blank line is left where it is.  The
text is read as TOML statements (a multi-line string or array is one), so a
line inside a string that looks like a header is never taken for one.  Every
edit is checked by parsing the result: the new text must load to exactly the
old data with that one change, or the edit is a bug (``InternalError``),
never a silently different manifest.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib

from patchkit.errors import InternalError


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

    def _statements(self) -> list[tuple[int, int]]:
        """[first, stop) lines of every TOML statement: a header, a key and its value (over several lines for a
        multi-line string or array), a comment or a blank line.  A statement ends where its lines parse."""
        out = []
        i = 0
        while i < len(self.lines):
            for j in range(i + 1, len(self.lines) + 1):
                try:
                    tomllib.loads("".join(self.lines[i:j]))
                except tomllib.TOMLDecodeError:
                    continue
                out.append((i, j))
                i = j
                break
            else:
                raise InternalError(f"cannot find the end of the TOML statement at line {i + 1}")
        return out

    def _headers(self) -> list[tuple[int, str]]:
        """Every table header, in order: (line, kind), kind ``patch`` for ``[[patch]]``, ``sub`` for a table
        under the current patch (``[patch.hints]``, ``[[patch.X]]``), ``other`` for any other table.  Read by
        parsing the header alone, so quoting and spacing (``[ "patch" . hints ]``) do not matter."""
        out = []
        for first, stop in self._statements():
            line = self.lines[first]
            if stop - first != 1 or not line.lstrip().startswith("["):
                continue
            parsed = tomllib.loads(line)
            value = parsed.get("patch")
            kind = "other" if len(parsed) != 1 or value is None else "patch" if isinstance(value, list) else "sub"
            out.append((first, kind))
        return out

    def _table(self, index: int) -> tuple[int, int, int]:
        """(header line, end of its own keys, end with its subtables) 0-based of the ``index``-th (1-based)
        ``[[patch]]`` table."""
        headers = self._headers()
        patches = [n for n, (_line, kind) in enumerate(headers) if kind == "patch"]
        if index - 1 >= len(patches):
            raise InternalError(f"the manifest has no patch[{index}] table to edit")
        at = patches[index - 1]
        start = headers[at][0]
        rest = headers[at + 1 :]
        body = rest[0][0] if rest else len(self.lines)
        end = next((line for line, kind in rest if kind != "sub"), len(self.lines))
        return start, body, end

    def _key_extent(self, start: int, end: int, key: str) -> tuple[int, int] | None:
        """[first, last) lines of ``key = value`` in the table, or None when the table does not set it."""
        pattern = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
        for first, stop in self._statements():
            if start < first < end and pattern.match(self.lines[first]):
                return first, stop
        return None

    def set(self, index: int, key: str, value: object) -> None:
        """Set ``patch[index].key`` to ``value`` (a string or a list of strings)."""
        start, end, _ = self._table(index)
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
        """Drop the ``index``-th ``[[patch]]`` table: its lines, its subtables, the comments inside it and the
        comment block right above its header; every other line stays."""
        start, _, end = self._table(index)
        expected = copy.deepcopy(self.data)
        del expected["patch"][index - 1]
        if not expected["patch"]:
            del expected["patch"]
        # Whole statements, so that a line of a multi-line string is never taken for a comment or a blank.
        statements = self._statements()
        kinds = {first: self._kind(first, stop) for first, stop in statements}
        # After its last key: comments right under it (no blank line between) are its own, unless they run on
        # to the next header (then they are that table's); from a blank line on, they belong to what follows.
        stop = last = max(s for f, s in statements if start <= f < end and kinds[f] == "content")
        while stop < end and kinds.get(stop) == "comment":
            stop += 1
        if stop == end and end < len(self.lines):
            stop = last
        while start > 0 and kinds.get(start - 1) == "comment":
            start -= 1
        if start > 0 and kinds.get(start - 1) == "blank":
            if kinds.get(stop) == "blank":
                stop += 1  # one blank line between tables, not two
            elif stop == len(self.lines):
                start -= 1  # nor a blank line left at the end of the file
        elif start == 0 and kinds.get(stop) == "blank":
            stop += 1  # nor one at its start
        self._replace(start, stop, [], expected)

    def _kind(self, first: int, stop: int) -> str:
        """A statement's kind: ``blank``, ``comment`` (one line of only a comment) or ``content``."""
        text = "".join(self.lines[first:stop]).strip()
        return "blank" if not text else "comment" if stop - first == 1 and text.startswith("#") else "content"

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
