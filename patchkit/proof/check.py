"""What makes a probed run untrustworthy: a STRAY that ran, or an expected variable missing at init.

Each reason is one line naming the pid, the process (title, multiprocessing
name or argv), the file or the variable, and the expected and found values,
so a refused run says exactly which worker saw what.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from patchkit.proof.account import Accounting, Verdict
from patchkit.proof.records import ProcessFacts
from patchkit.redact import is_secret


def loaded_by(item: Verdict, processes: Sequence[ProcessFacts]) -> str:
    """The processes that loaded a file, one name each (``Verdict.processes``, by identity): "pid 1234 (label)",
    with "on HOST" when the run's processes ran on more than one host, and when to tell apart two processes of
    one pid on one host (a reused pid)."""
    by_ident = {p.ident: p for p in processes}  # in read order: an exec()ed process is named by its last image
    many_hosts = len({p.host for p in processes}) > 1
    found = [by_ident.get(ident) for ident in item.processes]
    pids = [(p.host, p.pid) for p in found if p is not None]
    names = []
    for ident, proc in zip(item.processes, found, strict=True):
        if proc is None:
            names.append(f"{ident} (?)")
            continue
        where = f" on {proc.host or '?'}" if many_hosts else ""
        started = proc.started_at or f"at tick {proc.start_ticks}"
        when = f", started {started}" if pids.count((proc.host, proc.pid)) > 1 else ""
        names.append(f"pid {proc.pid}{where} ({proc.label}{when})")
    return ", ".join(names)


def stray_reasons(accounting: Accounting, processes: Sequence[ProcessFacts]) -> list[str]:
    out = []
    for item in accounting.strays:
        who = loaded_by(item, processes)
        owner = f" [{item.owner}]" if item.owner else ""
        out.append(f"STRAY {item.path}{owner}: {item.why}; loaded by {who}")
    return out


def env_reasons(processes: Sequence[ProcessFacts], expected: Mapping[str, str]) -> list[str]:
    """Every process that called init_process_group must have had each expected NAME=VALUE at the call.

    A secret-looking name (``patchkit.redact``) is never written by the probe:
    it compared the value in the process (``probe_env``'s ``secrets``) and
    wrote ``equal``, ``different`` or ``unset``; a probe that was given no
    digest is held to the variable being set.  Its reason names no value.
    """
    out = []
    for proc in processes:
        for call in proc.inits:
            for name, value in expected.items():
                if is_secret(name):
                    verdict = call.secrets.get(name) or ("equal" if name in call.env else "unset")
                    if verdict != "equal":
                        what = "it unset" if verdict == "unset" else "another value"
                        out.append(
                            f"pid {proc.pid} ({proc.label}, rank {call.rank}): {name} at init_process_group: "
                            f"expected the value it was given, found {what} (a secret: no value is shown)"
                        )
                    continue
                found = call.env.get(name)
                if found != value:
                    start = proc.start_env.get(name)
                    note = f" (it started with {start!r})" if start != found else ""
                    out.append(
                        f"pid {proc.pid} ({proc.label}, rank {call.rank}): {name} at init_process_group: "
                        f"expected {value!r}, found {found!r}{note}"
                    )
    return out
