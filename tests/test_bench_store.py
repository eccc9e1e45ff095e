"""The SQLite provenance store: round trip, forward migrations from an older file, refusing a newer one."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from patchkit.bench.records.record import RunRecord
from patchkit.bench.records.store import MIGRATIONS, SCHEMA_VERSION, Store
from patchkit.bench.stats.verdict import Noise
from patchkit.errors import RepoError, UsageError


def record(**over) -> RunRecord:
    data = {
        "run": None,
        "commit": {"sha": "a" * 40, "subject": "Fix PCG MoE Error (#17739)", "date": "2026-02-19T09:00:00+00:00"},
        "profile": "eagle3",
        "outcome": "metric-missing",
        "reason": "no value for verify_ms",
        "details": [],
        "started_at": "2026-11-30T10:00:00.000+00:00",
        "finished_at": "2026-11-30T10:01:00.000+00:00",
        "vars": {"tp": "8"},
        "commands": {"server": ["python3", "-m", "sglang.launch_server"], "client": []},
        "env": {"NCCL_MIN_NCHANNELS": "4"},
        "manifests": [{"name": "kimi", "digest": "sha256:" + "0" * 64, "results": [{"patch": "p", "status": "SKIP"}]}],
        "guard": {"ok": True},
        "host": {"hostname": "gpu-1"},
        "interpreter": {"version": "3.11.7", "packages": {"sglang": "0.5.9.dev6+g0123456"}},
        "torch": {"torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91900, "nccl": "2.28.9"},
        "gpus": [{"index": 0, "pstate": "P0", "pcie_width": 16}],
        "server_info": {"version": "0.5.9.dev6+g0123456"},
        "samples": {"output_tok_s": [94.0, 93.5], "verify_ms": [18.1, None]},
        "missing": [{"metric": "verify_ms", "run": 2, "log": "/x/server.log"}],
        "logs": {"server": "/x/server.log"},
    }
    data.update(over)
    return RunRecord.from_json(data)


def test_round_trip_keeps_every_field(tmp_path):
    with Store(tmp_path / "bench.sqlite") as store:
        run_id = store.add(record())
        back = store.get(run_id)
        assert back.run_id == run_id
        assert back.to_json() == {**record().to_json(), "run": run_id}
        rows = store.db.execute("SELECT metric, run, value, log FROM samples ORDER BY metric, run").fetchall()
        assert rows == [
            ("output_tok_s", 1, 94.0, None),
            ("output_tok_s", 2, 93.5, None),
            ("verify_ms", 1, 18.1, None),
            ("verify_ms", 2, None, "/x/server.log"),  # missing is NULL with its log, never 0
        ]
        assert store.latest("a" * 40, "eagle3").run_id == run_id
        assert store.latest("b" * 40) is None
        assert [r.run_id for r in store.runs(profiles=["eagle3"])] == [run_id]
        with pytest.raises(UsageError, match="no run 99"):
            store.get(99)


def test_migrates_a_schema_1_file_forward(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (1)")
    db.executescript(MIGRATIONS[0])
    old = record().to_json()
    old["run"] = 1
    old["env"] = {"HF_TOKEN": "hf_planted_secret_1234", "NCCL_MIN_NCHANNELS": "4"}  # as an older patchkit kept it
    db.execute(
        "INSERT INTO runs (commit_sha, subject, author_date, profile, outcome, reason, started_at, finished_at, "
        "host, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("a" * 40, "s", "d", "eagle3", "ok", None, "t0", "t1", "gpu-1", json.dumps(old)),
    )
    db.commit()
    db.close()
    assert SCHEMA_VERSION == 8
    with Store(path) as store:
        assert store.version() == 8
        assert store.get(1).manifests[0]["name"] == "kimi"
        rows = store.db.execute("SELECT run_id, name, digest FROM manifests").fetchall()
        assert rows == [(1, "kimi", "sha256:" + "0" * 64)]
        assert store.db.execute("SELECT server_log FROM runs").fetchone() == ("/x/server.log",)
        new_id = store.add(record())
        assert new_id == 2
        # Schema 3: the secret of the old record is redacted in place, and outcomes are enforced.
        assert store.get(1).env == {"HF_TOKEN": "<redacted>", "NCCL_MIN_NCHANNELS": "4"}
        with pytest.raises(sqlite3.IntegrityError, match="unknown run outcome"):
            store.db.execute("UPDATE runs SET outcome = 'exploded' WHERE id = 1")
        store.add(record(outcome="interrupted"))
        # Schema 4: a run stored before launches is launch 1 of a series of its own.
        assert store.db.execute("SELECT launch, series FROM runs WHERE id = 1").fetchone() == (1, None)
        assert store.launches(store.get(1)) == [store.get(1)]
        assert store.submissions(pending=True) == []  # schema 5: the scheduler's table, empty
    assert b"hf_planted_secret_1234" not in path.read_bytes()
    with Store(path) as again:  # a second open migrates nothing
        assert again.migrate() == []


def store_at_schema(path: Path, version: int, *statements: str) -> None:
    """A store file as a patchkit of schema ``version`` left it, with ``statements`` run in it (its rows)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (?)", (version,))
    for script in MIGRATIONS[:version]:
        db.executescript(script)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def test_a_prior_stored_before_schema_6_reads_with_unknown_gpus(tmp_path):
    """A store with priors from before they carried their GPUs and launch count still reads: as unknown GPUs (a
    bisect then uses it anywhere, as before) and df + 1 launches."""
    path = tmp_path / "v5.sqlite"
    store_at_schema(
        path,
        5,
        "INSERT INTO noise (host, profile, metric, sigma, df, commit_sha, series, measured_at) "
        "VALUES ('gpu-1', 'eagle3', 'tok_s', 0.02, 9, 'a', 's', '2026-11-01T10:00:00.000Z')",
    )
    with Store(path) as store:
        got = store.noise("gpu-1", "eagle3", "tok_s")
    assert got == Noise(sigma=0.02, df=9, measured_at="2026-11-01T10:00:00.000Z", place="gpu-1", gpu=None, launches=10)


