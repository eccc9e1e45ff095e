"""`patchkit guard`: may a benchmark number be produced from this tree?

A thin verb over ``patchkit.guard.evaluate_guard``: it prints the report
(the per-patch table as ``status`` shows it, then every check) or its JSON,
and returns the report's exit code (0/1; with ``--bisect`` 0/125/128).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from patchkit.errors import BisectAbortError, PatchkitError, UsageError
from patchkit.guard.api import evaluate_guard, require_python_for_imports
from patchkit.views.console import print_json
from patchkit.views.guard import show, tree_and_site_verdict

if TYPE_CHECKING:
    from patchkit.views.console import Console


def guard(
    *,
    manifest: str | None,
    repo: str,
    python: str | None,
    imports: Sequence[str],
    allow_dirty: bool,
    strict: bool,
    bisect: bool,
    json_out: bool,
    console: Console,
    site: bool = False,
    no_cache: bool = False,
) -> int:
    if site and manifest is None:
        if imports:
            raise UsageError("--import checks the tree: it needs -m M", hint="add -m M, or drop --import")
        from patchkit.commands.guard_site import guard_site  # the site verification: only --site loads it

        return guard_site(python=python, no_cache=no_cache, json_out=json_out, console=console)
    if site:
        return _tree_and_site(
            manifest=str(manifest),
            repo=repo,
            python=python,
            imports=imports,
            allow_dirty=allow_dirty,
            strict=strict,
            bisect=bisect,
            no_cache=no_cache,
            json_out=json_out,
            console=console,
        )
    if manifest is None:
        raise UsageError("Missing option '-m' / '--manifest'", hint="name the manifest, or use --python PY --site")
    if no_cache:
        raise UsageError("--no-cache needs --site", hint="add --site --python PY")
    with bisect_errors(bisect):
        require_python_for_imports(python, imports)
        report = evaluate_guard(
            repo, manifest, python=python, imports=imports, allow_dirty=allow_dirty, strict=strict, bisect=bisect
        )
    if json_out:
        print_json(report.to_json(bisect=bisect))
    else:
        show(report, console, bisect=bisect)
    return report.exit_code(bisect=bisect)


def _tree_and_site(
    *,
    manifest: str,
    repo: str,
    python: str | None,
    imports: Sequence[str],
    allow_dirty: bool,
    strict: bool,
    bisect: bool,
    no_cache: bool,
    json_out: bool,
    console: Console,
) -> int:
    """``guard -m M --python PY --site``: both reports, one verdict and one exit code (``guard.combined``)."""
    from patchkit.commands.guard_site import show_site
    from patchkit.guard.combined import TreeAndSite
    from patchkit.proof.sitecheck import check_site

    if python is None:
        raise UsageError("--site needs --python PY", hint="name the interpreter the server runs with")
    with bisect_errors(bisect):
        report = evaluate_guard(
            repo, manifest, python=python, imports=imports, allow_dirty=allow_dirty, strict=strict, bisect=bisect
        )
        both = TreeAndSite(report, check_site(python, use_cache=not no_cache), bisect)
    if json_out:
        print_json(both.to_json())
    else:
        show(report, console, bisect=bisect, final=False)
        console.print()
        show_site(both.site, console, final=False)
        line, style = tree_and_site_verdict(both)
        console.print(line, style=style, markup=False)
    return both.exit_code()


@contextmanager
def bisect_errors(bisect: bool) -> Iterator[None]:
    """Under --bisect, turn any patchkit error into exit 128 (stop the bisect)."""
    try:
        yield
    except BisectAbortError:
        raise
    except PatchkitError as exc:
        if not bisect:
            raise
        raise BisectAbortError.wrap(exc) from None
