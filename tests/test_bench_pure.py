"""The bench library's pure parts, driven without servers: the bisect search, compare, records, secrets."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from patchkit.bench.records.compare import compare, pick_pair
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.stats.delta import between
from patchkit.bench.stats.hunt import hunt
from patchkit.bench.stats.search import Measurement, bisect, criterion
from patchkit.errors import UsageError
from patchkit.git import Commit
from patchkit.proof import PROBE_DATA_SUFFIXES, PROBE_FAMILIES, PROBE_FILES
from patchkit.redact import REDACTED, SECRET_WORDS, is_secret, redact_env


def line(n: int) -> list[Commit]:
    return [Commit(f"{i:040x}", (f"{i - 1:040x}",) if i else (), "a <a@x>", "2026-01-01", f"c{i}") for i in range(n)]


def values(commits: list[Commit], first_bad: int, *, fail: set[int] = frozenset()) -> dict[str, Measurement]:
    out = {}
    for i, c in enumerate(commits):
        if i in fail:
            out[c.sha] = Measurement(None, Outcome.SERVER_FAILED, why="exited 1")
        else:
            out[c.sha] = Measurement(100.0 if i < first_bad else 60.0, run=i)
    return out


@pytest.mark.parametrize("first_bad", [1, 2, 7, 15])
def test_bisect_finds_the_first_bad_commit_in_log_steps(first_bad):
    commits = line(16)
    measured = values(commits, first_bad)
    seen: list[str] = []

    def measure(c: Commit) -> Measurement:
        seen.append(c.sha)
        return measured[c.sha]

    report = bisect(commits, measure, criterion("ratio", 0.9))
    assert report.first_bad == commits[first_bad]
    assert report.last_good == commits[first_bad - 1]
    assert report.error is None
    # Without a noise prior one launch per side says nothing of the spread: GOOD and BAD get two launches each,
    # then the noise-free probes decide at one launch each, in log2(14) steps, and the answer is confirmed with a
    # second launch of the first bad commit and of the one before it (no answer rests on one launch a side).
    assert len(seen) <= 2 * 2 + 4 + 2
    probes = seen[4:]
    again = {sha for sha in probes if probes.count(sha) > 1}
    assert again <= {commits[first_bad - 1].sha, commits[first_bad].sha}  # only the boundary is launched again
    assert all(len(s.launches) >= 2 for c, s in report.sides if c in (report.first_bad, report.last_good))
    assert [s.verdict for s in report.steps][:2] == ["good", "bad"]
    assert report.kind == "found" and report.evidence is not None and report.evidence.call.value == "different"


@pytest.mark.parametrize("slots", [1, 2, 4])
def test_with_slots_good_and_bad_are_launched_in_one_round(slots):
    """One round per measure_many call, which is one job array on Slurm: GOOD and BAD used to cost a round each
    whatever the slots, so the rounds `bench_hunt.py` reported for the search were not the verb's."""
    commits = line(32)
    measured = values(commits, 11)
    calls: list[list[str]] = []

    def many(batch):
        calls.append([c.sha for c in batch])
        assert len(batch) <= slots
        return [measured[c.sha] for c in batch]

    report = bisect(commits, lambda c: many([c])[0], criterion("ratio", 0.9), slots=slots, measure_many=many)
    assert report.first_bad == commits[11]
    ends = [commits[0].sha, commits[-1].sha]
    ahead = [commits[10].sha, commits[21].sha][: max(slots - 2, 0)]  # the slots left: evenly spaced probes
    assert calls[:2] == ([[ends[0]], [ends[1]]] if slots == 1 else [ends + ahead, calls[1]])
    assert report.rounds == len(calls)  # the rounds reported are the calls made
    # ... and they are the search's own: what hunt() takes on the same launches.
    searched = hunt(32, lambda ps: [measured[commits[p].sha].value for p in ps], slots=slots, expect="lower")
    assert report.rounds == len(searched.rounds)
    assert {s.why for s in report.steps if s.commit.sha in ahead} <= {"probe: evenly spaced, ahead of the endpoints"}
    assert [s.commit.sha for s in report.steps[:2]] == ends and [s.verdict for s in report.steps[:2]] == ["good", "bad"]
    bad_end = bisect(commits, lambda c: many([c])[0], criterion("ratio", 0.5), slots=slots, measure_many=many)
    assert bad_end.error is not None
    assert bad_end.error.startswith(f"--bad {commits[-1].short} is not bad by the criterion (good): BAD/GOOD 0.600")
    assert [s.commit for s in bad_end.steps][:2] == [commits[0], commits[-1]]


