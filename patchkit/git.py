"""All git access goes through this module.

Plumbing commands run in a fixed environment (C locale, no pager, no prompt,
unquoted paths, and none of the caller's GIT_* variables but an allowlist, so
a GIT_DIR or GIT_WORK_TREE set for another repository cannot redirect
patchkit) so their output can be parsed; blobs are read through one
persistent ``git cat-file --batch`` process, so reading a
thousand blobs costs one process start, not a thousand.
"""

from __future__ import annotations

import builtins
import hashlib  # not at the top: a range check's first git process starts before it loads
import os
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import IO, Literal, overload

from patchkit.commit import Commit
from patchkit.errors import InternalError, RepoError, RevisionError

# GIT_* variables git may keep from the user's environment: how to reach
# remotes and credentials, and which config files to read.  Every other GIT_*
# variable (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY,
# GIT_NAMESPACE, GIT_CEILING_DIRECTORIES, ...) would redirect or reshape what
# patchkit reads and writes, so it is dropped, as pre-commit's ``no_git_env``
# does.  Variables that do not start with GIT_ (PATH, HOME, XDG_CONFIG_HOME,
# proxies, SSH_AUTH_SOCK, ...) are kept.
_GIT_ENV_KEEP = frozenset(
    {
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
        "GIT_SSL_NO_VERIFY",
        "GIT_HTTP_PROXY_AUTHMETHOD",
        "GIT_ALLOW_PROTOCOL",
        "GIT_PROTOCOL_FROM_USER",
        "GIT_ASKPASS",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_COUNT",
    }
)
_GIT_ENV_KEEP_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")


def git_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: the caller's, minus every GIT_* variable not allowlisted."""
    source = os.environ if environ is None else environ
    return {
        k: v
        for k, v in source.items()
        if not k.startswith("GIT_") or k in _GIT_ENV_KEEP or k.startswith(_GIT_ENV_KEEP_PREFIXES)
    }


