"""Evaluate a manifest against a source: one verdict per patch, no writes.

Per file, patches run in manifest order on one ``CodeState`` (an APPLY is
simulated so the next patch sees it).  Across files, ``requires`` is resolved
to a fixpoint: a patch whose requirement does not apply is held back with
DEPENDENCY, and the files it lives on are evaluated again without it.

``render`` turns the APPLY verdicts into new file bytes with libcst and then
re-evaluates its own output: every applied patch must read back as
ALREADY_APPLIED, or the file is refused with INTERNAL.  That check is what
lets verdicts be computed on the fast ast model while edits use libcst.
"""

from __future__ import annotations

import codecs
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from patchkit.engine.abandonable import report_phase
from patchkit.engine.groups import apply_groups, requirement_failure
from patchkit.engine.hints import annotate
from patchkit.errors import InternalError
from patchkit.manifest import Manifest, Patch
from patchkit.operations.base import Kind, Operation, Outcome, PythonOperation, TextOperation, TextState
from patchkit.operations.code import CodeState
from patchkit.results import PatchResult, Reason, Status, failed
from patchkit.sources import FileRead, FileState, Source


@dataclass(frozen=True)
class FileEval:
    """One target file's evaluation: what was read, its patches' own verdicts (before group semantics),
    and each analysed patch's outcome, which rendering turns into new bytes."""

    path: str
    read: FileRead
    patches: tuple[Patch, ...]
    results: tuple[PatchResult, ...]
    outcomes: tuple[Outcome[object] | None, ...]  # None where the patch was not analysed

    @property
    def changes(self) -> bool:
        return any(r.status is Status.APPLY for r in self.results)


def _result(
    patch: Patch,
    status: Status,
    reason: Reason | None,
    line: int | None,
    message: str,
    *,
    replaces_previous: bool = False,
) -> PatchResult:
    return PatchResult(
        patch=patch.id,
        op=patch.op_name,
        status=status,
        reason=reason,
        required=patch.required,
        file=patch.file,
        line=line,
        message=message,
        replaces_previous=replaces_previous,
    )


def decode(read: FileRead) -> tuple[str | None, tuple[Reason, int | None, str] | None]:
    """The file's text, or why it cannot be analysed."""
    if read.state is FileState.MISSING:
        return None, (Reason.FILE_NOT_FOUND, None, f"{read.path} does not exist")
    if read.state is FileState.SYMLINK:
        return None, (
            Reason.UNSUPPORTED_FILE,
            None,
            f"{read.path} is a symlink; patchkit edits regular files only (patch the file it points to)",
        )
    if read.state is FileState.OUTSIDE:
        return None, (Reason.UNSUPPORTED_FILE, None, read.note or f"{read.path} is outside the work tree")
    if read.state is FileState.NOT_FILE:
        return None, (Reason.UNSUPPORTED_FILE, None, f"{read.path} is a directory or a submodule, not a file")
    assert read.data is not None
    try:
        return read.data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = read.data.count(b"\n", 0, exc.start) + 1
        byte = read.data[exc.start : exc.start + 1].hex()
        return None, (
            Reason.UNSUPPORTED_FILE,
            line,
            f"{read.path} is not UTF-8 (byte 0x{byte} at line {line}); patchkit reads Python source as UTF-8",
        )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector while one file is parsed and analysed.

    ``ast.parse`` of a large file allocates a few hundred thousand nodes, and
    every allocation counts towards the collector's thresholds: with it on,
    much of a parse's time goes to scanning a heap that holds nothing to
    collect.  An ast holds no
    reference cycles (refcounting frees it), so nothing waits for the
    collector; it runs again, as usual, once the file is done.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def evaluate_file(
    read: FileRead,
    patches: Sequence[Patch],
    held: Mapping[str, str] | None = None,
    previous: Mapping[str, str] | None = None,
) -> FileEval:
    """Verdicts for the patches on one file.  ``held``: patch id -> why it is held back.

    ``previous``: digests of code patchkit's record says patchkit wrote -> when
    (an older payload version is patchkit's own code, replaced, never "upstream's").
    """
    with gc_paused():
        return _evaluate_file(read, patches, held, previous)


