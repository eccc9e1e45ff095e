"""bench's stop of a server's group: a process it saw in the server's tree is signalled only while it is the same
process (pid and create time), never a later, unrelated process that took its pid."""

from __future__ import annotations

import subprocess
import sys

import psutil

from patchkit.bench.execution.group import alive, stop_group

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_pid_another_process_took_is_never_signalled() -> None:
    bystander = subprocess.Popen(SLEEP, start_new_session=True)  # not the server's, in a session of its own
    server = subprocess.Popen(SLEEP, start_new_session=True)  # a group leader, as bench starts the server
    try:
        created = psutil.Process(bystander.pid).create_time()
        # what bench holds when the bystander's pid once was a worker of the server that ended: an earlier process
        earlier = (bystander.pid, created - 5.0)
        assert alive({earlier}) == [] and alive({(bystander.pid, created)}) == [bystander.pid]
        assert stop_group(server, {earlier}, grace=2.0) == []
        assert server.poll() is not None  # the group is stopped
        assert bystander.poll() is None  # keyed by pid alone, it was killed with it
    finally:
        for proc in (bystander, server):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
