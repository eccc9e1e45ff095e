"""Load a manifest: TOML -> JSON Schema -> semantic checks -> frozen values.

The schema (``schema.json``, shipped in the package) is enforced on every
load, and every error names the file, the key path (``patch[2].class``,
counting ``[[patch]]`` tables from 1) and, where it can be found, the line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.errors import ManifestError, UsageError

if TYPE_CHECKING:
    from patchkit.manifest.bench import BenchConfig
    from patchkit.operations.base import Operation
    from patchkit.results import Reason

SCHEMA_PATH = Path(__file__).with_name("schema.json")
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout, when patchkit runs from one
# A wheel ships the bundled manifests/ and patches/ here (copied by setup.py's
# build step), laid out as at the top of the checkout so `../patches/x.py`
# sources resolve the same way.
BUNDLED_ROOT = Path(__file__).resolve().parents[1] / "_bundled"


@dataclass(frozen=True)
class Patch:
    index: int  # 1-based position among [[patch]] tables
    id: str
    op: Operation
    file: str
    required: bool
    requires: tuple[str, ...]
    description: str | None
    hints: Mapping[Reason, str] = field(default_factory=dict)
    group: str | None = None  # the [[group]] this patch is a variant in

    @property
    def op_name(self) -> str:
        return self.op.op_name


@dataclass(frozen=True)
class Group:
    """Variants of one change: members (patch or group ids) that carry it to different upstream locations."""

    index: int  # 1-based position among [[group]] tables
    id: str
    members: tuple[str, ...]
    required: bool  # its own, or (nested) that of the outermost group
    description: str | None
    parent: str | None = None  # the group this group is a member of


@dataclass(frozen=True)
class Manifest:
    path: Path
    display: str
    name: str
    summary: str | None
    patches: tuple[Patch, ...]
    digest: str  # over the manifest and every payload it uses
    groups: tuple[Group, ...] = ()
    bench: BenchConfig | None = None  # the [bench] table, if any

    def files(self) -> list[str]:
        """Target files in first-use order."""
        return list(dict.fromkeys(p.file for p in self.patches))

    def patch(self, patch_id: str) -> Patch:
        for patch in self.patches:
            if patch.id == patch_id:
                return patch
        known = [p.id for p in self.patches]
        close = close_matches(patch_id, known)
        raise UsageError(
            f"manifest {self.name} has no patch {patch_id!r}",
            hint=f"did you mean {close[0]!r}?" if close else f"patches: {', '.join(known)}",
        )

    def group(self, group_id: str) -> Group | None:
        for group in self.groups:
            if group.id == group_id:
                return group
        return None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.display, "digest": self.digest}


# -- resolution -----------------------------------------------------------------


def close_matches(word: str, options: Iterable[str]) -> list[str]:
    """The closest of ``options`` to a mistyped ``word`` (difflib, loaded only when a manifest is wrong)."""
    import difflib

    return difflib.get_close_matches(word, list(options), n=1)


def resolve_manifest(spec: str, cwd: Path | None = None) -> Path:
    """A path, or a bare name looked up as manifests/NAME.toml: in ``cwd``, then in
    patchkit's checkout, then in the copy bundled with an installed wheel."""
    cwd = cwd or Path.cwd()
    looks_like_path = spec.endswith(".toml") or "/" in spec or os.sep in spec
    if looks_like_path:
        path = (cwd / spec).resolve()
        if path.is_dir():
            raise UsageError(
                f"manifest {spec} is a directory, not a .toml file",
                hint="give the path of a manifest file inside it, e.g. -m DIR/NAME.toml",
            )
        if not path.is_file():
            raise UsageError(
                f"manifest file {spec} does not exist", hint="give a path to a .toml file or a manifest name"
            )
        return path
    candidates = []
    checkout = [PROJECT_ROOT] if (PROJECT_ROOT / "pyproject.toml").is_file() else []
    bundled = [BUNDLED_ROOT] if BUNDLED_ROOT.is_dir() else []
    for root in dict.fromkeys([cwd, *checkout, *bundled]):
        candidate = root / "manifests" / f"{spec}.toml"
        candidates.append(candidate)
        if candidate.is_file():
            return candidate.resolve()
    known = sorted({p.stem for c in candidates if c.parent.is_dir() for p in c.parent.glob("*.toml")})
    close = close_matches(spec, known)
    hint = (
        f"did you mean {close[0]!r}?"
        if close
        else (f"known manifests: {', '.join(known)}" if known else "give a path to a .toml file")
    )
    raise UsageError(f"no manifest named {spec!r} (looked for {', '.join(str(c) for c in candidates)})", hint=hint)


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows); keep the absolute path
        return str(path)


