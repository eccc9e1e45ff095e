"""The range listing (``engine/listing.py``): the streamed change walk gives what the range's own log gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git
from histories import build_model_history

from patchkit.engine.listing import read_range, start_listing
from patchkit.git import Entry, Repo, parse_change_record, parse_log

FILES = ["pkg/model.py", "pkg/models/model.py"]


def parse_path_changes(out: bytes) -> dict[str, dict[str, Entry]]:
    """The whole output of ``spawn_path_changes`` parsed at once: the oracle the streamed reading must equal."""
    changes: dict[str, dict[str, Entry]] = {}
    for chunk in out.split(b"\x1e"):
        record = parse_change_record(chunk)
        if record is not None:
            changes[record[0]] = record[1]
    return changes


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    return build_model_history(tmp_path_factory.mktemp("listing") / "repo")


def _revs(model, spec: str) -> str:
    """Labels of commits as their ids (main and side are branches)."""
    for sep in ("...", ".."):
        if sep in spec:
            return sep.join(_revs(model, end) for end in spec.split(sep))
    return spec if spec in ("main", "side", "") else model[spec]


@pytest.mark.parametrize(
    "spec", ["main", "base..main", "add..main", "fix..main", "edit..broken", "side...main", "rename..main", "..side"]
)
def test_the_streamed_walk_lists_what_the_range_log_lists(model, spec: str) -> None:
    spec = _revs(model, spec)
    with Repo.discover(model.path) as repo:
        listing = start_listing(repo, [spec])
        listing.watch(repo, FILES)
        fed: list[dict] = []
        listed, found = read_range(listing.pending[0], listing.diffs[0], lambda changes: fed.append(dict(changes)))
        want = parse_path_changes(repo.spawn_path_changes([spec], FILES).bytes())
        want_listed = parse_log(repo.spawn_rev_list([spec]).text())
    assert [c.sha for c in listed] == [c.sha for c in want_listed]
    assert found == {sha: changes for sha, changes in want.items() if changes}
    assert all(changes in fed for changes in found.values())  # every range change was handed on as it came


def test_the_walk_stops_once_the_range_is_seen(model) -> None:
    """``fix..main`` never needs the commits before `fix`: the walk is stopped before it reaches `add`.

    The commit list is read first, so the range is known before the first
    record (otherwise records may be handed on before it is, by design).
    """
    v1 = git(model.path, "rev-parse", f"{model['add']}:pkg/model.py").strip()
    with Repo.discover(model.path) as repo:
        listing = start_listing(repo, [_revs(model, "fix..main")])
        listing.watch(repo, FILES)
        listing.pending[0].bytes()
        fed: list[dict] = []
        listed, _found = read_range(listing.pending[0], listing.diffs[0], lambda changes: fed.append(dict(changes)))
    assert model["add"] not in {c.sha for c in listed}
    assert all(entry is None or entry[1] != v1 for changes in fed for entry in changes.values())
    # The whole walk would have handed it on.
    with Repo.discover(model.path) as repo:
        listing = start_listing(repo, ["main"])
        listing.watch(repo, FILES)
        fed = []
        read_range(listing.pending[0], listing.diffs[0], lambda changes: fed.append(dict(changes)))
    assert any(entry is not None and entry[1] == v1 for changes in fed for entry in changes.values())


def test_a_bad_end_still_fails_as_git_says(model, tmp_path: Path) -> None:
    from patchkit.git import GitFailed

    with Repo.discover(model.path) as repo:
        listing = start_listing(repo, ["nope..main"])
        listing.watch(repo, FILES)
        with pytest.raises(GitFailed):
            read_range(listing.pending[0], listing.diffs[0])
        listing.close()


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory):
    """1,200 commits: either log of the whole history is well over a default 64 KiB pipe."""
    from patchkit.demo.history import HistoryBuilder

    b = HistoryBuilder(tmp_path_factory.mktemp("long") / "repo")
    for i in range(1200):
        b.commit(f"c{i}", f"Change {i} of the model file", {"pkg/model.py": f"VERSION = {i}\n"})
    return b.build()


def _exits_unread(pending, seconds: float = 10.0) -> bool:
    """Whether git finishes while nobody reads its output (it can only if the pipe holds all of it)."""
    import subprocess

    try:
        pending.proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_the_logs_started_ahead_run_to_the_end_before_anyone_reads(long_history) -> None:
    """A check loads the manifest and the engine before it reads git's logs: git must not wait
    for it on a full pipe.  Both logs of 1,200 commits (each well over 64 KiB) finish unread,
    and what is read afterwards is all of it."""
    with Repo.discover(long_history.path) as repo:
        rev_list, stream = repo.spawn_rev_list(["main"]), repo.spawn_change_stream(["main"], ["pkg/model.py"])
        try:
            assert _exits_unread(rev_list)
            assert _exits_unread(stream)
            assert len(rev_list.bytes()) > 1 << 16
            assert len(stream.bytes()) > 1 << 16
            assert len(parse_log(rev_list.text())) == 1200
        finally:
            rev_list.close()
            stream.close()


def test_a_log_read_at_once_keeps_the_default_pipe(long_history) -> None:
    """The counter-case that makes the test above mean something: the same log, not started
    ahead, stops at a full pipe until it is read."""
    from patchkit.git import Pending

    with Repo.discover(long_history.path) as repo:
        pending = Pending(["log", "--format=%H%x1f%P%x1f%an <%ae>%x1f%aI%x1f%s", "main"], repo.git_dir)
        try:
            assert not _exits_unread(pending, seconds=1.0)
            assert len(parse_log(pending.text())) == 1200
        finally:
            pending.close()