def test_a_prior_stored_before_schema_8_reads_without_offsets_and_gains_them_after(tmp_path):
    """Schema 8: a noise prior keeps its A/A launches' log offsets from their median (``Noise.offsets``), where a
    second mode of the launch noise shows.  A schema-7 store migrates: its prior reads with none (the hunt then
    looks for a mode in its own launches only), and a prior stored after keeps them, the launches the spread
    left out as outliers too."""
    path = tmp_path / "v7.sqlite"
    store_at_schema(
        path,
        7,
        "INSERT INTO noise (host, profile, metric, sigma, df, commit_sha, series, measured_at, gpu, launches) "
        "VALUES ('gpu-1', 'eagle3', 'tok_s', 0.01, 7, 'a', 's', '2026-11-01T10:00:00.000Z', 'NVIDIA H200 x8', 8)",
    )
    slow = (0.004, -0.002, 0.0, -0.061, 0.001, -0.058, 0.003, -0.001, 0.002, -0.003)
    with Store(path) as store:
        assert store.version() == 8
        old = store.noise("gpu-1", "eagle3", "tok_s")
        assert old == Noise(sigma=0.01, df=7, measured_at="2026-11-01T10:00:00.000Z", place="gpu-1",
                            gpu="NVIDIA H200 x8", launches=8, offsets=())  # fmt: skip
        store.add_noise(host="gpu-1", profile="eagle3", metric="tok_s", sigma=0.003, df=7, commit="b" * 40,
                        series="t", gpu="NVIDIA H200 x8", launches=8, offsets=slow)  # fmt: skip
        new = store.noise("gpu-1", "eagle3", "tok_s")
        assert new is not None and new.offsets == slow and new.df == 7
        (text,) = store.db.execute("SELECT offsets FROM noise WHERE commit_sha = ?", ("b" * 40,)).fetchone()
        assert json.loads(text) == list(slow)