def test_the_ends_are_labelled_by_the_rule_the_answer_uses():
    """#47 item 6: the table labelled BAD's launches `bad`, then the answer was `--bad ... is not bad by the
    criterion (good)`.  Each end's launches carry what the search decided of it, live and in the table."""
    commits = line(16)
    measured = values(commits, 7)  # 100 then 60: BAD/GOOD 0.6
    shown = []
    refused = bisect(commits, lambda c: measured[c.sha], criterion("ratio", 0.5), on_step=shown.append)
    assert refused.error is not None and "is not bad by the criterion (good)" in refused.error
    assert {s.verdict for s in refused.steps if s.commit == commits[-1]} == {"good"}  # as the answer says
    assert "bad" not in {s.verdict for s in refused.steps}
    assert shown == list(refused.steps)  # the lines printed as it went are the table's
    found = bisect(commits, lambda c: measured[c.sha], criterion("ratio", 0.9), on_step=shown.append)
    assert found.first_bad == commits[7]
    assert {s.verdict for s in found.steps if s.commit == commits[0]} == {"good"}
    assert {s.verdict for s in found.steps if s.commit == commits[-1]} == {"bad"}
    flat = {c.sha: Measurement(100.0, run=i) for i, c in enumerate(commits)}  # no step: never told apart
    same = bisect(commits, lambda c: flat[c.sha], None, threshold=0.05)
    assert same.first_bad is None and {s.verdict for s in same.steps} == {"unclear"}


def test_bisect_skips_unpatchable_and_failed_commits_and_names_them_as_maybe():
    commits = line(8)
    measured = values(commits, 5, fail={4})

    def measure(c: Commit) -> Measurement:
        assert c != commits[3], "an unpatchable commit is never measured"
        return measured[c.sha]

    report = bisect(commits, measure, criterion("min", 80.0), skipped={commits[3].sha: "standin:hooks CLASS_NOT_FOUND"})
    assert report.first_bad == commits[5]
    assert [s.commit for s in report.maybe] == [commits[3], commits[4]]
    assert [s.commit for s in report.skipped] == [commits[3], commits[4]]
    assert report.skipped[1].why == "server-failed: exited 1 (3 launches failed)"  # retried, then given up


def test_bisect_without_an_answer_says_why():
    commits = line(4)
    all_good = {c.sha: Measurement(100.0) for c in commits}
    report = bisect(commits, lambda c: all_good[c.sha], criterion("max", 200.0))
    assert report.first_bad is None and report.kind == "no-step" and "could not be told apart" in report.why
    interrupted = bisect(commits, lambda c: Measurement(None, Outcome.INTERRUPTED), criterion("max", 1.0))
    assert interrupted.error is not None and interrupted.error.startswith("interrupted")
    assert len(interrupted.steps) == 1  # the search stops at the interrupted launch


def test_a_criterion_is_judged_on_the_launches_not_on_one_lucky_launch():
    """--ratio 0.9 with BAD at 0.88 of GOOD: a first launch pair can pass or fail it by noise, so GOOD and BAD
    are launched until the ratio's interval clears 0.9; a BAD clearly above it is refused with its interval."""
    commits = line(16)
    draws = iter([100.0, 88.0, 101.0, 87.0, 99.0, 89.0, 100.5, 88.5, 99.5, 87.5] * 4)

    def noisy(c: Commit) -> Measurement:
        if c.sha in (commits[0].sha, commits[-1].sha):
            return Measurement(next(draws))
        return Measurement(100.0 if int(c.sha, 16) < 9 else 88.0)

    report = bisect(commits, noisy, criterion("ratio", 0.9))
    assert report.first_bad == commits[9]
    ends = [s for s in report.steps if s.commit in (commits[0], commits[-1])]
    assert len(ends) >= 4  # not the first pair alone
    close = {c.sha: Measurement(100.0 if int(c.sha, 16) < 9 else 95.0) for c in commits}
    refused = bisect(commits, lambda c: close[c.sha], criterion("ratio", 0.9))
    assert refused.error is not None and "not bad by the criterion (good): BAD/GOOD 0.950" in refused.error


