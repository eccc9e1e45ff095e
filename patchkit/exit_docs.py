"""The exit codes' words, for people: docs/statuses.md's table and the ``--help`` epilogues.

Why a module of its own: ``ExitCode`` (``patchkit.errors``) is the one list of codes the CLI
returns; what each code means is said twice, once at length in docs/statuses.md and once in a
few wrapped lines under ``--help``.  Both are generated here from the enum, so a new code
cannot be returned without being documented, and ``tests/test_docs.py`` compares the committed
table with ``statuses_table()`` (``python -m patchkit.exit_docs`` rewrites it).  The module
imports nothing but the enum, so the CLI builds its epilogues at import time at no cost.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

from patchkit.errors import ExitCode

DOC_MEANING: Mapping[ExitCode, str] = {
    ExitCode.OK: (
        "OK: every patch is APPLY, SKIP or WARN. `check`: no required patch FAILs at any checked commit. "
        "`status`: every required patch is in place."
    ),
    ExitCode.REFUSED: (
        "Refused (`guard`/`run`: a check failed, the command was not started): a required patch FAILs "
        "(with `--strict`, any WARN too); nothing was written. Also a precondition that protects your work: "
        "`apply --commit` with uncommitted changes that are not patchkit's own, `revert` of files edited after "
        "patching (or of a recorded path that now passes through a symlinked directory); a file that cannot be "
        "written (read-only directory or mount, permissions, full disk, an I/O error: the verdict table is printed "
        "and the path named; a transaction that cannot finish is rolled back and leaves no journal), "
        "the verdict cache or the bench store included (the store's path, the cause and its fix, in one line). "
        "Any other file the system refuses (EIO, ENOSPC, EDQUOT, EROFS, EACCES, EPERM), stdout included (a "
        "redirect onto a full disk): one line naming it and the errno, and for `apply`/`revert` what was written "
        "whole before it. "
        "`status`: some required patch is not in place, a patch holds an older payload version (`OUT OF DATE`), "
        "or a killed run left a journal or a moved HEAD (`INTERRUPTED`)."
    ),
    ExitCode.USAGE: (
        "Bad input: command line, manifest (the message names the file, line and key path), unknown revision, "
        "empty range, a repository that cannot be used as asked (not a repository, bare for `apply`, shallow "
        "history missing the range, or one git cannot read: git's own words, which name the file and the cause)."
    ),
    ExitCode.INTERNAL: (
        "Internal error: a bug in patchkit. One crash line, which names the crash log: "
        "`<git dir>/patchkit/crash-*.log` (without a usable repository `$XDG_CACHE_HOME/patchkit/`, else the "
        "temp dir) holds the traceback, the versions of patchkit, Python, libcst, git and the platform, and the "
        "command line. `--debug` also prints the traceback."
    ),
    ExitCode.BUSY: "Busy: another patchkit process holds this repository's lock (`--wait SECONDS` to wait for it).",
    ExitCode.BISECT_SKIP: (
        "`guard --bisect` / `run --bisect`: a required patch cannot apply at this commit (evaluated on its "
        "blobs), so `git bisect run` skips it. `run --apply --bisect`: the apply was refused."
    ),
    ExitCode.BISECT_ABORT: (
        "`guard --bisect` / `run --bisect`: the setup is wrong (HEAD not a commit, patches not applied although "
        "they could be, files edited after patching, another manifest version, a dirty tree, a shadowed import, "
        "an interrupted patchkit run, a patch holding an older payload version), or patchkit itself failed (bad "
        "input, busy): `git bisect run` stops instead of marking the commit bad."
    ),
    ExitCode.INTERRUPTED: (
        "Interrupted (Ctrl-C, or SIGTERM for `bench`, `bisect` and `noise`): the message says what was and was "
        "not written (`apply`/`revert`: the files whose whole, recorded writes finished; `capture`/`import-diff`: "
        "the capture published whole). `bench`/`bisect`/`noise`: the server's process group was stopped and the "
        "run stored as `interrupted`; `bench` and `noise` run again with the same command read back the launches "
        "stored and launch the rest, the interrupted one included (`--executor slurm`: the jobs keep running; "
        "the same command, run again, collects them); with `--fresh` they run every launch again instead."
    ),
    ExitCode.CLOSED_STDOUT: (
        "The reader of stdout left (`patchkit check ...` piped into `head -1`): patchkit ends quietly, as a "
        "tool killed by SIGPIPE does (128 + 13), never with 1, which would say a required patch FAILs."
    ),
}
"""Each code at length: the rows of docs/statuses.md's "Exit codes" table."""