# -- loading --------------------------------------------------------------------


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    # The schema itself is checked against its metaschema by the test suite,
    # not on every run (it costs as much as validating a manifest).
    return jsonschema.validators.validator_for(schema)(schema)


def load_manifest(
    spec: str | Path,
    cwd: Path | None = None,
    *,
    valid_cache: Path | None = None,
    on_files: Callable[[list[str]], None] | None = None,
) -> Manifest:
    """Load and check a manifest.  ``valid_cache``: a directory remembering
    manifests that passed the JSON Schema (see ``schema_checked_before``).

    ``on_files`` gets the target files (``Manifest.files()``'s list, by the
    schema-checked tables) before the payloads are read and the operations
    built: a range check starts git on them while the rest loads.  The load
    may still fail after it; the caller then drops what it started."""
    path = spec if isinstance(spec, Path) else resolve_manifest(spec, cwd)
    path = path.resolve()
    display = _display(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read manifest {display}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise ManifestError(f"not UTF-8 (byte {exc.start})", file=display) from None
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(match.group(1)) if match else None
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        col = f", column {match.group(2)}" if match else ""
        raise ManifestError(f"invalid TOML: {message}{col}", file=display, line=line) from None

    lines = _Lines(text)
    if not schema_checked_before(raw, valid_cache):
        _validate_schema(data, display, lines)
        remember_schema_checked(raw, valid_cache)
    if on_files is not None:
        on_files(list(dict.fromkeys(table["file"] for table in data["patch"])))
    # Imported once the tables are known good (and the target files handed on): not before.
    from patchkit.operations import operation
    from patchkit.operations.base import LoadContext
    from patchkit.operations.payload import PayloadCache
    from patchkit.results import Reason

    payloads = PayloadCache()
    patches: list[Patch] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(data["patch"], start=1):
        key = f"patch[{index}]"
        ctx = LoadContext(
            manifest_path=path,
            display=display,
            key=key,
            line_of=lambda name, i=index: lines.line_of(i, name),
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
    groups, patches = _load_groups(data.get("group", []), data["patch"], patches, seen, display, lines)
    known_ids = list(seen) + [g.id for g in groups]
    for patch in patches:
        for position, dep in enumerate(patch.requires, start=1):
            key = f"patch[{patch.index}].requires[{position}]"
            if dep == patch.id:
                raise ManifestError(
                    "a patch cannot require itself",
                    file=display,
                    key_path=key,
                    line=lines.line_of(patch.index, "requires"),
                )
            if dep not in known_ids:
                close = close_matches(dep, known_ids)
                raise ManifestError(
                    f"no patch or group has id {dep!r}",
                    file=display,
                    key_path=key,
                    line=lines.line_of(patch.index, "requires"),
                    hint=f"did you mean {close[0]!r}?" if close else None,
                )

    _check_composition(patches, display, lines)
    bench = None
    if "bench" in data:  # only `patchkit bench` manifests have one: the others never load its parser
        from patchkit.manifest.bench import parse_bench

        bench = parse_bench(data["bench"], display, lines.bench_line_of)

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
        bench=bench,
    )


def _load_groups(
    tables: list[dict[str, Any]],
    patch_tables: list[dict[str, Any]],
    patches: list[Patch],
    patch_index: dict[str, int],
    display: str,
    lines: _Lines,
) -> tuple[list[Group], list[Patch]]:
    """The [[group]] tables, checked; and the patches with their group and effective ``required``.

    A member is a patch id or a group id; each id is a member of at most one
    group, nesting has no cycles, and a member does not set ``required``
    itself: the outermost group's ``required`` decides for every variant.
    """

    def error(index: int, key: str | None, path: str, message: str, hint: str | None = None) -> ManifestError:
        return ManifestError(
            message, file=display, key_path=path, line=lines.line_of(index, key, table="group"), hint=hint
        )

    group_index: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):
        gid = table["id"]
        if gid in patch_index:
            raise error(index, "id", f"group[{index}].id", f"duplicate id {gid!r} (patch[{patch_index[gid]}] has it)")
        if gid in group_index:
            other = group_index[gid]
            raise error(index, "id", f"group[{index}].id", f"duplicate id {gid!r} (group[{other}] has it too)")
        group_index[gid] = index
    known = list(patch_index) + list(group_index)
    parent: dict[str, str] = {}
    for index, table in enumerate(tables, start=1):
        for position, member in enumerate(table["members"], start=1):
            path = f"group[{index}].members[{position}]"
            if member == table["id"]:
                raise error(index, "members", path, "a group cannot be its own member")
            if member not in known:
                close = close_matches(member, known)
                raise error(
                    index,
                    "members",
                    path,
                    f"no patch or group has id {member!r}",
                    f"did you mean {close[0]!r}?" if close else None,
                )
            if member in parent:
                owner = parent[member]
                raise error(
                    index,
                    "members",
                    path,
                    f"{member!r} is already a member of group[{group_index[owner]}] ({owner!r}); "
                    "an id can be a variant in one group only",
                    "nest the groups instead: make one group a member of the other",
                )
            parent[member] = table["id"]
    for gid in group_index:  # no cycles through nesting
        seen_ids, current = [gid], parent.get(gid)
        while current is not None:
            if current == gid:
                index = group_index[gid]
                raise error(
                    index,
                    "members",
                    f"group[{index}].members",
                    f"groups nest in a cycle: {' -> '.join([*seen_ids, gid])}",
                )
            seen_ids.append(current)
            current = parent.get(current)

    def root(member: str) -> dict[str, Any]:
        while member in parent:
            member = parent[member]
        return tables[group_index[member] - 1]

    for member, owner in parent.items():
        kind = "group" if member in group_index else "patch"
        index = group_index[member] if kind == "group" else patch_index[member]
        if "required" in (tables if kind == "group" else patch_tables)[index - 1]:
            top = root(member)
            raise ManifestError(
                f"{member!r} is a variant in group {owner!r} and takes `required` from group "
                f"{top['id']!r}; it cannot set its own",
                file=display,
                key_path=f"{kind}[{index}].required",
                line=lines.line_of(index, "required", table=kind),
                hint=f"remove it here and set `required` on group[{group_index[top['id']]}] ({top['id']!r})",
            )

    groups = [
        Group(
            index=index,
            id=table["id"],
            members=tuple(table["members"]),
            required=root(table["id"]).get("required", True),
            description=table.get("description"),
            parent=parent.get(table["id"]),
        )
        for index, table in enumerate(tables, start=1)
    ]
    patches = [
        replace(p, group=parent[p.id], required=root(p.id).get("required", True)) if p.id in parent else p
        for p in patches
    ]
    return groups, patches