def test_lower_is_better_ratio():
    is_bad = criterion("ratio", 1.2, "lower")
    assert is_bad(13.0, 10.0) and not is_bad(11.0, 10.0)


def record(run: int, sha: str = "a" * 40, **over) -> RunRecord:
    data = {
        "run": run,
        "commit": {"sha": sha, "subject": "[fix typo]: funtion -> function", "date": "d"},
        "profile": "eagle3",
        "outcome": "ok",
        "reason": None,
        "started_at": "2026-11-30T10:00:00.000+00:00",
        "finished_at": "2026-11-30T10:01:00.000+00:00",
        "vars": {},
        "commands": {},
        "env": {"HF_TOKEN": "hf_secret", "NCCL_MIN_NCHANNELS": "4"},
        "manifests": [
            {"name": "kit", "digest": "sha256:0", "results": [{"patch": "hooks", "status": "APPLY", "reason": None}]}
        ],
        "guard": {},
        "host": {},
        "interpreter": None,
        "torch": None,
        "gpus": None,
        "server_info": None,
        "samples": {"tok_s": [94.0, 95.0]},
        "missing": [],
        "logs": {},
    }
    data.update(over)
    return RunRecord.from_json(data)


def test_a_reused_worktree_is_not_a_patch_change():
    first = record(1)
    again = record(
        2,
        manifests=[
            {
                "name": "kit",
                "digest": "sha256:0",
                "results": [{"patch": "hooks", "status": "SKIP", "reason": "ALREADY_APPLIED"}],
            }
        ],
    )
    result = compare(first, again, threshold=0.05, between=between((), (), same=True))
    assert result.patches == ()
    assert result.to_json()["provenance"]["between"] == {"direction": "same", "commits": []}
    failed = [{"patch": "hooks", "status": "FAIL", "reason": "CLASS_NOT_FOUND"}]
    gone = record(3, manifests=[{"name": "kit", "digest": "sha256:0", "results": failed}])
    (change,) = compare(first, gone, threshold=0.05).patches
    assert (change.a, change.b) == ("applied", "not applied (FAIL CLASS_NOT_FOUND)")


def test_a_run_without_data_is_said_to_be_so():
    refused = record(2, outcome="refused", reason="guard", samples={})
    result = compare(record(1), refused, threshold=0.05)
    assert result.no_data == (refused,)
    assert result.to_json()["no_data"] == [2]


def test_pick_pair_takes_the_latest_ok_runs_of_a_common_profile():
    b = "b" * 40
    runs_a = [record(1), record(3, outcome="refused", reason="x", samples={})]
    runs_b = [record(2, b), record(4, b, profile="baseline"), record(5, b, outcome="interrupted", reason="^C")]
    a, bb = pick_pair([("A", runs_a), ("B", runs_b)], None)
    assert (a.run_id, bb.run_id) == (1, 2)
    with pytest.raises(UsageError, match=r"A: run 1 eagle3 ok, run 3 eagle3 refused; B: run 4 baseline ok"):
        pick_pair([("A", runs_a), ("B", [runs_b[1]])], None)
    # One commit twice: its last two ok runs, oldest as A.
    same = [record(1), record(2), record(3, outcome="interrupted", reason="^C")]
    a, bb = pick_pair([("X", same), ("X", same)], None)
    assert (a.run_id, bb.run_id) == (1, 2)
    with pytest.raises(UsageError, match="only one ok run of X"):
        pick_pair([("X", same[:1]), ("X", same[:1])], None)


