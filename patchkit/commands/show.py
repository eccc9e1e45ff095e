"""`patchkit show RUN`: one stored run, whole, for a person (or, with --json, a tool).

The view is ``patchkit.bench.records.runview`` (plain data); this verb prints it:
the header first (what ran, how it ended, whether the patches were in, the
proof's verdict), then each section as a short heading line and a table.
Sections are chosen with their flags (``--processes``, ``--files``, ``--env``,
``--nccl``, ``--gpus``, ``--clients``); none given: all of them.  ``--code`` (what
the probed processes ran, read from the store's coverage table) is shown only
when asked for: it is as long as the tree is wide.  Every table
is a ``Grid`` that stays readable at 80 columns: the environment is one row
per variable with the ranks' values folded into one cell (the common value,
or one ``rank: value`` line per rank where they disagree), however many
ranks there are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkit.bench.records.runview import SECTIONS, RunView, run_view
from patchkit.bench.records.store import open_store
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.views.bench import fmt, outcome_cell
from patchkit.views.console import emit, print_indented, print_json, say, write_pieces
from patchkit.views.grid import Cell, Grid, cell_pieces
from patchkit.wording import plural

if TYPE_CHECKING:
    from patchkit.proof.document import VerdictJson
    from patchkit.views.console import Console

UNSET = "(unset)"


def show(
    *,
    run: str,
    repo: str,
    store: str | None,
    sections: Sequence[str],
    json_out: bool,
    console: Console,
) -> int:
    with Repo.discover(Path(repo)) as git_repo, open_store(git_repo, store, create=False) as opened:
        number = None if run == "last" else _run_number(run)
        last = opened.require_runs()
        record = opened.get(last if number is None else number)
        if "code" in sections and record.run_id is not None:
            record = replace(record, coverage=opened.coverage(record.run_id))
        where = opened.path
    view = run_view(record, sections or SECTIONS)
    if json_out:
        print_json({"version": 1, "command": "show", "store": str(where), **view.to_json(), "record": record.to_json()})
        return int(ExitCode.OK)
    show_view(console, view)
    return int(ExitCode.OK)


def _run_number(text: str) -> int:
    """``RUN`` other than ``last``: a run number."""
    try:
        number = int(text)
    except ValueError:
        raise UsageError(
            f"RUN must be a run number or 'last', not {text!r}", hint="see `patchkit runs` for the numbers"
        ) from None
    return number


def show_view(console: Console, view: RunView) -> None:
    show_header(console, view.header, view.run)
    printers = {
        "processes": show_processes,
        "files": show_files,
        "env": show_env,
        "nccl": show_nccl,
        "gpus": show_gpus,
        "clients": show_clients,
        "code": show_code,
    }
    for name, data in view.sections.items():
        console.print()
        printers[name](console, data)


def heading(console: Console, text: str) -> None:
    say(console, text, "bold")


def _time(stamp: str | None) -> str:
    return "-" if not stamp else stamp[:23].replace("T", " ")


def show_header(console: Console, head: Mapping[str, Any], run: int) -> None:
    write_pieces(console, [(f"run {run}", "bold"), (f"  {head['commit'][:10]}  {head['subject']}", "")])
    launch = f", launch {head['launch']}" if head["launch"] else ""
    outcome = outcome_cell(head["outcome"], (head["proof"] or {}).get("state"))
    where = head["host"] or "?"
    job = head.get("executor") or {}
    if job.get("job_id"):
        where = f"Slurm job {job['job_id']} on {job.get('node') or '?'}"
    write_pieces(
        console,
        [
            (f"  profile {head['profile']}{_without(head)}{launch}: ", ""),
            *cell_pieces(outcome),
            (f"  {_time(head['started_at'])} .. {_time(head['finished_at'])[11:]} on {where}", ""),
        ],
    )
    if head["reason"]:
        say(console, f"  reason: {head['reason']}")
    for line in head["details"][:10]:
        say(console, f"    {line}")
    for item in head["patches"]:
        states = ", ".join(f"{n} {state}" for state, n in item["states"].items()) or "no patches"
        say(console, f"  patches: {item['manifest']} ({(item['digest'] or '')[:19]}...): {states}")
    if not head["patches"]:
        say(console, "  patches: none recorded (refused before apply, or no manifest)")
    if head["allow_dirty"]:
        say(console, "  --allow-dirty: the guard's clean check only warned", "yellow")
    versions = [f"server {head['server_version']}" if head["server_version"] else "server version unknown"]
    if head["python"]:
        versions.append(f"python {head['python']} ({head['python_executable']})")
    say(console, "  " + "; ".join(versions))
    proof = head["proof"]
    if proof is None:
        say(console, "  proof: none (no server was started)")
    else:
        state = str(proof["state"])
        style = "bold green" if state == "proven" else "bold red" if state == "refused" else "bold yellow"
        write_pieces(
            console, [("  proof: ", ""), (state, style), (f" ({proof['reason']})" if proof["reason"] else "", "")]
        )
        for line in proof["reasons"][:30]:
            say(console, f"    {line}")
    if head["server_log"]:
        print_indented(console, f"server log: {head['server_log']}", indent=2, style="dim")


def show_processes(console: Console, data: Mapping[str, Any]) -> None:
    probed, unprobed = data["probed"], data["unprobed"]
    if not data["recorded"]:
        heading(console, "processes: not recorded (the probe was off, or no server ran)")
        return
    pythons = {p["python"] for p in probed}
    one_python = len(pythons) == 1
    where = f"; python {next(iter(pythons))}" if one_python else ""
    heading(
        console,
        f"processes: {len(probed)} probed, {len(unprobed)} of the server's tree without a probe{where}",
    )
    table = Grid()
    table.add_column("pid", justify="right", whole=True)
    table.add_column("ppid", justify="right", whole=True)
    table.add_column("host")
    table.add_column("role")
    table.add_column("rank", justify="right", whole=True)
    table.add_column("started", whole=True)
    if not one_python:
        table.add_column("python")
    table.add_column("probe")
    table.add_column("argv", prose=True)
    for p in probed:
        rank = "-" if p["rank"] is None else f"{p['rank']}/{p['world_size'] or '?'}"
        status: Cell = (p["probe"], "" if p["probe"] in ("ok", "started") else "bold yellow")
        started = _time(p["started_at"])[11:] or "-"
        role = p["role"] or "-"
        if p["exec_index"]:  # the chain: the same process after exec(), below its earlier image
            role = f"  exec {p['exec_index']}: {role}"
        head = [str(p["pid"]), str(p["ppid"] or "-"), p["host"] or "-", role, rank, started]
        table.add_row(*head, *([] if one_python else [p["python"] or "-"]), status, " ".join(p["argv"]))
    for p in unprobed:
        blank = ["-"] * (5 if one_python else 6)
        status = ("none", "bold yellow") if p.get("why") else ("none (not Python)", "")
        table.add_row(str(p["pid"] or "?"), *blank, status, p["command"])
    emit(console, table)
    for p in unprobed:
        if p.get("why"):
            say(console, f"  pid {p['pid']} ran without the probe: {p['why']}", "yellow")


def show_files(console: Console, data: Mapping[str, Any]) -> None:
    counts = data["counts"]
    if counts is None:
        heading(console, "files that ran: not recorded (the probe was off, or no server ran)")
        return
    parts = [f"{counts[c]} {c}" for c in ("tree", "dist", "editable", "stdlib", "generated", "probe", "data")]
    allowed = f", {counts['allowed']} allowed by allow_stray" if counts["allowed"] else ""
    heading(console, f"files that ran ({data['at']}): {', '.join(parts)}; {counts['stray']} STRAY{allowed}")
    if data["distributions"]:
        table = Grid()
        table.add_column("distribution")
        table.add_column("version", whole=True)
        table.add_column("files", justify="right", whole=True)
        table.add_column("from")
        for d in data["distributions"]:
            source = d.get("editable_dir")
            if source:
                commit = data["editable_commits"].get(source)
                source = f"editable {source}" + (f" at {commit[:12]}" if commit else " (not a git checkout)")
            table.add_row(d["name"], str(d["version"]), str(d["files"]), source or d.get("site_dir") or "-")
        emit(console, table)
    if data["data"]:
        table = Grid()
        table.add_column("data file read")
        table.add_column("class", whole=True)
        table.add_column("owner")
        table.add_column("sha256", whole=True)
        for v in data["data"]:
            kind: Cell = ("STRAY", "bold red") if v["category"] == "stray" else v["category"]
            table.add_row(v["path"], kind, v["owner"] or "-", (v.get("sha256") or "-")[:16])
        emit(console, table)
    if data["strays"] or data["allowed"]:
        table = Grid()
        table.add_column("class", whole=True)
        table.add_column("file")
        table.add_column("owner")
        table.add_column("why", prose=True)
        table.add_column("pids")
        for v in data["strays"]:
            table.add_row(("STRAY", "bold red"), v["path"], v["owner"] or "-", v["why"] or "", _pids(v))
        for v in data["allowed"]:
            table.add_row("allowed", v["path"], v["owner"] or "-", v["why"] or "", _pids(v))
        emit(console, table)


def _pids(verdict: VerdictJson) -> str:
    """The loaders of a file: one per process (``processes``: host/boot/pid/start idents), with its host when
    they ran on more than one; a record older than idents: its pids."""
    idents = [str(i).split("/") for i in verdict.get("processes") or ()]
    if not idents or any(len(parts) != 4 for parts in idents):
        return ", ".join(str(p) for p in verdict["pids"])
    many = len({parts[0] for parts in idents}) > 1
    return ", ".join(f"{pid} on {host}" if many else pid for host, _boot, pid, _ticks in idents)


def show_env(console: Console, data: Mapping[str, Any]) -> None:
    columns, rows = data["columns"], data["rows"]
    if not columns:
        heading(console, "environment: not recorded (the probe was off, or no server ran)")
        return
    marked = sum(1 for r in rows if r["between_ranks"] or r["from_launch"])
    if data["source"] == "init_process_group":
        who = f"{plural(len(columns), 'rank')} at init_process_group"
        names = {c["rank"]: f"rank {c['rank']}" for c in columns}
    else:
        who = f"{plural(len(columns), 'process', 'processes')} at start (no process called init_process_group)"
        names = {}
    heading(console, f"environment: {who}; {plural(marked, 'variable')} differ (the probe's PYTHONPATH entry left out)")
    labels = [names.get(c["rank"]) or f"pid {c['pid']}" for c in columns]
    table = Grid()
    table.add_column("variable", whole=True)  # a name is grepped for: never folded
    table.add_column("launch")
    table.add_column("in the processes")
    table.add_column("differs", whole=True)
    for row in rows:
        values = row["values"]
        if len(set(values)) == 1:
            inside = _value(values[0]) + (" (all)" if len(values) > 1 else "")
        else:
            inside = "\n".join(f"{label}: {_value(v)}" for label, v in zip(labels, values, strict=True))
        marks = [m for m, on in (("ranks", row["between_ranks"]), ("launch", row["from_launch"])) if on]
        table.add_row(
            row["name"], _value(row["launch"]), inside, (", ".join(marks) or "-", "bold yellow" if marks else "")
        )
    emit(console, table)
    if data["source"] == "init_process_group":
        say(
            console,
            "  " + ", ".join(f"{n} = pid {c['pid']} ({c['role']})" for n, c in zip(labels, columns, strict=True)),
            "dim",
        )


def _value(value: str | None) -> str:
    return UNSET if value is None else value


def show_nccl(console: Console, data: Mapping[str, Any]) -> None:
    lines, libraries = data["log"], data["libraries"]
    if not lines:
        heading(console, "NCCL: no NCCL INFO lines in the server log (set NCCL_DEBUG=INFO in [bench].env to get them)")
    else:
        heading(console, f"NCCL: its own lines from {plural(len(lines), 'process', 'processes')}")
        table = Grid()
        table.add_column("pid", justify="right", whole=True)
        table.add_column("role")
        table.add_column("host")
        table.add_column("devices", whole=True)
        table.add_column("version", whole=True)
        table.add_column("set by environment", prose=True)
        for item in lines:
            env = " ".join(f"{k}={v}" for k, v in sorted((item.get("env") or {}).items()))
            table.add_row(
                str(item["pid"]),
                item.get("role") or "-",
                item.get("host") or "-",
                ",".join(item.get("devices") or ()) or "-",
                item.get("version") or "-",
                env or "-",
            )
        emit(console, table)
    if not libraries:
        torch = f" (torch reports NCCL {data['torch_nccl']})" if data.get("torch_nccl") else ""
        heading(console, f"libraries: no libnccl, libcudart or libcuda mapped by a probed process{torch}")
        return
    heading(console, "libraries mapped (libnccl, libcudart, libcuda)")
    table = Grid()
    table.add_column("pid", justify="right", whole=True)
    table.add_column("role")
    table.add_column("library")
    table.add_column("size", justify="right", whole=True)
    table.add_column("sha256", whole=True)
    for lib in libraries:
        size = "-" if lib.get("size") is None else str(lib["size"])
        table.add_row(str(lib["pid"]), lib.get("role") or "-", lib["path"], size, (lib.get("sha256") or "-")[:16])
    emit(console, table)


def show_gpus(console: Console, data: Mapping[str, Any]) -> None:
    torch = data["torch"]
    stack = "" if not torch else "; torch " + ", ".join(f"{k} {v}" for k, v in torch.items() if v is not None)
    gpus = data["gpus"]
    if gpus is None:
        heading(console, f"GPUs: no GPU facts (no nvidia-smi answered when the run was made){stack}")
        return
    heading(console, f"GPUs: {len(gpus)}{stack}")
    table = Grid()
    for name in ("gpu", "name", "pstate", "SM MHz", "mem MHz", "memory MiB", "persist", "ECC", "power W", "temp C"):
        table.add_column(
            name, justify="right" if "MHz" in name or name in ("power W", "temp C") else "left", whole=True
        )
    for g in gpus:
        table.add_row(
            str(g.get("index")),
            str(g.get("name") or "-"),
            str(g.get("pstate") or "-"),
            f"{g.get('sm_clock_mhz', '-')}/{g.get('max_sm_clock_mhz', '-')}",
            str(g.get("mem_clock_mhz", "-")),
            f"{g.get('memory_used_mib', '-')}/{g.get('memory_total_mib', '-')}",
            str(g.get("persistence_mode") or "-"),
            str(g.get("ecc_mode") or "-"),
            str(g.get("power_limit_w", "-")),
            str(g.get("temperature_c", "-")),
        )
    emit(console, table)
    show_hygiene(console, data)


def show_hygiene(console: Console, data: Mapping[str, Any]) -> None:
    """The launch's GPUs at its start and end (bench/records/hygiene.py), and what made them dirty."""
    hygiene = data.get("hygiene")
    if not hygiene:
        return
    table = Grid()
    for name in ("gpu", "when", "SM/max MHz", "mem/max MHz", "app clocks", "power W", "persist", "ECC c/u", "temp C"):
        table.add_column(name, whole=True)
    table.add_column("other processes", prose=True)
    for when in ("start", "end"):
        snap = hygiene.get(when) or {}
        apps = snap.get("apps") or []
        for g in snap.get("gpus") or ():
            mine = [a for a in apps if a.get("gpu") == g.get("index")]
            others = ", ".join(f"pid {a.get('pid')} ({a.get('name') or '?'}) {a.get('used_mib')} MiB" for a in mine)
            locked = g.get("app_clocks_locked")
            clocks = "-" if locked is None else (f"locked {g.get('app_clock_mhz')}" if locked else "default")
            table.add_row(
                str(g.get("index")),
                when,
                f"{_dash(g.get('sm_clock_mhz'))}/{_dash(g.get('max_sm_clock_mhz'))}",
                f"{_dash(g.get('mem_clock_mhz'))}/{_dash(g.get('max_mem_clock_mhz'))}",
                clocks,
                _dash(g.get("power_limit_w")),
                _dash(g.get("persistence_mode")),
                f"{_dash(g.get('ecc_corrected'))}/{_dash(g.get('ecc_uncorrected'))}",
                _dash(g.get("temperature_c")),
                others or ("none" if snap.get("apps_known") else "-"),
            )
    heading(console, "GPU hygiene at the launch's start and end")
    emit(console, table)
    for line in data.get("problems") or ():
        say(console, f"  warning: {line}", "bold yellow")


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def show_clients(console: Console, data: Mapping[str, Any]) -> None:
    runs = data["runs"]
    measured = [r for r in runs if r["kind"] == "measured"]
    if not runs:
        heading(console, "client runs: none (the run ended before the client)")
        return
    heading(console, f"client runs: {len(runs) - len(measured)} warm-up, {len(measured)} measured")
    metrics = sorted({m for r in measured for m in r["values"]})
    table = Grid()
    table.add_column("#", justify="right", whole=True)
    table.add_column("kind", whole=True)
    for metric in metrics:
        table.add_column(metric, justify="right", whole=True)
    table.add_column("stdout")
    for r in runs:
        cells = [fmt(r["values"].get(m)) if r["kind"] == "measured" else "" for m in metrics]
        out = (r["logs"] or {}).get("stdout") or "-"
        kind = r["kind"] if r["run"] is None else f"run {r['run']}"
        table.add_row(str(r["index"]), kind, *cells, out)
    emit(console, table)
    for r in measured:
        for metric, log in r["missing"].items():
            say(console, f"  missing {metric} in run {r['run']}: see {log}", "yellow")
    for metric, s in data["stats"].items():
        say(console, f"  {metric}: median {fmt(s['median'])}, min {fmt(s['min'])}, max {fmt(s['max'])}, n {s['n']}")
    first = next((r for r in runs if r["command"]), None)
    if first is not None:
        print_indented(console, f"client command: {' '.join(first['command'])}", indent=2, style="dim")


