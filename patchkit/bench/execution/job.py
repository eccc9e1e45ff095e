"""One benchmark run: ``run_job(JobSpec) -> RunRecord``, a plain function with no global state.

The tree is already prepared (patched, guarded, version file written) when a
job starts: the guard (``patchkit.bench.execution.prepare``) has checked that the
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
   timeout, watching the server), extract every metric per measured run (a
   run's server-log lines: from its start to the next run's start, ``_run_log``);
8. stop: SIGTERM to the group (and to any process of the tree that left it),
   SIGKILL after ``stop_grace``, then confirm nothing is left and the port is
   free.  This happens whatever ends the job: an error, a refusal, Ctrl-C.

``run_job`` is these steps as named functions (``_configure``,
``_read_provenance``, ``_start``, ``_wait_healthy``, ``_verify``,
``_run_clients``, ``_stop``) over one typed ``_JobState``; the record is made
from that state however the job ended.  Ctrl-C and SIGTERM end it as
``interrupted`` with what it had measured.

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
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from patchkit.bench.execution.group import Member, members, process_tree, stop_group
from patchkit.bench.execution.probed import probed_env
from patchkit.bench.execution.smi import snapshot as hygiene_snapshot
from patchkit.bench.records.metrics import extract
from patchkit.bench.records.provenance import gpu_facts, host_facts, interpreter_facts, torch_facts
from patchkit.bench.records.record import ManifestJson, Outcome, RunCommands, RunRecord, now
from patchkit.git import Commit
from patchkit.manifest.bench import BenchConfig, Metric, render
from patchkit.proof.account import TreeFacts
from patchkit.proof.coverage import coverage_json
from patchkit.proof.document import CoverageJson, ProofJson
from patchkit.proof.jitcache import jit_caches
from patchkit.proof.runproof import NOT_PROVEN, Proof, proof_json, prove
from patchkit.proof.unprobed import live_processes
from patchkit.redact import is_secret, scrub, secret_values
from patchkit.wording import plural

if TYPE_CHECKING:
    pass

LOG_TAIL_LINES = 20

Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class JobSpec:
    """Everything one run needs; plain data (paths, strings, the frozen config)."""

    commit: Commit
    tree: Path
    config: BenchConfig
    profile: str
    vars: Mapping[str, str]  # resolved: [bench].vars, profile vars, --set
    run_dir: Path  # logs and output files of this run; kept
    warmup: int
    repeat: int
    manifests: tuple[ManifestJson, ...] = ()  # name, digest, results: recorded as given
    guard: Mapping[str, object] = field(default_factory=dict)  # the guard report: recorded as given
    guard_env: Mapping[str, str] = field(default_factory=dict)  # variables the guard adds
    expected_version: str | None = None  # what scm_version_file holds in this tree
    allow_dirty: bool = False  # recorded: the guard was told to allow changes outside patchkit's edits
    proof_tree: TreeFacts | None = None  # the tree as the probe's accounting reads it ([bench].probe)


class _Stop(Exception):
    """Ends a job early with an outcome (internal to run_job)."""

    def __init__(self, outcome: Outcome, reason: str, details: tuple[str, ...] = ()) -> None:
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
    """(pids checked, problems): every process of the tree must have every required value.

    One problem per offending pid, on one line: its command line quoted word by word (a newline or
    other control character in an argument is escaped), then every variable it lacks or has otherwise."""
    import psutil

    checked, problems = [], []
    for proc in process_tree(pid):
        try:
            environ = proc.environ()
            cmdline = quote_command(proc.cmdline())
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            problems.append(f"pid {proc.pid}: cannot read its environment (access denied)")
            continue
        checked.append(proc.pid)
        wrong = []
        for name, value in required.items():
            if name not in environ:
                wrong.append(f"lacks {name}")
            elif environ[name] != value:
                wrong.append(
                    f"has {name} set to another value (a secret: no value is shown)"
                    if is_secret(name)
                    else f"has {name}={environ[name]!r}, not {value!r}"
                )
        if wrong:
            problems.append(f"pid {proc.pid} ({cmdline}) {'; '.join(wrong)}")
    return checked, problems


def quote_command(args: Sequence[str]) -> str:
    """A command line as one line: shell-quoted words; a word with a newline or another control
    character in bash's ``$'...'`` form, escaped."""
    return " ".join(shlex.quote(a) if a.isprintable() else _ansi_c(a) for a in args)


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _ansi_c(word: str) -> str:
    out = []
    for ch in word:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
    return "$'" + "".join(out) + "'"


# -- the job ------------------------------------------------------------------------


