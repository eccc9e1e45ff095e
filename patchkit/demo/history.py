"""Build real git repositories with deterministic histories, fast.

One ``commit()`` per step, as asv's test tools do, with branches and merges;
the whole history is fed to ``git fast-import`` in one go, so thousands of
commits take seconds.  Identity and dates are fixed, so every build of the
same history gives the same commit ids.

This is runtime code, not test tooling: ``patchkit demo`` builds its
SGLang-shaped upstream with it (``patchkit.demo.sglang``), on the user's
machine, from an installed wheel.  The test suite and the benchmarks use the
same builder, so what the demo shows is what the tests check.  Test-only
helpers (repositories from one dict of files, manifests on disk, the CLI
in-process) live in ``tests/helpers.py``, outside the package.

``git_isolation()`` is the one definition of an isolated git environment (no
user or system config, a fixed identity): the builder's own git processes
run in it, and the test suite's conftest installs the same variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from patchkit.git import git_environment, run_git

AUTHOR = ("Upstream Dev", "dev@upstream.invalid")


@dataclass(frozen=True)
class Symlink:
    """A file value that makes the path a symbolic link to ``target`` (mode 120000)."""

    target: str


@dataclass(frozen=True)
class Executable:
    """A file value that writes ``content`` with the executable bit set (mode 100755)."""

    content: str | bytes


FileValue = str | bytes | Symlink | Executable | None  # None deletes


GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
"""Variables that would point git at another repository, index or work tree."""


def git_isolation(home: Path | None = None) -> dict[str, str]:
    """The variables that make git ignore the user's and the system's config and commit as ``AUTHOR``."""
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": AUTHOR[0],
        "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0],
        "GIT_COMMITTER_EMAIL": AUTHOR[1],
        "LC_ALL": "C",
    }
    if home is not None:
        env["HOME"] = str(home)
    return env


def git_env(home: Path | None = None) -> dict[str, str]:
    """This process's environment as ``patchkit.git`` lets git see it, isolated as ``git_isolation``
    says: for a subprocess that runs git or patchkit (the benchmarks' runs)."""
    env = git_environment()
    env.update(git_isolation(home))
    return env


@dataclass
class _Commit:
    """One commit as ``build`` feeds it to ``git fast-import``: the files it changes (``None`` deletes) against its
    first parent, its identity and date, and the labels of the commit a branch starts from and of those it merges."""

    label: str
    branch: str
    message: str
    files: Mapping[str, FileValue]
    when: datetime
    author: tuple[str, str]
    parent: str | None  # label to start the branch from (first commit on a branch)
    merges: tuple[str, ...]


@dataclass
class History:
    """Commit ids by label, after ``HistoryBuilder.build``."""

    path: Path
    shas: dict[str, str]
    order: list[str]  # labels in the order they were committed

    def __getitem__(self, label: str) -> str:
        return self.shas[label]

    def label_of(self, sha: str) -> str:
        for label, value in self.shas.items():
            if value == sha:
                return label
        raise KeyError(sha)


@dataclass
class HistoryBuilder:
    """Collects commits, branches, merges and tags by label, then writes the whole history with one
    ``git fast-import`` (``build``); identity and dates are fixed, so the same steps give the same commit ids."""

    path: Path
    branch: str = "main"
    start: datetime = field(default_factory=lambda: datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    step: timedelta = timedelta(hours=3)
    bare: bool = False
    _commits: list[_Commit] = field(default_factory=list)
    _branch_start: dict[str, str | None] = field(default_factory=dict)
    _tags: dict[str, str] = field(default_factory=dict)
    _clock: datetime | None = None
    _trees: dict[str, dict[str, FileValue]] = field(default_factory=dict)
    _ancestors: dict[str, set[str]] = field(default_factory=dict)
    _tips: dict[str, str] = field(default_factory=dict)

    def commit(
        self,
        label: str,
        message: str,
        files: Mapping[str, FileValue],
        *,
        branch: str | None = None,
        merge: str | tuple[str, ...] = (),
        when: datetime | None = None,
        author: tuple[str, str] = AUTHOR,
    ) -> str:
        """Add a commit; ``label`` names it in the built ``History``."""
        if any(c.label == label for c in self._commits):
            raise ValueError(f"duplicate commit label {label!r}")
        branch = branch or self.branch
        if when is None:
            self._clock = (self._clock + self.step) if self._clock else self.start
            when = self._clock
        else:
            self._clock = when
        explicit = branch in self._branch_start
        start = self._branch_start.pop(branch, None)
        first = start if explicit else self._tips.get(branch)
        merges = (merge,) if isinstance(merge, str) else tuple(merge)
        tree = dict(self._trees[first]) if first else {}
        for other in merges:
            # A file-level three-way merge: take the other side's version of
            # every path it changed since the merge base.  ``files`` then
            # settles anything both sides changed.
            base = self._merge_base(first, other) if first else None
            base_tree = self._trees[base] if base else {}
            theirs = self._trees[other]
            for path in set(theirs) | set(base_tree):
                if theirs.get(path) != base_tree.get(path):
                    tree[path] = theirs.get(path)
        tree.update(files)
        tree = {k: v for k, v in tree.items() if v is not None}
        before = self._trees[first] if first else {}
        ops: dict[str, FileValue] = {p: tree[p] for p in tree if before.get(p) != tree[p]}
        ops.update({p: None for p in before if p not in tree})
        self._trees[label] = tree
        self._ancestors[label] = {label}.union(*(self._ancestors[p] for p in (first, *merges) if p is not None))
        self._tips[branch] = label
        self._commits.append(_Commit(label, branch, message, ops, when, author, start if explicit else None, merges))
        return label

    def _merge_base(self, a: str, b: str) -> str | None:
        common = self._ancestors[a] & self._ancestors[b]
        if not common:
            return None
        order = {c.label: i for i, c in enumerate(self._commits)}
        return max(common, key=order.__getitem__)

    def tree(self, label: str) -> dict[str, FileValue]:
        """The files at a commit, as the builder will write them."""
        return dict(self._trees[label])

    def start_branch(self, name: str, at: str) -> None:
        """The next commit on ``name`` has the commit labelled ``at`` as its parent."""
        self._branch_start[name] = at

    def tag(self, name: str, at: str) -> None:
        self._tags[name] = at

    def build(self, checkout: str | None = None) -> History:
        self.path.mkdir(parents=True, exist_ok=True)
        env = git_isolation()
        init = ["init", "-q", "-b", self.branch]
        if self.bare:
            init.append("--bare")
        run_git([*init, str(self.path)], self.path, env=env)
        marks = {c.label: i for i, c in enumerate(self._commits, start=1)}
        stream = bytearray()
        for c in self._commits:
            stamp = f"{int(c.when.timestamp())} +0000"
            msg = c.message.encode()
            stream += f"commit refs/heads/{c.branch}\nmark :{marks[c.label]}\n".encode()
            stream += f"author {c.author[0]} <{c.author[1]}> {stamp}\n".encode()
            stream += f"committer {c.author[0]} <{c.author[1]}> {stamp}\n".encode()
            stream += b"data %d\n" % len(msg) + msg + b"\n"
            if c.parent is not None:
                stream += f"from :{marks[c.parent]}\n".encode()
            for other in c.merges:
                stream += f"merge :{marks[other]}\n".encode()
            for path, value in c.files.items():
                if value is None:
                    stream += f"D {path}\n".encode()
                    continue
                mode = "100644"
                if isinstance(value, Symlink):
                    mode, value = "120000", value.target
                elif isinstance(value, Executable):
                    mode, value = "100755", value.content
                data = value.encode() if isinstance(value, str) else value
                stream += f"M {mode} inline {path}\n".encode() + b"data %d\n" % len(data) + data + b"\n"
            stream += b"\n"
        for name, label in self._tags.items():
            stream += f"reset refs/tags/{name}\nfrom :{marks[label]}\n\n".encode()
        marks_file = self.path / ("marks" if self.bare else ".git/patchkit-test-marks")
        run_git(
            ["fast-import", "--quiet", "--done", f"--export-marks={marks_file}"],
            self.path,
            input=bytes(stream) + b"done\n",
            env=env,
        )
        by_mark = {}
        for line in marks_file.read_text().splitlines():
            mark, sha = line.split()
            by_mark[int(mark[1:])] = sha
        marks_file.unlink()
        shas = {label: by_mark[mark] for label, mark in marks.items()}
        if not self.bare:
            target = checkout or self.branch
            run_git(["checkout", "-q", "-f", target], self.path, env=env)
        return History(self.path, shas, [c.label for c in self._commits])
