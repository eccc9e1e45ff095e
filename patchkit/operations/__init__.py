"""Operations: one module per manifest ``op``, all implementing ``base.Operation``.

``operation(name)`` imports only the module of the op it is asked for, so a
manifest that uses three ops (the guard's warm path) does not pay for the
import of all twelve; ``registry()`` imports them all (docs and tests).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchkit.operations.base import Operation


def edit_lazy() -> ModuleType:
    """The libcst editing helpers, imported on first use.

    Importing libcst is a large part of a short command's start-up; a range
    check, which only analyses, never needs it, so only a write imports it.
    """
    from patchkit.operations import edit

    return edit


MODULES = {
    "ensure-import": ("ensure_import", "EnsureImport"),
    "add-methods": ("add_methods", "AddMethods"),
    "replace-function": ("replace_function", "ReplaceFunction"),
    "edit-function": ("edit_function", "EditFunction"),
    "edit-imports": ("edit_imports", "EditImports"),
    "edit-statement": ("edit_statement", "EditStatement"),
    "insert": ("insert", "Insert"),
    "add-definitions": ("add_definitions", "AddDefinitions"),
    "ensure-list-item": ("ensure_list_item", "EnsureListItem"),
    "move-import": ("move_import", "MoveImport"),
    "remove-definitions": ("remove_definitions", "RemoveDefinitions"),
    "diff": ("diff", "Diff"),
}
"""The one registry of ops: op name -> (module under patchkit.operations, class name)."""


def operation(name: str) -> type[Operation]:
    """The class of op ``name``, importing only its module (KeyError if unknown)."""
    module, cls = MODULES[name]
    op: type[Operation] = getattr(importlib.import_module(f"patchkit.operations.{module}"), cls)
    return op


def registry() -> dict[str, type[Operation]]:
    """Every op, by name (imports every op module)."""
    return {name: operation(name) for name in MODULES}


OP_NAMES = tuple(MODULES)
"""Every op name, in the registry's order (the schema's ``op`` enum lists the same, checked by a test)."""
