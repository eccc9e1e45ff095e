"""The one exception tree of patchkit, and the exit codes it maps to.

Library code raises these and never calls ``sys.exit``; ``patchkit.cli`` turns
them into exit codes in one place (``cli.main``, from ``exc.exit_code``).  A *refusal* caused by
patches that cannot apply is not an exception: it is a value on the report
(``report.refused``), because callers of the Python API want the full report
either way.
"""

from __future__ import annotations

import errno
from enum import IntEnum


class ExitCode(IntEnum):
    """Every exit code the CLI returns, and no other: a command returns a member, never a bare int.

    docs/statuses.md's table and the ``--help`` epilogues are generated from this enum
    (``patchkit.exit_docs``); a test fails when the committed text drifts from it.
    """

    OK = 0  # every patch is APPLY, SKIP or WARN (without --strict)
    REFUSED = 1  # a required patch FAILs (or a WARN under --strict); nothing was written
    USAGE = 2  # bad command line, manifest, revision, range or repository
    INTERNAL = 3  # a bug in patchkit; the crash message says where
    BUSY = 4  # another patchkit process holds the repository lock
    BISECT_SKIP = 125  # guard --bisect: this commit cannot be patched, `git bisect run` skips it
    BISECT_ABORT = 128  # guard --bisect: the setup is wrong (unpatched, tampered, dirty, shadowed); aborts the bisect
    INTERRUPTED = 130  # Ctrl-C or SIGTERM (128 + SIGINT), as a shell reports a command killed by it
    CLOSED_STDOUT = 141  # stdout's reader left (`| head`): 128 + SIGPIPE, as a SIGPIPE'd tool ends


class PatchkitError(Exception):
    """Base class: an error the user can act on.  ``str()`` is one line."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        if self.hint:
            return f"{self.message}; {self.hint}"
        return self.message


class UsageError(PatchkitError):
    """Bad arguments (a path that does not exist, options that clash)."""


class ManifestError(PatchkitError):
    """A manifest that does not load: names the file and the key path."""

    def __init__(
        self,
        message: str,
        *,
        file: str,
        key_path: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = file
        if line is not None:
            where += f":{line}"
        if key_path:
            where += f": {key_path}"
        super().__init__(f"{where}: {message}", hint=hint)
        self.file = file
        self.key_path = key_path
        self.line = line


class RepoError(PatchkitError):
    """The repository cannot be used as asked (not a repo, bare, shallow...)."""


class RevisionError(PatchkitError):
    """An unknown revision or an empty / unreadable commit range."""


class RefusedError(PatchkitError):
    """Patchkit declined to touch the tree to protect the user's work.

    Used for preconditions (uncommitted changes that are not patchkit's own,
    files edited after patching), not for failing patches: those are reported
    on the report itself.
    """

    exit_code = ExitCode.REFUSED

    def __init__(self, message: str, *, items: tuple[str, ...] = (), hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.items = items


# What to do about each way a filesystem says no, by errno: the advice must fit the cause.
_WRITE_ADVICE = {
    errno.ENOSPC: "free some space on that filesystem, then run again",
    errno.EDQUOT: "free some space within your disk quota (or ask for a larger one), then run again",
    errno.EROFS: "the filesystem is mounted read-only: remount it read-write, or work in a clone on a writable one",
    errno.EACCES: "make it writable (check the permissions of the file and its directory), then run again",
    errno.EPERM: "make it writable (check the permissions, and the immutable flag `lsattr` shows), then run again",
    errno.EIO: "the device reported an I/O error: check the disk (`dmesg` names it), then run again",
}
WRITE_ERRNOS = frozenset(_WRITE_ADVICE)


def write_advice(code: int | None) -> str:
    """What fixes the cause ``code`` (an errno) names."""
    return _WRITE_ADVICE.get(code or errno.EACCES, "fix what the system reports there, then run again")


class UnwritableError(RefusedError):
    """A file patchkit has to write cannot be written (a read-only directory,
    permissions, a full disk, a quota).  Raised before anything the user sees has
    changed, or after rolling back; ``apply`` reports it as a refusal with its
    table, naming the path.  ``from_os`` words the advice after the errno."""

    def __init__(
        self,
        path: str,
        reason: str,
        *,
        code: int | None = None,
        also: str | None = None,
        action: str = "write",
        outcome: str = "nothing was written",
    ) -> None:
        """``action``: what was refused (``write``, ``remove``); ``outcome``: what the tree holds now, when a
        transaction could not undo everything (the default is the usual case: nothing changed)."""
        advice = write_advice(code)
        super().__init__(
            f"cannot {action} {path}: {reason}; {outcome}",
            hint=advice if also is None else f"{advice} ({also})",
        )
        self.path = path
        self.reason = reason
        self.code = code

    @classmethod
    def from_os(
        cls,
        path: object,
        exc: OSError,
        *,
        also: str | None = None,
        action: str = "write",
        outcome: str = "nothing was written",
    ) -> UnwritableError:
        """The refusal for ``exc``, naming ``path`` (the file patchkit meant to write)."""
        return cls(
            str(path), exc.strerror or type(exc).__name__, code=exc.errno, also=also, action=action, outcome=outcome
        )


class BusyError(PatchkitError):
    exit_code = ExitCode.BUSY


class InternalError(PatchkitError):
    """Something patchkit itself got wrong; reported with a crash message."""

    exit_code = ExitCode.INTERNAL


class GuardError(RefusedError):
    """The pre-benchmark guard found a tree that cannot be trusted (``patchkit.guard.require``).

    ``report`` is the full ``patchkit.guard.GuardReport``: every check, failed or not.
    """

    def __init__(self, message: str, *, report: object, items: tuple[str, ...] = (), hint: str | None = None) -> None:
        super().__init__(message, items=items, hint=hint)
        self.report = report


class PartialApplicationError(GuardError):
    """A required patch is not in place, or cannot apply at this commit (a ``GuardError``)."""


class BisectAbortError(PatchkitError):
    """Under ``--bisect``, any error (bad input, busy, a command that does not
    start) exits 128 so that ``git bisect run`` stops instead of marking the
    commit bad.  Carries the original error's message."""

    exit_code = ExitCode.BISECT_ABORT

    @classmethod
    def wrap(cls, exc: PatchkitError) -> BisectAbortError:
        return cls(f"{exc.message} (exit {int(exc.exit_code)}, reported as 128 to stop git bisect)", hint=exc.hint)
