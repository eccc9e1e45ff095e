"""A benchmarking session: manifests + repository + store; ``bench`` and ``bisect`` both drive one.

``Session.run(commit, profile)`` prepares the commit's worktree once (apply
every manifest, guard, version file), then builds a ``JobSpec`` and calls
``run_job``; every record, refused ones included, goes to the store.  The run's logs go to
``<git-common-dir>/patchkit/bench-runs/``, wherever ``--store`` puts the store.  A commit
refused by its patches gets a ``refused`` record per profile and never starts
a server or client.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from patchkit import paths
from patchkit.bench.execution.job import JobSpec, run_job
from patchkit.bench.execution.prepare import Prepared, prepare_commit, worktree_root
from patchkit.bench.records.provenance import host_facts
from patchkit.bench.records.record import ManifestJson, Outcome, PatchStateJson, RunLogs, RunRecord, now
from patchkit.bench.records.store import Store, open_store
from patchkit.errors import RefusedError, RepoError, UsageError
from patchkit.git import Commit, Repo
from patchkit.manifest import Manifest
from patchkit.manifest.bench import BenchConfig
from patchkit.proof.account import TreeFacts
from patchkit.wording import plural


def bench_config(manifests: Sequence[Manifest]) -> BenchConfig:
    """The one [bench] table among the manifests given."""
    having = [m for m in manifests if m.bench is not None]
    if len(having) != 1:
        names = ", ".join(m.display for m in having) or "none of them"
        raise UsageError(
            f"exactly one -m manifest must have a [bench] table ({names})",
            hint="docs/manifest.md `[bench]` describes the table; put it in one manifest",
        )
    config = having[0].bench
    assert config is not None
    return config


def parse_sets(sets: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--set {item!r} is not KEY=VALUE", hint="e.g. --set prompts=50")
        out[key.strip()] = value
    return out


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM to patchkit stops the server group like Ctrl-C does (main thread only)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM ended a run; the run is stored (``record``, outcome ``interrupted``)."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__(record.reason)
        self.record = record


@dataclass
class Session:
    """What ``bench`` and ``bisect`` drive launches with: manifests, repository, store and worktree root; each commit's
    tree is prepared once and reused by its later launches, and every launch belongs to the session's ``series``."""

    repo: Repo
    manifests: Sequence[Manifest]
    config: BenchConfig
    store: Store
    root: Path
    sets: Mapping[str, str] = field(default_factory=dict)
    repeat: int | None = None
    allow_dirty: bool = False
    progress: Callable[[Commit, str, str, str], None] | None = None
    runs_dir: Path | None = None  # where run directories go (--shared-dir/bench-runs); default: next to the store
    series: str = field(default_factory=lambda: new_series())  # noqa: PLW0108 (defined below)
    # bench --without: the patch these manifests leave out, {"manifest", "patch"}, stamped on every record
    without: Mapping[str, str] | None = None
    _prepared: dict[str, Prepared] = field(default_factory=dict)
    _launched: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def open(
        cls,
        repo: Repo,
        manifests: Sequence[Manifest],
        *,
        store: str | None,
        worktree_root_dir: str | None,
        sets: Mapping[str, str],
        repeat: int | None,
        allow_dirty: bool = False,
    ) -> Session:
        config = bench_config(manifests)
        for profile in config.profile_names():
            config.resolve_vars(profile, sets)  # a bad --set fails before anything starts
        return cls(
            repo,
            manifests,
            config,
            open_store(repo, store),
            worktree_root(repo, worktree_root_dir),
            sets,
            repeat,
            allow_dirty,
        )

    def profiles(self, chosen: Sequence[str]) -> list[str]:
        for name in chosen:
            self.config.profile(name)
        return list(dict.fromkeys(chosen)) or self.config.profile_names()

    def prepare(self, commit: Commit, progress: Callable[[str, str], None] | None = None) -> Prepared:
        if commit.sha not in self._prepared:
            try:
                prepared = prepare_commit(
                    self.repo,
                    self.manifests,
                    commit,
                    self.root,
                    self.config,
                    sets=self.sets,
                    allow_dirty=self.allow_dirty,
                    progress=progress,
                )
            except (RefusedError, RepoError) as exc:
                # A worktree that cannot be reused (edited by hand, git refusing): this commit is
                # refused, the others still run.
                items = tuple(getattr(exc, "items", ()))
                prepared = Prepared(commit, None, (), True, (exc.one_line(), *items), {}, {}, None)
            self._prepared[commit.sha] = prepared
        return self._prepared[commit.sha]

    def plan(self, commit: Commit, profile: str, say: Callable[[str, str], None] | None = None) -> JobSpec | RunRecord:
        """The job for (commit, profile) on its prepared tree, or, for a refused commit, its ``refused``
        record (not stored yet): what an executor gets is always a commit the guard let through."""
        if say is not None:  # a later launch of the commit reuses the tree prepared for its first
            say("preparing worktree" if commit.sha not in self._prepared else "reusing the prepared worktree", "")
        prepared = self.prepare(commit, say)
        values = self.config.resolve_vars(profile, self.sets)
        if prepared.refused:
            return refused_record(prepared, profile, values, self.config, allow_dirty=self.allow_dirty)
        assert prepared.tree is not None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        runs_dir = self.runs_dir or paths.bench_runs(self.repo.common_dir)
        return JobSpec(
            commit=commit,
            tree=prepared.tree,
            config=self.config,
            profile=profile,
            vars=values,
            run_dir=runs_dir / f"{stamp}-{commit.sha[:10]}-{profile}",
            warmup=self.config.warmup,
            repeat=self.repeat or self.config.repeat,
            manifests=tuple(prepared.manifests_json()),
            guard=prepared.guard,
            guard_env=prepared.guard_env,
            expected_version=prepared.version,
            allow_dirty=self.allow_dirty,
            proof_tree=proof_tree(prepared, self.config),
        )

    def next_launch(self, commit: Commit, profile: str) -> int:
        """The launch number the next launch of (commit, profile) gets in this series (1 for the first)."""
        launch = self._launched.get((commit.sha, profile), 0) + 1
        self._launched[(commit.sha, profile)] = launch
        return launch

    def launch_key(self, commit: Commit, profile: str, ordinal: int) -> str:
        """What makes two launches the same launch: commit, profile, values, counts, manifests, the patch
        ``--without`` leaves out, and the launch's ordinal among those of its (commit, profile).

        The key a batch's ledger matches a launch with (Slurm and local alike), computed from the session
        alone, without preparing the tree: a re-run of a command whose submitter died must not touch the
        worktree of a launch still running from it."""
        fields: dict[str, object] = {
            "commit": commit.sha,
            "profile": profile,
            "vars": dict(self.config.resolve_vars(profile, self.sets)),
            "warmup": self.config.warmup,
            "repeat": self.repeat or self.config.repeat,
            "manifests": [m.digest for m in self.manifests],
            "allow_dirty": self.allow_dirty,
            "ordinal": ordinal,
        }
        if self.without is not None:  # only then: the keys of batches already in a store stay what they were
            fields["without"] = dict(self.without)
        text = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def run(
        self, commit: Commit, profile: str, *, launch: int | None = None, submission: tuple[str, str] | None = None
    ) -> RunRecord:
        """One server launch of ``commit`` with ``profile``: launch number ``launch`` of this series for the pair
        (default: the next one).

        The worktree is prepared at the first launch of a commit and reused by the next ones.  ``submission``
        (batch, key): the ledger row of a local batch (``launches.run_here``) that this launch settles.  A launch
        that ran to its end marks it collected, in the transaction that stores the record, so that a re-run of
        the command reads the record back instead of launching again; an ``interrupted`` launch, and one
        refused before it started, leave it uncollected, with that outcome as its state: the re-run launches
        them again (the guard may pass by then; an interrupted launch is the one the re-run is for)."""
        launch = self.next_launch(commit, profile) if launch is None else launch
        progress = self.progress

        shown = profile if self.without is None else f"{profile} without {self.without['patch']}"

        def say(phase: str, detail: str) -> None:
            if progress is not None:
                progress(commit, shown, phase, detail)

        planned = self.plan(commit, profile, say)
        record = planned if isinstance(planned, RunRecord) else run_job(planned, say, base_env=dict(os.environ))
        record = replace(record, launch=launch, series=self.series, without=self.without,
                         manifests=left_out(record.manifests, self.without))  # fmt: skip
        settled = not isinstance(planned, RunRecord) and record.outcome is not Outcome.INTERRUPTED
        stored = record.with_run_id(self.store.add(record, submission=submission if settled else None))
        if submission is not None and not settled:
            self.store.set_submission_state(*submission, record.outcome.value)
        if stored.outcome is Outcome.INTERRUPTED:
            raise Interrupted(stored)
        return stored


