"""The documents a report is made of, built by the functions the verbs print them with.

The page embeds, byte for byte, what ``patchkit check --json`` and ``patchkit
runs --json`` print (docs/json.md "report"), so a reader never wonders whether
the picture and the command disagree, and another tool can read them back.
``runs_document`` is the one builder of the ``runs --json`` object (the
``runs`` verb calls it too); ``load_runs`` is the one place that reads the
bench store for the report and the terminal plot, so a change of the store's
shape is absorbed here.

``bisect`` records its last answer next to the store (``latest_bisect_path``),
so a plot can mark the first bad commit the last hunt found.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchkit.bench.records.record import RunRecord
from patchkit.bench.records.store import open_store
from patchkit.bench.stats.spread import Noise
from patchkit.engine.transaction import atomic_write
from patchkit.git import Repo


def json_text(document: Mapping[str, object]) -> str:
    """The text a verb's ``--json`` prints for ``document`` (``render.print_json``)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def runs_document(records: Sequence[RunRecord], store: Path) -> dict[str, object]:
    """The ``runs --json`` object (docs/json.md "runs --json")."""
    return {"version": 1, "command": "runs", "store": str(store), "runs": [r.summary_json() for r in records]}


@dataclass(frozen=True)
class StoredRuns:
    """What the store holds for a report: its path, the records (oldest first) and the last bisect's answer."""

    path: Path
    records: tuple[RunRecord, ...]
    bisect: Mapping[str, object] | None
    # (host, profile, metric) -> {"sigma", "df", ...}: the launch-to-launch spread `patchkit noise` stored
    noise: Mapping[tuple[str, str, str], Noise] = field(default_factory=dict)

    def document(self) -> dict[str, object]:
        return runs_document(self.records, self.path)


def load_runs(
    repo: Repo, store: str | None, *, commits: Sequence[str] = (), profiles: Sequence[str] = ()
) -> StoredRuns:
    """The runs of the bench store, filtered as ``runs --commit/--profile`` filters them, and the noise priors of
    their hosts, profiles and metrics."""
    with open_store(repo, store, create=False) as opened:
        records = tuple(opened.runs(commits=commits, profiles=profiles))
        path = opened.path
        noise: dict[tuple[str, str, str], Noise] = {}
        for key in {(r.place, r.profile, m) for r in records for m in r.samples}:
            found = opened.noise(*key)
            if found is not None:
                noise[key] = found
    return StoredRuns(path, records, load_latest_bisect(path), noise)


def latest_bisect_path(store: Path) -> Path:
    """``bench.sqlite`` -> ``bench.bisect.json``: one per store, beside it."""
    return store.with_suffix(".bisect.json")


def save_latest_bisect(store: Path, document: Mapping[str, object]) -> None:
    """Keep ``bisect --json``'s object as the store's latest bisect (written atomically)."""
    atomic_write(latest_bisect_path(store), json_text(document).encode("utf-8"), 0o644)


def load_latest_bisect(store: Path) -> dict[str, object] | None:
    """The latest bisect's object, or None when none was kept (or the file is not one: it is only a marker)."""
    try:
        data = json.loads(latest_bisect_path(store).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("command") == "bisect" else None