HELP_MEANING: Mapping[ExitCode, str] = {
    ExitCode.OK: "OK: every patch APPLY, SKIP or WARN (check: no required FAIL anywhere)",
    ExitCode.REFUSED: (
        "refused: a required patch FAILs (or any WARN with --strict); nothing was written. "
        "Also: a precondition protecting your work (uncommitted changes, files edited after patching)"
    ),
    ExitCode.USAGE: "bad input: usage, manifest (names file and key path), revision, range or repository",
    ExitCode.INTERNAL: (
        "internal error (a bug; the crash line names a log file with the traceback, versions and command line)"
    ),
    ExitCode.BUSY: "busy: another patchkit holds this repository's lock",
    ExitCode.BISECT_SKIP: (
        "guard/run --bisect: a required patch cannot apply at this commit (`git bisect run` skips it)"
    ),
    ExitCode.BISECT_ABORT: (
        "guard/run --bisect: the setup is wrong (unpatched, tampered, dirty, shadowed) or patchkit failed: "
        "`git bisect run` stops"
    ),
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C): the message says what was written",
    ExitCode.CLOSED_STDOUT: "stdout's reader left (`| head`): ended quietly, as on SIGPIPE",
}
"""Each code in a line or two: the epilogue of ``patchkit --help`` (every code; each verb's lists its own)."""

BENCH_HELP_MEANING: Mapping[ExitCode, str] = {
    ExitCode.OK: "every run ok",
    ExitCode.REFUSED: (
        "a run was refused (patches, guard, version, environment, port) or failed "
        "(server-failed, client-failed, metric-missing)"
    ),
    ExitCode.USAGE: "bad input: usage, manifest, [bench] table, revision, --set",
    ExitCode.INTERNAL: HELP_MEANING[ExitCode.INTERNAL],
    ExitCode.INTERRUPTED: (
        "interrupted (Ctrl-C or SIGTERM): the server group was stopped and the run stored as `interrupted`; "
        "bench and noise run again with the same command read back the launches stored and launch the rest "
        "(--executor slurm: the jobs keep running; the same command, run again, collects them); --fresh runs "
        "every launch again"
    ),
}
"""The codes a bench verb (``bench``, ``noise``, ``bisect``) returns, in its own words."""

_USAGE = HELP_MEANING[ExitCode.USAGE]
_INTERNAL = HELP_MEANING[ExitCode.INTERNAL]
_PIPE = HELP_MEANING[ExitCode.CLOSED_STDOUT]
_STOPPED = "interrupted (Ctrl-C)"
_WROTE = HELP_MEANING[ExitCode.INTERRUPTED]
_BUSY = "busy: another patchkit holds this repository's lock"
_STORE = "the bench store cannot be opened for writing (an older store is migrated when read): the line says why"


def _codes(**meanings: str) -> dict[ExitCode, str]:
    """A verb's codes: the ones every verb returns (bad input, a bug, Ctrl-C, a closed stdout), then its own;
    ``OK=...`` and the like by member name, a member given ``""`` left out."""
    out = {ExitCode.USAGE: _USAGE, ExitCode.INTERNAL: _INTERNAL, ExitCode.INTERRUPTED: _STOPPED}
    out[ExitCode.CLOSED_STDOUT] = _PIPE
    for name, text in meanings.items():
        if text:
            out[ExitCode[name]] = text
        else:
            out.pop(ExitCode[name], None)
    return dict(sorted(out.items()))


