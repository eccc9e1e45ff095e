"""Wrappers the probe puts on a module once the program has imported it (never before): imported lazily.

``wrap_loader`` lets a watched module (``importlib.util``, ``runpy``, ``torch.distributed``) run, then patches
it; ``spec_from_file_location`` and ``run_path`` are wrapped so that a file run outside the import statement
(generated and plug-in code) is recorded like a module.
"""

from __future__ import annotations

import os
import sys

from _patchkit_probe.finder import Finder, recorded_at_load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def wrap_loader(probe: Finder, spec: object, then: Callable[[], None]) -> None:
    loader = getattr(spec, "loader", None)
    exec_module: Any = getattr(loader, "exec_module", None)
    if exec_module is None:
        return

    class Loader:
        """Delegates to the real loader; after the module ran, patches it and puts the real loader back."""

        def __getattr__(self, attr: str) -> object:
            return getattr(loader, attr)

        def create_module(self, spec: object) -> object:
            return loader.create_module(spec)  # type: ignore[union-attr]

        def exec_module(self, module: object) -> None:
            try:
                exec_module(module)
            finally:
                try:
                    module.__loader__ = loader  # type: ignore[attr-defined]
                    module_spec = getattr(module, "__spec__", None)
                    if module_spec is not None:
                        module_spec.loader = loader
                except Exception as exc:
                    probe.failed(exc)
            then()

    spec.loader = Loader()  # type: ignore[attr-defined]


def patch_importlib(probe: Finder) -> None:
    """``importlib.util.spec_from_file_location``: the file of each spec it makes (the import system's
    own finders call ``_bootstrap_external``'s, so ordinary imports never come through here)."""
    try:
        util = sys.modules.get("importlib.util")
        original = getattr(util, "spec_from_file_location", None)
        if original is None or getattr(original, "__patchkit_probe__", False):
            return

        def spec_from_file_location(*args: object, **kwargs: object) -> object:
            spec = original(*args, **kwargs)
            try:
                origin = getattr(spec, "origin", None)
                if origin.__class__ is str and not recorded_at_load(spec):
                    probe.module(str(getattr(spec, "name", "?")), os.path.abspath(origin))
            except Exception as exc:
                probe.failed(exc)
            return spec

        util.spec_from_file_location = like(spec_from_file_location, original)  # type: ignore[union-attr]
        probe.watch.pop("importlib.util", None)
    except Exception as exc:
        probe.failed(exc)


def patch_runpy(probe: Finder) -> None:
    """``runpy.run_path``: the file it runs (a directory's or a zip's ``__main__.py``: the directory's)."""
    try:
        runpy = sys.modules.get("runpy")
        original = getattr(runpy, "run_path", None)
        if original is None or getattr(original, "__patchkit_probe__", False):
            return

        def run_path(path_name: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                path = os.path.abspath(os.fspath(path_name))
                if os.path.isdir(path):
                    path = os.path.join(path, "__main__.py")
                run_name = kwargs.get("run_name") or (args[1] if len(args) > 1 else None)
                probe.module(str(run_name or "<run_path>"), path)
            except Exception as exc:
                probe.failed(exc)
            return original(path_name, *args, **kwargs)

        runpy.run_path = like(run_path, original)  # type: ignore[union-attr]
        probe.watch.pop("runpy", None)
    except Exception as exc:
        probe.failed(exc)


def like(wrapper: Any, original: Any) -> Any:
    """``wrapper`` named and documented as ``original`` (functools.wraps, without importing functools)."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(original, attr))
        except AttributeError:
            pass
    wrapper.__wrapped__ = original
    wrapper.__patchkit_probe__ = True
    return wrapper
