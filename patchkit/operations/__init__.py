"""Operations: one module per manifest ``op``, all implementing ``base.Operation``."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchkit.operations.base import Operation


def edit_lazy() -> ModuleType:
    """The libcst editing helpers, imported on first use.

    Importing libcst costs about a quarter of a second; a range check, which
    only analyses, never pays it.
    """
    from patchkit.operations import edit

    return edit


def registry() -> dict[str, type[Operation]]:
    from patchkit.operations.add_definitions import AddDefinitions
    from patchkit.operations.add_methods import AddMethods
    from patchkit.operations.diff import Diff
    from patchkit.operations.ensure_import import EnsureImport
    from patchkit.operations.ensure_list_item import EnsureListItem
    from patchkit.operations.insert import Insert
    from patchkit.operations.move_import import MoveImport
    from patchkit.operations.replace_function import ReplaceFunction

    ops: list[type[Operation]] = [
        EnsureImport,
        AddMethods,
        ReplaceFunction,
        Insert,
        AddDefinitions,
        EnsureListItem,
        MoveImport,
        Diff,
    ]
    return {op.op_name: op for op in ops}


OP_NAMES = (
    "ensure-import",
    "add-methods",
    "replace-function",
    "insert",
    "add-definitions",
    "ensure-list-item",
    "move-import",
    "diff",
)
