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
"""Each code in a line or two: the epilogue of ``patchkit --help`` and of every tree verb."""

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


EXIT_CODES_HELP = epilog(HELP_MEANING)
BENCH_EXIT_HELP = epilog(BENCH_HELP_MEANING)

if __name__ == "__main__":
    print("docs/statuses.md: " + ("rewritten" if write_statuses() else "up to date"), file=sys.stderr)
