"""`patchkit report`: one static HTML page with patch bands and benchmark trends on one commit axis.

The page embeds what ``check --json`` prints for each ``-m`` manifest over the
range, what ``runs --json [--profile P]`` prints, the run records behind it and
the store's latest ``bisect --json`` (``patchkit/report/``, docs/json.md
"report"); it draws them in the browser with plotly.js, inlined, so the file
can be copied off a GPU host and opened with no network.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit import __version__, paths
from patchkit.engine.range_check import RangeCheck, load_all
from patchkit.engine.transaction import atomic_write
from patchkit.errors import ExitCode, UnwritableError, UsageError
from patchkit.report.documents import StoredRuns, json_text, load_runs
from patchkit.report.page import Document, build_page
from patchkit.report.trends import verdicts_document
from patchkit.views.console import print_json
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.views.console import Console


def report(
    *,
    manifests: Sequence[str],
    repo: str,
    ranges: Sequence[str],
    commits: Sequence[str],
    metrics: Sequence[str],
    profiles: Sequence[str],
    store: str | None,
    output: str,
    jobs: int | None,
    console: Console,
    json_out: bool = False,
) -> int:
    if not ranges and not commits:
        ranges = ["HEAD"]
    out = Path(output)
    check_output(out)
    # One RangeCheck per manifest, on one repository: git lists the range for each before any manifest is
    # loaded (a bad one is still reported first), and each remembers its schema verdict, as `check` does.
    started = [RangeCheck.start(repo, ranges)]
    started += [RangeCheck.start(started[0].repo or repo, ranges) for _ in manifests[1:]]
    loaded = load_all(started, manifests)
    git_repo = started[0].repo
    assert git_repo is not None  # every load succeeded, so the repository is open
    with git_repo:
        try:
            checks = [c.run(commits=commits, jobs=jobs) for c in started]
        finally:
            for c in started:
                c.close()
        stored = load_runs(git_repo, store, profiles=profiles)
        chosen = _metrics(stored, metrics)
        documents = [
            Document(f"check:{i}", f"patchkit-doc-check-{i}", [*c.json_chunks(), "\n"]) for i, c in enumerate(checks)
        ]
        documents.append(Document("runs", "patchkit-doc-runs", [json_text(stored.document())]))
        documents.append(Document("records", "patchkit-doc-records", [_records_text(stored)]))
        axis = list(dict.fromkeys(row.commit.sha for c in checks for row in c.commits))
        verdicts = verdicts_document(stored.records, axis, chosen, noise=stored.noise)
        documents.append(Document("verdicts", "patchkit-doc-verdicts", [json_text(verdicts)]))
        if stored.bisect is not None:
            documents.append(Document("bisect", "patchkit-doc-bisect", [json_text(stored.bisect)]))
        index = {
            "version": 1,
            "command": "report",
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "patchkit": __version__,
            "manifests": [m.name for m in loaded],
            "ranges": list(ranges),
            "commits": list(commits),
            "profiles": list(profiles),
            "metrics": chosen,
            "store": str(stored.path),
        }
        title = f"patchkit report: {', '.join(m.name for m in loaded)} over {' '.join([*ranges, *commits])}"
        page = build_page(title, index, documents, paths.report_cache(git_repo.common_dir))
    try:
        atomic_write(out, page, 0o644)
    except OSError as exc:
        if exc.errno in NOT_A_PLACE:  # the path changed under us since check_output: still the path's fault
            raise UsageError(f"-o {out}: {exc.strerror or exc}", hint=OUTPUT_HINT) from None
        raise UnwritableError.from_os(out, exc) from None
    count = checks[0].stats.commits if checks else 0
    if json_out:
        print_json(
            {
                **index,
                "output": str(out.resolve()),
                "bytes": len(page),
                "checked_commits": count,
                "stored_runs": len(stored.records),
                "bisect": stored.bisect is not None,
            }
        )
        return int(ExitCode.OK)
    console.print(
        f"wrote {out} ({len(page) / 1e6:.1f} MB): {plural(count, 'commit')}, {plural(len(loaded), 'manifest')}, "
        f"{plural(len(stored.records), 'stored run')}, metrics: {', '.join(chosen) or 'none'}",
        markup=False,
        highlight=False,
    )
    return int(ExitCode.OK)


NOT_A_PLACE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR})  # a path that cannot be a file: bad input
OUTPUT_HINT = "give -o a file path in a directory that exists, e.g. -o report.html"


def check_output(out: Path) -> None:
    """``-o FILE`` can be a file before anything is checked or drawn: a directory, or a path under a missing
    directory or under a file, is bad input (exit 2) naming the real cause, not a refused write advising
    permissions.  What only the write can tell (permissions, a full disk) stays ``UnwritableError``."""
    if out.is_dir():
        raise UsageError(f"-o {out} is a directory", hint=f"give a file path, e.g. -o {out / 'report.html'}")
    parent = out.parent
    for above in (parent, *parent.parents):
        if above.exists():
            if not above.is_dir():
                raise UsageError(f"-o {out}: {above} is a file, not a directory", hint=OUTPUT_HINT)
            break
    if not parent.is_dir():
        raise UsageError(
            f"-o {out}: the directory {parent} does not exist",
            hint=f"create it first (mkdir -p {parent}), or give -o a path in a directory that exists",
        )


def _records_text(stored: StoredRuns) -> str:
    return json_text({"version": 1, "runs": [r.to_json() for r in stored.records]})


def _metrics(stored: StoredRuns, wanted: Sequence[str]) -> list[str]:
    """The metric panels: those asked for, else every metric the stored runs have, in the order they define them."""
    known = list(
        dict.fromkeys(
            [str(m["name"]) for r in stored.records for m in r.metrics]
            + [name for r in stored.records for name in r.samples]
        )
    )
    for name in wanted:
        if name not in known:
            raise UsageError(
                f"--metric {name}: no stored run has this metric (store {stored.path})",
                hint=f"metrics in the store: {', '.join(known)}" if known else "no runs are stored yet",
            )
    return list(dict.fromkeys(wanted)) or known