def _evaluate_file(
    read: FileRead,
    patches: Sequence[Patch],
    held: Mapping[str, str] | None,
    previous: Mapping[str, str] | None,
) -> FileEval:
    held = held or {}
    text, problem = decode(read)
    results: list[PatchResult] = []
    outcomes: list[Outcome[object] | None] = []
    state: CodeState | TextState | None = None  # the contract's state: text ops never parse Python
    if problem is None and patches and all(isinstance(p.op, TextOperation) for p in patches):
        state = TextState(read.path, text or "")
    elif problem is None:
        assert text is not None
        try:
            state = CodeState.parse(read.path, text)
            state.previous = dict(previous or {})
        except SyntaxError as exc:
            line = exc.lineno
            problem = (Reason.PARSE_ERROR, line, f"{read.path} is not valid Python: {exc.msg} at line {line}")
        except ValueError as exc:  # e.g. NUL bytes
            problem = (Reason.PARSE_ERROR, None, f"{read.path} is not valid Python: {exc}")
    last = patches[-1] if patches else None
    for patch in patches:
        if patch.id in held:
            # A held-back patch that would fail anyway keeps its own reason
            # (FILE_NOT_FOUND says more than DEPENDENCY); otherwise it is the
            # dependency that stops it.
            own = problem if state is None else None
            if state is not None:
                probe = patch.op.verdict(state)
                if probe.kind is Kind.FAIL:
                    own = (probe.reason, probe.line, probe.message)  # type: ignore[assignment]
                elif probe.kind is Kind.SKIP:
                    # Already in place: holding it back would write nothing either way.
                    results.append(_result(patch, Status.SKIP, probe.reason, probe.line, probe.message))
                    outcomes.append(probe)
                    continue
            if own is not None:
                reason, line, message = own
                results.append(_result(patch, failed(required=patch.required), reason, line, message))
            else:
                results.append(_result(patch, failed(required=patch.required), Reason.DEPENDENCY, None, held[patch.id]))
            outcomes.append(None)
            continue
        if state is None:
            assert problem is not None
            reason, line, message = problem
            results.append(_result(patch, failed(required=patch.required), reason, line, message))
            outcomes.append(None)
            continue
        outcome = patch.op.verdict(state)
        if outcome.kind is Kind.APPLY:
            if patch is not last:  # what the patches after it see; nothing reads the state after the last
                patch.op.compose(state, outcome, patch.id)
            status = Status.APPLY
        elif outcome.kind is Kind.SKIP:
            status = Status.SKIP
        else:
            status = failed(required=patch.required)
        results.append(
            _result(
                patch,
                status,
                outcome.reason,
                outcome.line,
                outcome.message,
                replaces_previous=outcome.replaces_previous,
            )
        )
        outcomes.append(outcome)
    return FileEval(read.path, read, tuple(patches), tuple(results), tuple(outcomes))


def resolve_requires(
    manifest: Manifest,
    reads: Mapping[str, object],
    evaluate: Callable[[Any, Sequence[Patch], Mapping[str, str]], Any] = evaluate_file,
) -> dict[str, Any]:
    """Evaluate every file, holding back patches whose requirements fail, to a fixpoint.

    ``reads`` maps each target file to whatever ``evaluate`` takes: a
    FileRead here, a (path, tree entry) key in a range check, which then
    reads the blob only on a cache miss.
    """
    by_file = manifest.by_file()
    held: dict[str, str] = {}
    evals: dict[str, Any] = {}
    dirty = set(by_file)
    while True:
        for path in dirty:
            local = {p.id: held[p.id] for p in by_file[path] if p.id in held}
            evals[path] = evaluate(reads[path], by_file[path], local)
        results = {r.patch: r for fe in evals.values() for r in fe.results}
        newly: dict[str, str] = {}
        for patch in manifest.patches:
            if patch.id in held:
                continue
            for dep in patch.requires:  # a patch or a group id
                why = requirement_failure(manifest, dep, results)
                if why is not None:
                    newly[patch.id] = why
                    break
        if not newly:
            return evals
        held.update(newly)
        # A patch held back reads as it read before unless it was APPLY: a
        # FAIL keeps its own reason and a SKIP stays SKIP (``evaluate_file``),
        # and only a simulated APPLY changed what the patches after it saw.
        # So a file is evaluated again (parsed again) only for an APPLY held back.
        dirty = {manifest.patch(pid).file for pid in newly if results[pid].status is Status.APPLY}
        if not dirty:
            return evals


@dataclass(frozen=True)
class Evaluation:
    """A manifest evaluated against one source: the verdicts in manifest order, and per file what they came from."""

    manifest: Manifest
    source: Source
    results: tuple[PatchResult, ...]  # manifest order
    files: Mapping[str, FileEval]

    def refused(self, strict: bool = False) -> bool:
        return any(r.status is Status.FAIL or (strict and r.status is Status.WARN) for r in self.results)


