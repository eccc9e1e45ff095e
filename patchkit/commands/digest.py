"""`patchkit digest FILE QUALNAME`: the digest `expect` compares against."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchkit.engine.evaluate import decode
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.operations.base import Outcome
from patchkit.operations.code import CodeState
from patchkit.operations.replace_function import function_digest
from patchkit.sources import CommitSource, FileRead, FileState
from patchkit.views.console import print_json

if TYPE_CHECKING:
    from patchkit.views.console import Console


def digest(*, file: str, qualname: str, repo: str | None, commit: str | None, json_out: bool, console: Console) -> int:
    read = _read(file, repo, commit)
    text, problem = decode(read)
    if problem is not None:
        raise UsageError(problem[2])
    try:
        state = CodeState.parse(file, text or "")
    except SyntaxError as exc:
        raise UsageError(f"{file}:{exc.lineno}: not valid Python: {exc.msg}") from None
    found = function_digest(state, qualname)
    if isinstance(found, Outcome):
        raise UsageError(f"{file}: {found.message}")
    value, line = found
    if json_out:
        print_json(
            {"version": 1, "command": "digest", "file": file, "qualname": qualname, "line": line, "digest": value}
        )
    else:
        console.print(value, markup=False)
    return int(ExitCode.OK)


def _read(file: str, repo: str | None, commit: str | None) -> FileRead:
    if commit is None:
        path = Path(file)
        if repo is not None:
            if not Path(repo).is_dir():
                raise UsageError(f"--repo {repo} is not a directory", hint="pass --repo DIR of the checkout FILE is in")
            path = Path(repo) / file  # FILE is relative to the repository, as with --commit
        if not path.exists():
            raise UsageError(f"{path} does not exist")
        if not path.is_file():
            raise UsageError(f"{path} is not a regular file")
        data = path.read_bytes()
        return FileRead(file, FileState.OK, data)

    with Repo.discover(Path(repo or ".")) as git_repo:
        source = CommitSource(git_repo, git_repo.commit(commit))
        read = source.read(file)
        if read.state is FileState.MISSING:
            raise UsageError(f"{file} does not exist at {source.label}")
        return read
