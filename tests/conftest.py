"""Test isolation: git never reads the user's config, nothing writes to $HOME.

The variables come from ``patchkit.demo.history.git_isolation``, the one
definition of an isolated git environment (the history builder uses it too).
They are installed twice over the same function: once per session, so that
module-scoped fixtures (histories built once per module) run isolated, and once
per test, with a fresh HOME that must stay free of git config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from patchkit.demo.history import GIT_ENV_DROP, git_isolation

if TYPE_CHECKING:
    from patchkit.git import Repo


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for key, value in git_isolation(home).items():
        monkeypatch.setenv(key, value)
    for key in GIT_ENV_DROP:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="session", autouse=True)
def isolated_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, tmp_path_factory.mktemp("session-home"))
        yield


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    isolate(monkeypatch, home)
    yield
    # Nothing may have been written to the test's home directory's git config.
    assert not (home / ".gitconfig").exists()


@pytest.fixture
def project_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sglang_history(tmp_path_factory: pytest.TempPathFactory):
    """The SGLang-shaped history of patchkit.demo.sglang, built once per module."""
    from patchkit.demo.sglang import build_sglang_history

    return build_sglang_history(tmp_path_factory.mktemp("sglang") / "repo")


@pytest.fixture(scope="module")
def sglang_repo(sglang_history):
    from patchkit.git import Repo

    repo = Repo.discover(sglang_history.path)
    yield repo
    repo.close()


@pytest.fixture
def open_repo() -> Iterator[Callable[[Path], Repo]]:
    """``open_repo(path)``: ``Repo.discover(path)``, closed when the test ends (no leaked cat-file reader)."""
    from patchkit.git import Repo

    with ExitStack() as stack:
        yield lambda path: stack.enter_context(Repo.discover(path))


@pytest.fixture(autouse=True)
def splicing_ops_leave_statements_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """At every simulated APPLY in the suite, an op that says it only splices new statements in
    (``Operation.edits_in_place`` False) must have left every simple statement of the tree as it
    was before it ran: ``CodeState._span`` keeps sharing what was computed from their source text."""
    import ast

    from patchkit.operations.code import _DEF_KINDS, _HAS_BLOCKS, CodeState, canon

    parse = CodeState.parse.__func__  # type: ignore[attr-defined]
    changed = CodeState.changed
    skip = _HAS_BLOCKS + _DEF_KINDS

    def snapshot(state: CodeState) -> None:
        nodes = [n for n in ast.walk(state.tree) if isinstance(n, ast.stmt) and not isinstance(n, skip)]
        state.__dict__["_before_op"] = [(node, canon(node)) for node in nodes]

    def checked_parse(cls: type[CodeState], path: str, text: str) -> CodeState:
        state = parse(cls, path, text)
        snapshot(state)
        return state

    def checked_changed(self: CodeState, *, in_place: bool = True, names: Iterable[str] = ()) -> None:
        if not in_place:
            for node, text in self.__dict__.get("_before_op", ()):
                assert canon(node) == text, f"an op that only splices edited {self.path}:{node.lineno}"
        changed(self, in_place=in_place, names=names)
        snapshot(self)

    monkeypatch.setattr(CodeState, "parse", classmethod(checked_parse))
    monkeypatch.setattr(CodeState, "changed", checked_changed)

    # ``CodeState.def_text`` keys what depends on a def's body by the lines it was parsed from:
    # wherever it gives a text, the def must be, node for node, the one those lines parse to.
    def_text = CodeState.def_text

    def checked_def_text(self: CodeState, node: ast.AST, name: str) -> str | None:
        text = def_text(self, node, name)
        if text is not None:
            kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            where = (getattr(node, "lineno", None), getattr(node, "col_offset", None))
            parsed = [
                n for n in ast.walk(ast.parse(self.text)) if isinstance(n, kinds) and (n.lineno, n.col_offset) == where
            ]
            assert len(parsed) == 1 and ast.dump(parsed[0]) == ast.dump(node), (
                f"def_text of {name} in {self.path} is stale"
            )
        return text

    monkeypatch.setattr(CodeState, "def_text", checked_def_text)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real single-node Slurm (tests/slurm_cluster.py) for the session; skips, saying why, where it cannot start."""
    from slurm_cluster import SlurmCluster, SlurmUnavailable

    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except SlurmUnavailable as exc:
        pytest.skip(f"no local Slurm: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def slurm(slurm_cluster: object, monkeypatch: pytest.MonkeyPatch) -> object:
    """The session's Slurm, with SLURM_CONF set so sbatch, submitit and patchkit reach it."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))  # type: ignore[attr-defined]
    return slurm_cluster
