"""A real single-node Slurm for the tests: munged, slurmctld and slurmd, all in one temp dir.

``SlurmCluster(root).start()`` writes a minimal ``slurm.conf`` (one node named
after ``hostname -s`` with this machine's CPUs and memory,
``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``, no accounting,
every state, spool, log and pid file under ``root``), creates a munge key,
starts ``munged`` on its own socket, then ``slurmctld`` and ``slurmd`` as root
on free ports, and waits until ``sinfo`` shows the node idle.  ``stop()`` ends
the three daemons it started (by pid, SIGTERM then SIGKILL).  Clients find the
cluster through ``SLURM_CONF`` (``cluster.env()``), so several clusters (one per
test session) can run side by side without touching ``/etc/slurm``.

Where Slurm cannot start (not root, the packages missing, a daemon dying) it
raises ``SlurmUnavailable`` with the reason, and the fixture skips with it.
``.ci/run`` installs ``slurm-wlm`` and ``munge`` so CI runs these tests for real.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "sbatch", "squeue", "scancel", "scontrol")


class SlurmUnavailable(Exception):
    """Why a local Slurm cannot run here (one line, used as the skip reason)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory_mb() -> int:
    with open("/proc/meminfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    return 1024


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")
    if found is None:
        raise SlurmUnavailable(f"{name} is not installed (apt-get install slurm-wlm munge)")
    return found


class SlurmCluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        self.cpus = len(os.sched_getaffinity(0))
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.socket.2"
        self.procs: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        """The environment a client (sbatch, submitit, patchkit) needs to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def write_conf(self) -> None:
        for sub in ("state", "spool", "log", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "munge").chmod(0o700)
        lines = [
            "ClusterName=patchkit-test",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "CredType=cred/munge",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.root / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.root / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "MinJobAge=3600",  # finished jobs stay visible to squeue/scontrol (there is no accounting)
            "KillWait=5",
            "MpiDefault=none",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={_memory_mb()} State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - kept open for the daemon's life
        self.procs.append(
            subprocess.Popen(
                [_tool(name), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env(),
                start_new_session=True,
            )
        )
        log.close()

    def start(self, timeout: float = 60) -> SlurmCluster:
        if os.geteuid() != 0:
            raise SlurmUnavailable("a local Slurm needs root (munged, slurmctld and slurmd run as root)")
        for name in (*DAEMONS, *CLIENTS):
            _tool(name)
        self.write_conf()
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        try:
            self._spawn(
                "munged",
                [
                    "--foreground",
                    "--force",
                    f"--key-file={key}",
                    f"--socket={self.munge_socket}",
                    f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                    f"--log-file={self.root / 'log' / 'munged.log'}",
                    f"--seed-file={self.root / 'munge' / 'munged.seed'}",
                ],
            )
            self._wait(self.munge_socket.exists, "munged", 15)
            self._spawn("slurmctld", ["-D", "-i", "-f", str(self.conf)])
            self._spawn("slurmd", ["-D", "-f", str(self.conf), "-N", self.node])
            self._wait(self._idle, "the node to show idle in sinfo", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _idle(self) -> bool:
        done = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, env=self.env(), check=False
        )
        return done.returncode == 0 and any(
            line.split()[:2] == [self.node, "idle"] for line in done.stdout.splitlines()
        )

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise SlurmUnavailable(f"{Path(str(proc.args[0])).name} exited ({proc.returncode}): {self.tail()}")
            if ready():
                return
            time.sleep(0.3)
        raise SlurmUnavailable(f"timed out waiting for {what}: {self.tail()}")

    def tail(self) -> str:
        """The daemons' last log lines, for a skip reason or a failing test's message."""
        out = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-3:]
            out.extend(f"{path.name}: {line}" for line in lines)
        return " | ".join(out) or "no daemon logs"

    def stop(self) -> None:
        """Cancel this cluster's jobs, then SIGTERM each daemon started here (slurmd first), SIGKILL after 10 s."""
        if any(proc.poll() is None for proc in self.procs) and self.conf.exists():
            subprocess.run(["scancel", "--user", "root"], env=self.env(), capture_output=True, check=False, timeout=30)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                queue = subprocess.run(
                    ["squeue", "-h", "-o", "%i"], env=self.env(), capture_output=True, text=True, check=False
                )
                if queue.returncode != 0 or not queue.stdout.strip():
                    break
                time.sleep(0.3)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in reversed(self.procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()
