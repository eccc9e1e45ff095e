"""`patchkit bisect`: the first commit on the first-parent line from GOOD to BAD where a metric is bad.

The verb lists the line (``Repo.commit_range``), checks every manifest at all
of its commits from the blobs (``check_range``, no checkout: a commit where a
required patch FAILs is skipped, never prepared nor benchmarked), and hands
the search to ``patchkit.bench.bisect.bisect`` with a ``measure`` that
benchmarks one commit in the session (every run is stored).

The search is noise-aware (``patchkit.bench.hunt``): launches are the
replicates, a probed commit gets more launches (interleaved with GOOD's and
BAD's) while the data cannot tell which side it is on, up to
``--max-launches``; the answer is a first bad commit with the evidence, or a
range it could not narrow with why.  The host's ``patchkit noise`` spread for
the profile and metric is the prior.  ``--slots K`` probes K commits per
round; the local executor has one slot, so K > 1 needs ``--executor slurm``
(each round one job array, ``bench.cluster.ScheduledRounds``).

Optional criteria, checked on the first launches of GOOD and BAD: ``--min X``
(bad when the median is below X), ``--max X`` (bad when above X), ``--ratio
R`` (bad when median / GOOD's median is below R for a ``better = "higher"``
metric, above R for ``better = "lower"``).  Without one, BAD must differ from
GOOD in the worse direction by the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from patchkit.bench.bisect import Measurement, Step, criterion
from patchkit.bench.bisect import bisect as search
from patchkit.bench.cluster import LOCAL, ClusterArgs, ScheduledRounds, prior_place, scheduled_executor
from patchkit.bench.prepare import unpatchable_commits
from patchkit.bench.record import RunRecord
from patchkit.bench.session import Interrupted, Session, parse_sets, sigterm_as_interrupt
from patchkit.bench.verdict import Noise
from patchkit.commands._bench_output import SUBMITTER_INTERRUPTED, progress, say, show_bisect, slurm_lines, step_line
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Commit, Repo
from patchkit.manifest import load_manifest
from patchkit.render import plural, print_json
from patchkit.report.documents import save_latest_bisect

LOCAL_SLOTS = 1  # the local executor starts one server at a time

if TYPE_CHECKING:
    from rich.console import Console


def bisect(
    *,
    manifests: Sequence[str],
    repo: str,
    good: str,
    bad: str,
    metric: str,
    min_value: float | None,
    max_value: float | None,
    ratio: float | None,
    profile: str | None,
    repeat: int | None,
    sets: Sequence[str],
    worktree_root: str | None,
    store: str | None,
    json_out: bool,
    console: Console,
    allow_dirty: bool = False,
    max_launches: int = 10,
    slots: int | None = None,  # --slots; with --executor slurm, default [bench.slurm].slots
    threshold: float = 0.0,
    cluster: ClusterArgs = LOCAL,  # --executor and the Slurm options
) -> int:
    given = [(k, v) for k, v in (("min", min_value), ("max", max_value), ("ratio", ratio)) if v is not None]
    if len(given) > 1:
        raise UsageError("give at most one of --min X, --max X, --ratio R", hint="e.g. --ratio 0.9")
    if slots is not None and slots > LOCAL_SLOTS and cluster.executor == "local":
        raise UsageError(
            f"--slots {slots}: the local executor runs one launch at a time (1 slot)",
            hint="drop --slots, or add --executor slurm (each round one job array of up to K jobs)",
        )
    kind: Literal["min", "max", "ratio"] | None = given[0][0] if given else None  # type: ignore[assignment]
    bound = given[0][1] if given else None
    loaded = [load_manifest(m) for m in manifests]
    with Repo.discover(Path(repo)) as git_repo:
        good_c, bad_c = git_repo.commit(good), git_repo.commit(bad)
        if good_c.sha == bad_c.sha:
            raise UsageError(
                f"--good {good} and --bad {bad} are the same commit ({good_c.short}): there is nothing between "
                "them to search",
                hint="give --good an older commit where the metric was fine",
            )
        session = Session.open(
            git_repo,
            loaded,
            store=store,
            worktree_root_dir=worktree_root,
            sets=parse_sets(sets),
            repeat=repeat,
            allow_dirty=allow_dirty,
        )
        the_metric = session.config.metric(metric)
        chosen = profile or session.config.profile_names()[0]
        session.config.profile(chosen)
        listed = git_repo.commit_range(good_c.sha, bad_c.sha)
        if not listed or listed[-1].sha != bad_c.sha:
            raise UsageError(
                f"{bad} is not a first-parent descendant of {good}",
                hint="give --good an older commit on the first-parent line of --bad",
            )
        unpatchable = unpatchable_commits(loaded, git_repo, [good_c, *listed])
        for end, label in ((good_c, "--good"), (bad_c, "--bad")):
            if end.sha in unpatchable:
                raise UsageError(
                    f"the manifests cannot apply at {label} {end.short} ({unpatchable[end.sha]})",
                    hint="pick an end point where `patchkit check` says every required patch applies",
                )

        def measure(commit: Commit) -> Measurement:
            return measured(session.run(commit, chosen))

        details: dict[int | None, tuple[str, ...]] = {}  # a run that is not ok: what its step line cannot hold

        def measured(record: RunRecord) -> Measurement:
            if record.details:
                details[record.run_id] = record.details
            return Measurement(record.median(the_metric.name), record.outcome, record.run_id, record.reason)

        slurm = scheduled_executor(session, replace(cluster, slots=slots), worktree_root=worktree_root)
        slots = LOCAL_SLOTS if slurm is None else slurm.slots  # the command line over [bench.slurm]
        rounds: ScheduledRounds | None = None
        if slurm is not None:  # each round of the search one Slurm array; a re-run reuses its rounds
            _, note = slurm_lines(console, [], verb="bisect", quiet=json_out)
            identity = [good_c.sha, bad_c.sha, the_metric.name, str(max_launches), str(threshold)]
            rounds = ScheduledRounds(session, chosen, slurm, command="bisect", identity=identity, note=note)

        place = prior_place(slurm)  # where the launches run: the host, or the Slurm partition
        stored = session.store.noise(place, chosen, the_metric.name)
        prior = None if stored is None else Noise(sigma=float(stored["sigma"]), df=int(stored["df"]))

        def on_step(step: Step) -> None:
            if not json_out:
                say(console, step_line(step, the_metric.name))
                for line in details.pop(step.measurement.run, ())[:30]:  # e.g. each STRAY that refused the run
                    say(console, f"    {line}")

        code = 0
        with session.store, progress(console, "bisect", live=not json_out) as show, sigterm_as_interrupt():
            session.progress = show
            if not json_out:
                rule = f"--{kind} {bound:g}" if kind is not None and bound is not None else "BAD worse than GOOD"
                again = "patchkit noise" + (" --executor slurm" if slurm is not None else "")
                spread = (
                    f"no noise prior for {place} (run `{again}`)"
                    if prior is None
                    else (f"noise prior {prior.sigma:.2%} ({prior.df} df, {place})")
                )
                say(
                    console,
                    f"patchkit bisect  {the_metric.name} ({chosen}), {rule}; "
                    f"{len(listed)} first-parent commits after {good_c.short}, {len(unpatchable)} cannot apply "
                    f"(skipped); up to {plural(max_launches, 'launch', 'launches')} per commit, "
                    f"{plural(slots, 'slot')}; {spread}",
                )
            try:
                report = search(
                    [good_c, *listed],
                    measure,
                    None if kind is None or bound is None else criterion(kind, bound, the_metric.better),
                    skipped=unpatchable,
                    on_step=on_step,
                    better=the_metric.better or "higher",
                    slots=slots,
                    max_launches=max_launches,
                    noise=prior,
                    threshold=threshold,
                    measure_many=None if rounds is None else (lambda cs: [measured(r) for r in rounds.round(cs)]),
                )
                if rounds is not None:
                    rounds.finish()
            except KeyboardInterrupt as stop:
                if not isinstance(stop, Interrupted):  # the submitter, waiting on Slurm: the jobs go on
                    say(console, SUBMITTER_INTERRUPTED, "bold yellow")
                    return 130

                say(console, f"interrupted: run {stop.record.run_id} is stored as interrupted", "bold yellow")
                code = 130
        if code:
            return code
    result = {
        "version": 1,
        "command": "bisect",
        "metric": the_metric.name,
        "profile": chosen,
        "criterion": {
            "min": min_value,
            "max": max_value,
            "ratio": ratio,
            "good_median": report.good_value,
            "threshold": threshold,
            "noise": None if prior is None else {"sigma": prior.sigma, "df": prior.df, "place": place},
        },
        "allow_dirty": allow_dirty,
        **report.to_json(),
    }
    save_latest_bisect(session.store.path, result)  # `runs --plot` and `report` mark its first bad commit
    if json_out:
        print_json(result)
    else:
        show_bisect(console, report, the_metric.name)
    return int(ExitCode.OK if report.first_bad is not None else ExitCode.REFUSED)
