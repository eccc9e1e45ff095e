"""A stand-in for torch in patchkit's probe tests: only what the probe and the stand-in server touch."""

__version__ = "2.9.1+standin"

from . import cuda, distributed  # noqa: F401