_BENCH = {
    "REFUSED": BENCH_HELP_MEANING[ExitCode.REFUSED],
    "USAGE": BENCH_HELP_MEANING[ExitCode.USAGE],
    "BUSY": _BUSY + " (preparing a worktree another bench holds)",
    "INTERRUPTED": BENCH_HELP_MEANING[ExitCode.INTERRUPTED],
}
_CAPTURE = {
    "OK": "the manifest and its payloads written, verified at the base",
    "REFUSED": "refused: a capture of NAME already exists in --out (--force replaces it), or it cannot be "
    "written; nothing was written",
    "INTERRUPTED": _WROTE,
}
_READ_STORE = {"REFUSED": _STORE}

VERB_CODES: Mapping[str, Mapping[ExitCode, str]] = {
    "apply": _codes(
        OK="every patch APPLY, SKIP or WARN: written (--dry-run: would be)",
        REFUSED="refused: a required patch FAILs (--strict: or WARNs), a file cannot be written, or (--commit) "
        "uncommitted changes that are not patchkit's; nothing was written",
        BUSY=_BUSY + " (--wait SECONDS waits for it)",
        INTERRUPTED=_WROTE,
    ),
    "revert": _codes(
        OK="the files patchkit wrote are restored (or it had written none)",
        REFUSED="refused: a recorded file was edited after patching (--force restores it anyway) or cannot be written",
        BUSY=_BUSY + " (--wait SECONDS waits for it)",
        INTERRUPTED=_WROTE,
    ),
    "status": _codes(
        OK="every required patch is in place",
        REFUSED="a required patch is not in place, a patch holds an older payload version (OUT OF DATE), or a "
        "killed run left its leftovers (INTERRUPTED)",
    ),
    "check": _codes(
        OK="no required patch FAILs at any checked commit (--since: none newly FAILs)",
        REFUSED="a required patch FAILs at a checked commit (--since: newly; --strict: a WARN counts), or the "
        "verdict cache cannot be written",
    ),
    "explain": _codes(OK="the commit that made the patch fail, or why there is nothing to explain"),
    "digest": _codes(
        OK="the digest is printed",
        USAGE="bad input: FILE, QUALNAME (not defined there), --repo or --commit",
    ),
    "port": _codes(
        OK="carried (--dry-run: the diff printed), and the manifest checks clean at --to",
        REFUSED="a required patch cannot be carried (nothing was written), the check at --to fails, or a file "
        "cannot be written",
    ),
    "capture": _codes(**_CAPTURE),
    "import-diff": _codes(**_CAPTURE),
    "validate": _codes(
        OK="the manifest loads: schema, payloads and references",
        USAGE="it does not, or bad input: the line names the file, line and key path",
    ),
    "guard": _codes(
        OK="every check holds",
        REFUSED="a check failed: each is listed with what to do",
        BISECT_SKIP=HELP_MEANING[ExitCode.BISECT_SKIP],
        BISECT_ABORT=HELP_MEANING[ExitCode.BISECT_ABORT],
    ),
    "run": _codes(
        OK="the guard passed and CMD exited 0; any other code CMD exits with is passed through as it is",
        REFUSED="CMD never started: the guard failed or --apply was refused; or (--probe) a STRAY ran or a "
        "[bench].env value was missing",
        BUSY=_BUSY + " (--apply)",
        BISECT_SKIP=HELP_MEANING[ExitCode.BISECT_SKIP],
        BISECT_ABORT=HELP_MEANING[ExitCode.BISECT_ABORT],
        INTERRUPTED="interrupted (Ctrl-C, SIGTERM, SIGHUP): CMD was stopped, what --apply wrote reverted",
        CLOSED_STDOUT="",  # stdout is CMD's: a SIGPIPE'd CMD's 141 is its own code, passed through
    ),
    "bench": _codes(OK=BENCH_HELP_MEANING[ExitCode.OK], **_BENCH),
    "noise": _codes(OK="every launch ok, and the spread stored as the prior", **_BENCH),
    "bisect": _codes(
        OK="a first bad commit is named",
        REFUSED="a range, no step between GOOD and BAD, or no answer (GOOD or BAD could not be measured, a "
        "criterion refused an end); or a launch refused",
        USAGE=BENCH_HELP_MEANING[ExitCode.USAGE] + ", a criterion that cannot hold (checked before any launch)",
        BUSY=_BENCH["BUSY"],
        INTERRUPTED=BENCH_HELP_MEANING[ExitCode.INTERRUPTED],
    ),
    "runs": _codes(OK="the runs listed (none: it says which store it read)", **_READ_STORE),
    "show": _codes(
        OK="the run shown", USAGE="bad input: no such run, or no store or run where it looked", **_READ_STORE
    ),
    "compare": _codes(
        OK="the two sides compared, whatever the verdict",
        USAGE="bad input: no such run, no pair of ok runs of a profile, or no store where it looked",
        **_READ_STORE,
    ),
    "report": _codes(
        OK="the page is written",
        REFUSED="the page or the bench store cannot be written (permissions, a full disk): the line says why",
        USAGE=_USAGE + "; -o that cannot be a file (a directory, a missing directory)",
    ),
    "demo": _codes(
        OK="every step went as shown",
        BUSY=_BUSY + " (another patchkit on the --keep DIR repository meanwhile)",
        USAGE="bad input: --keep DIR already exists, or Python's venv module is missing",
        INTERNAL="a step did not go as the demo shows, or a bug: the line says which",
    ),
}
"""Per verb, the codes it can return and what each means there: its ``--help`` epilogue (``verb_epilog``) and
docs/reference/exit-codes.md's table by command.  ``tests/test_exit_codes.py`` checks each against the verb:
the codes its own module returns and the errors it raises are listed, and only guard and run (``--bisect``)
list 125 and 128."""

