"""The op lookup imports only the op modules a manifest uses (the guard's warm path)."""

from __future__ import annotations

import subprocess
import sys

from patchkit.operations import OP_NAMES, operation, registry


def test_every_op_name_maps_to_the_class_that_declares_it() -> None:
    assert list(registry()) == list(OP_NAMES)
    for name in OP_NAMES:
        assert operation(name).op_name == name


def test_loading_a_manifest_imports_only_the_ops_it_uses() -> None:
    code = (
        "import sys\n"
        "from patchkit.manifest import load_manifest\n"
        "m = load_manifest('kimi-k25-eagle3')\n"
        "used = {p.op.op_name for p in m.patches}\n"
        "from patchkit.operations import MODULES\n"
        "loaded = {n for n, (mod, _) in MODULES.items() if 'patchkit.operations.' + mod in sys.modules}\n"
        "print(sorted(used), sorted(loaded))\n"
        "assert loaded == used, (used, loaded)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_op_implements_one_whole_contract() -> None:
    """An op is a PythonOperation or a TextOperation, never both, with every step of its contract
    (the diff op used to carry a libcst ``transform`` that raised, and a ``needs_python`` flag)."""
    from patchkit.operations.base import PythonOperation, TextOperation

    for name, cls in registry().items():
        assert issubclass(cls, PythonOperation) != issubclass(cls, TextOperation), name
        assert not cls.__abstractmethods__, (name, cls.__abstractmethods__)
        assert not hasattr(cls, "needs_python"), name
    assert issubclass(registry()["diff"], TextOperation) and not hasattr(registry()["diff"], "transform")


def test_an_outcome_carries_its_ops_plan_and_says_when_it_has_none() -> None:
    """``Outcome`` is generic in the op's plan (mypy checks each op's use of it); a step that needs
    the plan of an outcome made without one is patchkit's bug, said as such, not an AttributeError."""
    import pytest

    from patchkit.errors import InternalError
    from patchkit.operations.base import Outcome

    assert Outcome.__parameters__ and Outcome.apply(3, "adds x", plan=("x",)).planned == ("x",)
    with pytest.raises(InternalError, match="without a plan"):
        _ = Outcome.apply(3, "adds x").planned
