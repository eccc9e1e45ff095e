"""One benchmark run: ``run_job(JobSpec) -> RunRecord``, a plain function with no global state.

The tree is already prepared (patched, guarded, version file written) when a
job starts: the guard (``patchkit.bench.prepare``) has checked that the
``import_check`` modules import from the tree.  The job owns everything that
has a process:

1. pick the port (or check that the one ``vars`` sets is free), build the
   environment: exactly ``[bench].env`` (+ the profile's), ``PYTHONPATH`` with
   the tree's ``pythonpath`` entries first, the ``inherit`` names and the
   guard's ``PATCHKIT_BENCH_*`` variables;
2. read provenance (interpreter, packages, torch, nvidia-smi);
3. start the server in its own process group (``start_new_session``), its
   stdout and stderr in ``server.log`` (kept);
4. poll health until 200 or ``ready_timeout``; if the server exits first,
   stop at once with the log's last lines;
5. fetch ``server_info``; check the version it reports against the tree;
6. read the start environment of every process in the server's tree with
   psutil: each must have every ``env`` value;
7. run the client ``warmup + repeat`` times (each in its own group, with a
   timeout, watching the server), extract every metric per measured run;
8. stop: SIGTERM to the group (and to any process of the tree that left it),
   SIGKILL after ``stop_grace``, then confirm nothing is left and the port is
   free.  This happens whatever ends the job: an error, a refusal, Ctrl-C.

Nothing here touches git or the store: a later scheduler can ship a JobSpec
to another host and get a RunRecord back.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from patchkit.bench import provenance
from patchkit.bench.metrics import extract, summary
from patchkit.manifest.bench import BenchConfig, render

OUTCOMES = ("ok", "refused", "server-failed", "client-failed", "metric-missing")
LOG_TAIL_LINES = 20

Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class JobSpec:
    """Everything one run needs; plain data (paths, strings, the frozen config)."""

    commit: Mapping[str, str]  # {"sha", "subject", "date"}
    tree: Path
    config: BenchConfig
    profile: str
    vars: Mapping[str, str]  # resolved: [bench].vars, profile vars, --set
    run_dir: Path  # logs and output files of this run; kept
    warmup: int
    repeat: int
    manifests: tuple[Mapping[str, Any], ...] = ()  # name, digest, results: recorded as given
    guard: Mapping[str, Any] = field(default_factory=dict)  # the guard report: recorded as given
    guard_env: Mapping[str, str] = field(default_factory=dict)  # variables the guard adds
    expected_version: str | None = None  # what scm_version_file holds in this tree


@dataclass(frozen=True)
class RunRecord:
    commit: Mapping[str, str]
    profile: str
    outcome: str  # one of OUTCOMES
    reason: str | None
    started_at: str
    finished_at: str
    vars: Mapping[str, str]
    commands: Mapping[str, Any]
    env: Mapping[str, str]
    manifests: tuple[Mapping[str, Any], ...]
    guard: Mapping[str, Any]
    host: Mapping[str, Any]
    interpreter: Mapping[str, Any] | None
    torch: Mapping[str, Any] | None
    gpus: tuple[Mapping[str, Any], ...] | None
    server_info: Mapping[str, Any] | None
    samples: Mapping[str, tuple[float | None, ...]]
    missing: tuple[Mapping[str, Any], ...]  # {"metric", "run", "log"}
    logs: Mapping[str, Any]
    details: tuple[str, ...] = ()  # log tails, offending pids: what explains the outcome
    metrics: tuple[Mapping[str, Any], ...] = ()  # the [[bench.metric]] tables the samples were read with
    run_id: int | None = None

    def ident(self) -> dict[str, Any]:
        """What names a run in tables and JSON: run number, commit, subject, profile, outcome."""
        return {
            "run": self.run_id,
            "commit": self.commit["sha"],
            "subject": self.commit["subject"],
            "profile": self.profile,
            "outcome": self.outcome,
        }

    def stats(self) -> dict[str, dict[str, Any]]:
        return {name: summary(values) for name, values in self.samples.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "commit": dict(self.commit),
            "profile": self.profile,
            "outcome": self.outcome,
            "reason": self.reason,
            "details": list(self.details),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "vars": dict(self.vars),
            "commands": dict(self.commands),
            "env": dict(self.env),
            "manifests": [dict(m) for m in self.manifests],
            "guard": dict(self.guard),
            "host": dict(self.host),
            "interpreter": None if self.interpreter is None else dict(self.interpreter),
            "torch": None if self.torch is None else dict(self.torch),
            "gpus": None if self.gpus is None else [dict(g) for g in self.gpus],
            "server_info": None if self.server_info is None else dict(self.server_info),
            "samples": {k: list(v) for k, v in self.samples.items()},
            "stats": self.stats(),
            "missing": [dict(m) for m in self.missing],
            "metrics": [dict(m) for m in self.metrics],
            "logs": dict(self.logs),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        return cls(
            commit=data["commit"],
            profile=data["profile"],
            outcome=data["outcome"],
            reason=data["reason"],
            started_at=data["started_at"],
            finished_at=data["finished_at"],
            vars=data["vars"],
            commands=data["commands"],
            env=data["env"],
            manifests=tuple(data["manifests"]),
            guard=data["guard"],
            host=data["host"],
            interpreter=data["interpreter"],
            torch=data["torch"],
            gpus=None if data["gpus"] is None else tuple(data["gpus"]),
            server_info=data["server_info"],
            samples={k: tuple(v) for k, v in data["samples"].items()},
            missing=tuple(data["missing"]),
            logs=data["logs"],
            details=tuple(data.get("details", ())),
            metrics=tuple(data.get("metrics", ())),
            run_id=data.get("run"),
        )


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Stop(Exception):
    """Ends a job early with an outcome (internal to run_job)."""

    def __init__(self, outcome: str, reason: str, details: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.details = details


# -- ports, environment ------------------------------------------------------------


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bench_env(
    config: BenchConfig,
    tree: Path,
    profile: str | None,
    values: Mapping[str, str],
    *,
    base: Mapping[str, str],
    guard_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of server and client: the ``inherit`` names of ``base`` (patchkit's own),
    ``PYTHONPATH`` with the tree's ``pythonpath`` entries, the guard's variables, then ``[bench].env``
    and (``profile`` given) the profile's ``env``, rendered with ``values``."""
    env = {name: base[name] for name in config.inherit if name in base}
    pythonpath = [str((tree / entry).resolve()) for entry in config.pythonpath]
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env.update(guard_env or {})
    extra = config.profile(profile).env if profile is not None else {}
    for name, value in {**config.env, **extra}.items():
        env[name] = render(value, values)
    return env


