"""Shared test helpers: real git repositories, manifests on disk, tree hashes, the CLI.

Nothing here mocks git, the filesystem or libcst.  Repositories are built with
``patchkit.demo.history.HistoryBuilder`` (one ``git fast-import``), manifests
and payloads are real files, and the CLI runs in-process through
``patchkit.cli.main`` (or as the installed ``patchkit`` console script).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchkit.demo.history import FileValue, HistoryBuilder

TARGET = "pkg/mod.py"
MANIFEST_NAME = "test"
ANSI_ESCAPE = "\x1b["


# -- repositories -------------------------------------------------------------------


def d(text: str) -> str:
    """Dedented source text (tests write files as indented triple-quoted strings)."""
    return textwrap.dedent(text).lstrip("\n")


def make_repo(
    path: Path, files: Mapping[str, FileValue], *, message: str = "upstream base", bare: bool = False
) -> Path:
    """A git repository at ``path`` with one commit holding ``files``; returns ``path``."""
    builder = HistoryBuilder(path, bare=bare)
    builder.commit("base", message, dict(files))
    builder.build()
    return path


def git_bytes(repo: Path, *args: str) -> bytes:
    """``git ARGS`` in ``repo``, the tests' one way to run git directly (isolated by conftest); its stdout."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo``; its stdout as text, not stripped (porcelain lines start with a space)."""
    return git_bytes(repo, *args).decode("utf-8", "replace")


