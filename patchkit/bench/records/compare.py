"""Two runs side by side: ``compare(a, b, ...) -> Comparison``, a pure function over two records.

Each side is the launches of one commit and profile from one series (one
``bench --launches N`` invocation): a launch's value for a metric is the
median of its measured client runs, and the launches are the replicates.
Per metric, ``verdict.judge`` gives the ratio of B to A with its confidence
interval and the three-way call (``different`` with a direction, ``same``
within ``threshold``, ``unknown`` with the launches that would be needed),
using each side's stored launch-to-launch spread (``patchkit noise``, where
that side ran) as its prior, pooled with its own launches (``judge``: one
shared prior is counted once; sides from two places each bring their own).
The older rule over single client runs (``significant``: medians apart by
more than the threshold and min-max ranges apart) is gone: it judged client
runs, not launches, and read as a second verdict.  The provenance
diff is what an engineer hunting a regression assembles by hand: the upstream commits between the two (given by the
caller, from ``Repo.commit_range``: this module runs no git), differences of
patch *state* (applied, provided upstream, not applied, with the payload
digest), and every difference in env, vars, versions, torch, GPU and host
facts.  What apply happened to do in a reused worktree (APPLY the first
time, SKIP ALREADY_APPLIED the next) is the same state and is no difference.

``pick_pair`` chooses the runs for ``compare --commit A --commit B``: the
latest ``ok`` run of each commit with a profile they share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from patchkit.bench.records.record import Outcome, PatchState, PatchStateJson, RunRecord, patch_state
from patchkit.bench.stats.delta import Between, Difference, MetricDelta, differences
from patchkit.bench.stats.verdict import Noise, judge
from patchkit.errors import UsageError
from patchkit.proof.compare import proof_changes


@dataclass(frozen=True)
class PatchChange:
    """One patch, named by its manifest and id, whose state differs between the two runs: applied (with its
    payload digest), provided upstream, not applied, or absent."""

    manifest: str
    patch: str
    a: str | None  # its state in run A: "applied sha256:...", "provided upstream", "not applied ..."; None: absent
    b: str | None

    def to_json(self) -> dict[str, object]:
        return {"manifest": self.manifest, "patch": self.patch, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: per metric the delta and verdict over each side's launches, and the provenance diff
    (commits between, patch states, env, vars, versions, GPUs, host, the probe's facts) that explains a change."""

    a: RunRecord
    b: RunRecord
    threshold: float
    metrics: tuple[MetricDelta, ...]
    between: Between
    patches: tuple[PatchChange, ...]
    env: tuple[Difference, ...]
    vars: tuple[Difference, ...]
    versions: tuple[Difference, ...]
    gpus: tuple[Difference, ...]
    host: tuple[Difference, ...]
    no_data: tuple[RunRecord, ...] = field(default=())  # the runs (A, B or both) without a single measured value
    launches_a: tuple[RunRecord, ...] = ()  # the launches of side A (A among them)
    launches_b: tuple[RunRecord, ...] = ()
    confidence: float = 0.99
    proof: tuple[Difference, ...] = ()  # the probe's facts: effective env per rank, libraries, distributions, STRAYs

    @property
    def provenance(self) -> dict[str, tuple[Difference, ...] | tuple[PatchChange, ...]]:
        return {
            "patches": self.patches,
            "env": self.env,
            "vars": self.vars,
            "versions": self.versions,
            "gpus": self.gpus,
            "host": self.host,
            "proof": self.proof,
        }

    def to_json(self) -> dict[str, object]:
        return {
            "version": 2,
            "command": "compare",
            "threshold": self.threshold,
            "confidence": self.confidence,
            "a": self.a.ident(),
            "b": self.b.ident(),
            "launches": {"a": [r.run_id for r in self.launches_a], "b": [r.run_id for r in self.launches_b]},
            "no_data": [r.run_id for r in self.no_data],
            "metrics": [m.to_json() for m in self.metrics],
            "provenance": {
                "between": self.between.to_json(),
                **{key: [d.to_json() for d in items] for key, items in self.provenance.items()},
            },
        }