def _schema_key(raw: bytes) -> str:
    return hashlib.sha256(SCHEMA_PATH.read_bytes() + b"\0" + raw).hexdigest()


def schema_checked_before(raw: bytes, cache: Path | None) -> bool:
    """Whether these exact manifest bytes passed this exact schema before.

    Schema validation is a pure function of the two, and importing jsonschema
    costs more than everything else ``patchkit guard`` does on a warm tree, so
    callers that run before every benchmark (the guard) keep a directory of
    marker files named by the hash of schema + manifest.  Everything after
    the schema (payloads, references, composition) is still checked.
    """
    return cache is not None and (cache / _schema_key(raw)).is_file()


def remember_schema_checked(raw: bytes, cache: Path | None) -> None:
    if cache is None:
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / _schema_key(raw)).touch()
    except OSError:
        pass  # a cache that cannot be written only costs time


def _prefixes(qualname: str) -> set[str]:
    parts = qualname.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def _check_composition(patches: list[Patch], display: str, lines: _Lines) -> None:
    """Refuse patch sets that cannot be idempotent.

    A patch that edits code an earlier patch of the same file adds (an
    insert into an added method, a list item on an added list) would, on the
    next run, make the earlier patch see "its" code changed and report a
    conflict.  Such code belongs in the earlier patch's payload, which the
    manifest's author owns.  Likewise two inserts at the same anchor and
    position could not tell their statements apart on the next run.
    """
    for later_index, later in enumerate(patches):
        for earlier in patches[:later_index]:
            if earlier.file != later.file:
                continue
            if earlier.op.needs_python != later.op.needs_python:
                raise ManifestError(
                    f"{later.file} has both a text patch (op diff) and a structured patch "
                    f"(patch[{earlier.index}] {earlier.id!r} and patch[{later.index}] {later.id!r}); "
                    "a diff edits text that the structured ops' syntax tree would not see",
                    file=display,
                    key_path=f"patch[{later.index}]",
                    line=lines.line_of(later.index, None),
                    hint="carry the whole change of this file in one op kind (all diff, or all structured)",
                )
            touched = set().union(*(_prefixes(q) for q in later.op.edits() | later.op.adds()))
            clash = sorted(earlier.op.adds() & touched)
            same_spot = earlier.op.same_spot(later.op)
            if clash:
                raise ManifestError(
                    f"edits {clash[0]}, which patch[{earlier.index}] ({earlier.id!r}) adds from its payload; "
                    "a later patch cannot change code an earlier one supplies (the next run could not recognise it)",
                    file=display,
                    key_path=f"patch[{later.index}]",
                    line=lines.line_of(later.index, None),
                    hint=f"make that change in patch[{earlier.index}]'s payload instead",
                )
            if same_spot:
                raise ManifestError(
                    f"inserts at the same anchor and position as patch[{earlier.index}] ({earlier.id!r})",
                    file=display,
                    key_path=f"patch[{later.index}]",
                    line=lines.line_of(later.index, "anchor"),
                    hint="put both sets of statements in one payload function and use one insert",
                )


