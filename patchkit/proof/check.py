"""What makes a probed run untrustworthy: a STRAY that ran, or an expected variable missing at init.

Each reason is one line naming the pid, the process (title, multiprocessing
name or argv), the file or the variable, and the expected and found values,
so a refused run says exactly which worker saw what; with its host when the
run spanned hosts, and its start when its pid named two processes there
(``Names``: the accounting keys processes by identity, not pid).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from patchkit.proof.account import Accounting, Verdict
from patchkit.proof.records import ProcessFacts
from patchkit.redact import is_secret


class Names:
    """How a reason names a process of the run: "pid 1234 (label)", with "on HOST" when the run's processes ran
    on more than one host, and when it started when two processes of the run had its pid on its host (a reused
    pid): a pid alone names two processes there."""

    def __init__(self, processes: Sequence[ProcessFacts]) -> None:
        self.by_ident = {p.ident: p for p in processes}  # in read order: an exec()ed process, by its last image
        self.many_hosts = len({p.host for p in processes}) > 1
        self.shared = Counter((p.host, p.pid) for p in self.by_ident.values())

    def __call__(self, proc: ProcessFacts, more: str = "") -> str:
        where = f" on {proc.host or '?'}" if self.many_hosts else ""
        started = proc.started_at or f"at tick {proc.start_ticks}"
        when = f", started {started}" if self.shared[proc.host, proc.pid] > 1 else ""
        return f"pid {proc.pid}{where} ({proc.label}{more}{when})"


def loaded_by(item: Verdict, processes: Sequence[ProcessFacts]) -> str:
    """The processes that loaded a file, one name each (``Verdict.processes``, by identity: ``Names``)."""
    names = Names(processes)
    out = []
    for ident in item.processes:
        proc = names.by_ident.get(ident)
        out.append(f"{ident} (?)" if proc is None else names(proc))
    return ", ".join(out)


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
    named = Names(processes)
    for proc in processes:
        for call in proc.inits:
            who = named(proc, f", rank {call.rank}")
            for name, value in expected.items():
                if is_secret(name):
                    verdict = call.secrets.get(name) or ("equal" if name in call.env else "unset")
                    if verdict != "equal":
                        what = "it unset" if verdict == "unset" else "another value"
                        out.append(
                            f"{who}: {name} at init_process_group: expected the value it was given, found {what} "
                            "(a secret: no value is shown)"
                        )
                    continue
                found = call.env.get(name)
                if found != value:
                    start = proc.start_env.get(name)
                    note = f" (it started with {start!r})" if start != found else ""
                    out.append(f"{who}: {name} at init_process_group: expected {value!r}, found {found!r}{note}")
    return out