def build_env(spec: JobSpec, values: Mapping[str, str], *, base: Mapping[str, str]) -> dict[str, str]:
    """The exact environment of server and client of this job."""
    return bench_env(spec.config, spec.tree, spec.profile, values, base=base, guard_env=spec.guard_env)


def bench_python(config: BenchConfig) -> str | None:
    """``[bench].python`` as a path (looked up on PATH unless absolute); None when it does not exist."""
    python = shutil.which(config.python) if not os.path.isabs(config.python) else config.python
    return python if python is not None and os.path.exists(python) else None


def required_env(spec: JobSpec, env: Mapping[str, str]) -> dict[str, str]:
    """The variables every process of the server must have: [bench].env and the profile's."""
    profile = spec.config.profile(spec.profile)
    return {name: env[name] for name in {**spec.config.env, **profile.env}}


# -- processes ----------------------------------------------------------------------


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> tuple[str, ...]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(f"  | {line}" for line in text.splitlines()[-lines:])


def _tree(pid: int) -> list[Any]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _group_members(pgid: int) -> list[int]:
    import psutil

    out = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if os.getpgid(proc.pid) == pgid:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            continue
    return out


def _alive(pids: set[int]) -> list[int]:
    import psutil

    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def stop_group(proc: subprocess.Popen[bytes], known: set[int], grace: float) -> list[str]:
    """SIGTERM the group (and known tree members), SIGKILL after ``grace``; problems left, as text."""
    pgid = proc.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for pid in _alive(known):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
            if proc.poll() is not None and not _group_members(pgid) and not _alive(known):
                break
            time.sleep(0.05)
        if proc.poll() is not None and not _group_members(pgid) and not _alive(known):
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)
    left = sorted(set(_group_members(pgid)) | set(_alive(known)))
    return [f"process {pid} of the server's group is still running after SIGKILL" for pid in left]


