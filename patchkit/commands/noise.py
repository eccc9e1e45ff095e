"""`patchkit noise`: an A/A run, the launch-to-launch spread where launches run, stored as the prior.

One commit is benchmarked ``--launches N`` times (N server starts, each with
its ``warmup + repeat`` client runs).  Per metric, each launch's value is the
median of its measured runs; the spread is the standard deviation of the logs
of those values (so 0.03 is about 3 %), with N - 1 degrees of freedom
(``verdict.noise_of``).  It is stored for the profile and where the launches
ran (``cluster.prior_place``: this host, or the Slurm partition and
constraint, never one node of it) in the store's ``noise`` table, and
``compare`` and ``bisect`` use the latest one as the prior where a side has
few launches.

As a check of the statistics, the launches are also split into the odd and
the even ones (interleaved, A1 B1 A2 B2 ...) and compared with the verdict
``compare`` uses: an A/A comparison must come out ``same`` or ``unknown``,
never ``different``; ``different`` there means the launches drift (a warming
machine, another tenant), and the spread is not stored.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.bench.cluster import LOCAL, ClusterArgs, prior_place, run_scheduled, scheduled_executor
from patchkit.bench.compare import launch_values
from patchkit.bench.record import Outcome, RunRecord
from patchkit.bench.session import Interrupted, Session, parse_sets, sigterm_as_interrupt
from patchkit.bench.verdict import Call, judge, noise_of
from patchkit.commands._bench_output import SUBMITTER_INTERRUPTED, explain_lines, progress, run_line, say, slurm_lines
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.manifest import load_manifest
from patchkit.render import Grid, emit, print_json

if TYPE_CHECKING:
    from rich.console import Console

INTERRUPTED = 130


def noise(
    *,
    manifests: Sequence[str],
    repo: str,
    commit: str,
    profiles: Sequence[str],
    launches: int,
    threshold: float,
    repeat: int | None,
    sets: Sequence[str],
    json_out: bool,
    worktree_root: str | None,
    store: str | None,
    console: Console,
    allow_dirty: bool = False,
    cluster: ClusterArgs = LOCAL,  # --executor and the Slurm options
) -> int:
    if launches < 3:
        raise UsageError(f"--launches {launches}: an A/A run needs at least 3 launches", hint="e.g. --launches 10")
    loaded = [load_manifest(m) for m in manifests]
    with Repo.discover(Path(repo)) as git_repo:
        target = git_repo.commit(commit)
        session = Session.open(
            git_repo,
            loaded,
            store=store,
            worktree_root_dir=worktree_root,
            sets=parse_sets(sets),
            repeat=repeat,
            allow_dirty=allow_dirty,
        )
        chosen = session.profiles(profiles)
        slurm = scheduled_executor(session, cluster, worktree_root=worktree_root)
        records: dict[str, list[RunRecord]] = {p: [] for p in chosen}
        interrupted = False
        with session.store, progress(console, "noise", live=not json_out) as show, sigterm_as_interrupt():
            session.progress = show
            try:
                if slurm is not None:  # every launch one Slurm job, up to --slots at once
                    done: list[RunRecord] = []
                    show_one, note = slurm_lines(console, done, verb="noise", quiet=json_out)
                    pairs = [(target, profile) for _ in range(launches) for profile in chosen]
                    for record in run_scheduled(session, pairs, slurm, command="noise", note=note, on_record=show_one):
                        records[record.profile].append(record)
                else:
                    for _ in range(launches):
                        for profile in chosen:
                            records[profile].append(session.run(target, profile))
                            if not json_out:
                                say(console, run_line(records[profile][-1]))
            except Interrupted as stop:
                records[stop.record.profile].append(stop.record)
                interrupted = True
            except KeyboardInterrupt:  # the submitter, waiting on Slurm: the jobs go on
                say(console, SUBMITTER_INTERRUPTED, "bold yellow")
                return INTERRUPTED
            reports = []
            host = prior_place(slurm)  # the key compare and bisect look the prior up by
            for profile in chosen:
                report = aa_report(records[profile], threshold=threshold)
                for row in report:
                    if row["stored"] and not interrupted:
                        session.store.add_noise(
                            host=host,
                            profile=profile,
                            metric=row["metric"],
                            sigma=row["sigma"],
                            df=row["df"],
                            commit=target.sha,
                            series=session.series,
                        )
                    elif row["stored"]:
                        row["stored"] = False
                        row["why"] = "interrupted: not stored"
                reports.append({"profile": profile, "host": host, "metrics": report})
        result: dict[str, Any] = {
            "version": 1,
            "command": "noise",
            "commit": target.sha,
            "subject": target.subject,
            "series": session.series,
            "launches": launches,
            "threshold": threshold,
            "runs": [r.run_id for p in chosen for r in records[p]],
            "profiles": reports,
        }
        if json_out:
            print_json(result)
        else:
            for profile in chosen:
                for record in records[profile]:
                    for line in explain_lines(record):
                        say(console, line)
            show_noise(console, result)
        if interrupted:
            return INTERRUPTED
        ok = all(r.outcome is Outcome.OK for p in chosen for r in records[p])
        return int(ExitCode.OK if ok else ExitCode.REFUSED)


def aa_report(launches: Sequence[RunRecord], *, threshold: float) -> list[dict[str, Any]]:
    """Per metric: the launch values, their spread, and the odd-against-even A/A verdict."""
    names = list(dict.fromkeys(name for r in launches for name in r.samples))
    rows = []
    for name in names:
        values = launch_values(launches, name)
        spread = noise_of(values)
        odd, even = values[0::2], values[1::2]
        aa = judge(odd, even, threshold=threshold, confidence=0.99, noise=None)
        row: dict[str, Any] = {
            "metric": name,
            "launches": len(values),
            "values": list(values),
            "median": statistics.median(values) if values else None,
            "sigma": None if spread is None else spread.sigma,
            "df": None if spread is None else spread.df,
            "aa": aa.as_json(),
            "stored": False,
            "why": "",
        }
        if spread is None:
            row["why"] = "fewer than 2 usable launches"
        elif aa.call is Call.DIFFERENT:
            row["why"] = "the odd and even launches differ: the machine drifts; not stored"
        else:
            row["stored"] = True
            row["why"] = "stored as the prior of this profile where these launches ran"
        rows.append(row)
    return rows


def show_noise(console: Console, result: dict[str, Any]) -> None:
    say(console, f"patchkit noise  {result['commit'][:10]} {result['subject']}; {result['launches']} launches", "bold")
    for item in result["profiles"]:
        table = Grid()
        for name in ("profile", "metric", "launches", "median", "spread", "df", "A/A (odd vs even)", "stored"):
            table.add_column(name, justify="right" if name in ("launches", "median", "spread", "df") else "left")
        for row in item["metrics"]:
            aa = row["aa"]
            interval = "" if aa["low"] is None else f" {aa['ratio']:.3f} [{aa['low']:.3f}, {aa['high']:.3f}]"
            table.add_row(
                item["profile"],
                row["metric"],
                str(row["launches"]),
                "-" if row["median"] is None else f"{row['median']:.2f}",
                "-" if row["sigma"] is None else f"{row['sigma']:.2%}",
                "-" if row["df"] is None else str(row["df"]),
                f"{aa['verdict']}{interval}",
                "yes" if row["stored"] else f"no: {row['why']}",
            )
        emit(console, table)
        say(console, f"{place_label(item['host'])}: compare and bisect use these spreads as the prior", "dim")


def place_label(place: str) -> str:
    """A prior's key for people: ``host gpu-1``, or ``Slurm partition gpu, constraint h100``."""
    if not place.startswith("slurm:"):
        return f"host {place}"
    partition, _, constraint = place.removeprefix("slurm:").partition(",constraint=")
    return f"Slurm partition {partition}" + (f", constraint {constraint}" if constraint else "")