def test_a_runs_coverage_is_kept_apart_compressed_and_a_schema_6_file_gains_the_table(tmp_path):
    """Schema 7: the coverage of a run is one row beside it (one entry per code object), never in ``runs.record``
    (a listing of runs does not load it); a run stored without one, or before the table, has none."""
    path = tmp_path / "v6.sqlite"
    store_at_schema(path, 6)
    functions = {f"/tree/pkg/m{n}.py": [[f"f{k}", k * 3 + 1] for k in range(40)] for n in range(50)}
    coverage = {
        "version": 1, "granularity": "function", "root": "/tree", "processes": [], "functions": functions,
        "modules": sorted(functions), "reads": ["/tree/perf/throughput.txt"], "blind": [],
    }  # fmt: skip
    with Store(path) as store:
        assert store.version() == 8
        with_it = store.add(dataclasses.replace(record(), coverage=coverage))
        without = store.add(record())
        assert store.coverage(with_it) == coverage and store.coverage(without) is None
        assert store.get(with_it).coverage is None  # the record as `runs` reads it: no coverage loaded
        text = store.db.execute("SELECT record FROM runs WHERE id = ?", (with_it,)).fetchone()[0]
        assert "f39" not in text
        row = store.db.execute("SELECT granularity, functions, modules, reads, length(data) FROM coverage").fetchone()
        assert row[:4] == ("function", 2000, 50, 1)
        assert row[4] < len(json.dumps(coverage)) / 4  # compressed


def test_refuses_a_newer_schema(tmp_path):
    path = tmp_path / "new.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(RepoError, match="newer than this patchkit"):
        Store(path)


def test_a_metric_row_has_each_sides_stats_and_no_second_verdict():
    """The old rule over client runs ('significant') is gone from compare: the verdict over launches is the one."""
    from patchkit.bench.records.compare import metric_deltas

    ra = record(samples={"output_tok_s": [94.0, 95.0, 96.0]}, missing=[])
    rb = record(samples={"output_tok_s": [84.0, 85.0, 86.0]}, missing=[])
    (row,) = metric_deltas(ra, rb)
    assert row.ratio == pytest.approx(85.0 / 95.0)
    assert "significant" not in row.to_json() and "ranges_overlap" not in row.to_json()


