"""Where a key is: the key path of a schema error and the TOML line a key sits on."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence


def key_path(path: Iterable[object]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class Lines:
    """Best-effort line numbers for keys, read from the TOML text itself."""

    _HEADER = re.compile(r"^\s*\[\[\s*(patch|group)\s*\]\]\s*(#.*)?$")
    _TABLE = re.compile(r"^\s*\[")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.tables: dict[str, list[int]] = {"patch": [], "group": []}
        for i, line in enumerate(self.lines):
            match = self._HEADER.match(line)
            if match:
                self.tables[match.group(1)].append(i)
        self.headers = self.tables["patch"]

    def _find_key(self, start: int, end: int, key: str | None) -> int | None:
        if key is None:
            return None
        key = key.split("[", 1)[0].split(".", 1)[0]  # methods[2] / hints.X live on the line of their key
        pattern = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
        for i in range(start, end):
            if pattern.match(self.lines[i]):
                return i + 1
        return None

    def line_of(self, patch_index: int, key: str | None, table: str = "patch") -> int | None:
        headers = self.tables[table]
        if patch_index - 1 >= len(headers):
            return None
        start = headers[patch_index - 1]
        end = len(self.lines)
        for i in range(start + 1, len(self.lines)):
            if self._TABLE.match(self.lines[i]):
                end = i
                break
        return self._find_key(start + 1, end, key) or start + 1

    def _section(self, header: re.Pattern[str], nth: int = 0) -> tuple[int, int] | None:
        """(first line after the header, end) of the nth table whose header matches."""
        found = [i for i, line in enumerate(self.lines) if header.match(line)]
        if nth >= len(found):
            return None
        start = found[nth]
        end = next((i for i in range(start + 1, len(self.lines)) if self._TABLE.match(self.lines[i])), len(self.lines))
        return start + 1, end

    def nested_line_of(self, table: str, key: str) -> int | None:
        """The line of ``key`` in the plain table ``[table]``, or of its header where the key is not found."""
        section = self._section(self._header(table))
        return None if section is None else self._find_key(*section, key) or section[0]

    @staticmethod
    def _header(*names: str, array: bool = False) -> re.Pattern[str]:
        dotted = r"\s*\.\s*".join(f'(?:{re.escape(n)}|"{re.escape(n)}")' for n in names)
        if array:
            return re.compile(rf"^\s*\[\[\s*{dotted}\s*\]\]\s*(#.*)?$")
        return re.compile(rf"^\s*\[\s*{dotted}\s*\]\s*(#.*)?$")

    def bench_line_of(self, path: Sequence[object]) -> int | None:
        """The line of a key under [bench]: its own table if it has one, else the nearest enclosing one."""
        rest = list(path[1:])
        if rest[:1] == ["metric"] and len(rest) >= 2 and isinstance(rest[1], int):
            section = self._section(self._header("bench", "metric", array=True), rest[1])
            if section:
                key = rest[2] if len(rest) > 2 and isinstance(rest[2], str) else None
                return self._find_key(*section, key) or section[0]
        if rest[:1] == ["profiles"] and len(rest) >= 2 and isinstance(rest[1], str):
            section = self._section(self._header("bench", "profiles", rest[1]))
            if section:
                key = rest[2] if len(rest) > 2 and isinstance(rest[2], str) else None
                return self._find_key(*section, key) or section[0]
        if len(rest) >= 1 and isinstance(rest[0], str):
            section = self._section(self._header("bench", rest[0]))
            if section:
                key = rest[1] if len(rest) > 1 and isinstance(rest[1], str) else None
                return self._find_key(*section, key) or section[0]
        section = self._section(self._header("bench"))
        if section is None:
            return None
        key = rest[0] if rest and isinstance(rest[0], str) else None
        return self._find_key(*section, key) or section[0]

    def top_line_of(self, key: str | None) -> int | None:
        end = self.headers[0] if self.headers else len(self.lines)
        for i in range(end):
            if self._TABLE.match(self.lines[i]):
                end = i
                break
        return self._find_key(0, end, key)