def version_problem(spec: JobSpec, info: Mapping[str, object] | None) -> str | None:
    config = spec.config
    if config.version_file is None and spec.expected_version is None:
        return None
    reported = info.get("version") if isinstance(info, Mapping) else None
    if not isinstance(reported, str):
        return "server_info reports no version, so the server cannot prove it runs this tree"
    if spec.expected_version is not None:
        sha = spec.commit.sha
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
        raise _Stop(Outcome.REFUSED, f"the {which} command does not split into words ({exc}): {command}") from None


def _read_from(path: Path, offset: int) -> tuple[str, int]:
    """The whole lines written to ``path`` since ``offset``, and the offset after them: a line the server is
    still writing is read whole the next time, never cut where a number could lose its last digits."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return "", offset
    data = data[: data.rfind(b"\n") + 1]
    return data.decode("utf-8", "replace"), offset + len(data)


def _run_log(
    log: Path, start: int, metrics: Sequence[Metric], server: subprocess.Popen[bytes], wait: float
) -> tuple[str, int]:
    """What the server logged for the client run that started at ``start`` (it has just ended), and where the
    next run's lines start.

    A run's lines are those from its start to the next run's start (the last run's: to the server's stop), so
    a line the server flushes after the run's last response is this run's, never lost between runs.  The next
    run starts once a line of every server-log metric has come after this run ended ([bench].log_wait at
    most, or until the server exits): a server that logs on a timer reports a short run (or the rest of one
    its timer cut in two) only then, and that line must not be taken for the next run's.
    """
    _, ended = _read_from(log, start)
    deadline = time.monotonic() + wait
    while True:
        late, _ = _read_from(log, ended)
        done = all(extract(m, stdout="", output=Path(os.devnull), server_log=late) is not None for m in metrics)
        if done or time.monotonic() >= deadline or server.poll() is not None:
            return _read_from(log, start)
        time.sleep(0.02)


@dataclass
class _JobState:
    """What a job has learnt so far; each step fills its part, and the record is made from it
    whatever step the job ended in (an error, a refusal, Ctrl-C)."""

    vars: dict[str, str]
    server_log: Path
    env: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # placeholders: vars, tree, python
    commands: RunCommands = field(default_factory=RunCommands)
    interpreter: dict[str, object] | None = None
    torch: dict[str, object] | None = None
    gpus: list[dict[str, object]] | None = None
    server_info: dict[str, object] | None = None
    samples: dict[str, list[float | None]] = field(default_factory=dict)
    missing: list[dict[str, Any]] = field(default_factory=list)
    clients: list[dict[str, str]] = field(default_factory=list)
    env_checked_pids: list[int] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    known: set[Member] = field(default_factory=set)  # processes seen in the server's tree (pid, create time)
    log_fh: IO[bytes] | None = None
    probe_dir: Path | None = None  # [bench].probe: where the server's processes write what they saw
    proof_healthy: Proof | None = None  # read once healthy
    proof: ProofJson | None = None  # the record's "proof"
    coverage: CoverageJson | None = None  # what the probed processes ran, read at stop
    gpu_hygiene: dict[str, object] | None = None  # nvidia-smi at the launch's start and end (bench/hygiene.py)


def run_job(spec: JobSpec, progress: Progress | None = None, *, base_env: Mapping[str, str] | None = None) -> RunRecord:
    """Run one (commit, profile) benchmark on a prepared tree; always returns a record.

    The steps, in order: ``_configure`` (interpreter, port, environment, commands), ``_read_provenance``,
    ``_start``, ``_wait_healthy``, ``_verify`` (version and start environments), ``_run_clients``;
    ``_stop`` runs whatever ended the job.  Ctrl-C or SIGTERM (as KeyboardInterrupt) ends it as
    ``interrupted``, with the samples measured so far; the caller decides whether to go on.
    """
    started = now()
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    state = _JobState(
        vars=dict(spec.vars),
        server_log=spec.run_dir / "server.log",
        samples={m.name: [] for m in spec.config.metrics if m.applies_to(spec.profile)},
    )

    def say(phase: str, detail: str) -> None:
        """Progress, with any secret value (a token rendered into the server's command) redacted."""
        if progress is not None:
            progress(phase, scrub(detail, secret_values(state.env, state.vars)))

    outcome: Outcome = Outcome.OK
    reason: str | None = None
    details: tuple[str, ...] = ()
    leftovers: list[str] = []
    try:
        try:
            _configure(spec, state, base_env)
            _read_provenance(state, say)
            _start(spec, state, say)
            _wait_healthy(spec, state, say)
            _verify(spec, state, say)
            _prove_healthy(spec, state, say)
            _run_clients(spec, state, say)
        finally:
            leftovers = _stop(spec, state, say)
    except _Stop as stop:
        outcome, reason, details = stop.outcome, stop.reason, stop.details
    except KeyboardInterrupt:
        outcome, reason = Outcome.INTERRUPTED, "interrupted (Ctrl-C or SIGTERM); the samples so far are kept"
    if state.gpu_hygiene is not None:  # after the server stopped: again, any compute process is another's
        state.gpu_hygiene["end"] = hygiene_snapshot(gpu_facts())
    outcome, reason, details = _prove_at_stop(spec, state, outcome, reason, details)
    if outcome is Outcome.OK and state.missing:
        names = sorted({m["metric"] for m in state.missing})
        outcome = Outcome.METRIC_MISSING
        runs = plural(len(state.missing), "run")
        reason = f"no value for {', '.join(names)} in {runs}; see the logs named in missing"
    if leftovers:
        details = (*details, *leftovers)
        if outcome is Outcome.OK:
            outcome, reason = Outcome.SERVER_FAILED, "the server's processes could not all be stopped"
    return _record(spec, state, started, outcome, reason, details)


def _configure(spec: JobSpec, state: _JobState, base_env: Mapping[str, str] | None) -> None:
    """The interpreter, the port (picked, or checked free), the exact environment and the commands."""
    config = spec.config
    python = bench_python(config)
    if python is None:
        raise _Stop(Outcome.REFUSED, f"the interpreter {config.python!r} is not found on PATH")
    vars_ = state.vars
    if "port" in vars_:
        if not vars_["port"].isdigit() or not 0 < int(vars_["port"]) < 65536:
            raise _Stop(Outcome.REFUSED, f"port {vars_['port']!r} is not a TCP port number")
        port = int(vars_["port"])
        if not port_is_free(port):
            raise _Stop(Outcome.REFUSED, f"port {port} on 127.0.0.1 is already in use; nothing was started")
    else:
        port = free_port()
    vars_["port"] = str(port)
    state.values = {**vars_, "tree": str(spec.tree), "python": python}
    state.env = build_env(spec, state.values, base=os.environ if base_env is None else base_env)
    state.commands = {
        "server": _split(render(config.server, state.values), "server"),
        "health": render(config.health, state.values),
        "server_info": render(config.server_info, state.values) if config.server_info else None,
        "client": [],
        "cwd": str(spec.tree),
    }


def _read_provenance(state: _JobState, say: Progress) -> None:
    say("reading provenance", "")
    python, cwd = state.values["python"], state.commands["cwd"]
    state.interpreter = interpreter_facts(python, state.env, cwd)
    state.torch = torch_facts(python, state.env, cwd)
    state.gpus = gpu_facts()
    start = hygiene_snapshot(state.gpus)  # before the server starts: any compute process is another's
    state.gpu_hygiene = None if start is None else {"start": start, "end": None}


def _start(spec: JobSpec, state: _JobState, say: Progress) -> None:
    """The server in its own process group, stdout and stderr to server.log."""
    say("starting server", shlex.join(state.commands["server"]))
    state.log_fh = state.server_log.open("wb")
    try:
        state.proc = subprocess.Popen(
            state.commands["server"],
            cwd=spec.tree,
            env=_server_env(spec, state),
            stdout=state.log_fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        raise _Stop(Outcome.SERVER_FAILED, f"the server command could not start: {exc.strerror or exc}") from None


def _wait_healthy(spec: JobSpec, state: _JobState, say: Progress) -> None:
    """Poll health until 200; a server that exits first, or ``ready_timeout``, ends the job."""
    proc, config, health, log = state.proc, spec.config, state.commands["health"], state.server_log
    assert proc is not None
    start = time.monotonic()
    # From 20 ms, 20 % more each time, up to 1 s: a small server is up in tens of milliseconds, a real one in minutes.
    delay = 0.02
    while True:
        if proc.poll() is not None:
            raise _Stop(
                Outcome.SERVER_FAILED,
                f"the server exited with code {proc.returncode} before it was healthy (log: {log})",
                _tail(log),
            )
        elapsed = time.monotonic() - start
        say("waiting for health", f"{elapsed:.0f}s of {config.ready_timeout:.0f}s")
        status, _ = _http_get(health)
        if status == 200:
            return
        if elapsed > config.ready_timeout:
            raise _Stop(
                Outcome.SERVER_FAILED,
                f"health {health} did not answer 200 within {config.ready_timeout:g}s (log: {log})",
                _tail(log),
            )
        time.sleep(delay)
        delay = min(delay * 1.2, 1.0)


def _verify(spec: JobSpec, state: _JobState, say: Progress) -> None:
    """The server runs this tree (the version it reports) with this environment (every process's start env)."""
    assert state.proc is not None
    info_url = state.commands["server_info"]
    if info_url:
        status, body = _http_get(info_url, timeout=10)
        try:
            info = json.loads(body) if status == 200 else None
        except json.JSONDecodeError:
            info = None
        state.server_info = info if isinstance(info, dict) else None
    problem = version_problem(spec, state.server_info)
    if problem:
        raise _Stop(Outcome.REFUSED, problem)
    say("checking worker environments", "")
    state.known.update(members(process_tree(state.proc.pid)))
    checked, problems = check_start_env(state.proc.pid, required_env(spec, state.env))
    if problems:
        raise _Stop(
            Outcome.REFUSED,
            f"{len(problems)} process(es) of the server's tree lack the environment of [bench].env "
            "(start environment, read with psutil)",
            tuple(problems),
        )
    state.env_checked_pids = checked


def _server_env(spec: JobSpec, state: _JobState) -> dict[str, str]:
    """The server's environment: the job's, with the probe's directory first on PYTHONPATH ([bench].probe)."""
    if not spec.config.probe:
        return state.env
    state.probe_dir = spec.run_dir / "probe"
    state.probe_dir.mkdir(parents=True, exist_ok=True)
    return probed_env(state.env, state.probe_dir, required_env(spec, state.env))


def _prove(spec: JobSpec, state: _JobState, when: str) -> Proof:
    assert state.probe_dir is not None
    live = live_processes(state.proc.pid) if when == "healthy" and state.proc is not None else []
    return prove(
        state.probe_dir,
        live=live,
        tree=spec.proof_tree,
        allow_stray=spec.config.allow_stray,
        expected=required_env(spec, state.env),
        when=when,
        generated=jit_caches(state.env),
    )


def _prove_healthy(spec: JobSpec, state: _JobState, say: Progress) -> None:
    """Once healthy, before any client run: every file that ran is accounted for, every init env is right."""
    if state.probe_dir is None:
        return
    say("accounting for every file that ran", "")
    state.proof_healthy = proof = _prove(spec, state, "healthy")
    if proof.reasons:
        raise _Stop(
            Outcome.REFUSED,
            f"the probe found {plural(len(proof.reasons), 'problem')} before measurement (STRAY files or an "
            "[bench].env value a process lacked at init_process_group): reinstall or remove a STRAY file, or "
            "accept one you know about with [bench].allow_stray = [GLOB]",
            tuple(proof.reasons),
        )


def _prove_at_stop(
    spec: JobSpec, state: _JobState, outcome: Outcome, reason: str | None, details: tuple[str, ...]
) -> tuple[Outcome, str | None, tuple[str, ...]]:
    """Account again once the server is stopped (a file edited during the run is caught here); the record's proof."""
    if state.probe_dir is None:
        return outcome, reason, details
    stop = _prove(spec, state, "stop")
    state.proof = proof_json(state.proof_healthy, stop, server_log=state.server_log, probe_dir=state.probe_dir)
    state.coverage = coverage_json(stop.processes, state.env.get("PATCHKIT_BENCH_TREE") or str(spec.tree))
    healthy_reasons = set(state.proof_healthy.reasons) if state.proof_healthy is not None else set()
    new = [r for r in stop.reasons if r not in healthy_reasons]
    if outcome is Outcome.OK and new:
        return (
            Outcome.REFUSED,
            f"the probe found {plural(len(new), 'problem')} when the server stopped: "
            "what ran is not what was accounted for",
            (*details, *new),
        )
    return outcome, reason, details


def _proof_record(spec: JobSpec, state: _JobState) -> ProofJson:
    if not spec.config.probe:
        return {"state": NOT_PROVEN, "reason": "[bench].probe = false"}
    return state.proof or {"state": NOT_PROVEN, "reason": "no server process ran"}


def _run_clients(spec: JobSpec, state: _JobState, say: Progress) -> None:
    """``warmup + repeat`` client runs; every metric read from each measured one (missing is None, never 0)."""
    assert state.proc is not None
    config, log = spec.config, state.server_log
    from_log = [m for m in config.metrics if m.source == "server-log" and m.applies_to(spec.profile)]
    offset = log.stat().st_size if log.exists() else 0
    for index in range(spec.warmup + spec.repeat):
        measured = index >= spec.warmup
        label = f"run {index - spec.warmup + 1}/{spec.repeat}" if measured else f"warmup {index + 1}/{spec.warmup}"
        say("client", label)
        output = spec.run_dir / f"output-{index + 1}.jsonl"
        output.unlink(missing_ok=True)
        client_cmd = _split(render(config.client, {**state.values, "output": str(output)}), "client")
        state.commands["client"].append(client_cmd)
        out_path = spec.run_dir / f"client-{index + 1}.out"
        err_path = spec.run_dir / f"client-{index + 1}.err"
        state.clients.append({"stdout": str(out_path), "stderr": str(err_path), "output": str(output)})
        _run_client(client_cmd, spec, state.env, out_path, err_path, state.proc, log, label)
        log_text, offset = _run_log(log, offset, from_log, state.proc, config.log_wait)
        if not measured:
            continue
        stdout = out_path.read_text(encoding="utf-8", errors="replace")
        for metric in config.metrics:
            if not metric.applies_to(spec.profile):
                continue
            value = extract(metric, stdout=stdout, output=output, server_log=log_text)
            state.samples[metric.name].append(value)
            if value is None:
                where = {"stdout": out_path, "output-file": output, "server-log": log}[metric.source]
                state.missing.append({"metric": metric.name, "run": index - spec.warmup + 1, "log": str(where)})


def _stop(spec: JobSpec, state: _JobState, say: Progress) -> list[str]:
    """Stop the server's group and confirm its port is free; what could not be stopped, as text."""
    leftovers: list[str] = []
    try:
        if state.proc is not None:
            say("stopping server", "")
            state.known.update(members(process_tree(state.proc.pid)))
            leftovers = stop_group(state.proc, state.known, spec.config.stop_grace)
            port = int(state.vars.get("port", 0) or 0)
            deadline = time.monotonic() + 5
            while port and not port_is_free(port) and time.monotonic() < deadline:
                time.sleep(0.1)
            if port and not port_is_free(port):
                leftovers.append(f"port {port} is still in use after the server's group was stopped")
    finally:
        if state.log_fh is not None:
            state.log_fh.close()
    return leftovers


def _record(
    spec: JobSpec, state: _JobState, started: str, outcome: Outcome, reason: str | None, details: tuple[str, ...]
) -> RunRecord:
    return RunRecord(
        commit=spec.commit,
        profile=spec.profile,
        outcome=outcome,
        reason=reason,
        started_at=started,
        finished_at=now(),
        vars=state.vars,
        commands=state.commands,
        env=state.env,
        manifests=tuple(spec.manifests),
        guard=dict(spec.guard),
        host=host_facts(),
        interpreter=state.interpreter,
        torch=state.torch,
        gpus=None if state.gpus is None else tuple(state.gpus),
        server_info=state.server_info,
        samples={k: tuple(v) for k, v in state.samples.items()},
        missing=tuple(state.missing),
        logs={
            "run_dir": str(spec.run_dir),
            "server": str(state.server_log),
            "clients": state.clients,
            "env_checked_pids": state.env_checked_pids,
        },
        details=tuple(details),
        metrics=tuple(m.to_json() for m in spec.config.metrics),
        allow_dirty=spec.allow_dirty,
        proof=_proof_record(spec, state),
        gpu_hygiene=state.gpu_hygiene,
        coverage=state.coverage,
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
            raise _Stop(Outcome.CLIENT_FAILED, f"the client command could not start: {exc.strerror or exc}") from None
        deadline = time.monotonic() + spec.config.client_timeout
        try:
            while client.poll() is None:
                if server.poll() is not None:
                    raise _Stop(
                        Outcome.SERVER_FAILED,
                        f"the server exited with code {server.returncode} during client {label} (log: {server_log})",
                        _tail(server_log),
                    )
                if time.monotonic() > deadline:
                    timeout = spec.config.client_timeout
                    raise _Stop(Outcome.CLIENT_FAILED, f"client {label} ran past client_timeout ({timeout:g}s)")
                with contextlib.suppress(subprocess.TimeoutExpired):
                    client.wait(timeout=0.1)
        finally:
            if client.poll() is None:
                stop_group(client, set(), 2.0)
    if server.poll() is not None:
        raise _Stop(
            Outcome.SERVER_FAILED,
            f"the server exited with code {server.returncode} during client {label} (log: {server_log})",
            _tail(server_log),
        )
    if client.returncode != 0:
        raise _Stop(
            Outcome.CLIENT_FAILED,
            f"client {label} exited with code {client.returncode} (stderr: {err_path})",
            _tail(err_path),
        )
