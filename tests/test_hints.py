"""Every hint names only options of the command that printed it (#47 item 11).

``guard`` on a bare repository suggested ``--commit REV --worktree DIR``, options of ``apply`` that ``guard``
does not have.  The hints are read from the source with ast: each error's message and ``hint=`` (f-strings
joined, a placeholder for each value), per module.  An option named after another command (``patchkit
VERB ...``, `` `VERB --x` ``, ``git ...`` in backticks) is that command's.  Then:

- in a verb's own module (``patchkit/commands/VERB.py`` and its helpers), every other option is one of
  VERB's, as ``patchkit.cli`` declares them;
- in a shared module (engine, bench, guard, port, ...), every other option is one of a verb that loads the
  module (``tools/import_graph.py``'s import graph, from each verb's module): a hint there names the verb
  (``patchkit apply --commit``) when the verbs that reach it do not share the option.

And the bare-repository error of every verb that needs a work tree, as printed, names only its own options.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import git, lock_held, make_repo, run_script
from test_import_graph import load_tool

from patchkit.cli import cli

ROOT = Path(__file__).resolve().parents[1] / "patchkit"
OPTIONS = {name: {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} for name, cmd in cli.commands.items()}
HELPERS = {"check_ci": "check", "guard_site": "guard"}  # a verb's helper modules, beside it in commands/
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
VERB = "|".join(sorted(OPTIONS, key=len, reverse=True))
# Where a string names another command: "patchkit VERB ..." to the end of its backticks (or of the string), and a
# verb or git in backticks.  What is left is said about the command that prints the string.
OTHER = re.compile(rf"`(?:patchkit )?(?:{VERB}|git)\b[^`]*`|patchkit (?:{VERB})\b[^`;,]*")


def text_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = text_of(node.left), text_of(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.IfExp):
        return " | ".join(t for t in (text_of(node.body), text_of(node.orelse)) if t)
    return None


def hints(path: Path) -> Iterator[tuple[int, str]]:
    """Each error message and ``hint=`` in ``path``: (line, text)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", ""))
        said = [k.value for k in node.keywords if k.arg in ("hint", "also")]
        if name.endswith("Error") and node.args:
            said.append(node.args[0])
        for expr in said:
            text = text_of(expr)
            if text is not None:
                yield node.lineno, text


def own_options(text: str) -> set[str]:
    """The options ``text`` names for the command that prints it: none of another command's."""
    return set(OPTION.findall(OTHER.sub(" ", text)))


def verb_of(path: Path) -> str | None:
    if path.parent != ROOT / "commands" or path.stem.startswith("_"):
        return None
    return HELPERS.get(path.stem, path.stem.replace("_", "-"))


def reaching() -> dict[str, set[str]]:
    """module -> the verbs whose command module loads it (imports, function-local ones too, and theirs)."""
    tool = load_tool()
    trees = {tool.module_name(p): ast.parse(p.read_text(encoding="utf-8")) for p in ROOT.rglob("*.py")}
    graph = {name: tool.imports(tree) for name, tree in trees.items()}
    out: dict[str, set[str]] = {}
    for verb in OPTIONS:
        start = f"patchkit.commands.{verb.replace('-', '_')}"
        for module in tool.loaded(start, graph):
            out.setdefault(module, set()).add(verb)
    return out


def test_a_verbs_own_hints_name_only_its_options() -> None:
    wrong = []
    for path in sorted((ROOT / "commands").glob("*.py")):
        verb = verb_of(path)
        if verb is None:
            continue
        for line, text in hints(path):
            if extra := own_options(text) - OPTIONS[verb]:
                wrong.append(f"{path.name}:{line}: {verb} has no {', '.join(sorted(extra))}: {text!r}")
    assert not wrong, "\n".join(wrong)


# A shared module whose hints only some of the verbs that load it can print: those verbs, and why the others
# cannot.  Every other shared module's hints may be printed by any verb that loads it.
PRINTED_BY = {
    "patchkit.bench.execution.bisecting": ({"bisect"}, "plan_bisect and its Rule are bisect's alone"),
    "patchkit.bench.execution.slurm": (
        {"bench", "bisect", "noise"},
        "runs --pending only asks Slurm for job states, which raises none of the submitter's errors",
    ),
    "patchkit.bench.execution.prepare": ({"bench", "bisect", "noise"}, "the bench verbs prepare worktrees"),
    "patchkit.engine.since": ({"check"}, "only check passes --since"),
    "patchkit.engine.commit_apply": (
        {"apply"},
        "the bench verbs give it a new worktree of their own under --worktree-root, never a tree of the user's",
    ),
    "patchkit.guard.api": (
        {"guard", "run"},
        "--python and --import are checked only for guard and run; bench names [bench].python (python_origin)",
    ),
    "patchkit.guard.probe": ({"guard", "run"}, "bench's probe errors name [bench].python (ProbeRun's origin)"),
    "patchkit.manifest.bench": ({"bench", "bisect", "noise"}, "only the bench verbs take --set"),
}
PASSED_ITSELF = {"demo"}  # the demo passes every argument itself: a hint it printed would be its own bug