def _env() -> dict[str, str]:
    env = git_environment()
    env.update({"LC_ALL": "C", "LANG": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0"})
    return env


# What git says where HEAD names no commit yet (an empty repository, an unborn branch)
_NO_HEAD = ("bad revision 'HEAD'", "ambiguous argument 'HEAD'", "does not have any commits yet")
# The advice after git's own words, where git cannot read the repository (a config file, packed-refs, an object)
_GIT_SAID = "fix what git reports (a file it cannot read names its cause), then run again"

# What to do instead, per command: only options that command has.
_BARE_HINTS = {
    "apply": "use --commit REV --worktree DIR to patch a linked worktree, or `patchkit check`, which needs no checkout",
    "status": "pass --repo DIR of the worktree that was patched (`git worktree list` shows them), "
    "or use `patchkit check`, which needs no checkout",
    "revert": "pass --repo DIR of the worktree that was patched (`git worktree list` shows them)",
    "validate": "pass --repo DIR of a checkout (`git worktree list` shows them), or leave --repo out",
    "guard": "pass --repo DIR of the patched work tree (`git worktree list` shows them; "
    "`patchkit apply -m M --commit REV --worktree DIR` makes one), or use `patchkit check`, which needs no checkout",
    "run": "pass --repo DIR of a work tree (`git worktree list` shows them; "
    "`patchkit apply -m M --commit REV --worktree DIR` makes one)",
    "capture": "pass --repo DIR of the edited checkout (`git worktree list` shows them)",
}
_BARE_HINT = "pass --repo DIR of a work tree (`git worktree list` shows them)"  # a verb not listed above


class GitFailed(Exception):
    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited {returncode}: {stderr.strip()}")
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr.strip()

    def said(self) -> str:
        """What git said, on one line: its warnings name the file and the cause (``unable to access
        '.git/config': Permission denied``) that its last ``fatal:`` line may not."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith(("Use '--'", "'git <command>", "hint:"))]
        return "; ".join(dict.fromkeys(lines)) or f"git exited {self.returncode}"


@overload
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    input: bytes | None = None,
    check: bool = True,
    text: Literal[True] = True,
    env: Mapping[str, str] | None = None,
) -> str: ...
@overload
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    input: bytes | None = None,
    check: bool = True,
    text: Literal[False],
    env: Mapping[str, str] | None = None,
) -> bytes: ...
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    input: bytes | None = None,
    check: bool = True,
    text: bool = True,
    env: Mapping[str, str] | None = None,
) -> str | bytes:
    """Run git; returns stdout (str, or bytes when ``text=False``).

    ``env``: variables set on top of the allowlisted environment (the demo's
    builder gives its fixed identity and config isolation this way).
    """
    try:
        proc = subprocess.run(
            ["git", "-c", "core.quotepath=false", *args],
            cwd=cwd,
            input=input,
            check=False,
            capture_output=True,
            env={**_env(), **(env or {})},
        )
    except FileNotFoundError:
        raise RepoError("git is not installed or not on PATH") from None
    if check and proc.returncode != 0:
        raise GitFailed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "surrogateescape") if text else proc.stdout


# The pipe of a git process started well before it is read (``Pending(..., ahead=True)``).
# A range check starts its two git logs, then loads the manifest and the engine
# before it reads them; with the default 64 KiB pipe,
# git's walk (about 40 bytes a commit) stops after some 1,500 commits and waits
# for the reader.  Linux lets any process grow a pipe to ``fs.pipe-max-size``
# (1 MiB unless lowered); the pages are taken only as git fills them.
AHEAD_PIPE = 1 << 20


def _grow_pipe(pipe: IO[bytes] | None) -> None:
    """Grow a pipe to ``AHEAD_PIPE``; where that is refused or unknown (not Linux, a lowered
    ``fs.pipe-max-size``, the user's pipe quota spent), it stays as it is: only slower."""
    if pipe is None:
        return
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, AHEAD_PIPE)
    except (ImportError, AttributeError, OSError):
        pass


class Pending:
    """A git process started now and read later, so independent git calls overlap.

    ``ahead``: the caller will do other work before it reads, so the output
    pipe is grown (``AHEAD_PIPE``, where the system allows it) and git is not
    held up by a full pipe in the meantime.
    """

    def __init__(
        self, args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, *, ahead: bool = False
    ) -> None:
        self.args = list(args)
        self._done: tuple[bytes, bytes] | None = None  # (stdout, stderr), once waited for
        try:
            self.proc = subprocess.Popen(
                ["git", "-c", "core.quotepath=false", *args],
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**_env(), **(env or {})},
            )
        except FileNotFoundError:
            raise RepoError("git is not installed or not on PATH") from None
        if ahead:
            _grow_pipe(self.proc.stdout)

    def bytes(self) -> bytes:
        """The process's output (waited for once; later calls return it again)."""
        if self._done is None:
            self._done = self.proc.communicate()
        out, err = self._done
        if self.proc.returncode != 0:
            raise GitFailed(self.args, self.proc.returncode, err.decode("utf-8", "replace"))
        return out

    def text(self) -> str:
        return self.bytes().decode("utf-8", "surrogateescape")

    @property
    def read(self) -> bool:
        """Its output was waited for (``bytes``/``text`` return at once)."""
        return self._done is not None

    def chunks(self) -> Iterator[builtins.bytes]:  # (``bytes`` is a method here)
        """The output as it arrives (for a process never waited for with ``bytes``)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while chunk := os.read(fd, 1 << 16):
            yield chunk

    def finish(self) -> None:
        """After ``chunks`` ran dry: reap the process; raise GitFailed if it failed."""
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]
        self.proc.stderr.close()
        if self.proc.returncode != 0:
            raise GitFailed(self.args, self.proc.returncode, err.decode("utf-8", "replace"))

    def close(self) -> None:
        """Stop and reap the process if it was never read (an earlier step failed)."""
        if self.proc.returncode is None:
            self.proc.kill()
            self.proc.communicate()


class BlobReader:
    """One persistent ``git cat-file --batch`` process: a thousand blobs, one process start.

    Started with the same allowlisted environment as every other git call (GitPython's, as fast, passes a
    caller's GIT_WORK_TREE, GIT_INDEX_FILE and GIT_OBJECT_DIRECTORY on: docs/concepts/architecture.md).
    """

    def __init__(self, cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env = dict(env or {})  # set on top of the allowlisted environment
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            try:
                self.proc = subprocess.Popen(
                    ["git", "cat-file", "--batch"],
                    cwd=self.cwd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env={**_env(), **self.env},
                )
            except FileNotFoundError:
                raise RepoError("git is not installed or not on PATH") from None
        return self.proc

    def read(self, oid: str) -> bytes:
        data = self.read_if_present(oid)
        if data is None:
            raise InternalError(f"git could not read object {oid}: missing")
        return data

    def read_if_present(self, oid: str) -> bytes | None:
        """The blob's contents, or None where the repository lacks the object (a partial clone's promisor
        pack leaves large blobs out; started with ``GIT_NO_LAZY_FETCH=1``, git does not fetch them)."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(oid.encode("ascii") + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().decode("ascii", "replace").split()
        except (OSError, UnicodeEncodeError) as exc:
            self.close()
            raise InternalError(f"git could not read object {oid}: {exc}") from None
        if len(header) == 2 and header[1] == "missing":
            return None
        if len(header) != 3:
            if len(header) < 2:  # the process died: start a new one next time
                self.close()
            raise InternalError(f"git could not read object {oid}: {' '.join(header) or 'no answer'}")
        _sha, kind, size = header
        data = proc.stdout.read(int(size))
        proc.stdout.read(1)  # the newline after the contents
        if kind != "blob":
            raise InternalError(f"object {oid} is a {kind}, not a blob")
        return data

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_LOG_FORMAT = "%H%x1f%P%x1f%an <%ae>%x1f%aI%x1f%s"


def _parse_commit(line: str) -> Commit:
    sha, parents, author, date, subject = line.split("\x1f", 4)
    return Commit(sha, tuple(parents.split()), author, date, subject)


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a commit's tree (``git ls-tree``): path, mode and object id."""

    path: str
    mode: str  # "100644", "100755", "120000" (symlink), "160000" (submodule), "040000"
    oid: str


Entry = tuple[str, str] | None
"""A path at a commit as the change log gives it: (mode, blob id), or None where the file is absent."""


_LS_FILES = ("ls-tree", "-r", "-z", "--name-only", "--full-tree")
# The target files' first-parent changes, one record per commit (parse_change_record).
_CHANGE_LOG = (
    "log",
    "--full-history",
    "--diff-merges=first-parent",
    "--raw",
    "-z",
    "--no-abbrev",
    "--no-renames",
    "--format=%x1e%H",
)


def _tree_records(out: bytes) -> Iterator[tuple[str, str, str, str]]:
    """(path, mode, object type, object id) of each record ``git ls-tree -z`` printed."""
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, oid = meta.decode().split()
        yield path.decode("utf-8", "surrogateescape"), mode, kind, oid


def _split_names(out: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _is_full_id(rev: str) -> bool:
    return len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)


def parse_log(out: str) -> list[Commit]:
    return [_parse_commit(line) for line in out.splitlines() if line]


def parse_change_record(chunk: bytes) -> tuple[str, dict[str, Entry]] | None:
    """One commit's record of ``spawn_path_changes``/``spawn_change_stream``: (sha, {path: entry or None})."""
    if not chunk.strip(b"\0\n"):
        return None
    head, _, rest = chunk.partition(b"\n")
    sha = head.strip(b"\0").decode()
    fields = rest.lstrip(b"\n").split(b"\0")
    entry: dict[str, Entry] = {}
    i = 0
    while i + 1 < len(fields):
        meta = fields[i].decode().lstrip("\n")
        if not meta.startswith(":"):
            i += 1
            continue
        _old_mode, new_mode, _old, new_oid, status = meta[1:].split()
        path = fields[i + 1].decode("utf-8", "surrogateescape")
        entry[path] = None if status.startswith("D") else (new_mode, new_oid)
        i += 2
    return sha, entry


def change_records(stream: Pending) -> Iterator[tuple[str, dict[str, Entry]]]:
    """The records of a ``spawn_change_stream`` as git walks; ``stream.finish()`` after the last."""
    rest = b""
    for chunk in stream.chunks():
        *done, rest = (rest + chunk).split(b"\x1e")
        for part in done:
            record = parse_change_record(part)
            if record is not None:
                yield record
    record = parse_change_record(rest)
    if record is not None:
        yield record


@dataclass(frozen=True)
class RawChange:
    """One path a commit changes against its first parent, as ``git log --raw --no-renames`` gives it:
    a rename is a deletion and an addition.  An absent side has mode ``000000`` and an all-zero id."""

    path: str
    status: str  # A, D, M or T (type change)
    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str


def parse_raw_line(out: bytes) -> list[tuple[str, tuple[RawChange, ...]]]:
    """``Repo.line_changes``' output: (commit, its changes) per commit, in the order git printed them."""
    listed: list[tuple[str, tuple[RawChange, ...]]] = []
    for record in out.split(b"\x1e")[1:]:
        head, _, rest = record.partition(b"\0")
        fields = rest.lstrip(b"\n").split(b"\0")
        changes: list[RawChange] = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            meta_text = meta.decode("ascii", "replace").strip()
            if not meta_text.startswith(":"):
                continue
            old_mode, new_mode, old_oid, new_oid, status = meta_text[1:].split()
            name = path.decode("utf-8", "surrogateescape")
            changes.append(RawChange(name, status[0], old_mode, new_mode, old_oid, new_oid))
        listed.append((head.decode("ascii").strip(), tuple(changes)))
    return listed


_PATCH_LINES = re.compile(
    rb"^(?:\x1e([0-9a-f]{40,64})|diff --git (.*)|@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@)", re.M
)


def parse_hunks(out: bytes) -> dict[tuple[str, str], list[tuple[int, int, int, int]]]:
    """``Repo.spawn_line_hunks``' output: for each (commit, path), the hunks of its diff against the first
    parent as (i1, i2, j1, j2), old lines [i1, i2) become new lines [j1, j2), 0-based.  A path git quotes
    (a tab, a newline, a quote in it) and a binary file have none listed."""
    hunks: dict[tuple[str, str], list[tuple[int, int, int, int]]] = {}
    sha = ""
    current: list[tuple[int, int, int, int]] | None = None
    for match in _PATCH_LINES.finditer(out):
        commit, header, old_line, old_count, new_line, new_count = match.groups()
        if commit is not None:
            sha, current = commit.decode("ascii"), None
        elif header is not None:
            # "a/X b/X": no renames, so both sides name the same path
            size = (len(header) - 5) // 2
            name = header[2 : 2 + size]
            current = None
            if header[:2] == b"a/" and header[2 + size :] == b" b/" + name:
                current = hunks.setdefault((sha, name.decode("utf-8", "surrogateescape")), [])
        elif current is not None:
            i, s = int(old_line), 1 if old_count is None else int(old_count)
            j, t = int(new_line), 1 if new_count is None else int(new_count)
            current.append((i - (s > 0), i - (s > 0) + s, j - (t > 0), j - (t > 0) + t))
    return hunks


def parse_porcelain(out: bytes) -> list[tuple[str, str]]:
    """``git status --porcelain=v1 -z`` as (two-letter status, path); a
    rename's source path is dropped (the entry names the new path)."""
    items: list[tuple[str, str]] = []
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        record = fields[i]
        i += 1
        if not record:
            continue
        status = record[:2].decode()
        items.append((status, record[3:].decode("utf-8", "surrogateescape")))
        if status[0] in "RC":
            i += 1  # the rename source follows
    return items


def parse_head(pending: Pending) -> tuple[Commit | None, str | None]:
    """(HEAD's commit, its branch or None when detached) from ``Repo.spawn_head``;
    (None, None) when HEAD is not a commit (an empty repository)."""
    try:
        out = pending.text()
    except GitFailed as exc:
        if not exc.stderr or any(words in exc.stderr for words in _NO_HEAD):  # HEAD names no commit yet
            return None, None
        raise RepoError(f"git cannot read HEAD: {exc.said()}", hint=_GIT_SAID) from None
    line, _, decorations = out.partition("\n")
    if not line.strip():
        return None, None
    branch = None
    for item in decorations.strip().split(", "):
        if item.startswith("HEAD -> "):
            branch = item[len("HEAD -> ") :]
    return _parse_commit(line), branch


class Repo:
    """A git repository (with or without a work tree)."""

    def __init__(self, path: Path, git_dir: Path, common_dir: Path, root: Path | None) -> None:
        self.path = path
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.root = root  # None for a bare repository
        self._blobs: BlobReader | None = None
        self._local_blobs: BlobReader | None = None  # never fetches a missing blob (read_blob_if_present)
        self._trees: dict[str, Pending | list[str]] = {}  # full commit id -> its files (a commit's tree is fixed)

    # -- discovery ---------------------------------------------------------

    @classmethod
    def discover(cls, path: Path) -> Repo:
        path = path.resolve()
        if not path.exists():
            raise RepoError(f"{path} does not exist", hint="pass --repo DIR pointing at a git checkout")
        if not path.is_dir():
            raise RepoError(
                f"{path} is not a directory, so it is not a git repository",
                hint="pass --repo DIR pointing at a git checkout",
            )
        try:
            # One process for everything start-up needs to know.
            out = run_git(
                [
                    "rev-parse",
                    "--is-bare-repository",
                    "--absolute-git-dir",
                    "--git-common-dir",
                    "--is-shallow-repository",
                    "--is-inside-work-tree",
                    "--show-object-format",
                    "--show-cdup",
                ],
                path,
            )
        except GitFailed as exc:
            if "not a git repository" not in exc.stderr:  # a repository git cannot read: its words say why
                raise RepoError(f"git cannot open {path}: {exc.said()}", hint=_GIT_SAID) from None
            last = exc.stderr.splitlines()[-1]
            raise RepoError(
                f"{path} is not a git repository ({last})", hint="pass --repo DIR pointing at a git checkout"
            ) from None
        lines = out.split("\n")
        if len(lines) < 6 or not lines[1]:
            # git rev-parse exits 0 when the write to its stdout fails (an I/O error, a full disk)
            raise RepoError(
                f"git rev-parse in {path} gave {len(out.splitlines())} of the 6 answers patchkit asked for: "
                "its output was cut short",
                hint=f"run the command again; `git -C {path} rev-parse --absolute-git-dir` shows what git says",
            )
        bare, git_dir, common, shallow, inside, object_format = lines[:6]
        common_p = Path(common) if os.path.isabs(common) else (path / common).resolve()
        root = None
        if bare != "true" and inside == "true":
            root = (path / (lines[6] if len(lines) > 6 else "")).resolve()
        repo = cls(path, Path(git_dir), common_p, root)
        repo.__dict__["is_shallow"] = shallow == "true"  # prime the cached_properties
        repo.__dict__["object_format"] = object_format or "sha1"
        return repo

    @property
    def bare(self) -> bool:
        return self.root is None

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> str:
        return run_git(args, self.root or self.git_dir, input=input, check=check)

    def git_bytes(self, *args: str) -> bytes:
        return run_git(args, self.root or self.git_dir, text=False)

    def require_worktree(self, action: str) -> Path:
        if self.root is None:
            raise RepoError(
                f"{self.git_dir} is a bare repository: {action} needs a work tree",
                hint=_BARE_HINTS.get(action.split()[0], _BARE_HINT),
            )
        return self.root

    # -- revisions ---------------------------------------------------------

    def resolve(self, rev: str) -> str:
        try:
            out = self.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").strip()
        except GitFailed as exc:
            if exc.stderr:  # --quiet says nothing about an unknown name: this is git unable to read the repository
                where = self.root or self.git_dir
                raise RepoError(f"git cannot read {rev!r} in {where}: {exc.said()}", hint=_GIT_SAID) from None
            out = ""
        if not out:
            hint = "check the name with `git log --oneline`"
            if self.is_shallow:
                hint = (
                    "this is a shallow clone: the commit may be outside the fetched history (`git fetch --unshallow`)"
                )
            raise RevisionError(f"unknown revision {rev!r} in {self.root or self.git_dir}", hint=hint)
        return out

    def resolve_all(self, revs: Sequence[str]) -> list[str]:
        """Resolve several revisions in one process; on any failure, one by one
        so the unknown revision is named."""
        if len(revs) > 1 and not any(rev.startswith("-") for rev in revs):
            out = run_git(["rev-parse", *[f"{rev}^{{commit}}" for rev in revs]], self.root or self.git_dir, check=False)
            shas = out.split()
            if len(shas) == len(revs) and all(len(sha) in (40, 64) for sha in shas):
                return shas
        return [self.resolve(rev) for rev in revs]

    def head(self) -> str | None:
        out = self.git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
        return out or None

    def head_commit(self) -> Commit | None:
        """HEAD's commit in one git process (``head()`` then ``commit()`` take three);
        None when HEAD is not a commit (an empty repository)."""
        return parse_head(self.spawn_head())[0]

    def branch(self) -> str | None:
        out = self.git("symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
        return out or None

    def commit(self, rev: str) -> Commit:
        return _parse_commit(self.git("log", "-1", f"--format={_LOG_FORMAT}", self.resolve(rev), "--").rstrip("\n"))

    def commits(self, revs: Sequence[str]) -> list[Commit]:
        """Commit metadata for the given shas, in the given order."""
        if not revs:
            return []
        out = self.git(
            "log", "--no-walk=unsorted", f"--format={_LOG_FORMAT}", "--stdin", input=("\n".join(revs) + "\n").encode()
        )
        by_sha = {c.sha: c for c in (_parse_commit(line) for line in out.splitlines() if line)}
        return [by_sha[r] for r in revs]

    def topo_sorted(self, shas: Sequence[str]) -> list[str]:
        """``shas`` oldest first in topological order (a parent before its children; else git's order).

        One walk from the commits down to their common ancestor (all of history when they have none),
        so commits given one by one (``check --commit``) are listed as a range would list them.
        """
        wanted = list(dict.fromkeys(shas))
        if len(wanted) < 2:
            return wanted
        base = self.git("merge-base", "--octopus", *wanted, check=False).split()
        stop = [f"^{base[0]}^@"] if base else []
        out = self.git("rev-list", "--topo-order", "--reverse", *wanted, *stop).split()
        order = {sha: i for i, sha in enumerate(out)}
        return sorted(wanted, key=lambda sha: order.get(sha, len(order)))

    def distance(self, older: str, newer: str) -> int | None:
        """How many commits ``newer`` is after ``older`` when ``older`` is its ancestor; else None."""
        if int(self.git("rev-list", "--count", f"{newer}..{older}").strip() or 0):
            return None
        return int(self.git("rev-list", "--count", f"{older}..{newer}").strip() or 0)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is ``newer`` or one of its ancestors (``git merge-base --is-ancestor``: no count,
        no walk past the merge base).  Unknown revisions raise ``GitFailed``: resolve them first."""
        try:
            self.git("merge-base", "--is-ancestor", older, newer)
        except GitFailed as exc:
            if exc.returncode == 1:
                return False
            raise
        return True

    def spawn(self, *args: str, ahead: bool = False) -> Pending:
        return Pending(args, self.root or self.git_dir, ahead=ahead)

    def rev_list(self, spec: Sequence[str]) -> list[Commit]:
        """Commits of a rev-list range, oldest first (topological: parents before children)."""
        return parse_log(self.spawn_rev_list(spec).text())

    def commit_range(self, start: str, end: str) -> list[Commit]:
        """The first-parent commits after ``start`` up to ``end`` (included), oldest first: the line that
        ``bisect`` searches and ``compare`` lists between two runs (as asv's ``repo.py`` gives one range
        function to every command).  Empty when ``end`` is ``start`` or an ancestor of it."""
        return self.rev_list(["--first-parent", f"{self.resolve(start)}..{self.resolve(end)}"])

    def spawn_rev_list(self, spec: Sequence[str]) -> Pending:
        return self.spawn("log", "--topo-order", "--reverse", f"--format={_LOG_FORMAT}", *spec, "--", ahead=True)

    @cached_property
    def is_shallow(self) -> bool:
        return self.git("rev-parse", "--is-shallow-repository").strip() == "true"

    def shallow_boundary(self) -> set[str]:
        path = self.common_dir / "shallow"
        if not path.exists():
            return set()
        return {line.strip() for line in path.read_text().splitlines() if line.strip()}

    @cached_property
    def object_format(self) -> str:
        return self.git("rev-parse", "--show-object-format").strip() or "sha1"

    def hash_blob(self, data: bytes) -> str:
        """The object id git would give ``data`` (no process, no write)."""
        return blob_id(data, self.object_format)

    def tree_blobs(self, commit: str) -> dict[str, str]:
        """Every file of ``commit``'s tree -> its blob id (one ``ls-tree -r``; submodules and links left out)."""
        out = self.git_bytes("ls-tree", "-r", "-z", "--full-tree", commit)
        return {path: oid for path, mode, kind, oid in _tree_records(out) if kind == "blob" and mode != "120000"}

    # -- trees and blobs ---------------------------------------------------

    def ls_tree(self, commit: str, paths: Iterable[str]) -> dict[str, TreeEntry]:
        paths = list(paths)
        if not paths:
            return {}
        out = self.git_bytes("ls-tree", "-z", "--full-tree", commit, "--", *paths)
        return {path: TreeEntry(path, mode, oid) for path, mode, _kind, oid in _tree_records(out)}

    def blob_sizes(self, commit: str, paths: Iterable[str]) -> dict[str, int]:
        """Bytes of each path's blob at ``commit`` (0 for a symlink, submodule or missing path): how
        large the work on those files is, read from the tree without reading the blobs."""
        paths = list(paths)
        sizes = dict.fromkeys(paths, 0)
        if not paths:
            return sizes
        out = self.git_bytes("ls-tree", "-z", "-l", "--full-tree", commit, "--", *paths)
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, path = record.split(b"\t", 1)
            mode, kind, _oid, size = meta.decode().split()
            name = path.decode("utf-8", "surrogateescape")
            if kind == "blob" and mode != "120000" and size.isdigit() and name in sizes:
                sizes[name] = int(size)
        return sizes

    def list_files(self, commit: str | None) -> list[str]:
        """Tracked files at a commit, or in the index/work tree when ``commit`` is None.

        A full commit id's list is kept (its tree never changes), and may have
        been started ahead with ``prefetch_files``.
        """
        if commit is None:
            out = self.git_bytes("ls-files", "-z", "--cached", "--others", "--exclude-standard")
            return _split_names(out)
        known = self._trees.get(commit)
        if isinstance(known, list):
            return known
        out = known.bytes() if known is not None else self.git_bytes(*_LS_FILES, commit)
        names = _split_names(out)
        if _is_full_id(commit):
            self._trees[commit] = names
        return names

    def prefetch_files(self, commit: str) -> None:
        """Start listing a commit's files now, for a ``list_files`` later (a full commit id only)."""
        if _is_full_id(commit) and commit not in self._trees:
            self._trees[commit] = self.spawn(*_LS_FILES, commit)

    def read_blob(self, oid: str) -> bytes:
        if self._blobs is None:
            self._blobs = BlobReader(self.root or self.git_dir)
        return self._blobs.read(oid)

    def close(self) -> None:
        """Stop the ``cat-file`` reader (a later read starts a new one).  Whoever opened the Repo closes it."""
        for reader in (self._blobs, self._local_blobs):
            if reader is not None:
                reader.close()
        self._blobs = self._local_blobs = None

    def close_prefetched(self) -> None:
        """Reap the ``prefetch_files`` listings nobody read (their commits are listed again if asked)."""
        for commit, known in list(self._trees.items()):
            if isinstance(known, Pending):
                known.close()
                del self._trees[commit]

    def __enter__(self) -> Repo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def grep(self, pattern: str, commit: str | None, pathspec: str = "*.py") -> list[tuple[str, int, str]]:
        """(path, line, text) for lines matching an extended regex."""
        args = ["grep", "-n", "-I", "-E", "--full-name", "-e", pattern]
        if commit is not None:
            args.append(commit)
        out = self.git("-c", "grep.fallbackToNoIndex=false", *args, "--", pathspec, check=False)
        hits = []
        prefix = f"{commit}:" if commit else ""
        for line in out.splitlines():
            if prefix and line.startswith(prefix):
                line = line[len(prefix) :]
            parts = line.split(":", 2)
            if len(parts) == 3 and parts[1].isdigit():
                hits.append((parts[0], int(parts[1]), parts[2]))
        return hits

    # -- history -----------------------------------------------------------

    def spawn_path_changes(self, spec: Sequence[str], paths: Sequence[str]) -> Pending:
        """For each commit in the range whose diff against its *first* parent
        touches ``paths``: {path: (mode, oid) or None if deleted}.

        ``--full-history`` keeps every commit that differs from any parent
        (default simplification would drop side branches), and
        ``--diff-merges=first-parent`` gives a merge's diff against its first
        parent, which is what a child's tree inherits from.
        """
        return self.spawn(*_CHANGE_LOG, *spec, "--", *paths)

    def spawn_change_stream(self, tips: Sequence[str], paths: Sequence[str]) -> Pending:
        """What ``spawn_path_changes`` gives for a range, as git walks it.

        A range (``A..B``) makes git walk all of it before it prints a line,
        so nothing can start on the changes until the walk ends.  This walks
        from the tips with no lower end, and ``--sparse`` shows every commit
        walked, touching or not, so a reader can tell when it has passed all
        of a range's commits and stop it there (``change_records``); git
        buffers its output (``GIT_FLUSH=0``), and the records arrive in
        blocks of about a hundred commits.  Each record is the commit's own
        diff against its first parent, so it is the same in either walk.
        """
        return Pending(
            [*_CHANGE_LOG, "--sparse", *tips, "--", *paths],
            self.root or self.git_dir,
            env={"GIT_FLUSH": "0"},
            ahead=True,
        )

    def first_change(self, commit: str, path: str, *, filter: str) -> Commit | None:
        """The newest commit reachable from ``commit`` with that --diff-filter on ``path``."""
        out = self.git("log", "-1", f"--diff-filter={filter}", f"--format={_LOG_FORMAT}", commit, "--", path).strip()
        return _parse_commit(out) if out else None

    def first_parent_changes(self, start: str, end: str) -> list[tuple[Commit, tuple[str, ...]]]:
        """The first-parent commits after ``start`` up to ``end`` (oldest first), each with the paths its
        diff against its first parent touches (a merge: what it brought into the first-parent line).
        One ``git log`` for the whole line: ``port`` walks it and looks again only where a target changed."""
        out = self.git_bytes(
            "log",
            "--reverse",
            "--first-parent",
            "--diff-merges=first-parent",
            "--name-only",
            "-z",
            f"--format=%x01{_LOG_FORMAT}",
            f"{self.resolve(start)}..{self.resolve(end)}",
            "--",
        )
        listed: list[tuple[Commit, tuple[str, ...]]] = []
        for record in out.split(b"\x01")[1:]:
            # -z: the format line ends with NUL (then a newline before the names), each name with NUL
            head, _, rest = record.partition(b"\0")
            names = [p.decode("utf-8", "surrogateescape") for p in rest.lstrip(b"\n").split(b"\0") if p]
            listed.append((_parse_commit(head.decode("utf-8", "surrogateescape")), tuple(names)))
        return listed

    def spawn_line_hunks(self, good: str, bad: str, pathspec: str = "*.py") -> Pending:
        """The line diffs (no context lines: only the hunks' places matter) of every first-parent commit after
        ``good`` up to ``bad`` against its first parent, for the paths ``pathspec`` matches, started now;
        ``parse_hunks(pending.bytes())`` reads them.  Full commit ids, please: the range is not resolved here.
        A blob missing from a partial clone fails the whole log (``GIT_NO_LAZY_FETCH=1``: it is not fetched)."""
        return Pending(
            [
                "log",
                "--first-parent",
                "--diff-merges=first-parent",
                "-p",
                "-U0",
                "--no-renames",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-relative",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                "--no-show-signature",
                "--format=%x1e%H",
                f"{good}..{bad}",
                "--",
                pathspec,
            ],
            self.root or self.git_dir,
            env={"GIT_NO_LAZY_FETCH": "1"},
            ahead=True,
        )

    def line_changes(self, good: str, bad: str) -> list[tuple[str, tuple[RawChange, ...]]]:
        """Every first-parent commit after ``good`` up to ``bad``, oldest first, with every path its diff
        against its first parent changes (a merge: what it brought into the line), blob ids and modes
        included, renames as a deletion and an addition.  One ``git log`` for the whole line; it reads
        trees only, never a blob."""
        out = self.git_bytes(
            "log",
            "--reverse",
            "--first-parent",
            "--diff-merges=first-parent",
            "--raw",
            "-z",
            "--no-abbrev",
            "--no-renames",
            "--no-show-signature",
            "--format=%x1e%H",
            f"{self.resolve(good)}..{self.resolve(bad)}",
            "--",
        )
        return parse_raw_line(out)

    def read_blob_if_present(self, oid: str) -> bytes | None:
        """A blob's contents, or None where the repository lacks it: a promisor pack's missing blob is
        not fetched (``GIT_NO_LAZY_FETCH=1``), since a reader that goes to the network per blob is worse
        than one that says "unknown"."""
        if self._local_blobs is None:
            self._local_blobs = BlobReader(self.root or self.git_dir, env={"GIT_NO_LAZY_FETCH": "1"})
        return self._local_blobs.read_if_present(oid)

    def renamed_to(self, parent: str, commit: str, path: str) -> str | None:
        out = self.git_bytes("diff", "-z", "--name-status", "-M", parent, commit)
        fields = out.split(b"\0")
        i = 0
        while i < len(fields) - 1:
            status = fields[i].decode()
            if status.startswith("R") and i + 2 < len(fields):
                src = fields[i + 1].decode("utf-8", "surrogateescape")
                dst = fields[i + 2].decode("utf-8", "surrogateescape")
                if src == path:
                    return dst
                i += 3
            elif status.startswith(("C",)):
                i += 3
            else:
                i += 2
        return None

    def diff_text(self, parent: str | None, commit: str, paths: Sequence[str]) -> str:
        base = parent or self.empty_tree
        return self.git("diff", "--no-color", "--unified=3", base, commit, "--", *paths)

    @cached_property
    def empty_tree(self) -> str:
        return self.git("hash-object", "-t", "tree", "--stdin", input=b"").strip()

    # -- work tree ---------------------------------------------------------

    def changed_tracked_files(self) -> list[tuple[str, str]]:
        """(status, path) for tracked files that differ from HEAD (staged or not)."""
        return parse_porcelain(self.git_bytes("status", "--porcelain=v1", "-z", "--untracked-files=no"))

    def spawn_status(self) -> Pending:
        """``git status --porcelain`` started now: every tracked change (staged or not) and every
        untracked file that is not ignored ("??"), one entry per file; parse with
        ``parse_porcelain(pending.bytes())``."""
        return self.spawn("status", "--porcelain=v1", "-z", "--untracked-files=all")

    def spawn_head(self) -> Pending:
        """HEAD's commit line and its symbolic name ("HEAD" when detached), in
        one process; parse with ``parse_head(pending)``."""
        return self.spawn("log", "-1", f"--format={_LOG_FORMAT}%n%D", "HEAD", "--")

    def checkout_detached(self, sha: str) -> None:
        self.git("checkout", "--quiet", "--detach", sha)

    def checkout_branch(self, branch: str) -> None:
        self.git("checkout", "--quiet", branch)

    def worktrees(self) -> list[Path]:
        out = self.git("worktree", "list", "--porcelain")
        return [Path(line[len("worktree ") :]) for line in out.splitlines() if line.startswith("worktree ")]

    def add_worktree(self, path: Path, sha: str) -> None:
        self.git("worktree", "add", "--quiet", "--detach", str(path), sha)

    # -- capture and import-diff -------------------------------------------

    def worktree_changes(self, base: str) -> list[WorktreeChange]:
        """Tracked files whose work tree content or mode differs from ``base`` (staged or not).

        Renames are detected (``-M``) so that capture can name them.
        """
        out = self.git_bytes("diff", "--raw", "-z", "-M", "--no-ext-diff", "--no-textconv", base, "--")
        fields = out.split(b"\0")
        changes: list[WorktreeChange] = []
        i = 0
        while i < len(fields):
            meta = fields[i].decode("ascii", "replace")
            i += 1
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, _old, _new, status = meta[1:].split()
            path = fields[i].decode("utf-8", "surrogateescape")
            i += 1
            renamed_to = None
            if status[0] in "RC":
                renamed_to = fields[i].decode("utf-8", "surrogateescape")
                i += 1
            changes.append(WorktreeChange(status[0], path, old_mode, new_mode, renamed_to))
        return changes

    def untracked_files(self) -> list[str]:
        out = self.git_bytes("ls-files", "-z", "--others", "--exclude-standard")
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def apply_patch(self, patch: Path) -> None:
        """``git apply --index`` in this work tree (raises GitFailed when it does not apply)."""
        self.git("apply", "--index", "--whitespace=nowarn", str(patch))

    def remove_worktree(self, path: Path) -> None:
        self.git("worktree", "remove", "--force", str(path), check=False)
        self.git("worktree", "prune", check=False)


@dataclass(frozen=True)
class WorktreeChange:
    """One path the work tree changed against a commit, as ``git diff --raw`` gives it (capture reads these)."""

    status: str  # M, A, D, R, C, T (git diff --raw)
    path: str
    old_mode: str
    new_mode: str
    renamed_to: str | None = None


def merge_texts(base: str, ours: str, theirs: str, labels: tuple[str, str, str]) -> tuple[str, int]:
    """``git merge-file`` of three texts: (the merged text, with conflict markers where there are
    conflicts; the number of conflicts).  The texts go through a temporary directory (git merges
    files), which is removed; no repository is read or written."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="patchkit-merge-") as tmp:
        names = []
        for name, text in zip(("ours", "base", "theirs"), (ours, base, theirs), strict=True):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
            names.append(name)
        args = ["merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2], *names]
        try:
            proc = subprocess.run(["git", *args], cwd=tmp, capture_output=True, env=_env(), check=False)
        except FileNotFoundError:
            raise RepoError("git is not installed or not on PATH") from None
    if proc.returncode < 0 or proc.returncode > 127:
        raise GitFailed(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "surrogateescape"), proc.returncode


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    """The object id git gives ``data`` as a blob, computed here (no process)."""
    algo = hashlib.sha256 if object_format == "sha256" else hashlib.sha1
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def parent_dirs(path: str) -> list[str]:
    """``a/b/c.py`` -> ``["a", "a/b"]``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def symlinked_parents(repo: Repo, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """For (commit, path) pairs, the parent directory of ``path`` that is a
    symlink in that commit's tree, where there is one.

    Level by level, nearest parent first, one ``cat-file --batch-check`` per
    level: a parent that is a tree ends the search (git resolved every
    directory above it as a tree), a missing one sends it one level up, and a
    blob is a symlink or a file, which one ``ls-tree`` per distinct blob tells.
    Usually one level does it: the nearest parent exists.
    """
    pending = {pair: parent_dirs(pair[1]) for pair in dict.fromkeys(pairs)}
    found: dict[tuple[str, str], str] = {}
    is_link: dict[str, bool] = {}
    while pending:
        queries = [(pair, parents[-1]) for pair, parents in pending.items() if parents]
        if not queries:
            break
        # Targets in one directory ask about one (commit, directory): once.
        asked = list(dict.fromkeys((pair[0], parent) for pair, parent in queries))
        spec = "".join(f"{sha}:{parent}\n" for sha, parent in asked).encode()
        out = run_git(
            ["cat-file", "--buffer", "--batch-check=%(objecttype) %(objectname)"],
            repo.root or repo.git_dir,
            input=spec,
            text=False,
        )
        answers = dict(zip(asked, out.decode("utf-8", "surrogateescape").splitlines(), strict=True))
        for pair, parent in queries:
            kind, _, oid = answers[(pair[0], parent)].partition(" ")
            if kind == "tree":
                del pending[pair]
            elif kind == "blob":
                del pending[pair]
                if oid not in is_link:
                    entry = repo.ls_tree(pair[0], [parent]).get(parent)
                    is_link[oid] = entry is not None and entry.mode == "120000"
                if is_link[oid]:
                    found[pair] = parent
            else:
                pending[pair].pop()  # missing: look one level up
        pending = {pair: parents for pair, parents in pending.items() if parents}
    return found