def test_provenance_diff_names_gpu_env_and_version_changes():
    from patchkit.bench.records.compare import compare

    sha = "c" * 40
    gpu = {"index": 0, "pstate": "P0", "pcie_width": 16, "sm_clock_mhz": 1980}
    a = record(commit={"sha": sha, "subject": "s", "date": "d"}, gpus=[gpu])
    b = record(
        commit={"sha": sha, "subject": "s", "date": "d"},
        gpus=[{**gpu, "pstate": "P2", "pcie_width": 8}],
        env={"NCCL_MIN_NCHANNELS": "8"},
        torch={"torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91900, "nccl": "2.27.5"},
    )
    prov = compare(a, b, threshold=0.05).to_json()["provenance"]
    assert prov["gpus"] == [
        {"key": "gpus[0].pstate", "a": "P0", "b": "P2"},
        {"key": "gpus[0].pcie_width", "a": 16, "b": 8},
    ]
    assert prov["env"] == [{"key": "env.NCCL_MIN_NCHANNELS", "a": "4", "b": "8"}]
    assert prov["versions"] == [{"key": "torch.nccl", "a": "2.28.9", "b": "2.27.5"}]
    assert prov["between"] == {"direction": "same", "commits": []}


def test_launches_of_a_series_and_their_sample_rows(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        ids = [store.add(dataclasses.replace(record(), launch=n, series="s1")) for n in (1, 2, 3)]
        other = store.add(dataclasses.replace(record(), launch=1, series="s2"))
        assert [r.run_id for r in store.launches(store.get(ids[1]))] == ids
        assert [r.launch for r in store.launches(store.get(ids[0]))] == [1, 2, 3]
        assert [r.run_id for r in store.launches(store.get(other))] == [other]
        rows = store.db.execute("SELECT DISTINCT run_id, launch FROM samples ORDER BY run_id").fetchall()
        assert rows == [(ids[0], 1), (ids[1], 2), (ids[2], 3), (other, 1)]


def test_noise_is_kept_per_host_profile_and_metric_latest_first(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        assert store.noise("gpu-1", "eagle3", "tok_s") is None
        store.add_noise(host="gpu-1", profile="eagle3", metric="tok_s", sigma=0.03, df=9, commit="a" * 40, series="x")
        store.add_noise(host="gpu-1", profile="eagle3", metric="tok_s", sigma=0.02, df=5, commit="a" * 40, series="y")
        store.add_noise(host="gpu-2", profile="eagle3", metric="tok_s", sigma=0.09, df=5, commit="a" * 40, series="z")
        store.add_noise(host="gpu-1", profile="eagle3", metric="tok_s", sigma=0.025, df=7, commit="a" * 40,
                        series="w", gpu="NVIDIA H200 x8", launches=8)  # fmt: skip
        got = store.noise("gpu-1", "eagle3", "tok_s")
        assert got is not None and (got.sigma, got.df, got.gpu, got.launches) == (0.025, 7, "NVIDIA H200 x8", 8)
        assert got.offsets == ()  # stored without its launches' offsets: none to read
        # Schema 8: each A/A launch's offset from their median comes back as stored, a second mode's launches too.
        offsets = (0.004, -0.002, 0.0, -0.061, 0.001, -0.058)
        store.add_noise(host="gpu-1", profile="eagle3", metric="tok_s", sigma=0.01, df=3, commit="a" * 40,
                        series="v", launches=4, offsets=offsets)  # fmt: skip
        assert store.noise("gpu-1", "eagle3", "tok_s") == Noise(
            sigma=0.01, df=3, measured_at=store.noise("gpu-1", "eagle3", "tok_s").measured_at,  # type: ignore[union-attr]
            place="gpu-1", launches=4, offsets=offsets,
        )  # fmt: skip
        assert got.place == "gpu-1" and got.measured_at is not None and got.measured_at.startswith("20")
        with pytest.raises(sqlite3.IntegrityError):
            store.add_noise(host="h", profile="p", metric="m", sigma=-1.0, df=3, commit="a", series="s")


def test_show_and_compare_name_the_store_they_read(tmp_path, capsys, monkeypatch):
    """#47 item 8: `show last` inside a repository whose default store is empty (the demo keeps its own store
    elsewhere) said only `no runs are stored yet`: which store it read, and what to check, are the answer."""
    from helpers import make_repo, run_cli

    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    default = (repo / ".git" / "patchkit" / "bench.sqlite").resolve()
    monkeypatch.chdir(repo)
    for argv in (
        ["show", "last"],
        ["show", "3"],
        ["compare", "1", "2"],
        ["compare", "--commit", "HEAD", "--commit", "HEAD"],
    ):
        missing = run_cli(capsys, *argv)
        assert missing.code == 2, missing.err
        assert missing.err.startswith(f"patchkit: error: no bench store at {default}: nothing was benchmarked into it;")
        assert "is --store the path you meant?" in missing.err and "DIR/bench.sqlite" in missing.err
    assert not default.exists()
    with Store(default):  # there, but empty
        pass
    empty = run_cli(capsys, "show", "last")
    assert empty.code == 2 and f"no runs are stored in the bench store {default} yet; is --store" in empty.err
    none = run_cli(capsys, "show", "7")
    assert none.code == 2 and f"no runs are stored in the bench store {default} yet" in none.err


def test_the_verbs_that_only_read_leave_no_store_where_none_was(tmp_path, capsys):
    """A mistyped --store read by runs, compare or report is said as such and leaves no empty database behind."""
    from helpers import make_repo, run_cli

    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    store = tmp_path / "typo" / "bench.sqlite"
    runs = run_cli(capsys, "runs", "--repo", repo, "--store", store)
    assert runs.code == 0 and runs.out.startswith(f"no bench store at {store}: nothing was benchmarked into it")
    assert run_cli(capsys, "runs", "--repo", repo, "--store", store, "--json").json["runs"] == []
    compare = run_cli(capsys, "compare", "1", "2", "--repo", repo, "--store", store)
    assert compare.code == 2 and f"no bench store at {store}: nothing was benchmarked into it" in compare.err
    assert not store.parent.exists()
    with Store(store, create=False) as opened:  # and the library: an empty store, in memory
        assert list(opened.runs()) == [] and not opened.exists
    assert not store.parent.exists()
    with Store(store) as opened:  # a verb that writes makes it
        assert opened.exists
    assert store.is_file()
