"""Build hook: ship the bundled manifests and payloads inside the wheel.

``manifests/`` and ``patches/`` stay at the repository's top level, where
people edit them and where a checkout (or an editable install) reads them.
A wheel has no repository around it, so ``build_py`` copies both folders to
``patchkit/_bundled/`` in the build; ``patchkit.manifest.resolve`` looks there
after the current directory and the checkout.  Everything else about the
build is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = ("manifests", "patches")  # every file in them, subfolders included (patches/NAME/ from capture)


class BuildWithBundledData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own folders
        root = Path(__file__).resolve().parent
        for folder in BUNDLED:
            target = Path(self.build_lib) / "patchkit" / "_bundled" / folder
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(root / folder, target, ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]"))


setup(cmdclass={"build_py": BuildWithBundledData})
