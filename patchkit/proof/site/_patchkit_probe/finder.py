"""Import finding: every module file a process runs, recorded once, as it is found or as its loader reads it.

``Finder`` is the part of the probe that sits at the front of ``sys.meta_path``; ``install_path_stats``
records each source module from the stat ``SourceFileLoader`` makes anyway.  The probe's own parts (this
package) are never recorded: its entry point, recorded as ``probe``, stands for them.
"""

from __future__ import annotations

import os
import sys

from _patchkit_probe.writer import ProbeFault

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

OWN = __name__.partition(".")[0]  # this package: its modules are the probe's, not the program's
_stat = os.stat
_LEGACY = sys.version_info < (3, 12)  # the import system itself asks find_module-only finders before 3.12
try:  # every module-level lookup is guarded: an error here would stop the sitecustomize the probe shadows
    _SOURCE_LOADER: Any = sys.modules["_frozen_importlib_external"].SourceFileLoader
    # Without a cache tag the loader reads no .pyc and never calls path_stats: find_spec records then.
    _CACHE_TAG: str | None = sys.implementation.cache_tag
except Exception:  # pragma: no cover - CPython always has them; another interpreter: find_spec records all
    _SOURCE_LOADER, _CACHE_TAG = None, None


def own(name: str) -> bool:
    """Whether module ``name`` is one of the probe's parts."""
    return name.startswith(OWN) and (len(name) == len(OWN) or name[len(OWN)] == ".")


def site_dirs() -> list[str]:
    import site

    dirs = list(getattr(site, "getsitepackages", lambda: [])())
    if getattr(site, "ENABLE_USER_SITE", False):
        dirs.append(site.getusersitepackages())
    return dirs