def _without(head: Mapping[str, Any]) -> str:
    """A ``bench --without`` launch says which patch its tree lacks, next to the profile."""
    left = head.get("without")
    return f" without {left['manifest']}:{left['patch']}" if left else ""


def show_code(console: Console, data: Mapping[str, Any]) -> None:
    """What the probed processes ran: the tree's files with the functions that started in them, the rest counted."""
    if not data["recorded"]:
        heading(console, "code that ran: not recorded (the probe was off, no server ran, or an older patchkit ran it)")
        return
    tree, outside, processes = data["tree"], data["outside"], data["processes"]
    where = f"in {plural(len(processes), 'process', 'processes')}"
    if data["granularity"] == "function":
        count = sum(len(f["functions"]) for f in tree)
        more = sum(f["functions"] for f in outside)
        heading(
            console,
            f"code that ran, {where}: {plural(count, 'function')} in {plural(len(tree), 'tree file')}; "
            f"{more} more in {plural(len(outside), 'file')} outside the tree",
        )
    else:
        heading(
            console,
            f"code that ran, {where}: module files only (not which functions, see below): "
            f"{plural(len(tree), 'tree file')}; {plural(len(outside), 'file')} outside the tree",
        )
    if tree:
        table = Grid()
        table.add_column("tree file")
        table.add_column("functions", justify="right", whole=True)
        table.add_column("started", prose=True)
        for item in tree:
            names = [f["name"] for f in item["functions"]]
            shown = ", ".join(names) if names else ("(module ran)" if item["module"] else "-")
            table.add_row(item["path"], str(len(names)) if names else "-", shown)
        emit(console, table)
    if data["reads"]:
        say(console, f"  {plural(len(data['reads']), 'file')} of the tree read: {', '.join(data['reads'])}")
    table = Grid()
    table.add_column("pid", justify="right", whole=True)
    table.add_column("core", whole=True)
    table.add_column("functions", justify="right", whole=True)
    table.add_column("modules", justify="right", whole=True)
    table.add_column("read", justify="right", whole=True)
    table.add_column("process", prose=True)  # a command line: under its row where the table is narrow
    whys: dict[str, None] = {}
    for p in processes:
        function = p.get("granularity") == "function"
        core = f"{p.get('core') or 'file'} ({'functions' if function else 'files'})"
        ran = str(p.get("functions") or 0) if function else "-"
        counts = [ran, str(p.get("modules") or 0), str(p.get("reads") or 0)]
        table.add_row(str(p.get("pid")), core, *counts, str(p.get("label") or "?"))
        if p.get("why"):
            whys[str(p["why"])] = None
    emit(console, table)
    for why in whys:
        say(console, f"  functions not recorded: {why}", "yellow")
    for line in data["blind"]:
        say(console, f"  the probe cannot vouch for: {line}", "yellow")
