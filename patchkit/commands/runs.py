"""`patchkit runs`: list the runs in the bench store, oldest first (interrupted runs included)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.bench.executor import slurm_states
from patchkit.bench.record import RunRecord
from patchkit.bench.session import open_store
from patchkit.commands._bench_output import pending_table, runs_table, say
from patchkit.errors import ExitCode
from patchkit.git import Repo
from patchkit.render import emit, print_json

if TYPE_CHECKING:
    from rich.console import Console


def runs(
    *,
    repo: str,
    commits: Sequence[str],
    profiles: Sequence[str],
    store: str | None,
    json_out: bool,
    console: Console,
    pending: bool = False,
) -> int:
    with Repo.discover(Path(repo)) as git_repo:
        shas = git_repo.resolve_all(list(commits)) if commits else []
        with open_store(git_repo, store) as opened:
            records = opened.runs(commits=shas, profiles=profiles)
            waiting = opened.submissions(pending=True) if pending else []
            path = opened.path
    if pending:  # the launches submitted and not collected, instead of the runs
        key, listed = "pending", pending_rows(waiting, shas, profiles)
        empty, table = f"no submitted jobs waiting to be collected in {path}", lambda: pending_table(listed)
    else:
        key, listed = "runs", [{**r.summary_json(), "executor": executor_json(r)} for r in records]
        empty, table = f"no runs stored in {path}", lambda: runs_table(records)
    if json_out:
        print_json({"version": 1, "command": "runs", "store": str(path), key: listed})
    elif not listed:
        say(console, empty)
    else:
        emit(console, table())
    return int(ExitCode.OK)


def executor_json(record: RunRecord) -> dict[str, Any] | None:
    """Where a scheduled run ran (Slurm job id, array index, node, GPUs); None for an in-process run."""
    job = record.executor
    if not job:
        return None
    keys = ("name", "job_id", "array_index", "node", "gpu_ids", "state")
    return {key: job.get(key) for key in keys}


def pending_rows(rows: Sequence[dict[str, Any]], shas: Sequence[str], profiles: Sequence[str]) -> list[dict[str, Any]]:
    """Submitted launches not collected yet (of these commits and profiles), each with what Slurm says now."""
    rows = [
        r
        for r in rows
        if (not shas or r["label"].get("commit") in shas) and (not profiles or r["label"].get("profile") in profiles)
    ]
    states = slurm_states([r["job_id"] for r in rows]) or {}  # Slurm not answering: every state UNKNOWN
    return [
        {
            "job_id": r["job_id"],
            "slurm_state": states.get(r["job_id"], ("UNKNOWN", ""))[0],
            "node": states.get(r["job_id"], ("", ""))[1] or None,
            "commit": r["label"].get("commit"),
            "subject": r["label"].get("subject"),
            "profile": r["label"].get("profile"),
            "submitted_at": r["submitted_at"],
            "batch": r["batch"],
            "folder": r["folder"],
        }
        for r in rows
    ]