# -- schema errors, worded ----------------------------------------------------------

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


def key_path(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _validate_schema(data: Mapping[str, Any], display: str, lines: _Lines) -> None:
    errors = list(_validator().iter_errors(data))
    if not errors:
        return
    # When an op's own keys fail, 2020-12 also reports them as "unevaluated";
    # such an error that names no actually unknown key is noise.
    errors = [e for e in errors if not _spurious(e)] or errors
    errors.sort(key=lambda e: (_PRIORITY.get(e.validator, 0), _sort_path(e.absolute_path)))
    error = errors[0]
    path = list(error.absolute_path)
    message, key, hint, line_key = _word(error, data)
    if key is not None:
        path.append(key)
    table = path[0] if len(path) >= 2 and path[0] in ("patch", "group") and isinstance(path[1], int) else None
    leaf = path[-1] if path and isinstance(path[-1], str) else None
    if table is not None:
        leaf = path[2] if len(path) > 2 and isinstance(path[2], str) else None
        line = lines.line_of(path[1] + 1, line_key or leaf, table=str(table))
    elif path[:1] == ["bench"]:
        line = lines.bench_line_of(path)
    else:
        line = lines.top_line_of(leaf)
    raise ManifestError(message, file=display, key_path=key_path(path) or None, line=line, hint=hint)


def _spurious(error: Any) -> bool:
    if error.validator != "unevaluatedProperties" or not isinstance(error.instance, dict):
        return False
    known = _known_keys(error, error.instance)
    return all(k in known for k in error.instance)


def _sort_path(path: Iterable[Any]) -> tuple[Any, ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


def _word(error: Any, data: Mapping[str, Any]) -> tuple[str, str | int | None, str | None, str | None]:
    """(message, extra key to append to the path, hint, key whose line to show if not the path's)."""
    validator = error.validator
    instance = error.instance
    path = list(error.absolute_path)
    leaf = path[-1] if path else None
    if validator == "required":
        missing = re.search(r"'([^']+)' is a required property", error.message)
        name = missing.group(1) if missing else "?"
        op = instance.get("op") if isinstance(instance, dict) else None
        common = _validator().schema["$defs"]["patch"]["properties"]
        what = f" for op {op!r}" if op and name not in common and leaf != "patch" else ""
        hint = None
        if isinstance(instance, dict):
            known = _known_keys(error, instance)
            typo = close_matches(name, [k for k in instance if k not in known])
            if typo:
                hint = f"the table has {typo[0]!r}: did you mean {name!r}?"
        return f"missing required key {name!r}{what}", name, hint, typo[0] if typo else None
    if validator in ("unevaluatedProperties", "additionalProperties"):
        known = _known_keys(error, instance)
        extra = sorted(k for k in instance if k not in known) if isinstance(instance, dict) else []
        name = extra[0] if extra else "?"
        close = close_matches(name, sorted(known))
        op = instance.get("op") if isinstance(instance, dict) else None
        scope = f" for op {op!r}" if op else ""
        hint = f"did you mean {close[0]!r}?" if close else f"allowed keys{scope}: {', '.join(sorted(known))}"
        return f"unknown key{scope}", name, hint, None
    if validator == "enum" and leaf == "hints" and isinstance(instance, str):
        # propertyNames: the bad *key* of the hints table
        return (
            f"{instance!r} is not a reason code",
            instance,
            _reason_codes(),
            None,
        )
    if validator == "enum":
        allowed = error.validator_value
        shown = repr(instance)
        options = [str(a) for a in allowed]
        close = (
            close_matches(str(instance), options)
            or [o for o in options if str(instance) and o.startswith(str(instance))][:1]
        )
        hint = f"did you mean {close[0]!r}?" if close else None
        label = "op" if leaf == "op" else "value"
        return f"unknown {label} {shown}; expected one of: {', '.join(map(str, allowed))}", None, hint, None
    if validator == "const":
        if leaf == "schema":
            return (
                f"schema must be {error.validator_value} (this patchkit reads schema 1), got {instance!r}",
                None,
                None,
                None,
            )
        return f"must be {error.validator_value!r}", None, None, None
    if validator == "type":
        return f"must be {_a(error.validator_value)}, got {_type_name(instance)}", None, None, None
    if validator == "pattern" and path[:1] == ["bench"]:
        if path[-1:] == ["profiles"]:  # propertyNames: the bad key itself
            return f"{instance!r} is not a profile name", instance, "use a-z, 0-9, '.', '_' and '-'", None
        named = next((p for p in reversed(path) if isinstance(p, str)), "")
        return f"{instance!r} {_BENCH_PATTERN_MESSAGES.get(named, 'has the wrong form')}", None, None, None
    if validator == "pattern":
        if len(path) >= 2 and path[-2] in ("members", "requires"):  # an id in a list
            leaf = "id"
        if leaf == "file" and ".py" not in str(error.validator_value):
            return f"{instance!r} must be a repo-relative path, without a leading '/' or '..' parts", None, None, None
        if leaf == "name" and path[:1] == ["patch"]:
            return f"{instance!r} must be a Python identifier", None, None, None
        return f"{instance!r} {_PATTERN_MESSAGES.get(str(leaf), 'has the wrong form')}", None, None, None
    if validator == "minProperties":
        return "must not be empty", None, None, None
    if validator == "exclusiveMinimum":
        return f"must be more than {error.validator_value}, got {instance!r}", None, None, None
    if validator == "minimum":
        return f"must be at least {error.validator_value}, got {instance!r}", None, None, None
    if validator in ("minItems", "minLength"):
        return "must not be empty", None, None, None
    if validator == "uniqueItems":
        return "lists the same value twice", None, None, None
    if validator == "oneOf" and leaf == "expect":
        hint = "run `patchkit digest FILE QUALNAME` on the upstream file"
        if isinstance(instance, list) and instance:
            pattern = re.compile(r"^sha256:[0-9a-f]{64}$")
            bad = next((i for i, v in enumerate(instance) if not (isinstance(v, str) and pattern.match(v))), None)
            if bad is not None:
                return f"{instance[bad]!r} is not a digest 'sha256:<64 hex digits>'", bad, hint, None
        return "must be a digest 'sha256:<64 hex digits>' or a list of them", None, hint, None
    if validator == "not":
        return "give either `position` or `before`, not both", "before", None, None
    if validator == "propertyNames":
        return (
            f"{instance!r} is not a reason code",
            None,
            _reason_codes(),
            None,
        )
    return error.message, None, None, None


def _known_keys(error: Any, instance: Any) -> set[str]:
    schema = _validator().schema
    if error.validator == "additionalProperties":
        return set(error.schema.get("properties", {}))
    known = set(schema["$defs"]["patch"]["properties"])
    op = instance.get("op") if isinstance(instance, dict) else None
    op_schema = schema["$defs"].get(f"op-{op}")
    if op_schema:
        known |= set(op_schema.get("properties", {}))
    return known


def _a(kind: Any) -> str:
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
    return names.get(kind, str(kind))


def _type_name(value: Any) -> str:
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


class _Lines:
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

    @staticmethod
    def _header(*names: str, array: bool = False) -> re.Pattern[str]:
        dotted = r"\s*\.\s*".join(f'(?:{re.escape(n)}|"{re.escape(n)}")' for n in names)
        if array:
            return re.compile(rf"^\s*\[\[\s*{dotted}\s*\]\]\s*(#.*)?$")
        return re.compile(rf"^\s*\[\s*{dotted}\s*\]\s*(#.*)?$")

    def bench_line_of(self, path: list[Any]) -> int | None:
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


def _reason_codes() -> str:
    from patchkit.results import Reason

    return "reason codes: " + ", ".join(r.value for r in Reason)
