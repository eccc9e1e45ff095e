"""The range listing (``engine/listing.py``): the streamed change walk gives what the range's own log gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git
from histories import build_model_history

from patchkit.engine.listing import read_range, start_listing
from patchkit.git import Repo, parse_log, parse_path_changes

FILES = ["pkg/model.py", "pkg/models/model.py"]


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
