"""Bytecode that a process ran in place of the source file the accounting vouched for.

The accounting vouches for a module by its source: the commit's blob, the
RECORD's hash, a clean editable checkout.  But Python runs the cached
``__pycache__/NAME.TAG.pyc`` whenever it takes it as fresh, and for a
timestamp ``.pyc`` (CPython's and pip's default) fresh means only that the
source's size, and its mtime in whole seconds, equal what the ``.pyc``
recorded.  A source rewritten with the same size within the second its
``.pyc`` was written (an edit undone by a script, a checkout back and forth
between two commits) leaves a ``.pyc`` of other code, which Python runs while
the source on disk hashes clean.  An ``unchecked-hash`` ``.pyc`` is never
compared with its source at all.

So, for each source file a process loaded, the ``.pyc`` that process would
have read (its interpreter's cache tag, optimisation level and
``pycache_prefix``, which the probe records) is judged:

* **timestamp**: stale when its header matches the source (Python took it)
  yet it was written before the source's last change (its own mtime is
  older).  Where this interpreter can read it (the same magic number), its
  code is compared with the source compiled here: equal code is not stale
  (a ``touch`` that kept the text).  Where it cannot, it is reported as
  unverifiable bytecode: removing it costs one recompile.
* **unchecked hash**: stale when the source's hash differs (same magic only).
* **checked hash**: Python compares it itself.

Only the header is read for a file that is not suspect (16 bytes), so this
costs one ``open`` per loaded source file beside the digests the accounting
already takes.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
from collections.abc import Iterable
from dataclasses import dataclass

HEADER = 16
_UNCHECKED_HASH = 0b01
_CHECKED_HASH = 0b11


@dataclass(frozen=True)
class BytecodeConfig:
    """Where one interpreter looks for a source's ``.pyc`` (``sys.implementation.cache_tag``, ``-O`` level,
    ``sys.pycache_prefix``), as the probe saw them in a process."""

    tag: str
    optimize: int = 0
    prefix: str | None = None

    def cached(self, source: str) -> str:
        """The ``.pyc`` this interpreter reads for ``source`` (``importlib.util.cache_from_source``'s rule)."""
        head, tail = os.path.split(source)
        base = tail.rpartition(".")[0] or tail
        opt = f".opt-{self.optimize}" if self.optimize else ""
        name = f"{base}.{self.tag}{opt}.pyc"
        if self.prefix:
            head = os.path.abspath(head)
            if head[1:2] == ":":  # a drive (Windows): pycache_prefix drops it
                head = head[2:]
            return os.path.join(self.prefix, head.lstrip(os.sep), name)
        return os.path.join(head, "__pycache__", name)


def stale_bytecode(source: str, st: os.stat_result, configs: Iterable[BytecodeConfig]) -> str | None:
    """Why a ``.pyc`` of other code ran in place of ``source`` (whose stat is ``st``), or None."""
    if not source.endswith(".py"):
        return None
    for config in configs:
        why = _judge(source, st, config.cached(source), config.optimize)
        if why is not None:
            return why
    return None


def _judge(source: str, st: os.stat_result, pyc: str, optimize: int) -> str | None:
    try:
        with open(pyc, "rb") as f:
            header = f.read(HEADER)
            pyc_mtime_ns = os.fstat(f.fileno()).st_mtime_ns
    except OSError:
        return None  # no .pyc: the source ran
    return judge_header(source, st, pyc, header, pyc_mtime_ns, optimize)


def judge_header(
    source: str, st: os.stat_result, pyc: str, header: bytes, pyc_mtime_ns: int, optimize: int
) -> str | None:
    """Why ``pyc`` (its first ``HEADER`` bytes and its mtime given) is other code that Python runs in place
    of ``source``, or None; the rest of ``pyc``, or ``source``, is read only when the header makes it a suspect."""
    try:
        if len(header) < HEADER:
            return None
        same_magic = header[:4] == importlib.util.MAGIC_NUMBER
        flags = int.from_bytes(header[4:8], "little")
        if flags == 0:
            recorded_mtime = int.from_bytes(header[8:12], "little")
            recorded_size = int.from_bytes(header[12:16], "little")
            taken = recorded_mtime == (int(st.st_mtime) & 0xFFFFFFFF) and recorded_size == (st.st_size & 0xFFFFFFFF)
            if not taken or pyc_mtime_ns >= st.st_mtime_ns:
                return None
            if not same_magic:
                return (
                    f"unverifiable bytecode: {pyc} was written before this file's last change, which kept its "
                    "size and its second, so Python ran it in place of the file; another Python wrote it, so "
                    "patchkit cannot compare its code: remove it (it is recompiled)"
                )
            with open(pyc, "rb") as f:
                body = f.read()[HEADER:]
            if _same_code(source, body, optimize):
                return None
            return (
                f"stale bytecode: {pyc} holds other code than this file, and was written before the file's last "
                "change, which kept its size and its second: Python ran it in place of the file; remove it "
                "(it is recompiled)"
            )
        if flags == _UNCHECKED_HASH and same_magic:
            with open(source, "rb") as src:
                if importlib.util.source_hash(src.read()) != header[8:16]:
                    return (
                        f"stale bytecode: {pyc} is unchecked-hash bytecode of other source: Python runs it "
                        "without reading this file; remove it, or compile with --invalidation-mode checked-hash"
                    )
        return None  # checked-hash: Python compares it with the source itself
    except (OSError, ValueError, EOFError, TypeError, SyntaxError):
        return None  # a .pyc (or source) this cannot read


def source_of(pyc: str, tag: str) -> tuple[str, int] | None:
    """``pkg/__pycache__/mod.TAG[.opt-N].pyc`` -> (``pkg/mod.py``, N), for this interpreter's ``tag``; else None."""
    head, name = os.path.split(pyc)
    if os.path.basename(head) != "__pycache__" or not name.endswith(".pyc"):
        return None
    stem = name[:-4]
    optimize = 0
    base, dot, last = stem.rpartition(".")
    if dot and last.startswith("opt-") and last[4:].isdigit():
        optimize, stem = int(last[4:]), base
    module, dot, found = stem.rpartition(".")
    if not dot or found != tag:
        return None
    return os.path.join(os.path.dirname(head), module + ".py"), optimize


def _same_code(source: str, body: bytes, optimize: int) -> bool:
    with open(source, "rb") as f:
        text = f.read()
    try:
        return bool(marshal.loads(body) == compile(text, source, "exec", dont_inherit=True, optimize=optimize))
    except (ValueError, EOFError, TypeError, SyntaxError):
        return False