def test_secrets_are_redacted_in_every_record():
    assert is_secret("HF_TOKEN") and is_secret("openai_api_key") and is_secret("AWS_SECRET_ACCESS_KEY")
    assert not is_secret("NCCL_MIN_NCHANNELS")
    assert redact_env({"HF_TOKEN": "x", "A": "b"}) == {"HF_TOKEN": "<redacted>", "A": "b"}
    r = record(1)
    assert r.env["HF_TOKEN"] == "<redacted>"
    assert "hf_secret" not in str(r.to_json())
    quoted = record(
        2,
        vars={"api_key": "sk-live-123456", "model": "kimi"},
        env={"HF_TOKEN": "hf_abcdefgh"},
        commands={"server": ["serve", "--api-key", "sk-live-123456"], "client": []},
        details=["pid 7 (serve) has HF_TOKEN='hf_abcdefgh', not 'x'"],
    )
    text = str(quoted.to_json())
    assert "sk-live-123456" not in text and "hf_abcdefgh" not in text
    assert quoted.commands["server"] == ["serve", "--api-key", "<redacted>"]
    assert quoted.vars == {"api_key": "<redacted>", "model": "kimi"}
    assert is_secret("SGLANG_DB_CREDENTIAL") and is_secret("db_passwd")
    proven = record(3, env={"SGLANG_DB_CREDENTIAL": "cred-0123456789"}, proof={"argv": ["serve", "cred-0123456789"]})
    assert proven.proof == {"argv": ["serve", "<redacted>"]}  # the probe quoted it: scrubbed there too


def test_the_probe_redacts_the_same_names_as_patchkit():
    """The probe cannot import patchkit (the server's interpreter may not have it): it keeps a copy of the words.
    Read from its source (every file of it): importing it would run the sitecustomize it chains to."""
    modules = [ast.parse(Path(path).read_text(encoding="utf-8")) for path in sorted(PROBE_FILES)]
    constants = {
        node.targets[0].id: ast.literal_eval(node.value)
        for module in modules
        for node in module.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
        and isinstance(node.value, (ast.Constant, ast.Tuple))
    }  # fmt: skip
    assert constants["SECRET_WORDS"] == SECRET_WORDS
    assert constants["REDACTED"] == REDACTED
    assert constants["FAMILIES"] == PROBE_FAMILIES  # what `show` counts as recorded in every process
    assert constants["DATA_SUFFIXES"] == PROBE_DATA_SUFFIXES  # what guard --site checks as the probe records


def test_progress_lines_off_a_terminal_say_health_at_most_every_30_seconds(monkeypatch):
    import io
    import time

    from patchkit.views.progress import ProgressLines

    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    show = ProgressLines("bench", out)
    commit = line(1)[0]
    for elapsed in (0, 1, 29, 31, 45, 62):
        clock[0] = 100.0 + elapsed
        show(commit, "eagle3", "waiting for health", f"{elapsed}s of 600s")
    show(commit, "eagle3", "client", "run 1/2")
    said = [text.split(": ", 1)[1] for text in out.getvalue().splitlines()]
    assert said == [
        "waiting for health 0s of 600s",
        "waiting for health 31s of 600s",
        "waiting for health 62s of 600s",
        "client run 1/2",
    ]


