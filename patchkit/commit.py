"""``Commit``: a commit as reports name it, a plain frozen value.

Why apart from ``patchkit.git`` (which re-exports it, the public path): git.py runs git
processes; the statistics (``bench.stats``) and the records name commits without loading any
of that, so the value type sits in a module that imports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Commit:
    """A commit as reports name it: id, parents, author, author date and subject."""

    sha: str
    parents: tuple[str, ...]
    author: str
    date: str  # author date, ISO 8601
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]

    def to_json(self) -> dict[str, str]:
        return {"commit": self.sha, "subject": self.subject, "author": self.author, "date": self.date}
