"""Status of a work tree: the Python API behind ``patchkit status``.

Evaluates the manifest against the tree as it is (nothing is written) and
reads the record: which patches are in place, out of date or cannot apply,
which recorded files were edited since, and what a killed run left.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from patchkit.engine import abandonable
from patchkit.engine.evaluate import evaluate
from patchkit.engine.groups import group_results
from patchkit.engine.leftovers import Interrupted, interrupted
from patchkit.engine.record import Layers, Record, all_records, edited_since, layers, load_record, previous_code
from patchkit.git import Commit, Pending, Repo, parse_head
from patchkit.manifest import Manifest
from patchkit.results import PatchResult, Reason, Status
from patchkit.sources import WorktreeSource

STATE_WORDS: dict[tuple[Status, Reason | None], str] = {
    (Status.SKIP, Reason.ALREADY_APPLIED): "applied",
    (Status.SKIP, Reason.UPSTREAM_PROVIDES): "provided by upstream",
    (Status.SKIP, Reason.OTHER_VARIANT): "not needed (another variant applies)",
}


@dataclass(frozen=True)
class StatusReport:
    """A manifest's state in a work tree: each patch's verdict there, the record of the last apply,
    recorded files edited since, files shared with other manifests, and a killed run's leftovers."""

    manifest: Manifest
    target: str
    commit: Commit | None
    results: tuple[PatchResult, ...]
    record: Record | None
    edited: tuple[str, ...]  # recorded files changed since patchkit wrote them (by none of the tree's manifests)
    interrupted: Interrupted | None = None  # a killed run's leftovers (the next apply/revert rolls them back)
    layers: Layers = field(default_factory=lambda: Layers({}, {}, {}))  # shared files (see Layers)

    def layering(self) -> list[str]:
        """One phrase per file shared with other manifests, naming them (empty: none)."""
        out = [f"{path} patched over since by {', '.join(names)} (intact)" for path, names in self.layers.over.items()]
        out += [f"{path} patched over {', '.join(names)}'s edits" for path, names in self.layers.under.items()]
        return out

    @property
    def out_of_date(self) -> tuple[str, ...]:
        """Patches the record has in place that would be written again: an older payload version is there."""
        return tuple(r.patch for r in self.results if r.status is Status.APPLY and r.replaces_previous)

    def state_of(self, result: PatchResult) -> str:
        if result.status is Status.APPLY:
            return "out of date" if result.patch in self.out_of_date else "not applied"
        if result.status in (Status.WARN, Status.FAIL):
            return "cannot apply"
        return STATE_WORDS.get((result.status, result.reason), "in place")

    @property
    def complete(self) -> bool:
        """Every required patch is in place (no pending APPLY, no FAIL), no patch holds an older payload
        version (optional ones included), and no run was left half done."""
        return (
            self.interrupted is None
            and not self.out_of_date
            and all(r.status is Status.SKIP for r in self.results if r.required)
        )

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "command": "status",
            "manifest": self.manifest.to_json(),
            "target": self.target,
            "commit": self.commit.sha if self.commit else None,
            "subject": self.commit.subject if self.commit else None,
            "complete": self.complete,
            "record": None
            if self.record is None
            else {
                "applied_at": self.record.applied_at,
                "base_commit": self.record.base_commit,
                "manifest_digest": self.record.manifest_digest,
                "files": [f.path for f in self.record.files],
            },
            "edited_after_apply": list(self.edited),
            "layered_over": {path: list(names) for path, names in self.layers.over.items()},
            "layered_under": {path: list(names) for path, names in self.layers.under.items()},
            "out_of_date": list(self.out_of_date),
            "interrupted": None if self.interrupted is None else self.interrupted.to_json(),
            "results": [dict(r.to_json(), state=self.state_of(r)) for r in self.results],
            "groups": [g.to_json() for g in group_results(self.manifest, self.results)],
        }


def status_worktree(manifest: Manifest, repo: Repo, *, head: Pending | None = None) -> StatusReport:
    """What of ``manifest`` is in the work tree; ``head``: a ``Repo.spawn_head`` the caller
    already started (the guard reads HEAD's branch from it too), read here instead of a new git call."""
    root = repo.require_worktree("status")
    source = WorktreeSource(repo, root)
    record = load_record(repo, manifest.name)
    previous = previous_code(record)
    sizes = abandonable.target_sizes(root, manifest.files())
    if abandonable.large(sum(sizes.values())):  # a Ctrl-C must not wait for the parse (engine/abandon.py)
        results = abandonable.in_child(lambda: evaluate(manifest, source, previous=previous).results, sizes)
    else:
        results = evaluate(manifest, source, previous=previous).results
    found = layers(root, record, all_records(repo)) if record else Layers({}, {}, {})
    edited = tuple(p for p in edited_since(repo, record) if p not in found.over) if record else ()
    left = interrupted(repo)
    commit = source.commit if head is None else parse_head(head)[0]
    return StatusReport(manifest, str(root), commit, results, record, edited, left, found)
