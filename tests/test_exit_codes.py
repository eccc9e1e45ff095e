"""Each verb's --help ends with the exit codes that verb can return, and only those (#47 item 15).

Every verb's epilogue used to be the full list (``digest`` and ``capture`` listed 4, 125 and 128).  The list
per verb is ``patchkit.exit_docs.VERB_CODES``; here it is checked against the verb itself:

- the codes every verb returns are in each list (bad input, a bug, Ctrl-C, a closed stdout: not ``run``,
  whose stdout and exit code are its command's);
- the codes a verb's own module returns (``ExitCode.X``) and the exit codes of the errors it raises are in
  its list;
- 125 and 128 exactly for the verbs with ``--bisect``;
- 4 exactly for the verbs that take the repository's lock: whose module calls an engine function that takes
  it (found from the source: the functions that call ``repo_lock``), or prepares bench worktrees.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest
from helpers import run_cli
from test_docs import docs_hooks

import patchkit.errors as errors
from patchkit.cli import cli
from patchkit.errors import ExitCode
from patchkit.exit_docs import VERB_CODES, by_command_table, verb_epilog

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "patchkit"
HELPERS = {"check": ["check_ci"], "guard": ["guard_site"]}
EVERY = {ExitCode.OK, ExitCode.USAGE, ExitCode.INTERNAL, ExitCode.INTERRUPTED}
ERRORS = {
    name: cls.exit_code
    for name, cls in vars(errors).items()
    if inspect.isclass(cls) and issubclass(cls, errors.PatchkitError)
}


def own_modules(verb: str) -> list[ast.Module]:
    names = [verb.replace("-", "_"), *HELPERS.get(verb, [])]
    return [ast.parse((PACKAGE / "commands" / f"{name}.py").read_text(encoding="utf-8")) for name in names]


def named_codes(tree: ast.Module) -> set[ExitCode]:
    """``ExitCode.X`` the module names, and the exit codes of the patchkit errors it raises."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ExitCode":
            found.add(ExitCode[node.attr])
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            name = getattr(func, "id", None) or getattr(getattr(func, "value", None), "id", None)
            if name in ERRORS:
                found.add(ERRORS[name])
    return found


def calls(tree: ast.AST) -> set[str]:
    return {
        getattr(node.func, "id", getattr(node.func, "attr", ""))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }


def lockers() -> set[str]:
    """The engine's functions that take the repository's lock: they call ``repo_lock``."""
    found = set()
    for path in (PACKAGE / "engine").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and "repo_lock" in calls(node):
                found.add(node.name)
    return found


def test_every_verb_has_its_list() -> None:
    assert set(VERB_CODES) == set(cli.commands)


@pytest.mark.parametrize("verb", sorted(VERB_CODES))
def test_the_list_fits_the_verb(verb: str) -> None:
    codes = set(VERB_CODES[verb])
    assert codes >= EVERY, verb
    assert (ExitCode.CLOSED_STDOUT in codes) == (verb != "run")
    for tree in own_modules(verb):
        assert named_codes(tree) <= codes, (verb, named_codes(tree) - codes)
    options = {o for p in cli.commands[verb].params for o in p.opts}
    assert ({ExitCode.BISECT_SKIP, ExitCode.BISECT_ABORT} <= codes) == ("--bisect" in options), verb
    assert not ({ExitCode.BISECT_SKIP, ExitCode.BISECT_ABORT} & codes) or "--bisect" in options, verb
    source = "\n".join(ast.unparse(tree) for tree in own_modules(verb))
    locks = bool(calls(ast.parse(source)) & lockers()) or "patchkit.bench.execution.launches" in source
    assert (ExitCode.BUSY in codes) == locks, verb


def test_the_engine_functions_that_lock_are_found() -> None:
    assert {"apply_worktree", "apply_at_commit", "revert_worktree"} <= lockers()


@pytest.mark.parametrize("verb", sorted(VERB_CODES))
def test_help_ends_with_the_verbs_codes(verb: str, capsys) -> None:
    r = run_cli(capsys, verb, "--help")
    assert r.code == 0
    epilogue = textwrap.indent(verb_epilog(verb).removeprefix("\b\n"), "  ")
    assert r.out.endswith(epilogue), r.out[-800:]
    listed = [int(m) for m in re.findall(r"^    (\d+) ", r.out[r.out.index("Exit codes:") :], re.M)]
    assert listed == [int(c) for c in VERB_CODES[verb]]


def test_digest_and_capture_list_no_lock_and_no_bisect(capsys) -> None:
    for verb in ("digest", "capture"):
        out = run_cli(capsys, verb, "--help").out
        tail = out[out.index("Exit codes:") :]
        assert not re.search(r"^    (4|125|128) ", tail, re.M), tail


def test_the_reference_page_lists_the_codes_by_command() -> None:
    page = docs_hooks().render_markers((ROOT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8"))
    assert by_command_table() in page
    for verb in VERB_CODES:
        assert f"| `patchkit {verb}` |" in page
