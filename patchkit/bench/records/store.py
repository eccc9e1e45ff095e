"""The provenance store: every benchmark run, with the facts needed to trust and explain it.

One SQLite file, by default ``<git-common-dir>/patchkit/bench.sqlite``: shared
by all worktrees of the repository, never inside a tree.  The schema has a
version (table ``schema_version``) and forward migrations (``MIGRATIONS``,
applied in order inside one transaction each); a file written by a newer
patchkit is refused rather than misread.  docs/json.md ("The bench store")
documents the tables.

``runs`` keeps the columns people filter and sort on, plus the whole
``RunRecord`` as JSON (``record``); ``samples`` has one row per metric and
measured client run, a missing value as NULL with the log to read; ``manifests``
one row per manifest applied for the run with its digest and per-patch statuses.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from patchkit import paths
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.stats.spread import Noise
from patchkit.errors import WRITE_ERRNOS, RepoError, UnwritableError, UsageError
from patchkit.proof.document import CoverageJson
from patchkit.redact import redact_env

if TYPE_CHECKING:
    from patchkit.git import Repo

# Each entry upgrades the schema from version i to i + 1.
MIGRATIONS: tuple[str, ...] = (
    # 1: runs and their samples.
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        commit_sha TEXT NOT NULL,
        subject TEXT NOT NULL,
        author_date TEXT NOT NULL,
        profile TEXT NOT NULL,
        outcome TEXT NOT NULL,
        reason TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        host TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX runs_commit ON runs (commit_sha, profile);
    CREATE TABLE samples (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        run INTEGER NOT NULL,
        value REAL,
        log TEXT
    );
    CREATE INDEX samples_run ON samples (run_id, metric);
    """,
    # 2: manifests as rows (compare diffs patch statuses without parsing every record),
    #    and the server log's path as a column.
    """
    CREATE TABLE manifests (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        results TEXT NOT NULL
    );
    CREATE INDEX manifests_run ON manifests (run_id);
    ALTER TABLE runs ADD COLUMN server_log TEXT;
    """,
    # 3: the outcomes as a table the runs must name (``interrupted`` is new), enforced by triggers;
    #    the records already stored get their secret-looking env values redacted (see _backfill_3).
    """
    CREATE TABLE outcomes (name TEXT PRIMARY KEY);
    CREATE TRIGGER runs_outcome_insert BEFORE INSERT ON runs
        WHEN NEW.outcome NOT IN (SELECT name FROM outcomes)
        BEGIN SELECT RAISE(ABORT, 'unknown run outcome'); END;
    CREATE TRIGGER runs_outcome_update BEFORE UPDATE OF outcome ON runs
        WHEN NEW.outcome NOT IN (SELECT name FROM outcomes)
        BEGIN SELECT RAISE(ABORT, 'unknown run outcome'); END;
    """,
    # 4: server launches as the replicates: every run is one launch of its (commit, profile) in a series (one
    #    bench / bisect / noise invocation), every sample keeps its launch number; the launch-to-launch spread
    #    that `patchkit noise` measured, per host, profile and metric (the prior of compare and bisect).
    """
    ALTER TABLE runs ADD COLUMN launch INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE runs ADD COLUMN series TEXT;
    ALTER TABLE samples ADD COLUMN launch INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX runs_series ON runs (series, commit_sha, profile);
    CREATE TABLE noise (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        host TEXT NOT NULL,
        profile TEXT NOT NULL,
        metric TEXT NOT NULL,
        sigma REAL NOT NULL CHECK (sigma >= 0),
        df INTEGER NOT NULL CHECK (df >= 1),
        commit_sha TEXT NOT NULL,
        series TEXT NOT NULL,
        measured_at TEXT NOT NULL
    );
    CREATE INDEX noise_key ON noise (host, profile, metric);
    """,
    # 5: launches handed to a scheduler (bench --executor slurm), written before the submitter waits,
    #    so that a re-run of the same command (same batch) collects them instead of submitting again.
    """
    CREATE TABLE submissions (
        batch TEXT NOT NULL,
        key TEXT NOT NULL,
        executor TEXT NOT NULL,
        job_id TEXT NOT NULL,
        folder TEXT NOT NULL,
        label TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        state TEXT NOT NULL,
        run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
        PRIMARY KEY (batch, key)
    );
    CREATE INDEX submissions_state ON submissions (state);
    CREATE TABLE batches (
        batch TEXT PRIMARY KEY,
        command TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT
    );
    """,
    # 6: a noise prior says what it was measured on, so that a bisect can refuse one from other GPUs and show its
    #    age: the GPUs of the A/A launches (``verdict.gpu_label``) and how many launches it kept.  Older rows read
    #    as unknown GPUs and df + 1 launches.
    """
    ALTER TABLE noise ADD COLUMN gpu TEXT;
    ALTER TABLE noise ADD COLUMN launches INTEGER;
    """,
    # 7: what each launch's probed processes ran (proof/coverage.py), one row per run beside it: one entry per
    #    code object, not per call, as zlib-compressed JSON, with the counts a query may want; kept out of
    #    ``runs.record`` so that listing runs never loads it.
    """
    CREATE TABLE coverage (
        run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        granularity TEXT NOT NULL,
        functions INTEGER NOT NULL,
        modules INTEGER NOT NULL,
        reads INTEGER NOT NULL,
        data BLOB NOT NULL
    );
    """,
    # 8: a noise prior keeps each A/A launch as its log offset from their median (a JSON list), those left out of
    #    the spread too: a second mode of the launch noise (a fifth of launches 6 % slower) shows there, and the
    #    hunt's model takes it in (``Noise.offsets``).  Older rows read as none.
    """
    ALTER TABLE noise ADD COLUMN offsets TEXT;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def default_path(common_dir: Path) -> Path:
    return paths.bench_store(common_dir)


WHICH_STORE = (
    "is --store the path you meant? Without it the store is --repo's <git-common-dir>/patchkit/bench.sqlite "
    "(`patchkit demo --keep DIR` keeps its own as DIR/bench.sqlite)"
)
"""What to check when a read-only verb finds no store, or no runs, where it looked."""


def no_store(path: Path) -> str:
    """The line for a bench store that does not exist at ``path``: the path read (``WHICH_STORE`` says what to
    check)."""
    return f"no bench store at {path}: nothing was benchmarked into it"


def open_store(repo: Repo, path: str | None, *, create: bool = True) -> Store:
    """The bench store ``--store`` names, else the repository's; ``create=False`` for the verbs that only read.

    It lives with the store, not with the launch machinery, so that a verb that only reads (``runs``,
    ``show``, ``compare``, ``report``) loads nothing of ``bench.execution``."""
    return Store(Path(path).resolve() if path else default_path(repo.common_dir), create=create)


class SubmissionLabel(TypedDict, total=False):
    """A submission's JSON label (``scheduled.label``): the launch it stands for, what a lost job's record needs."""

    commit: str
    subject: str
    date: str
    profile: str
    vars: dict[str, str]
    run_dir: str
    tree: str
    warmup: int
    repeat: int


@dataclass(frozen=True)
class Submission:
    """One launch handed to the scheduler, as the store's ``submissions`` table keeps it: written before
    anyone waits for it, so a re-run reattaches to the job (``folder``, ``job_id``) instead of paying
    for it twice.  ``label`` is what ``runs --pending`` and a lost job's record show; ``run_id`` the
    stored run once collected."""

    batch: str
    key: str
    executor: str
    job_id: str
    folder: str
    label: SubmissionLabel  # what `runs --pending` and a lost job's record read back
    submitted_at: str
    state: str  # "submitted", "collected", or the Slurm state a lost job ended in
    run_id: int | None

    @property
    def collected(self) -> bool:
        return self.state == "collected"

    @property
    def abandoned(self) -> bool:
        """Its batch was set aside (``--fresh``) before it was collected: nothing runs or collects it again."""
        return self.state == "abandoned"


class Store:
    """Opening migrates the file (a write); a filesystem that refuses a write (full, quota, read-only,
    permissions) is an ``UnwritableError`` naming the store, its real cause and what fixes it, and a
    store this open created is removed again, so nothing is left half-made (``_unwritable``).

    ``create=False`` is how the verbs that only read open it (``runs``, ``compare``, ``report``): a store
    that does not exist reads as an empty one, held in memory, and no file is made (a mistyped ``--store``
    would otherwise leave an empty database behind)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self.exists = create or path.exists()
        if not self.exists:
            self.db = sqlite3.connect(":memory:", isolation_level=None)
            self.db.execute("PRAGMA foreign_keys = ON")
            self.migrate()
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno not in WRITE_ERRNOS:
                raise
            raise UnwritableError.from_os(path, exc) from None
        created = not path.exists()
        try:
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        except sqlite3.Error as exc:
            problem = _unwritable(path, exc)
            if problem is None:
                raise RepoError(f"cannot open the bench store {path}: {exc}") from None
            raise problem from None
        try:
            self.db.execute("PRAGMA foreign_keys = ON")
            # What a migration rewrote (a secret of an older record) is zeroed, not left in a free page.
            self.db.execute("PRAGMA secure_delete = ON")
            self.migrate()
        except BaseException:
            self.db.close()
            if created:  # nothing of this open stays behind (an empty file, a journal)
                for leftover in (path, path.with_name(path.name + "-journal")):
                    with contextlib.suppress(OSError):
                        leftover.unlink()
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction, rolled back whole on any error; a write the filesystem refuses is an
        ``UnwritableError`` (the store keeps what it held)."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self._rollback()
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            problem = _unwritable(self.path, exc)
            if problem is None:
                raise
            raise problem from None

    def _rollback(self) -> None:
        # sqlite may have rolled back already (a full disk ends the transaction): then there is nothing to undo.
        if self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    def version(self) -> int:
        exists = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")
        if exists.fetchone() is None:
            return 0
        row = self.db.execute("SELECT version FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    def migrate(self) -> list[int]:
        """Bring the file to SCHEMA_VERSION; returns the versions migrated to."""
        done = []
        with self._transaction() as db:
            current = self.version()
            if current > SCHEMA_VERSION:
                raise RepoError(
                    f"the bench store {self.path} has schema {current}, newer than this patchkit ({SCHEMA_VERSION})",
                    hint="upgrade patchkit, or point --store at another file",
                )
            if current == 0:
                db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                db.execute("INSERT INTO schema_version VALUES (0)")
            for target in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _statements(MIGRATIONS[target - 1]):
                    db.execute(statement)
                if target == 2:
                    _backfill_2(db)
                if target == 3:
                    _backfill_3(db)
                db.execute("UPDATE schema_version SET version = ?", (target,))
                done.append(target)
            # An outcome added to the enum later is known to the file as soon as this patchkit opens it.
            db.executemany("INSERT OR IGNORE INTO outcomes VALUES (?)", [(o.value,) for o in Outcome])
        return done

    # -- writing ---------------------------------------------------------------

    def add(self, record: RunRecord, *, submission: tuple[str, str] | None = None) -> int:
        """Store a record; ``submission`` (batch, key): the scheduled launch it came from, marked collected
        in the same transaction, so a re-run never collects it twice."""
        data = record.to_json()
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO runs (commit_sha, subject, author_date, profile, outcome, reason, started_at, "
                "finished_at, host, record, server_log, launch, series) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?)",
                (
                    record.commit.sha,
                    record.commit.subject,
                    record.commit.date,
                    record.profile,
                    record.outcome.value,
                    record.reason,
                    record.started_at,
                    record.finished_at,
                    record.host.get("hostname", ""),
                    record.logs.get("server"),
                    record.launch,
                    record.series,
                ),
            )
            run_id = int(cursor.lastrowid or 0)
            data["run"] = run_id
            db.execute("UPDATE runs SET record = ? WHERE id = ?", (json.dumps(data, sort_keys=True), run_id))
            missing = {(m["metric"], m["run"]): m["log"] for m in record.missing}
            for metric, values in record.samples.items():
                for index, value in enumerate(values, start=1):
                    db.execute(
                        "INSERT INTO samples (run_id, metric, run, value, log, launch) VALUES (?, ?, ?, ?, ?, ?)",
                        (run_id, metric, index, value, missing.get((metric, index)), record.launch),
                    )
            for manifest in record.manifests:
                db.execute(
                    "INSERT INTO manifests VALUES (?, ?, ?, ?)",
                    (run_id, manifest["name"], manifest["digest"], json.dumps(manifest["results"])),
                )
            if record.coverage is not None:
                coverage = record.coverage
                db.execute(
                    "INSERT INTO coverage VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        coverage.get("granularity", "file"),
                        sum(len(names) for names in (coverage.get("functions") or {}).values()),
                        len(coverage.get("modules") or ()),
                        len(coverage.get("reads") or ()),
                        zlib.compress(json.dumps(coverage, sort_keys=True, separators=(",", ":")).encode(), 6),
                    ),
                )
            if submission is not None:
                db.execute(
                    "UPDATE submissions SET state = 'collected', run_id = ? WHERE batch = ? AND key = ?",
                    (run_id, *submission),
                )
        return run_id

    # -- submissions (bench --executor slurm) -------------------------------------

    def add_submissions(self, batch: str, rows: Sequence[Mapping[str, object]]) -> None:
        """Record what was just handed to the scheduler, in one transaction, before anyone waits on it."""
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        with self._transaction() as db:
            for row in rows:
                db.execute(
                    "INSERT INTO submissions (batch, key, executor, job_id, folder, label, submitted_at, state) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'submitted')",
                    (
                        batch,
                        row["key"],
                        row.get("executor", "slurm"),
                        row["job_id"],
                        row["folder"],
                        json.dumps(row["label"], sort_keys=True),
                        stamp,
                    ),
                )

    def submissions(self, batch: str | None = None, *, pending: bool = False) -> list[Submission]:
        """The submissions of one batch (all batches when None); ``pending``: those not collected yet."""
        query = "SELECT batch, key, executor, job_id, folder, label, submitted_at, state, run_id FROM submissions"
        where, args = [], []
        if batch is not None:
            where.append("batch = ?")
            args.append(batch)
        if pending:  # waiting on something: neither collected nor set aside by --fresh
            where.append("state NOT IN ('collected', 'abandoned')")
        if where:
            query += " WHERE " + " AND ".join(where)
        rows = self.db.execute(query + " ORDER BY submitted_at, job_id", args).fetchall()
        return [
            Submission(
                batch=r[0],
                key=r[1],
                executor=r[2],
                job_id=r[3],
                folder=r[4],
                label=json.loads(r[5]),
                submitted_at=r[6],
                state=r[7],
                run_id=r[8],
            )
            for r in rows
        ]

    def set_submission_state(self, batch: str, key: str, state: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE submissions SET state = ? WHERE batch = ? AND key = ?", (state, batch, key))

    def open_batch(self, key: str, command: str) -> tuple[str, bool]:
        """``(batch, resumed)``: the unfinished batch of this command's key (a re-run after the submitter
        died), or a new one, ``KEY#N``, when every earlier batch of it finished (or was abandoned)."""
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self._transaction() as db:
            rows = self._batches_of(db, key)
            unfinished = [batch for batch, finished in rows if finished is None]
            if unfinished:
                return unfinished[-1], True
            batch = f"{key}#{len(rows) + 1}"
            db.execute("INSERT INTO batches VALUES (?, ?, ?, NULL)", (batch, command, stamp))
        return batch, False

    def unfinished_batches(self, key: str) -> list[str]:
        """The batches of this command's key that did not finish, oldest first (``open_batch`` resumes the last)."""
        return [batch for batch, finished in self._batches_of(self.db, key) if finished is None]

    @staticmethod
    def _batches_of(db: sqlite3.Connection, key: str) -> list[tuple[str, str | None]]:
        rows = db.execute(
            "SELECT batch, finished_at FROM batches WHERE batch LIKE ? AND batch NOT LIKE '%/%' ORDER BY started_at",
            (f"{key}#%",),
        ).fetchall()
        return [(str(batch), finished) for batch, finished in rows]

    def abandon_batch(self, batch: str) -> list[Submission]:
        """Set ``batch`` (and its rounds, ``<batch>/...``) aside, as ``--fresh`` does, in one transaction: it is
        finished, so the same command no longer resumes it, and each of its launches not collected is
        ``abandoned``, so no re-run runs or collects it again (nor does ``runs --pending`` list it).  The runs
        it stored stay.  Returns the launches abandoned, as they were (job ids and states)."""
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        under = (batch, f"{batch}/%")  # a batch name has no % nor _
        with self._transaction() as db:
            left = [
                row for row in self.submissions(pending=True) if row.batch == batch or row.batch.startswith(f"{batch}/")
            ]
            db.execute(
                "UPDATE batches SET finished_at = ? WHERE (batch = ? OR batch LIKE ?) AND finished_at IS NULL",
                (stamp, *under),
            )
            db.execute(
                "UPDATE submissions SET state = 'abandoned' WHERE (batch = ? OR batch LIKE ?) "
                "AND state NOT IN ('collected', 'abandoned')",
                under,
            )
        return left

    def use_batch(self, batch: str, command: str) -> bool:
        """A batch by its exact name (a round of a bisect), created if new; True when it existed."""
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self._transaction() as db:
            cursor = db.execute("INSERT OR IGNORE INTO batches VALUES (?, ?, ?, NULL)", (batch, command, stamp))
        return cursor.rowcount == 0

    def finish_batch(self, batch: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        with self._transaction() as db:
            db.execute("UPDATE batches SET finished_at = ? WHERE batch = ?", (stamp, batch))

    # -- reading ---------------------------------------------------------------

    def require_runs(self) -> int:
        """The newest run's number, for a verb that needs a stored run (``show last``, ``compare``): a store that
        does not exist, or holds no run, is bad input that names the store read (a user in another repository
        than the bench's reads an empty default store)."""
        if not self.exists:
            raise UsageError(no_store(self.path), hint=WHICH_STORE)
        last = self.db.execute("SELECT max(id) FROM runs").fetchone()[0]
        if last is None:
            raise UsageError(f"no runs are stored in the bench store {self.path} yet", hint=WHICH_STORE)
        return int(last)

    def get(self, run_id: int) -> RunRecord:
        row = self.db.execute("SELECT record FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            last = self.db.execute("SELECT max(id) FROM runs").fetchone()[0]
            raise UsageError(
                f"no run {run_id} in the bench store {self.path}",
                hint=f"runs are numbered 1..{last}; see `patchkit runs`"
                if last
                else f"it holds no runs; {WHICH_STORE}",
            )
        return RunRecord.from_json(json.loads(row[0]))

    def coverage(self, run_id: int) -> CoverageJson | None:
        """What run ``run_id``'s probed processes ran (``proof/coverage.py``); None when none was kept (the probe
        was off, no server ran, or the run was stored by a patchkit older than schema 7)."""
        row = self.db.execute("SELECT data FROM coverage WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        data: CoverageJson = json.loads(zlib.decompress(row[0]))
        return data

    def runs(self, *, commits: Sequence[str] = (), profiles: Sequence[str] = ()) -> list[RunRecord]:
        query = "SELECT record FROM runs"
        where: list[str] = []
        args: list[str] = []
        if commits:
            where.append("(" + " OR ".join("commit_sha = ?" for _ in commits) + ")")
            args.extend(commits)
        if profiles:
            where.append("(" + " OR ".join("profile = ?" for _ in profiles) + ")")
            args.extend(profiles)
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY id"
        return [RunRecord.from_json(json.loads(r[0])) for r in self.db.execute(query, args)]

    def launches(self, of: RunRecord) -> list[RunRecord]:
        """Every run of ``of``'s series, commit and profile (its launches, ``of`` among them), by launch number,
        on ``of``'s side of a ``bench --without`` (the launches with every patch, or those without the one).

        A run stored before launches existed (no series) is a series of one."""
        if of.series is None:
            return [of]
        rows = self.db.execute(
            "SELECT record FROM runs WHERE series = ? AND commit_sha = ? AND profile = ? ORDER BY launch, id",
            (of.series, of.commit.sha, of.profile),
        )
        side = of.without
        return [record for r in rows if (record := RunRecord.from_json(json.loads(r[0]))).without == side]

    def add_noise(
        self,
        *,
        host: str,
        profile: str,
        metric: str,
        sigma: float,
        df: int,
        commit: str,
        series: str,
        gpu: str | None = None,
        launches: int | None = None,
        offsets: Sequence[float] = (),
    ) -> None:
        """Store the launch-to-launch spread that an A/A run measured (``patchkit noise``), with each launch's log
        offset from their median (``Noise.offsets``)."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO noise (host, profile, metric, sigma, df, commit_sha, series, measured_at, gpu, launches, "
                "offsets) VALUES (?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?, ?, ?)",
                (host, profile, metric, sigma, df, commit, series, gpu, launches,
                 json.dumps([float(v) for v in offsets]) if offsets else None),
            )  # fmt: skip

    def noise(self, host: str, profile: str, metric: str) -> Noise | None:
        """The latest spread measured for this host, profile and metric, with where, when and on what."""
        row = self.db.execute(
            "SELECT sigma, df, measured_at, gpu, launches, offsets FROM noise "
            "WHERE host = ? AND profile = ? AND metric = ? ORDER BY id DESC LIMIT 1",
            (host, profile, metric),
        ).fetchone()
        if row is None:
            return None
        sigma, df, measured_at, gpu, launches, offsets = row
        return Noise(sigma=float(sigma), df=int(df), measured_at=measured_at, place=host, gpu=gpu,
                     launches=int(launches) if launches is not None else int(df) + 1,
                     offsets=tuple(float(v) for v in json.loads(offsets)) if offsets else ())  # fmt: skip

    def latest(self, commit: str, profile: str | None = None) -> RunRecord | None:
        query = "SELECT record FROM runs WHERE commit_sha = ?"
        args: list[object] = [commit]
        if profile is not None:
            query += " AND profile = ?"
            args.append(profile)
        row = self.db.execute(query + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return None if row is None else RunRecord.from_json(json.loads(row[0]))


# sqlite's words for a write the filesystem refused: a full disk or quota, a read-only file or mount, a file it
# cannot create, an I/O error (a quota is reported as either of the first and the last, by sqlite version).
_WRITE_FAILURES = frozenset({"SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM"})


def _unwritable(path: Path, exc: sqlite3.Error) -> UnwritableError | None:
    """The refusal for a store the filesystem will not let sqlite write, with the real cause; None for any
    other sqlite error (a locked or corrupt file says so itself).

    sqlite words a full disk as "database or disk is full" and a read-only mount as "attempt to write a
    readonly database", without the errno; writing a page next to the store, or checking the store file
    itself, gives the errno the advice is chosen by (space, quota, read-only, permissions).
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name not in _WRITE_FAILURES and not name.startswith("SQLITE_IOERR"):
        return None
    found = paths.why_unwritable(path.parent)
    if found is None and path.exists() and not os.access(path, os.W_OK):
        found = OSError(errno.EACCES, os.strerror(errno.EACCES))
    if found is not None:
        return UnwritableError.from_os(path, found)
    if name == "SQLITE_FULL":  # the space came back since: the cause is still the one sqlite met
        return UnwritableError.from_os(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    if name == "SQLITE_READONLY" or name.startswith("SQLITE_IOERR"):
        return UnwritableError(str(path), str(exc), code=errno.EIO)
    return None  # it cannot open a file the filesystem would let it write (a directory there, ...)


def _statements(script: str) -> Iterator[str]:
    """The statements of a migration, split at the semicolons that end one (not those inside a trigger)."""
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n;"):
                yield buffer.strip()
            buffer = ""


def _backfill_2(db: sqlite3.Connection) -> None:
    """Schema 2: fill the new manifests rows and server_log column from the records already stored."""
    for run_id, text in db.execute("SELECT id, record FROM runs").fetchall():
        data = json.loads(text)
        db.execute("UPDATE runs SET server_log = ? WHERE id = ?", (data.get("logs", {}).get("server"), run_id))
        for manifest in data.get("manifests", []):
            db.execute(
                "INSERT INTO manifests VALUES (?, ?, ?, ?)",
                (run_id, manifest["name"], manifest["digest"], json.dumps(manifest["results"])),
            )


def _backfill_3(db: sqlite3.Connection) -> None:
    """Schema 3: the known outcomes, and no secret left in a stored record (older patchkit kept them)."""
    db.executemany("INSERT INTO outcomes VALUES (?)", [(o.value,) for o in Outcome])
    for run_id, text in db.execute("SELECT id, record FROM runs").fetchall():
        data = json.loads(text)
        if redact_env(data.get("env")) != (data.get("env") or {}) or redact_env(data.get("vars")) != (
            data.get("vars") or {}
        ):
            # Made again as a record: the names redacted, and the values wherever the record quotes them.
            scrubbed = {**RunRecord.from_json(data).to_json(), "run": run_id}
            db.execute("UPDATE runs SET record = ? WHERE id = ?", (json.dumps(scrubbed, sort_keys=True), run_id))
