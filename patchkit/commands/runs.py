"""`patchkit runs`: list the runs in the bench store, oldest first (interrupted runs included)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.bench.records.rows import PendingRow
from patchkit.bench.records.store import WHICH_STORE, Submission, no_store, open_store
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.report.documents import load_runs
from patchkit.views.console import emit, print_json, say
from patchkit.views.runs import pending_table, runs_table

if TYPE_CHECKING:
    from patchkit.views.console import Console


def runs(
    *,
    repo: str,
    commits: Sequence[str],
    profiles: Sequence[str],
    store: str | None,
    json_out: bool,
    console: Console,
    plot: str | None = None,
    pending: bool = False,
) -> int:
    if plot is not None and (json_out or pending):
        raise UsageError(
            f"--plot draws for a person: it takes no {'--json' if json_out else '--pending'}",
            hint="`patchkit runs --json` prints the runs the plot draws"
            if json_out
            else "drop --plot: --pending lists the launches not collected yet",
        )
    with Repo.discover(Path(repo)) as git_repo:
        shas = git_repo.resolve_all(list(commits)) if commits else []
        if pending:  # the launches submitted and not collected, instead of the runs
            with open_store(git_repo, store, create=False) as opened:
                waiting = opened.submissions(pending=True)
                where = opened.path
            listed = pending_rows(waiting, shas, profiles)
            if json_out:
                print_json({"version": 1, "command": "runs", "store": str(where), "pending": listed})
            elif not listed:
                say(
                    console,
                    f"no submitted jobs waiting to be collected in {where}"
                    if where.exists()
                    else f"{no_store(where)}; {WHICH_STORE}",
                )
            else:
                emit(console, pending_table(listed))
            return int(ExitCode.OK)
        stored = load_runs(git_repo, store, commits=shas, profiles=profiles)
        if plot is not None:
            from patchkit.views.plot import plot_metric

            return plot_metric(git_repo, stored, plot, console)
    records, path = stored.records, stored.path
    if json_out:
        print_json(stored.document())
    elif not records:
        say(console, f"no runs stored in {path}" if path.exists() else f"{no_store(path)}; {WHICH_STORE}")
    else:
        emit(console, runs_table(records))
        say(console, f"one run whole: patchkit show RUN (e.g. patchkit show {records[-1].run_id})", "dim")
    return int(ExitCode.OK)


def pending_rows(rows: Sequence[Submission], shas: Sequence[str], profiles: Sequence[str]) -> list[PendingRow]:
    """Submitted launches not collected yet (of these commits and profiles), each with what Slurm says now.

    Only Slurm's: a local batch's launch that is not collected (interrupted, or its patchkit killed) waits
    for nothing and runs nowhere; the same command run again launches it again."""
    from patchkit.bench.execution.slurm import slurm_states  # asks Slurm: only `runs --pending`

    rows = [
        r
        for r in rows
        if r.executor == "slurm"
        and (not shas or r.label.get("commit") in shas)
        and (not profiles or r.label.get("profile") in profiles)
    ]
    states = slurm_states([r.job_id for r in rows]) or {}  # Slurm not answering: every state UNKNOWN
    return [
        {
            "job_id": r.job_id,
            "slurm_state": states.get(r.job_id, ("UNKNOWN", ""))[0],
            "node": states.get(r.job_id, ("", ""))[1] or None,
            "commit": r.label.get("commit"),
            "subject": r.label.get("subject"),
            "profile": r.label.get("profile"),
            "submitted_at": r.submitted_at,
            "batch": r.batch,
            "folder": r.folder,
        }
        for r in rows
    ]
