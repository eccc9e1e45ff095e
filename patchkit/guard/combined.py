"""``patchkit guard -m M --python PY --site``: the tree and the interpreter's site directories, one verdict.

A pre-benchmark hook wants one call and one exit code: the tree's guard
(``GuardReport``: patches in place, files untouched, clean, PKG imported from
the tree) and ``guard --site`` (``SiteReport``: every file of PY's site
directories against its RECORD) used to be two calls, and a hook that ran one
of them could benchmark on a tampered venv or an unpatched tree.

The exit code is the tree's when the tree fails; otherwise 0 when the site
directories hold no finding, else 1.  With ``--bisect`` a site finding is
128 whatever the tree says: an edited or unowned file in the interpreter is
the setup, never a verdict on the commit (as an interrupted apply is 128 even
at a commit that cannot be patched), so ``git bisect run`` stops instead of
skipping or blaming the commit.

This module is loaded only for that combination: a plain ``guard`` never
imports the site verification.
"""

from __future__ import annotations

from dataclasses import dataclass

from patchkit.errors import ExitCode
from patchkit.guard.report import GuardReport
from patchkit.proof.sitecheck import SiteReport

_VERDICTS = {0: "good", 1: "refused", 125: "skip", 128: "abort"}


@dataclass(frozen=True)
class TreeAndSite:
    """The tree's guard report and the site report of the same interpreter, judged as one."""

    tree: GuardReport
    site: SiteReport
    bisect: bool = False

    @property
    def ok(self) -> bool:
        return self.tree.ok and self.site.ok

    def exit_code(self) -> int:
        if not self.site.ok and self.bisect:
            return int(ExitCode.BISECT_ABORT)
        tree = self.tree.exit_code(bisect=self.bisect)
        if tree:
            return tree
        return int(ExitCode.OK if self.site.ok else ExitCode.REFUSED)

    def verdict(self) -> str:
        return _VERDICTS[self.exit_code()]

    def to_json(self) -> dict[str, object]:
        """The tree's ``guard --json`` with the site's ``guard --site --json`` under ``site``; ``ok``,
        ``verdict`` and ``exit_code`` are the combined ones (``tree_ok``: the tree's alone)."""
        data = self.tree.to_json(bisect=self.bisect)
        return {
            **data,
            "ok": self.ok,
            "tree_ok": self.tree.ok,
            "verdict": self.verdict(),
            "exit_code": self.exit_code(),
            "site": self.site.to_json(),
        }
