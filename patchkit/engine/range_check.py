"""One range check, started in the order that lets git work while Python loads.

A range check's long pole is git walking the history: one ``git log`` lists
the commits of the ranges, a second the target files' changes
(``engine/listing.py``).  ``RangeCheck`` owns the order that hides the rest
behind them:

1. ``start``: open the repository and start listing the ranges (no manifest
   needed yet);
2. ``load``: load the manifest, starting the change log as soon as its
   schema-checked tables name the target files, before the payloads are read
   and the operations imported;
3. ``run``: import the evaluation machinery (meanwhile git has walked) and
   check every selected commit.

So this module is a cold boundary: what ``load`` and ``run`` import is
imported there, after git has started.  A failure to start waits for
``load``: a bad manifest is reported first, as by every command.

Several manifests over one range (``report``) are one ``RangeCheck`` each,
all started on one open repository before any is loaded (``load_all``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from patchkit import paths
from patchkit.engine.listing import Listing, start_listing
from patchkit.errors import PatchkitError
from patchkit.git import Repo

if TYPE_CHECKING:
    from patchkit.engine.check import CheckReport
    from patchkit.manifest import Manifest


class RangeCheck:
    def __init__(
        self, ranges: Sequence[str], repo: Repo | None, listing: Listing | None, failed: PatchkitError | None
    ) -> None:
        self.ranges = list(ranges)
        self.repo = repo
        self.listing = listing
        self.failed = failed  # why ``start`` could not: raised by ``load``, after the manifest's own errors
        self.manifest: Manifest | None = None

    @classmethod
    def start(cls, repo: str | Path | Repo, ranges: Sequence[str]) -> RangeCheck:
        """Open ``repo`` (or take one already open: several checks of one repository) and start git listing
        ``ranges``."""
        try:
            git_repo = repo if isinstance(repo, Repo) else Repo.discover(Path(repo))
        except PatchkitError as exc:
            return cls(ranges, None, None, exc)
        try:
            return cls(ranges, git_repo, start_listing(git_repo, ranges), None)
        except PatchkitError as exc:
            return cls(ranges, git_repo, None, exc)

    def load(self, spec: str) -> Manifest:
        """Load the manifest ``spec``; git starts on its target files as soon as they are known."""
        from patchkit.manifest import bad_manifest_first, load_manifest

        if self.failed is not None:
            with bad_manifest_first(spec):
                raise self.failed
        assert self.repo is not None and self.listing is not None
        repo, listing = self.repo, self.listing
        try:
            # The JSON Schema verdict is remembered per manifest+schema digest, as the guard does.
            self.manifest = load_manifest(
                spec,
                valid_cache=paths.schema_checked(repo.common_dir),
                on_files=lambda files: listing.watch(repo, files),
            )
            listing.watch(repo, self.manifest.files())  # a no-op: the same files
        except BaseException:
            listing.close()
            raise
        return self.manifest

    def close(self) -> None:
        """Reap the git processes of a check that will not run (another step failed); a no-op once it ran."""
        if self.listing is not None:
            self.listing.close()

    def run(
        self,
        *,
        commits: Sequence[str] = (),
        use_cache: bool = True,
        progress: Callable[[int, int], None] | None = None,
        jobs: int | None = None,
    ) -> CheckReport:
        """Every patch at every commit of the ranges and of ``commits`` (HEAD if neither names one)."""
        assert self.repo is not None and self.listing is not None and self.manifest is not None, "load() first"
        try:
            from patchkit.engine.check import check_range
            from patchkit.engine.pool import default_jobs
        except BaseException:
            self.listing.close()
            raise
        return check_range(
            self.manifest,
            self.repo,
            ranges=self.ranges,
            commits=commits,
            use_cache=use_cache,
            progress=progress,
            listing=self.listing,
            jobs=jobs or default_jobs(),
        )


def load_all(checks: Sequence[RangeCheck], specs: Sequence[str]) -> list[Manifest]:
    """Load ``specs[i]`` into ``checks[i]``, in order, after every check has started.

    A bad manifest is reported before a failure to start, whichever of them
    it is, as when each is checked alone; on any failure no git process is
    left running.
    """
    from patchkit.manifest import bad_manifest_first

    try:
        failed = next((c.failed for c in checks if c.failed is not None), None)
        if failed is not None:
            with ExitStack() as first:  # the outermost, the first manifest, reports its errors first
                for spec in specs:
                    first.enter_context(bad_manifest_first(spec))
                raise failed
        return [check.load(spec) for check, spec in zip(checks, specs, strict=True)]
    except BaseException:
        for check in checks:
            check.close()
        raise