LEFT_OUT = "left out (bench --without)"  # the state of the patch a without side's tree lacks


def left_out(manifests: tuple[ManifestJson, ...], without: Mapping[str, str] | None) -> tuple[ManifestJson, ...]:
    """The records' patch states with the patch ``bench --without`` left out named in its manifest: so that
    ``compare`` and ``show`` say that patch was absent on purpose, not that it failed or vanished."""
    if without is None:
        return manifests
    out = []
    for manifest in manifests:
        if manifest.get("name") == without["manifest"]:
            entry: PatchStateJson = {
                "patch": without["patch"],
                "status": None,
                "reason": None,
                "state": LEFT_OUT,
                "payload": None,
            }
            manifest = {**manifest, "results": [*manifest.get("results", ()), entry]}
        out.append(manifest)
    return tuple(out)


def new_series() -> str:
    """The id of one invocation's launches: UTC time to the microsecond and the process id (unique per host)."""
    return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}-{os.getpid()}"


def proof_tree(prepared: Prepared, config: BenchConfig) -> TreeFacts | None:
    """The worktree as the probe's accounting reads it: the commit's blobs, patchkit's apply records, and the
    version file bench wrote (patchkit's own file, as the guard treats it)."""
    if not config.probe or prepared.tree is None:
        return None
    extra = {}
    if config.scm_version_file is not None:
        path = prepared.tree / config.scm_version_file
        with contextlib.suppress(OSError):
            extra[config.scm_version_file] = hashlib.sha256(path.read_bytes()).hexdigest()
    return TreeFacts.of(Repo.discover(prepared.tree), prepared.tree, prepared.commit.sha, extra)