def order_results(manifest: Manifest, evals: Mapping[str, FileEval]) -> tuple[PatchResult, ...]:
    """The verdicts in manifest order, with group semantics applied (``engine/groups.py``).

    ``evals`` keep each file's own verdicts (what rendering and its re-check
    compare); only these merged results carry OTHER_VARIANT.
    """
    by_id = {r.patch: r for fe in evals.values() for r in fe.results}
    return apply_groups(manifest, [by_id[p.id] for p in manifest.patches])


def evaluate(
    manifest: Manifest, source: Source, *, hints: bool = True, previous: Mapping[str, str] | None = None
) -> Evaluation:
    """``previous``: see ``evaluate_file`` (from the work tree's record; never for commits)."""
    prefetch = getattr(source, "prefetch", None)
    if prefetch is not None:
        prefetch(manifest.files())
    reads = {path: source.read(path) for path in manifest.files()}
    report_phase("analysing")
    if previous:
        evals = resolve_requires(
            manifest, reads, lambda read, patches, held: evaluate_file(read, patches, held, previous)
        )
    else:
        evals = resolve_requires(manifest, reads)
    results = order_results(manifest, evals)
    if hints:
        results = annotate(manifest, results, source)
    return Evaluation(manifest, source, results, evals)


def payload_warnings(manifest: Manifest, source: Source | None = None) -> list[tuple[str, int, str]]:
    """(patch id, payload line, message) for what `validate` warns about (no verdict depends on it).

    With ``source``, an op that places payload code reads the target file there (where the payload's
    strings land depends on the target's indentation); a target that is missing or does not parse is
    as if there were no source."""
    targets: dict[str, CodeState | None] = {}
    out: list[tuple[str, int, str]] = []
    for patch in manifest.patches:
        target = None
        if source is not None and isinstance(patch.op, PythonOperation):
            if patch.file not in targets:
                text, problem = decode(source.read(patch.file))
                try:
                    targets[patch.file] = CodeState.parse(patch.file, text) if problem is None and text else None
                except (SyntaxError, ValueError):
                    targets[patch.file] = None
            target = targets[patch.file]
        out += [(patch.id, line, message) for line, message in patch.op.warnings(target)]
    return out


# -- rendering -------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """A file's new bytes, with the bytes they replace (the transaction checks the file still holds them)."""

    path: str
    before: bytes
    after: bytes
    mode: int | None


def render(evaluation: Evaluation) -> tuple[list[Rendered], Evaluation]:
    """New bytes for every file with an APPLY, verified by re-evaluation.

    Returns the rendered files and the evaluation, in which a file whose
    output does not verify has its APPLY results turned into FAIL INTERNAL
    (so the caller refuses and writes nothing).
    """
    rendered: list[Rendered] = []
    files = dict(evaluation.files)
    for path, fe in evaluation.files.items():
        if not fe.changes:
            continue
        report_phase("rewriting (libcst) and verifying")
        after = _render_text(fe) if all(isinstance(p.op, TextOperation) for p in fe.patches) else _render_python(fe)
        checked = after if isinstance(after, FileEval) else _checked(fe, after)
        if isinstance(checked, FileEval):
            files[path] = checked
        else:
            rendered.append(checked)
    if files != dict(evaluation.files):
        # Something did not render or verify: report it and write nothing.
        hints = {r.patch: r.hint for r in evaluation.results}
        results = tuple(r.with_hint(hints[r.patch]) for r in order_results(evaluation.manifest, files))
        return [], Evaluation(evaluation.manifest, evaluation.source, results, files)
    return rendered, evaluation


def _checked(fe: FileEval, after: bytes) -> Rendered | FileEval:
    """The rendered file, or ``fe`` with its APPLYs failed INTERNAL when ``after`` does not verify."""
    problem = _verify(fe, after)
    if problem is not None:
        return _fail_applied(fe, Reason.INTERNAL, problem)
    assert fe.read.data is not None
    return Rendered(fe.path, fe.read.data, after, fe.read.mode)


def _applied(fe: FileEval) -> Iterator[tuple[Operation[Any, Any], Outcome[Any]]]:
    """(op, outcome) of each patch of ``fe`` that APPLYs, in order.  The loader keeps the ops of a
    file to one contract (``Operation.same_form``), and ``render`` picked the writer by it."""
    for patch, outcome in zip(fe.patches, fe.outcomes, strict=True):
        if outcome is not None and outcome.kind is Kind.APPLY:
            yield patch.op, outcome


