"""Which kind of file a path is, for a commit's footprint: Python source, a build or dependency input, or data.

A *build or dependency input* is a file that installing or building a Python distribution in the tree reads:
its packaging and dependency metadata, and the sources it compiles.  A hunt's environment may be built from
the tree (``pip install -e python``; ``sgl-kernel`` built for the commit), and kernels are compiled at run time
from sources in the tree (SGLang's ``python/sglang/jit_kernel``: ``.cuh`` files that nvcc reads, includes and
all); no probe sees a build, nor what a compiler reads.  So a change to one is never inert:

* packaging and dependency metadata, wherever it is: ``pyproject.toml`` (``pyproject_*.toml`` too: SGLang keeps
  one per platform under ``python/``), ``setup.py``, ``setup.cfg``, ``MANIFEST.in``, ``requirements*.txt`` and
  ``.in``, ``constraints*.txt``, Python lock files (``uv.lock``, ``poetry.lock``, ``pdm.lock``, ``Pipfile*``),
  conda's ``environment*.yml``, ``.gitmodules``;
* sources of a compiled extension, wherever they are: C, C++ (SYCL's too: it has no suffix of its own), CUDA,
  HIP, Metal, Cython, assembly and their headers, ``CMakeLists.txt`` and ``*.cmake`` (``sgl-kernel/``, the JIT
  kernels' headers);
* a submodule (mode 160000): its tree is not in this repository's blobs.  A symbolic link (mode 120000) gets the
  same "never inert", for another reason: whether a launch read through it cannot be matched by path (a probe
  that resolves links records the target).

Decided against, with SGLang's layout in mind (each is data: inert unless a launch reads it):

* the Rust gateway (``sgl-model-gateway/``: ``*.rs``, ``Cargo.toml``, ``Cargo.lock``, ``build.rs``, its
  ``.proto``): a program of its own in front of the servers, which the server's package neither builds nor
  imports.  A hunt installs nothing between launches, and a launch that builds the gateway or runs it from
  the tree runs processes that are not Python, which turn pruning off (``Ran.blind``);
* Dockerfiles and Makefiles: a hunt runs in one environment; a launch that runs ``docker build`` or ``make``
  runs a process that is not Python, and pruning is off;
* ``.proto`` files of the server's package: SGLang commits the Python they compile to (``*_pb2.py``), which
  is compared as Python.

Everything else that is not Python (``.py``) is data.  Type stubs (``.pyi``) are data: no interpreter runs them.
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
        "cmakelists.txt",
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
)
"""Build and dependency inputs by file-name pattern (``fnmatch``, lower case)."""

SUFFIX_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("C and C++ and their headers", (".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".inl",
                                     ".ipp", ".tcc")),
    ("CUDA, HIP, Metal", (".cu", ".cuh", ".hip", ".metal")),
    ("Cython", (".pyx", ".pxd", ".pxi")),
    ("assembly, CMake modules", (".s", ".asm", ".cmake")),
)  # fmt: skip
"""Sources of a compiled extension by suffix (lower case), by language, as docs/hunt.md's table lists them.

SYCL has no suffix of its own: a SYCL source is C++ (Intel's DPC++ compiler, ``icpx -fsycl``, takes the C++
suffixes; SYCLomatic's migrated ``.dp.cpp`` and ``.dp.hpp`` end in them), so the first group covers it."""

BUILD_SUFFIXES = frozenset(suffix for _, group in SUFFIX_GROUPS for suffix in group)
"""Every suffix of ``SUFFIX_GROUPS``."""

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
