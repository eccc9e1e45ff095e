"""Load a manifest: TOML -> JSON Schema -> semantic checks -> frozen values.

The schema (``schema.json``, shipped in the package) is enforced on every
load, and every error names the file, the key path (``patch[2].class``,
counting ``[[patch]]`` tables from 1) and, where it can be found, the line.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.errors import ManifestError, PatchkitError, UsageError
from patchkit.manifest.groups import check_composition, check_requires, load_groups
from patchkit.manifest.locate import Lines
from patchkit.manifest.model import Manifest, Patch, bench_given
from patchkit.manifest.resolve import display_path, resolve_manifest
from patchkit.manifest.schema_errors import SCHEMA_PATH, validate_schema
from patchkit.results import Reason

if TYPE_CHECKING:
    from patchkit.manifest.bench import BenchConfig


def load_manifest(
    spec: str | Path,
    cwd: Path | None = None,
    *,
    valid_cache: Path | None = None,
    on_files: Callable[[list[str]], None] | None = None,
) -> Manifest:
    """Load and check a manifest.  ``valid_cache``: a directory remembering
    manifests that passed the JSON Schema and the ``[bench]`` checks (see ``checked_marker``).

    ``on_files`` gets the target files (``Manifest.files()``'s list, by the
    schema-checked tables) before the payloads are read and the operations
    built: a range check starts git on them while the rest loads.  The load
    may still fail after it; the caller then drops what it started."""
    path = spec if isinstance(spec, Path) else resolve_manifest(spec, cwd)
    path = path.resolve()
    display = display_path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read manifest {display}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message, line = _not_utf8(raw, exc.start)
        raise ManifestError(message, file=display, line=line) from None
    if raw.startswith(codecs.BOM_UTF8):  # some Windows editors write one; Python's TOML reader refuses it
        message = (
            "the manifest starts with a UTF-8 byte-order mark, which Python's TOML reader refuses; save it without one"
        )
        raise ManifestError(message, file=display, line=1)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(match.group(1)) if match else None
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        col = f", column {match.group(2)}" if match else ""
        raise ManifestError(f"invalid TOML: {message}{col}", file=display, line=line) from None

    lines = Lines(text)
    marker = checked_marker(raw, valid_cache)
    checked = marker is not None and marker.is_file()
    if not checked:
        validate_schema(data, display, lines)
    if on_files is not None:
        on_files(list(dict.fromkeys(table["file"] for table in data["patch"])))
    # The operations registry is a cold boundary: imported once the tables are known good
    # and the target files handed on, so git works on them meanwhile.
    from patchkit.operations import operation
    from patchkit.operations.base import LoadContext
    from patchkit.operations.payload import PayloadCache

    payloads = PayloadCache()
    patches: list[Patch] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(data["patch"], start=1):
        key = f"patch[{index}]"
        ctx = LoadContext(
            manifest_path=path,
            display=display,
            key=key,
            line_of=partial(lines.line_of, index),
            payloads=payloads,
        )
        patch_id = table["id"]
        if patch_id in seen:
            ctx.error("id", f"duplicate id {patch_id!r} (patch[{seen[patch_id]}] has it too)")
        seen[patch_id] = index
        file = table["file"]
        if "\\" in file or file != Path(file).as_posix() or file.startswith("./"):
            ctx.error("file", f"{file!r} must be a plain repo-relative path with '/' separators")
        op = operation(table["op"]).from_table(table, ctx)
        requires = tuple(table.get("requires", ()))
        patches.append(
            Patch(
                index=index,
                id=patch_id,
                op=op,
                file=file,
                required=table.get("required", True),
                requires=requires,
                description=table.get("description"),
                hints={Reason(k): v for k, v in table.get("hints", {}).items()},
            )
        )
    groups, patches = load_groups(data.get("group", []), data["patch"], patches, seen, display, lines)
    check_requires(patches, list(seen) + [g.id for g in groups], display, lines)
    check_composition(patches, display, lines)
    bench_parser = _bench_parser(data.get("bench"), display, lines)
    if not checked:
        bench_parser = partial(bench_given, bench_parser())  # a bad [bench] stops every command, as any key does
        remember_checked(marker)

    digest = hashlib.sha256()
    digest.update(raw)
    for payload in sorted(payloads.all(), key=lambda p: str(p.path)):
        digest.update(b"\0" + os.path.relpath(payload.path, path.parent).encode() + b"\0" + payload.sha256.encode())
    return Manifest(
        path=path,
        display=display,
        name=data["name"],
        summary=data.get("summary"),
        patches=tuple(patches),
        digest="sha256:" + digest.hexdigest(),
        groups=tuple(groups),
        bench_parser=bench_parser,
    )


def _bench_parser(table: dict[str, object] | None, display: str, lines: Lines) -> Callable[[], BenchConfig | None]:
    return bench_given if table is None else partial(_parse_bench, table, display, lines)


def _parse_bench(table: dict[str, object], display: str, lines: Lines) -> BenchConfig:
    # Only a manifest with a [bench] table imports its parser, and only when the table is built.
    from patchkit.manifest.bench import parse_bench

    return parse_bench(table, display, lines.bench_line_of)


@contextmanager
def bad_manifest_first(spec: str | Path) -> Iterator[None]:
    """Run a step that precedes the manifest's load (opening the repository, starting git);
    if it fails, a bad manifest is what gets reported, as by every command, whatever the repo."""
    try:
        yield
    except PatchkitError:
        load_manifest(spec)
        raise


# What a marker in ``valid_cache`` vouches for: the manifest's bytes passed these rules.
BENCH_RULES = Path(__file__).with_name("bench.py")


def checked_marker(raw: bytes, cache: Path | None) -> Path | None:
    """The marker file that says these exact manifest bytes passed this exact schema and ``[bench]``
    checks before (it exists, then), or None where nothing is remembered.

    Both are pure functions of the manifest's bytes and their rules (``schema.json``, ``bench.py``),
    and importing jsonschema costs more than everything else ``patchkit guard`` does on a warm tree,
    so callers that run before every benchmark (the guard, the range check) keep a directory of
    marker files named by the hash of the rules and the manifest.  With a marker, the schema is not
    run again and ``Manifest.bench`` is built on first use: the guard never builds it.  Everything
    else (payloads, references, composition) is still checked on every load.
    """
    if cache is None:
        return None
    try:
        rules = SCHEMA_PATH.read_bytes() + b"\0" + BENCH_RULES.read_bytes()
    except OSError:
        return None  # no source to name the rules by (a bytecode-only install): nothing is remembered
    return cache / hashlib.sha256(rules + b"\0" + raw).hexdigest()


def remember_checked(marker: Path | None) -> None:
    if marker is None:
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # a cache that cannot be written only costs time


def _not_utf8(raw: bytes, start: int) -> tuple[str, int | None]:
    """What a manifest that is not UTF-8 is instead, and the line of its first bad byte (None: the whole file)."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "the manifest is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8", None
    line = raw.count(b"\n", 0, start) + 1
    column = start - (raw.rfind(b"\n", 0, start) + 1) + 1
    return f"not UTF-8: byte 0x{raw[start]:02x} at column {column}; save the manifest as UTF-8", line