# No proxies: health and server_info are loopback URLs, and an HTTP_PROXY in
# the environment (common on GPU hosts) must not answer for the server.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"User-Agent": "patchkit-bench"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""
    except (urllib.error.URLError, OSError, TimeoutError):
        return 0, b""


def check_start_env(pid: int, required: Mapping[str, str]) -> tuple[list[int], list[str]]:
    """(pids checked, problems): every process of the tree must have every required value."""
    import psutil

    checked, problems = [], []
    for proc in _tree(pid):
        try:
            environ = proc.environ()
            cmdline = " ".join(proc.cmdline())
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            problems.append(f"pid {proc.pid}: cannot read its environment (access denied)")
            continue
        checked.append(proc.pid)
        for name, value in required.items():
            if name not in environ:
                problems.append(f"pid {proc.pid} ({cmdline}) lacks {name}")
            elif environ[name] != value:
                problems.append(f"pid {proc.pid} ({cmdline}) has {name}={environ[name]!r}, not {value!r}")
    return checked, problems


# -- the job ------------------------------------------------------------------------


def version_problem(spec: JobSpec, info: Mapping[str, Any] | None) -> str | None:
    config = spec.config
    if config.version_file is None and spec.expected_version is None:
        return None
    reported = info.get("version") if isinstance(info, Mapping) else None
    if not isinstance(reported, str):
        return "server_info reports no version, so the server cannot prove it runs this tree"
    if spec.expected_version is not None:
        sha = spec.commit["sha"]
        node = re.search(r"\+g([0-9a-f]+)", reported)
        if reported != spec.expected_version or (node and not sha.startswith(node.group(1))):
            where = f" (+g{node.group(1)}, another commit)" if node and not sha.startswith(node.group(1)) else ""
            return (
                f"the server reports version {reported}{where}, not {spec.expected_version} written for "
                f"{sha[:10]}: it is not running this tree"
            )
    if config.version_file is not None:
        path = spec.tree / config.version_file
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return f"version_file {config.version_file} does not exist in the tree"
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if match is None:
            return f"version_file {config.version_file} has no static __version__ = '...'"
        if match.group(1) != reported:
            return (
                f"the server reports version {reported}, the tree's {config.version_file} says {match.group(1)}: "
                "it is not running this tree"
            )
    return None