class Finder:
    """The probe's import finding; mixed into ``Probe``, which holds the state it reads (``fd``, ``searching``,
    ``fault``, ``watch``, ``mains_seen``) and writes through (``record_file``, ``emit``, ``failed``)."""

    fd: int
    fault: str | None
    searching: set[str]
    mains_seen: set[str]
    watch: dict[str, Callable[[], None]]

    if TYPE_CHECKING:

        def record_file(self, kind: str, name: str, path: str, st: os.stat_result) -> None: ...
        def emit(self, record: dict[str, object]) -> None: ...
        def failed(self, exc: BaseException) -> None: ...

    def module(self, name: str, path: str | None, kind: str = "module") -> None:
        if not path or not os.path.isabs(path):
            return
        try:
            st = os.stat(path)
        except OSError:
            return
        if self.fd >= 0:
            self.record_file(kind, name, path, st)

    def mains(self) -> None:
        """The main script (``python FILE``) and, in a spawn child, the parent's main re-run as ``__mp_main__``:
        neither is found through ``sys.meta_path``."""
        for name in ("__main__", "__mp_main__"):
            path = getattr(sys.modules.get(name), "__file__", None)
            if isinstance(path, str) and path not in self.mains_seen:
                self.mains_seen.add(path)
                self.module(name, os.path.abspath(path))

    def already_loaded(self) -> None:
        script = sys.argv[0] if sys.argv else ""
        if script not in ("", "-c", "-m") and os.path.isfile(script):
            self.mains_seen.add(script)
            self.module("__main__", os.path.abspath(script))
        for name, mod in list(sys.modules.items()):
            path = getattr(mod, "__file__", None)
            if isinstance(path, str) and not own(name):
                self.module(name, path)
        for name in ("importlib.util", "runpy"):  # a .pth line imported it before the probe started
            if name in sys.modules:
                self.watch[name]()
        for site_dir in site_dirs():
            try:
                names = sorted(os.listdir(site_dir))
            except OSError:
                continue
            for entry in names:
                if entry.endswith(".pth"):
                    self.pth(os.path.join(site_dir, entry))

    def pth(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                runs = any(line.startswith(("import ", "import\t")) for line in f)
        except OSError:
            return
        if runs:
            self.module(os.path.basename(path), path, kind="pth")

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        """Find the spec the other finders would find, record its file, and return it.

        Returning the spec (rather than None) means no finder is asked twice.
        A finder that asks the import system for the same name from inside its
        own search meets ``searching`` and gets None from us (an ``import``
        statement holds the module's lock while it searches, so two threads
        never search one name through here at once).  This runs once per
        module: a source module is left to ``install_path_stats``; any other
        file costs one stat, one f-string and one write.
        """
        searching = self.searching
        if name in searching:
            return None
        searching.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self:  # type: ignore[comparison-overlap]
                    continue
                find = getattr(finder, "find_spec", None)
                if find is not None:
                    spec = find(name, path, target)
                elif _LEGACY and getattr(finder, "find_module", None) is not None:
                    spec = self.legacy(finder, name, path)
                else:
                    continue
                if spec is not None:
                    break
            else:
                return None
        finally:
            searching.discard(name)
        try:
            if self.fault == "import":
                raise ProbeFault("injected fault at import")
            origin = spec.origin
            if recorded_at_load(spec):
                pass
            elif spec.has_location and origin.__class__ is str and self.fd >= 0 and not own(name):
                try:
                    st = _stat(origin)
                except OSError:  # inside a zip, or gone already: nothing on disk to vouch for
                    return spec
                self.record_file("module", name, origin, st)
            if name in self.watch:
                from _patchkit_probe.loaders import wrap_loader

                wrap_loader(self, spec, self.watch[name])
        except Exception as exc:
            self.failed(exc)
        return spec

    def legacy(self, finder: Any, name: str, path: object) -> object:
        """A legacy meta path finder (``find_module`` only, no ``find_spec``): asked as the import system of
        Python < 3.12 asks it, its loader made a spec; the module it loads is recorded by its file when the loader
        names one (``get_filename``), and named as not accounted for when it does not."""
        loader = finder.find_module(name, path)
        if loader is None:
            return None
        bootstrap = sys.modules["_frozen_importlib"]
        origin = None
        get_filename = getattr(loader, "get_filename", None)
        if get_filename is not None:
            try:
                origin = get_filename(name)
            except Exception:
                origin = None
        spec = bootstrap.spec_from_loader(name, loader, origin=origin)
        if origin.__class__ is str and os.path.isabs(origin):
            self.module(name, origin)
        else:
            message = (
                f"probe in pid {os.getpid()}: module {name} was loaded by the legacy finder "
                f"{type(finder).__module__}.{type(finder).__qualname__} (find_module), which names no file: "
                "what it ran is not accounted for"
            )
            self.emit({"kind": "error", "message": message, "title": None, "mp_name": None})
        return spec


def recorded_at_load(spec: object) -> bool:
    """A source module ``install_path_stats`` records as its loader reads it: finding it, or making its spec,
    is not running it (the spec of a ``.pyc`` or an extension module is still recorded when made)."""
    loader = getattr(spec, "loader", None)
    return _SOURCE_LOADER is not None and loader.__class__ is _SOURCE_LOADER and _CACHE_TAG is not None


def install_path_stats(probe: Finder) -> None:
    """Record each source module from the stat ``SourceFileLoader.get_code`` makes to check its ``.pyc``.

    Every source module it loads (imports, ``exec_module`` of a spec from
    ``spec_from_file_location``, ``runpy``'s module runs) goes through
    ``path_stats`` exactly once, just before its code runs, so the record is
    the size and mtime that code was judged fresh against, and the probe adds
    no stat of its own to the hottest path of a server's start-up.
    """

    def path_stats(self: object, path: str) -> dict[str, object]:
        st = _stat(path)  # an OSError propagates, as from the original: the loader then ignores the .pyc
        if probe.fd >= 0:
            name = str(getattr(self, "name", "?"))
            try:
                if not (name.startswith(OWN) and own(name)):
                    probe.record_file("module", name, path, st)
            except Exception as exc:
                probe.failed(exc)
        return {"mtime": st.st_mtime, "size": st.st_size}

    path_stats.__patchkit_probe__ = True  # type: ignore[attr-defined]
    if _SOURCE_LOADER is not None:
        _SOURCE_LOADER.path_stats = path_stats