def refused_record(
    prepared: Prepared, profile: str, values: Mapping[str, str], config: BenchConfig, *, allow_dirty: bool = False
) -> RunRecord:
    return unstarted_record(
        prepared.commit,
        profile,
        Outcome.REFUSED,
        refusal(prepared),
        tuple(prepared.reasons),
        values,
        tuple(prepared.manifests_json()),
        prepared.guard,
        config,
        allow_dirty=allow_dirty,
    )


def unstarted_record(
    commit: Commit,
    profile: str,
    outcome: Outcome,
    reason: str,
    details: tuple[str, ...],
    values: Mapping[str, str],
    manifests: tuple[ManifestJson, ...],
    guard: Mapping[str, object],
    config: BenchConfig,
    *,
    allow_dirty: bool = False,
    host: Mapping[str, object] | None = None,
    logs: RunLogs | None = None,
    executor: Mapping[str, object] | None = None,
) -> RunRecord:
    """A record of a launch that measured nothing here: refused before starting, or (Slurm) a job that
    ended without sending its record back."""
    stamp = now()
    return RunRecord(
        commit=commit,
        profile=profile,
        outcome=outcome,
        reason=reason,
        details=details,
        started_at=stamp,
        finished_at=stamp,
        vars=dict(values),
        commands={},
        env={},
        manifests=manifests,
        guard=guard,
        host=host_facts() if host is None else host,
        interpreter=None,
        torch=None,
        gpus=None,
        server_info=None,
        samples={},
        missing=(),
        metrics=tuple(m.to_json() for m in config.metrics),
        logs=logs or {},
        allow_dirty=allow_dirty,
        executor=executor,
    )


def refusal(prepared: Prepared) -> str:
    """Why a prepared commit is refused, in one line: the guard's failed checks, or the patches that cannot apply."""
    failed = [
        f"{report['manifest']['name']}:{check['check']}"
        for report in prepared.guard.get("reports", ())
        for check in report["checks"]
        if not check["ok"]
    ]
    if failed:
        return f"the guard refused the patched tree ({', '.join(failed)}; listed in details); nothing was started"
    count = len(prepared.reasons)
    return (
        f"{plural(count, 'required patch', 'required patches')} cannot apply or "
        f"{'is' if count == 1 else 'are'} not in place at this commit (listed in details); nothing was started"
    )
