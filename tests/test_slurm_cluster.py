"""The test Slurm itself: a batch job and a submitit job array run on it (tests/slurm_cluster.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import submitit
from slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`


def test_sbatch_wait_runs_a_job(slurm: SlurmCluster, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text('#!/bin/sh\necho "job $SLURM_JOB_ID on $SLURMD_NODENAME"\n', encoding="utf-8")
    out = tmp_path / "out.txt"
    done = subprocess.run(
        ["sbatch", "--wait", "--parsable", "-o", str(out), str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    assert out.read_text(encoding="utf-8") == f"job {job_id} on {slurm.node}\n"


def test_submitit_map_array_runs_every_task(slurm: SlurmCluster, tmp_path: Path) -> None:
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    executor.update_parameters(timeout_min=5, slurm_array_parallelism=2)
    jobs = executor.map_array(divmod, [7, 8, 9], [2, 3, 4])
    assert len({job.job_id.split("_")[0] for job in jobs}) == 1  # one array
    assert [job.result() for job in jobs] == [(3, 1), (2, 2), (2, 1)]