def _split(command: str, which: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError as exc:
        raise _Stop("refused", f"the {which} command does not split into words ({exc}): {command}") from None


def _read_from(path: Path, offset: int) -> tuple[str, int]:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return "", offset
    return data.decode("utf-8", "replace"), offset + len(data)


def run_job(spec: JobSpec, progress: Progress | None = None, *, base_env: Mapping[str, str] | None = None) -> RunRecord:
    """Run one (commit, profile) benchmark on a prepared tree; always returns a record (Ctrl-C re-raises)."""
    say = progress or (lambda phase, detail: None)
    config = spec.config
    started = now()
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    server_log = spec.run_dir / "server.log"
    state: dict[str, Any] = {
        "interpreter": None,
        "torch": None,
        "gpus": None,
        "server_info": None,
        "commands": {},
        "env": {},
        "samples": {m.name: [] for m in config.metrics if m.applies_to(spec.profile)},
        "missing": [],
        "clients": [],
    }
    vars_ = dict(spec.vars)
    proc: subprocess.Popen[bytes] | None = None
    known: set[int] = set()
    log_fh: IO[bytes] | None = None
    outcome: str = "ok"
    reason: str | None = None
    details: tuple[str, ...] = ()
    try:
        python = bench_python(config)
        if python is None:
            raise _Stop("refused", f"the interpreter {config.python!r} is not found on PATH")
        if "port" in vars_:
            if not vars_["port"].isdigit() or not 0 < int(vars_["port"]) < 65536:
                raise _Stop("refused", f"port {vars_['port']!r} is not a TCP port number")
            port = int(vars_["port"])
            if not port_is_free(port):
                raise _Stop("refused", f"port {port} on 127.0.0.1 is already in use; nothing was started")
        else:
            port = free_port()
        vars_["port"] = str(port)
        values = {**vars_, "tree": str(spec.tree), "python": python}
        env = build_env(spec, values, base=os.environ if base_env is None else base_env)
        state["env"] = env
        server_cmd = render(config.server, values)
        health = render(config.health, values)
        info_url = render(config.server_info, values) if config.server_info else None
        state["commands"] = {
            "server": _split(server_cmd, "server"),
            "health": health,
            "server_info": info_url,
            "client": [],
            "cwd": str(spec.tree),
        }

        say("reading provenance", "")
        state["interpreter"] = provenance.interpreter_facts(python, env, str(spec.tree))
        state["torch"] = provenance.torch_facts(python, env, str(spec.tree))
        state["gpus"] = provenance.gpu_facts()

        say("starting server", server_cmd)
        log_fh = server_log.open("wb")
        try:
            proc = subprocess.Popen(
                state["commands"]["server"],
                cwd=spec.tree,
                env=env,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise _Stop("server-failed", f"the server command could not start: {exc.strerror or exc}") from None

        start = time.monotonic()
        delay = 0.05
        while True:
            if proc.poll() is not None:
                raise _Stop(
                    "server-failed",
                    f"the server exited with code {proc.returncode} before it was healthy (log: {server_log})",
                    _tail(server_log),
                )
            elapsed = time.monotonic() - start
            say("waiting for health", f"{elapsed:.0f}s of {config.ready_timeout:.0f}s")
            status, _ = _http_get(health)
            if status == 200:
                break
            if elapsed > config.ready_timeout:
                raise _Stop(
                    "server-failed",
                    f"health {health} did not answer 200 within {config.ready_timeout:g}s (log: {server_log})",
                    _tail(server_log),
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)

        if info_url:
            status, body = _http_get(info_url, timeout=10)
            try:
                info = json.loads(body) if status == 200 else None
            except json.JSONDecodeError:
                info = None
            state["server_info"] = info if isinstance(info, dict) else None
        problem = version_problem(spec, state["server_info"])
        if problem:
            raise _Stop("refused", problem)

        say("checking worker environments", "")
        known.update(p.pid for p in _tree(proc.pid))
        required = required_env(spec, env)
        checked, problems = check_start_env(proc.pid, required)
        if problems:
            raise _Stop(
                "refused",
                f"{len(problems)} process(es) of the server's tree lack the environment of [bench].env "
                "(start environment, read with psutil)",
                tuple(problems),
            )
        state["env_checked_pids"] = checked

        offset = server_log.stat().st_size if server_log.exists() else 0
        total = spec.warmup + spec.repeat
        for index in range(total):
            measured = index >= spec.warmup
            label = f"run {index - spec.warmup + 1}/{spec.repeat}" if measured else f"warmup {index + 1}/{spec.warmup}"
            say("client", label)
            output = spec.run_dir / f"output-{index + 1}.jsonl"
            output.unlink(missing_ok=True)
            client_cmd = _split(render(config.client, {**values, "output": str(output)}), "client")
            state["commands"]["client"].append(client_cmd)
            out_path = spec.run_dir / f"client-{index + 1}.out"
            err_path = spec.run_dir / f"client-{index + 1}.err"
            state["clients"].append({"stdout": str(out_path), "stderr": str(err_path), "output": str(output)})
            _, offset = _read_from(server_log, offset)  # skip what the server wrote between runs
            _run_client(client_cmd, spec, env, out_path, err_path, proc, server_log, label)
            log_text, offset = _read_from(server_log, offset)
            if not measured:
                continue
            stdout = out_path.read_text(encoding="utf-8", errors="replace")
            for metric in config.metrics:
                if not metric.applies_to(spec.profile):
                    continue
                value = extract(metric, stdout=stdout, output=output, server_log=log_text)
                state["samples"][metric.name].append(value)
                if value is None:
                    log = {"stdout": out_path, "output-file": output, "server-log": server_log}[metric.source]
                    state["missing"].append({"metric": metric.name, "run": index - spec.warmup + 1, "log": str(log)})
        if state["missing"]:
            names = sorted({m["metric"] for m in state["missing"]})
            outcome = "metric-missing"
            reason = f"no value for {', '.join(names)} in {len(state['missing'])} run(s); see the logs named in missing"
    except _Stop as stop:
        outcome, reason, details = stop.outcome, stop.reason, stop.details
    finally:
        leftovers: list[str] = []
        if proc is not None:
            say("stopping server", "")
            known.update(p.pid for p in _tree(proc.pid))
            leftovers = stop_group(proc, known, config.stop_grace)
            port = int(vars_.get("port", 0) or 0)
            deadline = time.monotonic() + 5
            while port and not port_is_free(port) and time.monotonic() < deadline:
                time.sleep(0.1)
            if port and not port_is_free(port):
                leftovers.append(f"port {port} is still in use after the server's group was stopped")
        if log_fh is not None:
            log_fh.close()
    if leftovers:
        details = (*details, *leftovers)
        if outcome == "ok":
            outcome, reason = "server-failed", "the server's processes could not all be stopped"
    return RunRecord(
        commit=dict(spec.commit),
        profile=spec.profile,
        outcome=outcome,
        reason=reason,
        started_at=started,
        finished_at=now(),
        vars=vars_,
        commands=state["commands"],
        env=state["env"],
        manifests=tuple(spec.manifests),
        guard=dict(spec.guard),
        host=provenance.host_facts(),
        interpreter=state["interpreter"],
        torch=state["torch"],
        gpus=None if state["gpus"] is None else tuple(state["gpus"]),
        server_info=state["server_info"],
        samples={k: tuple(v) for k, v in state["samples"].items()},
        missing=tuple(state["missing"]),
        logs={
            "run_dir": str(spec.run_dir),
            "server": str(server_log),
            "clients": state["clients"],
            "env_checked_pids": state.get("env_checked_pids", []),
        },
        details=tuple(details),
        metrics=tuple(m.to_json() for m in config.metrics),
    )


def _run_client(
    cmd: list[str],
    spec: JobSpec,
    env: Mapping[str, str],
    out_path: Path,
    err_path: Path,
    server: subprocess.Popen[bytes],
    server_log: Path,
    label: str,
) -> None:
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            client = subprocess.Popen(
                cmd,
                cwd=spec.tree,
                env=dict(env),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise _Stop("client-failed", f"the client command could not start: {exc.strerror or exc}") from None
        deadline = time.monotonic() + spec.config.client_timeout
        try:
            while client.poll() is None:
                if server.poll() is not None:
                    raise _Stop(
                        "server-failed",
                        f"the server exited with code {server.returncode} during client {label} (log: {server_log})",
                        _tail(server_log),
                    )
                if time.monotonic() > deadline:
                    raise _Stop(
                        "client-failed", f"client {label} ran past client_timeout ({spec.config.client_timeout:g}s)"
                    )
                with contextlib.suppress(subprocess.TimeoutExpired):
                    client.wait(timeout=0.1)
        finally:
            if client.poll() is None:
                stop_group(client, set(), 2.0)
    if server.poll() is not None:
        raise _Stop(
            "server-failed",
            f"the server exited with code {server.returncode} during client {label} (log: {server_log})",
            _tail(server_log),
        )
    if client.returncode != 0:
        raise _Stop(
            "client-failed",
            f"client {label} exited with code {client.returncode} (stderr: {err_path})",
            _tail(err_path),
        )