def head_sha(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def head_content(repo: Path, path: str) -> bytes:
    return git_bytes(repo, "show", f"HEAD:{path}")


def porcelain(repo: Path) -> list[str]:
    """``git status --porcelain --untracked-files=all`` lines (nothing ignored is hidden from us)."""
    out = git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored")
    return [line for line in out.splitlines() if line]


# -- hashing trees ----------------------------------------------------------------------


def tree_state(root: Path, *, include_git: bool = False) -> dict[str, tuple[str, int, bool]]:
    """path -> (sha256 of content or link target, permission bits, is_symlink), for every file under root."""
    out: dict[str, tuple[str, int, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if not include_git and rel_dir.parts[:1] == (".git",):
            continue
        if not include_git and ".git" in dirnames and rel_dir == Path("."):
            dirnames.remove(".git")
        for name in sorted(filenames) + sorted(d for d in dirnames if (Path(dirpath) / d).is_symlink()):
            full = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            info = full.lstat()
            if full.is_symlink():
                out[rel] = (hashlib.sha256(os.readlink(full).encode()).hexdigest(), info.st_mode & 0o7777, True)
            else:
                out[rel] = (hashlib.sha256(full.read_bytes()).hexdigest(), info.st_mode & 0o7777, False)
    return out


def temp_leftovers(root: Path) -> list[str]:
    """Files anywhere under root (the git dir included) that look like patchkit temp files."""
    found = []
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".patchkit-tmp") or ".patchkit-tmp" in name:
                found.append(os.path.join(dirpath, name))
    return found


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- manifests ------------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # A JSON string is a valid TOML basic string for everything we write.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def manifest_text(
    patches: Sequence[Mapping[str, Any]],
    *,
    name: str = MANIFEST_NAME,
    schema: Any = 1,
    summary: str | None = "test manifest",
) -> str:
    lines = [f"schema = {toml_value(schema)}", f"name = {toml_value(name)}"]
    if summary is not None:
        lines.append(f"summary = {toml_value(summary)}")
    for patch in patches:
        lines.append("")
        lines.append("[[patch]]")
        for key, value in patch.items():
            lines.append(f"{key} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


@dataclass
class Kit:
    """A directory laid out like a patch project: manifests/NAME.toml and patches/*.py."""

    root: Path
    name: str = MANIFEST_NAME

    @property
    def manifest(self) -> Path:
        return self.root / "manifests" / f"{self.name}.toml"

    def payload_path(self, name: str) -> Path:
        return self.root / "patches" / name

    def write(
        self,
        patches: Sequence[Mapping[str, Any]] | None = None,
        payloads: Mapping[str, str] | None = None,
        *,
        text: str | None = None,
        **kwargs: Any,
    ) -> Path:
        """Write the manifest (from ``patches`` or raw ``text``) and payload files; returns the manifest path."""
        self.manifest.parent.mkdir(parents=True, exist_ok=True)
        for fname, content in (payloads or {}).items():
            path = self.payload_path(fname)
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        if text is None:
            kwargs.setdefault("name", self.name)
            text = manifest_text(patches or [], **kwargs)
        self.manifest.write_text(text, encoding="utf-8")
        return self.manifest


def src(payload: str) -> str:
    """The `source` value for a payload in the kit's patches/ directory."""
    return f"../patches/{payload}"


# -- the CLI ----------------------------------------------------------------------------------


@dataclass
class CliResult:
    code: int
    out: str
    err: str
    data: Any = field(default=None)

    @property
    def json(self) -> Any:
        if self.data is None:
            self.data = json.loads(self.out)
        return self.data


def run_cli(capsys: Any, *argv: str | Path) -> CliResult:
    """Run ``patchkit ARGV`` in-process; stdout and stderr captured by pytest's capsys."""
    from patchkit.cli import main

    capsys.readouterr()  # drop anything printed before
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def patchkit_script() -> str:
    """The installed console script (next to this interpreter), not a shell shim."""
    candidate = Path(sys.executable).parent / "patchkit"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("patchkit")
    if found is None:
        raise RuntimeError("the patchkit console script is not installed")
    return found


def run_script(*argv: str | Path, cwd: Path | None = None) -> CliResult:
    """Run the ``patchkit`` console script as a real subprocess."""
    env = dict(os.environ)
    env.pop("PYTHONBREAKPOINT", None)
    proc = subprocess.run(
        [patchkit_script(), *(str(a) for a in argv)], cwd=cwd, capture_output=True, env=env, stdin=subprocess.DEVNULL
    )
    return CliResult(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def run_killed(phase: str | None, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the console script; with ``phase``, it dies there (``os._exit(137)``, as ``kill -9`` would):
    ``PATCHKIT_TEST_CRASH_AT`` is the transaction's test hook (``patchkit.engine.transaction.crash_point``)."""
    env = dict(os.environ)
    env.pop("PATCHKIT_TEST_CRASH_AT", None)
    if phase is not None:
        env["PATCHKIT_TEST_CRASH_AT"] = phase
    return subprocess.run(
        [patchkit_script(), *(str(a) for a in argv)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )


# -- one-file scenarios ---------------------------------------------------------------------------


@dataclass
class Scenario:
    repo: Path
    kit: Kit
    path: str = TARGET

    def file(self, path: str | None = None) -> Path:
        return self.repo / (path or self.path)

    def text(self, path: str | None = None) -> str:
        return self.file(path).read_bytes().decode("utf-8")

    def apply(self, capsys: Any, *extra: str) -> CliResult:
        return run_cli(capsys, "apply", "-m", self.kit.manifest, "--repo", self.repo, "--json", *extra)


def scenario(
    tmp_path: Path,
    files: Mapping[str, FileValue],
    patches: Sequence[Mapping[str, Any]],
    payloads: Mapping[str, str] | None = None,
    *,
    path: str = TARGET,
) -> Scenario:
    repo = make_repo(tmp_path / "repo", files)
    kit = Kit(tmp_path / "kit")
    kit.write(patches, payloads)
    return Scenario(repo, kit, path)


def result_of(data: Mapping[str, Any], patch_id: str) -> dict[str, Any]:
    for result in data["results"]:
        if result["patch"] == patch_id:
            return result
    raise KeyError(f"no result for {patch_id!r} in {[r['patch'] for r in data['results']]}")


def verdicts(data: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(r["patch"], r["status"], r["reason"]) for r in data["results"]]


def rich_off_terminal(stream: Any) -> Any:
    """rich's own Console, set up as patchkit's consoles are off a terminal (no colour, no markup,
    unwrapped): the reference that patchkit's rich-free output is held to."""
    from rich.console import Console

    from patchkit.views.console import UNWRAPPED_WIDTH

    return Console(
        file=stream,
        width=UNWRAPPED_WIDTH,
        soft_wrap=True,
        color_system=None,
        highlight=False,
        emoji=False,
        markup=False,
    )


def documented_pages() -> list[Path]:
    """README.md, then every page of the documentation site (``docs/**/*.md``), in a fixed order."""
    root = Path(__file__).resolve().parents[1]
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def readme_commands() -> list[tuple[list[str], list[str]]]:
    """(argv after `patchkit`, output lines) for every fenced block that starts with `$ patchkit`, in the
    README and the documentation pages (``documented_pages``), the README's first."""
    import shlex

    text = "\n".join(page.read_text(encoding="utf-8") for page in documented_pages())
    out = []
    block: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            if block is None:
                block = []
                continue
            if block and block[0].startswith("$ patchkit "):
                out.append((shlex.split(block[0])[2:], block[1:]))
            block = None
        elif block is not None:
            block.append(line)
    return out


@contextmanager
def lock_held(repo: Path) -> Iterator[None]:
    """Another process holds ``repo``'s patchkit lock (a real flock, as a second patchkit would) while inside."""
    state = repo / ".git" / "patchkit"
    state.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(30)", str(state / "lock")],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        yield
    finally:
        holder.kill()
        holder.wait()