def test_a_shared_modules_hints_name_options_of_every_verb_that_can_print_them() -> None:
    tool = load_tool()
    verbs = reaching()
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        if verb_of(path) is not None or path.name == "cli.py":
            continue
        module = tool.module_name(path)
        loaders = verbs.get(module, set()) - PASSED_ITSELF
        printers = loaders & PRINTED_BY[module][0] if module in PRINTED_BY else loaders
        for line, text in hints(path):
            named = own_options(text)
            for verb in sorted(printers):
                if extra := named - OPTIONS[verb]:
                    wrong.append(f"{module}:{line}: {verb} has no {', '.join(sorted(extra))}: {text!r}")
    assert not wrong, "\n".join(wrong)


def test_the_table_of_printers_names_real_modules_and_verbs() -> None:
    verbs = reaching()
    for module, (printers, why) in PRINTED_BY.items():
        assert module in verbs and why, module
        assert printers <= verbs[module], (module, printers - verbs[module])


def test_the_scan_sees_the_hint_of_issue_47() -> None:
    """The scan itself: the bare-repository hint guard printed names options guard lacks."""
    old = "use --commit REV --worktree DIR to patch a linked worktree, or `patchkit check`, which needs no checkout"
    assert own_options(old) - OPTIONS["guard"] == {"--commit", "--worktree"}
    assert own_options("run `patchkit apply -m M --commit REV --worktree DIR` first") == set()
    assert own_options("pass --repo DIR (`git fetch --unshallow`)") == {"--repo"}


WORK_TREE_VERBS = {
    "apply": [],
    "status": [],
    "revert": [],
    "guard": [],
    "run": ["--apply", "--", "true"],
    "validate": [],
}


@pytest.mark.parametrize("verb", sorted(WORK_TREE_VERBS))
def test_the_bare_repository_error_names_only_the_verbs_options(tmp_path, verb) -> None:
    """As printed, for every verb that needs a work tree: `guard` said `--commit REV --worktree DIR`."""
    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    kit = tmp_path / "kit" / "manifests"
    kit.mkdir(parents=True)
    manifest = kit / "t.toml"
    manifest.write_text('schema = 1\nname = "t"\n\n[[patch]]\nid = "i"\nop = "ensure-import"\n'
                        'file = "a.py"\nimport = "import os"\n', encoding="utf-8")  # fmt: skip
    r = run_script(verb, "-m", manifest, "--repo", bare, *WORK_TREE_VERBS[verb])
    assert r.code == 2 and f"is a bare repository: {verb} " in r.err and "needs a work tree" in r.err, r.err
    assert own_options(r.err) <= OPTIONS[verb], r.err


def test_capture_on_a_bare_repository_names_only_its_options(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    r = run_script("capture", "--repo", bare, "--name", "x", "--out", tmp_path / "out")
    assert r.code == 2 and "capture needs a work tree" in r.err and own_options(r.err) <= OPTIONS["capture"], r.err


def test_busy_names_wait_only_to_a_verb_that_has_it(tmp_path) -> None:
    """`run --apply` with the lock held advised `--wait SECONDS`, which run does not take."""
    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    kit = tmp_path / "kit" / "manifests"
    kit.mkdir(parents=True)
    manifest = kit / "t.toml"
    manifest.write_text('schema = 1\nname = "t"\n\n[[patch]]\nid = "i"\nop = "ensure-import"\n'
                        'file = "a.py"\nimport = "import os"\n', encoding="utf-8")  # fmt: skip
    with lock_held(repo):
        run = run_script("run", "-m", manifest, "--repo", repo, "--apply", "--", "true")
        apply = run_script("apply", "-m", manifest, "--repo", repo)
    assert run.code == 4 and "another patchkit is working on this repository" in run.err, run.err
    assert "--wait" not in run.err and "then run this again" in run.err
    assert apply.code == 4 and "or pass --wait SECONDS" in apply.err, apply.err