def compare(
    a: RunRecord,
    b: RunRecord,
    *,
    threshold: float,
    between: Between | None = None,
    launches_a: Sequence[RunRecord] = (),
    launches_b: Sequence[RunRecord] = (),
    noise: Mapping[str, Noise] | None = None,
    confidence: float = 0.99,
    noise_b: Mapping[str, Noise] | None = None,
) -> Comparison:
    """Compare two sides; ``between`` is the commit range (``Between("same")`` when not given and same sha).

    ``launches_a`` / ``launches_b``: the launches of each side (default: the run
    alone); ``noise``: a prior spread per metric name, of both sides, or of A
    alone when ``noise_b`` (B's, measured where B ran) is given."""
    if between is None:
        between = Between("same") if a.commit.sha == b.commit.sha else Between("diverged")
    side_a, side_b = tuple(launches_a) or (a,), tuple(launches_b) or (b,)
    better = {m["name"]: m["better"] for record in (*side_a, *side_b) for m in record.metrics}
    return Comparison(
        a=a,
        b=b,
        threshold=threshold,
        metrics=tuple(
            launch_deltas(side_a, side_b, threshold, better, noise=noise or {}, confidence=confidence, noise_b=noise_b)
        ),
        launches_a=side_a,
        launches_b=side_b,
        confidence=confidence,
        between=between,
        patches=tuple(patch_changes(a, b)),
        env=tuple(differences(_env_shape(a), _env_shape(b), "env")),
        vars=tuple(
            differences(
                {k: v for k, v in a.vars.items() if k != "port"},
                {k: v for k, v in b.vars.items() if k != "port"},
                "vars",
            )
        ),
        versions=tuple(
            differences(
                {"interpreter": a.interpreter, "torch": a.torch, "server_info": a.server_info},
                {"interpreter": b.interpreter, "torch": b.torch, "server_info": b.server_info},
                "",
            )
        ),
        gpus=tuple(differences(list(a.gpus or []), list(b.gpus or []), "gpus")),
        host=tuple(differences(a.host, b.host, "host")),
        no_data=tuple(r for r in (a, b) if not r.has_data()),
        proof=tuple(Difference(key, x, y) for key, x, y in proof_changes(a.proof, b.proof)),
    )


def metric_deltas(a: RunRecord, b: RunRecord) -> list[MetricDelta]:
    """Per metric: each side's stats over its client runs, and the ratio of the medians."""
    sa, sb = a.stats(), b.stats()
    rows = []
    for name in dict.fromkeys([*sa, *sb]):
        x, y = sa.get(name), sb.get(name)
        ma, mb = None if x is None else x["median"], None if y is None else y["median"]
        ratio = mb / ma if ma and mb is not None else None
        rows.append(MetricDelta(name, x, y, ratio))
    return rows


def launch_values(launches: Sequence[RunRecord], metric: str) -> tuple[float, ...]:
    """One value per usable launch: the median of its measured client runs (the launch's aggregate)."""
    out = []
    for record in launches:
        if record.outcome is not Outcome.OK:
            continue
        value = record.median(metric)
        if value is not None:
            out.append(value)
    return tuple(out)


def launch_deltas(
    side_a: Sequence[RunRecord],
    side_b: Sequence[RunRecord],
    threshold: float,
    better: Mapping[str, str],
    *,
    noise: Mapping[str, Noise],
    confidence: float,
    noise_b: Mapping[str, Noise] | None = None,
) -> list[MetricDelta]:
    """Per metric: the client runs' stats and the verdict over the launches.  ``noise``: the prior of both sides
    (one place), or of A when ``noise_b`` gives B's (two places)."""
    pooled_a, pooled_b = _pooled(side_a), _pooled(side_b)
    rows = []
    for delta in metric_deltas(pooled_a, pooled_b):
        va, vb = launch_values(side_a, delta.metric), launch_values(side_b, delta.metric)
        prior_b = None if noise_b is None else noise_b.get(delta.metric)
        verdict = judge(va, vb, threshold=threshold, confidence=confidence, noise=noise.get(delta.metric),
                        noise_b=prior_b)  # fmt: skip
        rows.append(replace(delta, verdict=verdict, launch_values=(va, vb), better=better.get(delta.metric)))
    return rows


