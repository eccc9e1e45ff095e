"""`patchkit bench`: benchmark patched trees at one or more commits, per profile, and store every run.

For each commit: a worktree (reused), every ``-m`` manifest applied, the
guard; a refused commit gets a ``refused`` record and nothing starts.  Then,
per profile, one job (``patchkit.bench.job.run_job``).  The table has one row
per commit, profile and metric: median, min, max, and the ratio of the median
to the first commit's (same profile and metric).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchkit.bench.job import RunRecord
from patchkit.bench.session import Session, parse_sets, sigterm_as_interrupt
from patchkit.errors import ExitCode
from patchkit.git import Commit, Repo
from patchkit.manifest import load_manifest
from patchkit.render import emit, print_json

OUTCOME_STYLE = {
    "ok": "bold green",
    "refused": "bold red",
    "server-failed": "bold red",
    "client-failed": "bold red",
    "metric-missing": "bold yellow",
}


def bench(
    *,
    manifests: Sequence[str],
    repo: str,
    commits: Sequence[str],
    profiles: Sequence[str],
    repeat: int | None,
    sets: Sequence[str],
    json_out: bool,
    worktree_root: str | None,
    store: str | None,
    console: Console,
) -> int:

    loaded = [load_manifest(m) for m in manifests]
    with Repo.discover(Path(repo)) as git_repo:
        targets = [git_repo.commit(rev) for rev in (commits or ["HEAD"])]
        session = Session.open(
            git_repo, loaded, store=store, worktree_root_dir=worktree_root, sets=parse_sets(sets), repeat=repeat
        )
        chosen = session.profiles(profiles)
        records: list[RunRecord] = []
        with session.store, live_progress(console, session, enabled=not json_out), sigterm_as_interrupt():
            for commit in targets:
                for profile in chosen:
                    record = session.run(commit, profile)
                    records.append(record)
                    if not json_out:
                        console.print(run_line(record), markup=False, highlight=False)
        rows = table_rows(records)
        if json_out:
            print_json(
                {
                    "version": 1,
                    "command": "bench",
                    "store": str(session.store.path),
                    "runs": [r.to_json() for r in records],
                    "table": rows,
                }
            )
        else:
            emit(console, results_table(rows))
            for record in records:
                for line in explain_lines(record):
                    console.print(line, markup=False, highlight=False)
            console.print(f"stored in {session.store.path}", style="dim", markup=False)
        ok = all(r.outcome == "ok" for r in records)
        return int(ExitCode.OK if ok else ExitCode.REFUSED)


def run_line(record: RunRecord) -> str:
    sha = record.commit["sha"][:10]
    return f"run {record.run_id}: {sha} {record.profile}: {record.outcome}"


def explain_lines(record: RunRecord) -> list[str]:
    if record.outcome == "ok":
        return []
    out = [f"{record.commit['sha'][:10]} {record.profile} {record.outcome}: {record.reason}"]
    out.extend(f"  {line}" for line in record.details[:30])
    for item in record.missing[:10]:
        out.append(f"  missing {item['metric']} in run {item['run']}: see {item['log']}")
    return out


def table_rows(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """One row per commit, profile and metric; ratio = median / the first commit's median (the first that has one)."""
    first: dict[tuple[str, str], float] = {}
    rows: list[dict[str, Any]] = []
    for record in records:
        stats = record.stats()
        if not any(s["n"] or s["missing"] for s in stats.values()):  # nothing measured: one row
            rows.append(_row(record, None, {}, None))
            continue
        for metric, s in stats.items():
            key = (record.profile, metric)
            if s["median"] is not None:
                first.setdefault(key, s["median"])
            base = first.get(key)
            ratio = s["median"] / base if base and s["median"] is not None else None
            rows.append(_row(record, metric, s, ratio))
    return rows


def _row(record: RunRecord, metric: str | None, s: dict[str, Any], ratio: float | None) -> dict[str, Any]:
    return {
        **record.ident(),
        "metric": metric,
        "median": s.get("median"),
        "min": s.get("min"),
        "max": s.get("max"),
        "n": s.get("n", 0),
        "missing": s.get("missing", 0),
        "ratio": ratio,
    }


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def results_table(rows: Sequence[dict[str, Any]]) -> Table:
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name, justify in [
        ("run", "right"),
        ("commit", "left"),
        ("profile", "left"),
        ("metric", "left"),
        ("median", "right"),
        ("min", "right"),
        ("max", "right"),
        ("n", "right"),
        ("ratio", "right"),
        ("outcome", "left"),
    ]:
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        subject = row["subject"] if len(row["subject"]) <= 40 else row["subject"][:39] + "…"
        table.add_row(
            str(row["run"]),
            f"{row['commit'][:10]} {subject}",
            row["profile"],
            row["metric"] or "-",
            fmt(row["median"]),
            fmt(row["min"]),
            fmt(row["max"]),
            f"{row['n']}" + (f" ({row['missing']} missing)" if row["missing"] else ""),
            fmt(row["ratio"], 3),
            Text(row["outcome"], style=OUTCOME_STYLE.get(row["outcome"], "")),
        )
    return table


@contextmanager
def live_progress(console: Console, session: Session, *, enabled: bool) -> Iterator[None]:
    """On a terminal: a status line with the commit, profile, phase and elapsed time or run count."""
    if not enabled or not console.is_terminal:
        yield
        return
    with console.status("starting") as status:

        def show(commit: Commit, profile: str, phase: str, detail: str) -> None:
            status.update(f"{commit.short} {profile}: {phase} {detail}".rstrip())

        session.progress = show
        try:
            yield
        finally:
            session.progress = None