WIDTH = 72  # the epilogue's lines, as click prints them under "\b" (no rewrapping)
STATUSES_MD = Path(__file__).resolve().parent.parent / "docs" / "statuses.md"
TABLE_HEAD = "| code | meaning |\n| --- | --- |\n"


def epilog(meanings: Mapping[ExitCode, str]) -> str:
    """A ``--help`` epilogue: "Exit codes:", then each code with its words wrapped under it.

    The leading ``\\b`` tells click to print the block as it is."""
    lines = ["\b", "Exit codes:"]
    for code, text in sorted(meanings.items()):
        head = f"  {int(code):<2} "
        lines += textwrap.wrap(text, WIDTH, initial_indent=head, subsequent_indent=" " * len(head))
    return "\n".join(lines) + "\n"


def statuses_table() -> str:
    """docs/statuses.md's exit-code table, one row a member of ``ExitCode`` in the enum's order."""
    return TABLE_HEAD + "".join(f"| {int(code)} | {DOC_MEANING[code]} |\n" for code in ExitCode)


def committed_table(text: str) -> str:
    """The exit-code table as it stands in ``text`` (docs/statuses.md): from its head to the blank line."""
    start = text.index(TABLE_HEAD)
    end = text.index("\n\n", start)
    return text[start : end + 1]


def write_statuses(path: Path = STATUSES_MD) -> bool:
    """Rewrite the table in ``path`` from the enum; whether anything changed."""
    text = path.read_text(encoding="utf-8")
    new = text.replace(committed_table(text), statuses_table(), 1)
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def verb_epilog(verb: str) -> str:
    """The ``--help`` epilogue of ``verb``: the codes it can return, in its words (``VERB_CODES``)."""
    return epilog(VERB_CODES[verb])


def by_command_table() -> str:
    """docs/reference/exit-codes.md's table by command: each verb and the codes it can return."""
    rows = ["| command | exit codes |", "| --- | --- |"]
    rows += [f"| `patchkit {verb}` | {', '.join(str(int(c)) for c in codes)} |" for verb, codes in VERB_CODES.items()]
    return "\n".join(rows) + "\n"


EXIT_CODES_HELP = epilog(HELP_MEANING)
BENCH_EXIT_HELP = epilog(BENCH_HELP_MEANING)

if __name__ == "__main__":
    print("docs/statuses.md: " + ("rewritten" if write_statuses() else "up to date"), file=sys.stderr)