def _pooled(launches: Sequence[RunRecord]) -> RunRecord:
    """One record whose samples are the client runs of every launch (for the kept min/median/max and rule)."""
    usable = [r for r in launches if r.outcome is Outcome.OK] or list(launches)
    if len(usable) == 1:
        return usable[0]
    samples: dict[str, list[float | None]] = {}
    for record in usable:
        for name, values in record.samples.items():
            samples.setdefault(name, []).extend(values)
    return replace(usable[-1], samples={k: tuple(v) for k, v in samples.items()})


def state_of(result: PatchStateJson) -> str:
    """A patch's state in a run (``RunRecord.manifests`` results): its ``state`` (older records: derived
    from status and reason), with the first 12 hex digits of its payload digest when applied."""
    state = result.get("state")
    if not isinstance(state, str):
        state = patch_state(result.get("status"), result.get("reason"))
    payload = result.get("payload")
    if state == PatchState.APPLIED and isinstance(payload, str):
        return f"applied {payload[: len('sha256:') + 12]}"
    return state


def patch_changes(a: RunRecord, b: RunRecord) -> list[PatchChange]:
    def table(record: RunRecord) -> dict[tuple[str, str], str]:
        return {
            (manifest["name"], r["patch"]): state_of(r) for manifest in record.manifests for r in manifest["results"]
        }

    ta, tb = table(a), table(b)
    return [
        PatchChange(m, p, ta.get((m, p)), tb.get((m, p)))
        for (m, p) in dict.fromkeys([*ta, *tb])
        if ta.get((m, p)) != tb.get((m, p))
    ]


def _env_shape(record: RunRecord) -> dict[str, str]:
    """The env with the per-commit parts (worktree path, commit) written as placeholders: they always differ."""
    tree = record.env.get("PATCHKIT_BENCH_TREE")
    out = {}
    for key, value in record.env.items():
        if key in ("PATCHKIT_BENCH_COMMIT", "PATCHKIT_BENCH_TREE"):
            continue
        out[key] = value.replace(tree, "{tree}") if tree else value
    return out


def pick_pair(found: Sequence[tuple[str, Sequence[RunRecord]]], profile: str | None) -> tuple[RunRecord, RunRecord]:
    """The latest ``ok`` run of each of two commits, of one profile (``profile``, else the one they share
    whose latest run is newest); the same commit twice gives its last two ``ok`` runs.  ``found`` is
    (the revision as given, its runs oldest first) twice.  Interrupted, refused and failed runs are
    never picked, nor the runs of a ``bench --without`` (a tree less one patch: compare them by run number);
    when no pair exists, a UsageError names the runs that were found."""
    (_, runs_a), (_, runs_b) = found

    def usable(record: RunRecord) -> bool:
        return record.outcome is Outcome.OK and record.without is None and profile in (None, record.profile)

    ok_a = [r for r in runs_a if usable(r)]
    ok_b = [r for r in runs_b if usable(r)]
    common = {r.profile for r in ok_a} & {r.profile for r in ok_b}
    if not common:
        listed = "; ".join(f"{rev}: {_listing(runs)}" for rev, runs in found)
        what = f"profile {profile!r} has no ok runs" if profile else "no profile has ok runs"
        raise UsageError(
            f"{what} of both commits ({listed})",
            hint="bench the commit that lacks one, or compare two run numbers from `patchkit runs`",
        )

    def latest(runs: Sequence[RunRecord], name: str) -> RunRecord:
        return max((r for r in runs if r.profile == name), key=lambda r: r.run_id or 0)

    chosen = max(sorted(common), key=lambda name: max(latest(ok_a, name).run_id or 0, latest(ok_b, name).run_id or 0))
    a, b = latest(ok_a, chosen), latest(ok_b, chosen)
    if a.run_id == b.run_id:  # one commit twice: its last two ok runs
        earlier = sorted((r for r in ok_a if r.profile == chosen), key=lambda r: r.run_id or 0)[:-1]
        if not earlier:
            raise UsageError(
                f"only one ok run of {found[0][0]} with profile {chosen!r} (run {a.run_id})",
                hint="bench it again, or compare two run numbers from `patchkit runs`",
            )
        a = earlier[-1]
    return a, b


def _listing(runs: Sequence[RunRecord]) -> str:
    if not runs:
        return "no runs"
    return ", ".join(f"run {r.run_id} {r.profile} {r.outcome.value}" for r in runs)
