"""Which kind of file a path is, for a commit's footprint: Python source, a build or dependency input, or data.

A *build or dependency input* is a file that an install or a build reads to decide what ends up installed
or compiled: a change to it can change what a launch runs without any launch reading it (the build happened
before the launch, or happens in a compiler no probe sees), so it is never inert.  The list, with the
SGLang layout in mind (its Python package under ``python/``, ``python/pyproject.toml``; the CUDA kernels
under ``sgl-kernel/`` and the JIT kernels' ``.cuh`` under ``python/sglang/jit_kernel/``; the Rust gateway
``sgl-model-gateway/`` with Python bindings built by maturin; Dockerfiles under ``docker/``):

* dependency and packaging manifests, wherever they are: ``pyproject.toml`` (``pyproject_*.toml`` too:
  SGLang keeps one per platform), ``setup.py``, ``setup.cfg``, ``MANIFEST.in``, ``requirements*.txt`` and
  ``.in``, ``constraints*.txt``, lock files (``uv.lock``, ``poetry.lock``, ``Pipfile*``, ``Cargo.lock``),
  ``environment*.yml``, ``.gitmodules``;
* build scripts: ``CMakeLists.txt``, ``*.cmake``, ``Makefile``, ``meson.build``, ``build.rs``,
  ``Cargo.toml``;
* sources of a compiled extension, wherever they are: C, C++, CUDA, HIP, Cython, Rust (the gateway's
  Python bindings are a compiled extension), assembly and protobuf definitions (``.proto``: compiled into
  Python and C++ stubs by a build step);
* container recipes (``Dockerfile``, ``*.Dockerfile``): a hunt that builds its image per commit reads them,
  and nothing in a launch would show it.

A submodule (mode 160000) is a build input too: its tree is not in this repository's blobs.  A symbolic
link (mode 120000) gets the same "never inert" answer, for a different reason: whether a launch read
through it cannot be matched by path (a probe that resolves links records the target).

Everything else that is not Python (``.py``) is data: inert unless a launch read it.  Type stubs
(``.pyi``) are data: no interpreter runs them.
"""

from __future__ import annotations

import fnmatch
from enum import Enum


class PathKind(str, Enum):
    PYTHON = "python"
    BUILD = "build"
    DATA = "data"


BUILD_NAMES = frozenset(
    {
        "setup.py",
        "setup.cfg",
        "manifest.in",
        "pipfile",
        "pipfile.lock",
        "poetry.lock",
        "uv.lock",
        "pdm.lock",
        "cargo.toml",
        "cargo.lock",
        "build.rs",
        "cmakelists.txt",
        "makefile",
        "gnumakefile",
        "meson.build",
        "meson_options.txt",
        ".gitmodules",
    }
)
"""Build and dependency inputs by file name (compared in lower case)."""

BUILD_PATTERNS = (
    "pyproject.toml",
    "pyproject_*.toml",
    "requirements*.txt",
    "requirements*.in",
    "constraints*.txt",
    "environment*.yml",
    "environment*.yaml",
    "dockerfile",
    "dockerfile.*",
    "*.dockerfile",
)
"""Build and dependency inputs by file-name pattern (``fnmatch``, lower case)."""

BUILD_SUFFIXES = frozenset(
    {
        # C, C++ and their headers
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".c++",
        ".hh",
        ".hpp",
        ".hxx",
        ".h++",
        ".inl",
        ".ipp",
        ".tcc",
        # CUDA, HIP, SYCL, Metal
        ".cu",
        ".cuh",
        ".hip",
        ".metal",
        # Cython
        ".pyx",
        ".pxd",
        ".pxi",
        # Rust, assembly, protobuf, CMake modules
        ".rs",
        ".s",
        ".asm",
        ".proto",
        ".cmake",
    }
)
"""Sources of a compiled extension by suffix (lower case)."""

SUBMODULE_MODE = "160000"
SYMLINK_MODE = "120000"


def path_kind(path: str) -> PathKind:
    """The kind of ``path`` (repository-relative, ``/``-separated) by its name alone."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in BUILD_NAMES or any(fnmatch.fnmatchcase(name, pattern) for pattern in BUILD_PATTERNS):
        return PathKind.BUILD
    dot = name.rfind(".")
    suffix = name[dot:] if dot > 0 else ""
    if suffix in BUILD_SUFFIXES:
        return PathKind.BUILD
    if suffix == ".py":
        return PathKind.PYTHON
    return PathKind.DATA
