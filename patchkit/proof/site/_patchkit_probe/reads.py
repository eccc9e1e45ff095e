"""Files a process opens for reading, and the ``exec`` it makes, through an audit hook (``sys.addaudithook``).

The data files read at run time are recorded (and accounted like modules): text configs, chat templates; and
every other file read under the benchmarked tree, by path, for the coverage (docs/concepts/proof.md).
"""

from __future__ import annotations

import os
import sys

from _patchkit_probe.finder import site_dirs
from _patchkit_probe.writer import quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _patchkit_probe.probe import Probe

DATA_SUFFIXES = (".json", ".yaml", ".yml", ".txt", ".jinja", ".jinja2")
_stat = os.stat


def data_roots() -> tuple[str, ...]:
    """Where a data file read is recorded: the benchmarked tree (``PATCHKIT_BENCH_TREE``), the site directories,
    and the roots of ``PATCHKIT_PROBE_ROOTS`` (``os.pathsep``-separated: a model directory, say); each with a
    trailing separator, real paths and the paths as given."""
    roots = [os.environ.get("PATCHKIT_BENCH_TREE", ""), *site_dirs()]
    roots += os.environ.get("PATCHKIT_PROBE_ROOTS", "").split(os.pathsep)
    out: list[str] = []
    for root in roots:
        if root and os.path.isabs(root):
            for form in (os.path.normpath(root), os.path.realpath(root)):
                entry = form.rstrip(os.sep) + os.sep
                if entry not in out:
                    out.append(entry)
    return tuple(out)


def tree_roots() -> tuple[str, ...]:
    """The benchmarked tree (``PATCHKIT_BENCH_TREE``), as given and by its real path, each ending in a separator."""
    root = os.environ.get("PATCHKIT_BENCH_TREE", "")
    if not root or not os.path.isabs(root):
        return ()
    forms = {os.path.normpath(root).rstrip(os.sep) + os.sep, os.path.realpath(root).rstrip(os.sep) + os.sep}
    return tuple(sorted(forms))


def install_open_hook(probe: Probe) -> None:
    """Record the files a process opens for reading that tell what it ran, and each ``exec`` it makes.

    ``sys.addaudithook``: every ``open()``/``io.open``/``os.open``/``open_code``
    raises the ``open`` audit event with the path and mode (or flags), whoever
    opens it; a C library that calls ``fopen`` itself (a C extension reading a
    file) raises none and is not seen.  Recorded, once per path and process:

    * every file under the benchmarked tree (``PATCHKIT_BENCH_TREE``), whatever
      its suffix, but the ``.py`` and ``.pyc`` the import system reads (those
      are modules, recorded as they run): kind ``read``, its path only, so
      that a commit changing a file no launch read can be known as such; a
      data file (``DATA_SUFFIXES``) there is kind ``data`` as below.  A
      ``.py`` the program opens itself (a server that parses a module's
      source, ``inspect.getsource`` for a JIT compiler, a traceback's
      ``linecache``) is read: any change to it can change what ran.  The
      import system's own reads are told apart by the frame that opens the
      file (``FileLoader.get_data`` in ``importlib._bootstrap_external``),
      since both open it the same way (``FileIO``, mode ``r``);
    * each data file (``DATA_SUFFIXES``: a fused-MoE tuning config, a chat
      template, the model's ``config.json``) under the data roots
      (``data_roots``): kind ``data``, with its stat, accounted like a module.

    The hook runs for every audit event of the process, so it returns at the
    first test that fails: the event's name, then (an absolute path) the tree's
    prefix, then the suffix; a relative path is made absolute first.  A hook
    cannot be removed, so a probe without a file to write to never installs it.

    ``os.exec``: the process replaces itself; its next image writes the next
    file of its chain when the probe runs there (``exec``: the path executed),
    and one that does not (``-I``, another program) is an ``exec`` the probe
    did not follow, which the proof names.
    """
    roots = data_roots()
    tree = tree_roots()
    seen: set[str] = set()
    suffixes = DATA_SUFFIXES
    code = (".py", ".pyc")
    write_only = os.O_WRONLY | os.O_RDWR
    sep = os.sep

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event != "open":
            if event == "os.exec":
                executed(args)
            return
        path = args[0]
        if path.__class__ is not str:
            return
        try:
            full: str = path if path[:1] == sep else os.path.abspath(path)
            if full.startswith(tree):
                if full.endswith(code) and _opened_by_import():
                    return
                kind = "data" if full.endswith(suffixes) else "read"
            elif full.endswith(suffixes) and full.startswith(roots):
                kind = "data"
            else:
                return
            mode, flags = args[1], args[2]
            if mode.__class__ is str:
                if "r" not in mode or "+" in mode:
                    return
            elif flags.__class__ is int and flags & write_only:
                return
            if full in seen or probe.fd < 0:
                return
            seen.add(full)
            if kind == "data":
                probe.record_file("data", os.path.basename(full), full, _stat(full))
            else:
                probe.write(f'{{"kind": "read", "path": {quote(full)}}}\n'.encode("ascii"))
        except OSError:
            return  # gone, or not a file: open() itself will say so
        except Exception as exc:
            probe.failed(exc)

    def executed(args: tuple[object, ...]) -> None:
        try:
            path = args[0]
            name = os.fsdecode(path) if isinstance(path, (str, bytes)) else str(path)
            probe.emit({"kind": "exec", "path": name})
        except Exception as exc:
            probe.failed(exc)

    sys.addaudithook(hook)


def _opened_by_import() -> bool:
    """Whether the code that opens the file the audit hook is told of is the import system's (frozen, or its
    source with ``-X frozen_modules=off``).  Frame 2: this function's caller is the hook, its caller the opener;
    a file opened with no Python frame (the main script, opened by the interpreter) is not an import."""
    try:
        filename = sys._getframe(2).f_code.co_filename
    except ValueError:
        return False
    return filename.endswith(("importlib._bootstrap_external>", os.sep + "_bootstrap_external.py"))
