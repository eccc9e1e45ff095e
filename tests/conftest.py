"""Test isolation: git never reads the user's config, nothing writes to $HOME.

The variables come from ``patchkit.demo.history.git_isolation``, the one
definition of an isolated git environment (the history builder uses it too).
They are installed twice over the same function: once per session, so that
module-scoped fixtures (histories built once per module) run isolated, and once
per test, with a fresh HOME that must stay free of git config.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
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


MAX_WORKERS = 4


def usable_cpus() -> int:
    """CPUs this process may really use: its affinity mask, and a cgroup v2 ``cpu.max`` quota if one is set.

    ``os.cpu_count()`` (and xdist's own ``auto``) count the host's CPUs; in a container limited to two
    of them that oversubscribes, and the tests that time real processes (health, grace, kill) get slow.
    """
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text(encoding="ascii").split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one worker per usable CPU, at most ``MAX_WORKERS``.

    Most of a test's time is real processes (git, servers, clients, Slurm, Chromium) waiting on each
    other, so a second worker halves the wall time on two cores; past four, the per-worker start-up
    (imports, one local Slurm per worker that runs a cluster test) outweighs what is left to share.
    """
    return min(MAX_WORKERS, usable_cpus())


# The files whose tests run Slurm jobs, servers, the demo or a wheel build, longest first (measured with
# --durations=0).  xdist's loadfile hands files to the workers in collection order; sent first, these
# are not left for the end, where one of them would run alone while the other worker idles.  A stale
# order costs only balance, never a result.
LONGEST_FILES_FIRST = (
    "test_bench_slurm.py",
    "test_bench_launches.py",
    "test_precision.py",
    "test_report.py",
    "test_bench_output.py",
    "test_bench_runs.py",
    "test_executor.py",
    "test_demo.py",
    "test_crash_recovery.py",
    "test_wheel.py",
    "test_hardening_cli.py",
    "test_proof_bench.py",
    "test_guard_run.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long files first (``LONGEST_FILES_FIRST``); within a file, and among the rest, the order is kept."""
    rank = {name: index for index, name in enumerate(LONGEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--check-codestate",
        action="store_true",
        help="check the CodeState invariant (tests/codestate_check.py) at every simulated APPLY of every test",
    )


@pytest.fixture(autouse=True)
def codestate_checked_if_asked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``--check-codestate`` only: ``test_codestate_invariant.py`` checks it on the demo histories."""
    if request.config.getoption("--check-codestate"):
        from codestate_check import install

        install(monkeypatch)


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