def _render_python(fe: FileEval) -> bytes | FileEval:
    """New bytes of a Python file from the ops' libcst transforms, or ``fe`` with its APPLYs failed."""
    import libcst

    assert fe.read.data is not None
    try:
        module = libcst.parse_module(fe.read.data)
    except libcst.ParserSyntaxError as exc:
        return _fail_applied(
            fe,
            Reason.PARSE_ERROR,
            f"libcst cannot parse {fe.path}: {str(exc).splitlines()[0]} "
            f"(line {exc.raw_line}); the file parses for Python's own parser, "
            "so please report this",
        )
    try:
        was_empty = not module.body
        for op, outcome in _applied(fe):
            assert isinstance(op, PythonOperation)
            module = op.transform(module, outcome)
        if was_empty and module.body:
            # libcst keeps "no newline at end of file" from an empty file; new code ends its lines.
            module = module.with_changes(has_trailing_newline=True)
        after = module.bytes
        if module.default_newline == "\r\n":
            after = own_line_endings(fe.read.data, after, module.default_newline.encode())
    except InternalError as exc:
        return _fail_applied(fe, Reason.INTERNAL, f"{exc.message}; nothing was written (a bug: please report it)")
    return after


def _render_text(fe: FileEval) -> bytes | FileEval:
    """New bytes of a file whose patches are all text ops, or ``fe`` with its APPLYs failed (a bug)."""

    assert fe.read.data is not None
    text, _problem = decode(fe.read)
    assert text is not None
    try:
        for op, outcome in _applied(fe):
            assert isinstance(op, TextOperation)
            text = op.transform_text(text, outcome)
    except InternalError as exc:
        return _fail_applied(fe, Reason.INTERNAL, f"{exc.message}; nothing was written (a bug: please report it)")
    bom = codecs.BOM_UTF8 if fe.read.data.startswith(codecs.BOM_UTF8) else b""
    return bom + text.encode("utf-8")


def own_line_endings(before: bytes, after: bytes, newline: bytes) -> bytes:
    """Give every line patchkit added the file's line ending.

    libcst writes the structure's newlines in the file's style, but copies a
    multi-line string from the payload verbatim, with the payload's LF.  Only
    lines that are new (not in ``before``, by a line diff) are touched: a file
    that already mixes endings keeps its own lines as they were.  Python reads
    CRLF inside a string literal as LF, so the code means the same.
    """
    if before.count(b"\n") == before.count(newline):
        # Every line of the file had the ending (the usual case): every bare LF is new.
        return after.replace(newline, b"\n").replace(b"\n", newline)
    import difflib

    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    out: list[bytes] = []
    matcher = difflib.SequenceMatcher(None, old, new)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        for line in new[j1:j2]:
            if tag != "equal" and line.endswith(b"\n") and not line.endswith(b"\r\n"):
                line = line[:-1] + newline
            out.append(line)
    return b"".join(out)


def _verify(fe: FileEval, after: bytes) -> str | None:
    held = {r.patch: r.message for r in fe.results if r.reason is Reason.DEPENDENCY}
    # What this run writes is patchkit's own from now on (the record will say so): an op that tells
    # its own code from upstream's by the record (edit-function) reads it back as ALREADY_APPLIED.
    written = {code: "by this run" for op, _outcome in _applied(fe) for code in op.own_code()}
    again = evaluate_file(replace(fe.read, data=after), fe.patches, held, written)
    for old, new in zip(fe.results, again.results, strict=True):
        if old.status is Status.APPLY:
            ok = new.status is Status.SKIP and new.reason is Reason.ALREADY_APPLIED
            expected = "SKIP ALREADY_APPLIED"  # what the next run will say
        elif old.status is Status.SKIP:
            ok = new.status is Status.SKIP
            expected = f"SKIP {old.reason.value if old.reason else ''}"
        else:
            ok = not new.ok
            expected = old.status.value
        if not ok:
            got = f"{new.status.value} {new.reason.value if new.reason else ''}".strip()
            return (
                f"patchkit's edit of {fe.path} did not verify: after editing, patch {old.patch} reads back as "
                f"{got} ({new.message}), expected {expected}; nothing was written (a bug: please report it)"
            )
    return None


def _fail_applied(fe: FileEval, reason: Reason, message: str) -> FileEval:
    results = tuple(
        PatchResult(r.patch, r.op, Status.FAIL, reason, r.required, r.file, r.line, message)
        if r.status is Status.APPLY
        else r
        for r in fe.results
    )
    return FileEval(fe.path, fe.read, fe.patches, results, fe.outcomes)