@pytest.mark.slow
def test_reading_records_loads_no_process_machinery():
    """The report (and a Slurm submitter) read runs through record and store: no job, no psutil."""
    import subprocess
    import sys

    code = (
        "import sys, patchkit.bench.records.store, patchkit.bench.records.compare, patchkit.bench.stats.search; "
        "print(sorted(m for m in ('patchkit.bench.execution.job', 'psutil', 'patchkit.bench.execution.session') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_noise_prior_is_keyed_where_the_launches_run(tmp_path):
    """Locally the host; on Slurm the partition and constraint the jobs were submitted to, whatever node each
    landed on and whatever host submitted them: noise stores, compare, bisect and report look up that key."""
    from pathlib import Path

    from patchkit.bench.execution.slurm import SlurmOptions
    from patchkit.bench.records.store import Store
    from patchkit.commands.compare import noise_priors

    assert record(1, host={"hostname": "gpu-1"}).place == "gpu-1"
    on_node = record(2, host={"hostname": "gpu-7"}, executor={"name": "slurm", "node": "gpu-7", "place": "slurm:gpu"})
    assert on_node.place == "slurm:gpu"
    assert record(3, host={"hostname": "gpu-7"}, executor={"name": "slurm", "node": "gpu-7"}).place == "gpu-7"
    assert SlurmOptions(shared_dir=Path("/s")).place == "slurm:default"
    assert SlurmOptions(shared_dir=Path("/s"), partition="gpu", extra={"constraint": "h100"}).place == (
        "slurm:gpu,constraint=h100"
    )
    with Store(tmp_path / "bench.sqlite") as store:
        store.add_noise(host="slurm:gpu", profile="eagle3", metric="tok_s", sigma=0.02, df=9, commit="a", series="s")
        assert noise_priors(store, on_node)["tok_s"].sigma == 0.02
        assert noise_priors(store, record(4, host={"hostname": "gpu-7"})) == {}


def test_a_slurm_job_that_never_ran_says_its_state_not_a_node():
    from patchkit.views.bench import slurm_where

    never = record(1, outcome="interrupted", reason="x", executor={"job_id": "43_1", "state": "CANCELLED"})
    assert slurm_where(never) == " (Slurm job 43_1, CANCELLED before it ran)"
    ran = record(2, executor={"job_id": "43_0", "state": "COMPLETED", "node": "gpu-7"})
    assert slurm_where(ran) == " (Slurm job 43_0 on gpu-7)"
    assert slurm_where(record(3)) == ""


def test_the_shared_launch_loop_says_how_it_ended(monkeypatch, tmp_path):
    """bench and noise run their launches through one loop: every launch, a local launch interrupted (stored,
    last, not announced), or the submitter interrupted while the Slurm jobs go on (what was collected).  The
    local launches are a batch of the store's ledger: the same command run again reads back what was stored,
    in its place, and launches the interrupted one and the rest; once done, the batch is finished."""
    import patchkit.bench.execution.launches as launches
    from patchkit.bench.execution.launches import BenchArgs, launch
    from patchkit.bench.execution.local import LocalExecutor
    from patchkit.bench.execution.session import Interrupted
    from patchkit.bench.execution.slurm import SlurmExecutor
    from patchkit.bench.records.store import Store

    commits = line(3)
    stored = [record(i + 1, c.sha) for i, c in enumerate(commits)]

    class Local:  # a session over a real store: what Session.run does with the ledger, without a server
        def __init__(self, store, interrupt):
            self.store, self.interrupt, self.ran = store, interrupt, []

        def next_launch(self, commit, profile):
            return 1

        def launch_key(self, commit, profile, ordinal):
            return f"{commit.sha[-4:]}-{profile}-{ordinal}"

        def run(self, commit, profile, *, launch=None, submission=None):
            self.ran.append(commit.sha)
            if commit == self.interrupt:
                stop = record(0, commit.sha, outcome="interrupted", reason="^C")
                stop = stop.with_run_id(self.store.add(stop))
                self.store.set_submission_state(*submission, "interrupted")
                raise Interrupted(stop)
            found = next(r for r in stored if r.commit.sha == commit.sha)
            return found.with_run_id(self.store.add(found, submission=submission))

    with Store(tmp_path / "bench.sqlite") as store:
        first, heard = Local(store, commits[1]), []
        done = launch(first, [(c, "eagle3") for c in commits], LocalExecutor(), command="bench", on_record=heard.append)
        assert done.interrupted and not done.submitter and done.stopped
        assert [r.run_id for r in done.records] == [1, 2] and [r.run_id for r in heard] == [1]
        assert first.ran == [commits[0].sha, commits[1].sha]
        (batch,) = {row.batch for row in store.submissions()}
        assert {row.key[:4]: row.state for row in store.submissions(batch)} == {
            "0000": "collected",
            "0001": "interrupted",
        }
        assert all(row.executor == "local" for row in store.submissions(batch))

        again, notes = Local(store, None), []
        done = launch(again, [(c, "eagle3") for c in commits], LocalExecutor(), command="bench", note=notes.append)
        assert not done.stopped and [r.run_id for r in done.records] == [1, 3, 4]  # run 1 read back, in its place
        assert again.ran == [commits[1].sha, commits[2].sha]
        assert notes == [
            f"resuming batch {batch}: 1 launch stored earlier, read back; 2 to run; --fresh starts a new batch instead",
            "running again 1 launch an earlier run of this batch did not settle (1 interrupted)",
        ]
        assert done.batch is not None
        assert (done.batch.batch, done.batch.resumed, done.batch.read_back) == (batch, True, (1,))
        assert {row.state for row in store.submissions(batch)} == {"collected"}
        third = Local(store, None)
        launch(third, [(c, "eagle3") for c in commits], LocalExecutor(), command="bench")
        assert len(third.ran) == 3  # the batch was finished: the same command is a new batch, launched whole

    def waiting(session, pairs, executor, *, command, fresh, note, on_record, on_batch):
        on_record(stored[2])
        raise KeyboardInterrupt

    monkeypatch.setattr(launches, "run_scheduled", waiting)
    slurm_executor = object.__new__(SlurmExecutor)  # no sbatch here: run_scheduled is the stand-in above
    slurm = launch(Local(None, None), [(c, "eagle3") for c in commits], slurm_executor, command="noise")
    assert slurm.submitter and not slurm.interrupted and [r.run_id for r in slurm.records] == [3]
    kwargs = {"manifests": ["m"], "repo": "r", "sets": ["a=1"], "executor": "slurm", "slots": 2, "json_out": True}
    args = BenchArgs.take(kwargs, keep=("slots",))
    assert (args.manifests, args.sets, args.cluster.executor, args.cluster.slots) == (("m",), ("a=1",), "slurm", 2)
    assert kwargs == {"slots": 2, "json_out": True}  # what the verb itself takes is left


def test_the_public_import_paths_of_the_search_and_the_noise_still_work():
    """bench/ is split by job (stats, records, execution); scripts keep their import paths."""
    from patchkit.bench import stats
    from patchkit.bench.bisect import BisectReport, Measurement, bisect
    from patchkit.bench.stats import search, verdict
    from patchkit.bench.verdict import Noise, noise_of
    from patchkit.git import Commit

    assert (bisect, Measurement, BisectReport) == (search.bisect, search.Measurement, search.BisectReport)
    assert noise_of is verdict.noise_of and Noise is verdict.Noise and stats.__doc__
    assert Commit.__module__ == "patchkit.commit"


def test_a_proof_stored_by_an_older_patchkit_reads_back_as_it_was(tmp_path):
    """RunRecord.proof is typed (proof/document.py's ProofJson) and read as stored: a record from before hosts,
    idents and the stop accounting (NCCL's lines keyed by pid alone, no "unaccounted") round-trips through the
    store unchanged, and show's sections and compare's proof rows read what it has."""
    import json

    from patchkit.bench.records.runview import run_view
    from patchkit.bench.records.store import Store
    from patchkit.proof.compare import proof_changes

    old_proof = {
        "state": "proven",
        "reason": None,
        "reasons": [],
        "probe_dir": "/runs/1/probe",
        "processes": [
            {"pid": 4250, "ppid": 4242, "label": "scheduler_TP0", "argv": ["-c"], "files": 12, "exited": True,
             "init": [{"env": {"NCCL_P2P_LEVEL": "NVL"}, "rank": 0, "world_size": 1, "torch": "2.9", "nccl": "2.27"}],
             "libraries": [{"path": "/x/libnccl.so.2", "size": 3, "sha256": "ab" * 32}]},
        ],
        "unprobed": ["pid 4242 (/bin/sh -c serve)"],
        "accounting": {"healthy": {"counts": {"tree": 3, "stray": 0}, "strays": [], "allowed": []}},
        "distributions": [{"name": "torch", "version": "2.9", "site_dir": "/v"}],
        "nccl": {"4250": {"pid": 4250, "devices": ["0"], "version": "2.27.5", "env": {"NCCL_P2P_LEVEL": "NVL"}}},
    }  # fmt: skip
    with Store(tmp_path / "bench.sqlite") as store:
        back = store.get(store.add(record(1, proof=old_proof, host={"hostname": "gpu-1"})))
    assert json.dumps(back.proof, sort_keys=True) == json.dumps(old_proof, sort_keys=True)
    view = run_view(back).to_json()
    assert view["header"]["proof"] == {"state": "proven", "reason": None, "reasons": [], "probe_dir": "/runs/1/probe"}
    (probed,) = view["processes"]["probed"]
    assert (probed["host"], probed["role"], probed["rank"], probed["ident"]) == ("gpu-1", "scheduler_TP0", 0, None)
    assert view["processes"]["unprobed"] == [{"pid": 4242, "command": "/bin/sh -c serve", "probe": "none", "why": None}]
    assert view["files"]["at"] == "healthy" and view["files"]["counts"]["tree"] == 3
    (line,) = view["nccl"]["log"]
    assert (line["pid"], line["role"], line["version"]) == (4250, "scheduler_TP0", "2.27.5")
    newer = json.loads(json.dumps(old_proof))
    newer["processes"][0]["init"][0]["env"]["NCCL_P2P_LEVEL"] = "SYS"
    assert proof_changes(back.proof, newer) == [("effective env NCCL_P2P_LEVEL in scheduler_TP0", "NVL", "SYS")]
