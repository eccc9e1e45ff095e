"""How much of the demo fixture's code is upstream SGLang's, line for line.

The demo history (``patchkit/demo/data/sglang``) needs upstream's file layout,
the names the manifests target and the exact statements they anchor on; its
other code is meant to be our own.  This counts, over every version of every
Python file the history writes, the long code lines (30+ characters once
stripped; not imports, defs, classes, decorators or comments) that are equal,
stripped and without a trailing comment, to a line of upstream's file at the
same path, and prints the share
per file and overall.  Exit status 1 when the overall share is above --max.

Upstream is read from unpacked SGLang trees (``<dir>/sglang/srt/...``, e.g. a
wheel from PyPI unpacked); a line counts if any of them has it.  Nothing of
upstream is stored in this repository.

    python tools/upstream_overlap.py DIR [DIR ...] [--max 0.10] [--show]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from patchkit.demo.history import Executable, FileValue, Symlink
from patchkit.demo.sglang import TIMELINE

SKIP_PREFIXES = ("import ", "from ", "def ", "async def ", "class ", "@", "#")
TRAILING_COMMENT = re.compile(r"\s+#[^'\"]*$")


def code_of(line: str) -> str:
    """A line stripped, without a trailing comment: a comment added to upstream's line leaves it upstream's."""
    return TRAILING_COMMENT.sub("", line.strip())


def long_code_lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        stripped = code_of(line)
        if len(stripped) >= 30 and not stripped.startswith(SKIP_PREFIXES):
            out.append(stripped)
    return out


def versions() -> Iterator[tuple[str, str]]:
    """(path, text) of every Python file version the demo history writes."""
    trees: dict[str, dict[str, FileValue]] = {}
    tips: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for commit in TIMELINE:
        base = commit.parent or tips.get(commit.branch)
        before = dict(trees[base]) if base else {}
        changes = commit.changes(before)
        after = {**before, **changes}
        after = {k: v for k, v in after.items() if v is not None}
        trees[commit.label] = after
        tips[commit.branch] = commit.label
        for path, value in changes.items():
            if value is None or isinstance(value, (Symlink, Executable, bytes)) or not path.endswith(".py"):
                continue
            if (path, value) not in seen:
                seen.add((path, value))
                yield path, value


def upstream_lines(roots: list[Path], path: str) -> set[str] | None:
    rel = path.removeprefix("python/")
    found: set[str] | None = None
    for root in roots:
        candidate = root / rel
        if candidate.is_file():
            found = (found or set()) | {code_of(line) for line in candidate.read_text(encoding="utf-8").splitlines()}
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream", nargs="+", type=Path, help="unpacked SGLang trees holding sglang/srt/...")
    parser.add_argument("--max", type=float, default=0.10, help="the highest overall share allowed")
    parser.add_argument("--show", action="store_true", help="print every shared line")
    args = parser.parse_args(argv)
    lines_by_path: dict[str, set[str]] = {}
    for path, text in versions():
        lines_by_path.setdefault(path, set()).update(long_code_lines(text))
    total = shared_total = 0
    for path in sorted(lines_by_path):
        upstream = upstream_lines(args.upstream, path)
        ours = lines_by_path[path]
        shared = sorted(ours & upstream) if upstream is not None else []
        total += len(ours)
        shared_total += len(shared)
        share = len(shared) / max(len(ours), 1)
        where = "no upstream file" if upstream is None else f"{len(shared)}/{len(ours)} = {share:.1%}"
        print(f"{path}: {where}")
        if args.show:
            for line in shared:
                print(f"    {line}")
    share = shared_total / max(total, 1)
    print(f"overall: {shared_total} of {total} distinct long code lines equal upstream's at its path = {share:.1%}")
    return 1 if share > args.max else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
