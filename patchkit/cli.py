"""The command line.  click lives here and nowhere else.

Each verb parses its options and calls ``patchkit.commands.<verb>`` with
plain keyword arguments; ``main`` maps exceptions to exit codes in one place.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from patchkit import __version__
from patchkit.errors import ExitCode
from patchkit.exit_docs import EXIT_CODES_HELP, verb_epilog
from patchkit.written import Written

if TYPE_CHECKING:
    from patchkit.views.console import Console

F = TypeVar("F", bound=Callable[..., object])  # a click command function, as each option decorator returns it

_DEBUG = False

MANIFEST_HELP = (
    "Manifest: a path to a .toml file, or a NAME found as manifests/NAME.toml "
    "(in the current directory, then among the manifests that come with patchkit)."
)
REPO_HELP = "The upstream git checkout to work on (default: current directory)."


def _console() -> Console:
    from patchkit.views.console import make_console

    return make_console()


def _written() -> Written:
    """This invocation's sink for the paths a verb writes whole (``main`` puts it in click's root context
    object): what ``_interrupted`` names when Ctrl-C comes."""
    root = click.get_current_context().find_root()
    if not isinstance(root.obj, Written):
        root.obj = Written()
    return root.obj


def manifest_option(f: F) -> F:
    return click.option("-m", "--manifest", required=True, metavar="MANIFEST", help=MANIFEST_HELP)(f)


def repo_option(f: F) -> F:
    return click.option("--repo", default=".", show_default=True, metavar="DIR", help=REPO_HELP)(f)


def json_option(f: F) -> F:
    return click.option("--json", "json_out", is_flag=True, help="Print one JSON object (see docs/json.md).")(f)


def no_json_option(why: str, instead: str) -> Callable[[F], F]:
    """``--json`` on a verb that prints no JSON object (``run``, ``demo``): bad input (exit 2) that says why and
    what prints the JSON the user may want, rather than click's bare "no such option".  Hidden from --help,
    whose text says the verb has no --json."""

    def refuse(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if value:
            from patchkit.errors import UsageError

            raise UsageError(f"{ctx.command_path} has no --json: {why}", hint=instead)
        return value

    def decorate(f: F) -> F:
        return click.option(
            "--json", "no_json", is_flag=True, hidden=True, expose_value=False, callback=refuse, is_eager=True
        )(f)

    return decorate


def wait_option(f: F) -> F:
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=0.0,
        metavar="SECONDS",
        help="If another patchkit holds the repository lock, wait this long before giving up (exit 4).",
    )(f)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="patchkit")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.option("--no-color", is_flag=True, help="No colours (also: NO_COLOR=1; off anyway when not a TTY).")
def cli(debug: bool, no_color: bool) -> None:
    """Keep local patches on a moving upstream as declarative libcst codemods.

    For every patch in a manifest, patchkit says APPLY, SKIP, WARN or FAIL with
    a reason code, file and line; it writes all changed files or none.
    """
    global _DEBUG
    _DEBUG = debug
    if no_color:
        from patchkit.views.console import disable_color

        disable_color()


@cli.command(epilog=verb_epilog("apply"))
@manifest_option
@repo_option
@click.option(
    "--commit",
    metavar="REV",
    help="Move the tree to REV first (detached; patchkit's own edits are "
    "reverted and re-applied; other uncommitted changes refuse), or with --worktree patch a linked worktree.",
)
@click.option(
    "--worktree",
    metavar="DIR",
    help="With --commit: create or reuse a linked worktree at DIR and patch it, leaving the main tree alone.",
)
@click.option("--dry-run", is_flag=True, help="Compute everything, write nothing.")
@click.option("--diff", is_flag=True, help="Also print the unified diff of what is (or would be) written.")
@json_option
@click.option("--strict", is_flag=True, help="Treat WARN (optional patches that cannot apply) as failure.")
@wait_option
def apply(**kwargs: Any) -> int:
    """Apply a manifest to a work tree: all of it, or nothing."""
    from patchkit.commands.apply import apply as run

    return run(console=_console(), written=_written(), **kwargs)


@cli.command(epilog=verb_epilog("revert"))
@manifest_option
@repo_option
@click.option("--force", is_flag=True, help="Restore files even if they were edited after patching.")
@json_option
@wait_option
def revert(**kwargs: Any) -> int:
    """Restore the files patchkit wrote for a manifest.

    Each goes back to HEAD, or to what it held before if it had local edits.
    """
    from patchkit.commands.revert import revert as run

    return run(console=_console(), written=_written(), **kwargs)


@cli.command(epilog=verb_epilog("status"))
@manifest_option
@repo_option
@json_option
def status(**kwargs: Any) -> int:
    """Show, per patch, whether it is in the work tree now. Exit 0 only if every required patch is in place."""
    from patchkit.commands.status import status as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("check"))
@manifest_option
@repo_option
@click.option(
    "--range",
    "ranges",
    multiple=True,
    metavar="A..B",
    help="Commits as `git rev-list A..B` lists them (merges included). Repeatable.",
)
@click.option("--commit", "commits", multiple=True, metavar="REV", help="A single commit to check. Repeatable.")
@json_option
@click.option("--no-cache", is_flag=True, help="Ignore and do not update the verdict cache in the git dir.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a TTY for long ranges).")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Processes that analyse uncached file versions (default: every core). Results do not depend on N.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json", "github", "gitlab"]),
    default="table",
    show_default=True,
    help="What stdout carries: the table; the --json object; GitHub Actions workflow commands (an annotation "
    "per failing patch); a GitLab Code Quality report. Exit codes stay the same.",
)
@click.option(
    "--junit",
    metavar="FILE",
    default=None,
    help="Also write JUnit XML to FILE (atomically): a test case per patch and window of equal verdicts.",
)
@click.option(
    "--since",
    metavar="REV",
    default=None,
    help="Check REV..TIP (TIP: --commit, default HEAD; REV an ancestor, e.g. the last run's tip) and print only "
    "the patches whose verdict changed, each with the upstream commit that changed it. Exit 1 only when a "
    "required patch newly FAILs.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Count WARN (an optional patch that cannot apply) as failing: exit 1, a JUnit failure, a GitHub error.",
)
def check(**kwargs: Any) -> int:
    """Check every patch at every commit of a range, without checking anything out.

    Prints, per patch, windows of commits with one verdict; per [[group]], which
    variants cover which commits. Without --range or --commit, checks HEAD.
    For CI (docs/howto/ci.md): --junit FILE, --format github|gitlab, --since REV.
    """
    from patchkit.commands.check import check as run

    table = not kwargs["json_out"] and kwargs["output_format"] == "table"
    return run(console=_console() if table else None, **kwargs)


@cli.command(epilog=verb_epilog("explain"))
@manifest_option
@click.argument("patch_id")
@repo_option
@click.option("--commit", default="HEAD", show_default=True, metavar="REV", help="The commit where it fails.")
@json_option
def explain(**kwargs: Any) -> int:
    """Name the upstream commit that made PATCH_ID stop applying, with the hunk that did it."""
    from patchkit.commands.explain import explain as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("port"))
@manifest_option
@repo_option
@click.option("--to", required=True, metavar="REV", help="The upstream commit to carry the manifest to.")
@click.option(
    "--from",
    "start",
    default=None,
    metavar="REV",
    help="Start the walk here (an ancestor of --to where the manifest applies; "
    "default: the newest first-parent ancestor of --to where it does).",
)
@click.option("--dry-run", is_flag=True, help="Print the unified diff of the manifest and payloads; write nothing.")
@click.option(
    "--drop-upstreamed",
    is_flag=True,
    help="Remove the patches upstream took from the manifest (with their subtables and comments). When it took "
    "every patch, the manifest is retired instead: left as it is.",
)
@json_option
def port(**kwargs: Any) -> int:
    """Carry a manifest forward to commit REV: follow moved functions and renamed classes, merge upstream's edits
    into payloads, report what upstream took.

    Walks the first-parent commits from a commit where the manifest applies to REV, stopping where a target
    file changed. All or nothing: if a required patch cannot be carried (an overlap with upstream's edit is
    shown, both sides), exit 1 and nothing is written. After writing, checks the manifest at REV. A manifest
    found by NAME outside the current directory (patchkit's own) is never rewritten: the ported copy is
    written to ./manifests/ and ./patches/, where -m NAME finds it from then on. When upstream has every patch
    at REV, the manifest is retired there: nothing is written, and port says since which commit, and what to do
    with the file.
    """
    from patchkit.commands.port import port as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("digest"))
@click.argument("file")
@click.argument("qualname")
@click.option(
    "--repo",
    default=None,
    metavar="DIR",
    help="The repository; FILE is relative to it (default: FILE as given, and . with --commit).",
)
@click.option(
    "--commit", default=None, metavar="REV", help="Read FILE (repo-relative) at this commit instead of from disk."
)
@json_option
def digest(**kwargs: Any) -> int:
    """Print the digest of a function, method (Class.method) or class, for `expect`."""
    from patchkit.commands.digest import digest as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("validate"))
@manifest_option
@click.option(
    "--repo",
    default=None,
    metavar="DIR",
    help="Also read the target files in this work tree, so warnings that depend on them "
    "(where a payload's strings land) use the real ones.",
)
@json_option
def validate(**kwargs: Any) -> int:
    """Load a manifest (schema, payloads, references) and list its patches."""
    from patchkit.commands.validate import validate as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("demo"))
@click.option("--keep", metavar="DIR", help="Build the demo in DIR (must not exist) and keep its repo and store.")
@no_json_option(
    "it is a walkthrough for a person",
    "run it with --keep DIR, then the verbs it names, each with --json, on what it kept",
)
def demo(**kwargs: Any) -> int:
    """Replay a regression hunt on a small SGLang-shaped upstream: check, apply, bench, compare, bisect.

    It prints for a person and has no --json: with --keep DIR, each verb it shows takes --json on what it kept.
    """
    from patchkit.commands.demo import demo as run

    return run(console=_console(), **kwargs)


def guard_options(f: F) -> F:
    """The options `guard` and `run` share (applied bottom-up: listed in this order in --help)."""
    options = [
        click.option(
            "--python",
            metavar="PY",
            help="The interpreter the server runs with; probed in this environment and working directory.",
        ),
        click.option(
            "--import",
            "imports",
            multiple=True,
            metavar="PKG",
            help="With --python: PKG must resolve inside this tree (found without importing it). Repeatable.",
        ),
        click.option(
            "--allow-dirty", is_flag=True, help="Changes outside patchkit's edits are a warning, not a failure."
        ),
        click.option("--strict", is_flag=True, help="Optional patches not in place fail too."),
        click.option(
            "--bisect",
            is_flag=True,
            help="For `git bisect run`: exit 125 when this commit cannot be patched, 128 when the setup is wrong.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@cli.command(epilog=verb_epilog("guard"))
@click.option(
    "-m", "--manifest", default=None, metavar="MANIFEST", help=MANIFEST_HELP + " Not needed with --site alone."
)
@repo_option
@guard_options
@click.option(
    "--site",
    is_flag=True,
    help="With --python: verify every distribution of PY's site directories against its RECORD; "
    "list unowned .py/.pth/sitecustomize files and editable installs. With -m too: the tree and the site "
    "directories, one verdict and one exit code.",
)
@click.option("--no-cache", is_flag=True, help="With --site: hash every file (no stat cache).")
@json_option
def guard(**kwargs: Any) -> int:
    """Refuse to benchmark an untrusted tree: exit 0 only if every check holds.

    Checks: HEAD is a commit; every required patch is in place (the table of
    `status`); the files patchkit wrote are unchanged and were written by this
    version of the manifest; no other change or untracked file; with --python
    and --import, the interpreter imports each PKG from this tree. Every
    failed check is listed, with what to do.

    With --site (no manifest needed): every file of PY's site directories is
    checked against the RECORD of its distribution; an edited or missing file,
    a .py/.pth/sitecustomize owned by none, or an uncommitted change in an
    editable install's checkout exits 1, naming each file.

    With -m M --python PY --site: both in one call, one verdict and one exit
    code (the tree's when it fails; else 1 for a site finding; with --bisect
    a site finding is 128: the setup, not the commit).
    """
    from patchkit.commands.guard import guard as run_guard

    return run_guard(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("run"), context_settings={"allow_interspersed_args": False})
@manifest_option
@repo_option
@click.option("--apply", "apply", is_flag=True, help="Apply the manifest at HEAD first; reverted when CMD exits.")
@click.option("--keep", is_flag=True, help="With --apply: keep the edits after CMD exits.")
@guard_options
@click.option(
    "--probe",
    is_flag=True,
    help="Run the probe in every Python process CMD starts and sample the NCCL/CUDA libraries they map; "
    "when CMD exits (and the processes it left running, up to 5 s more), account for every file that ran "
    "and check the manifest's [bench].env at "
    "init_process_group (a STRAY or a wrong value exits 1); with NCCL_DEBUG=INFO, CMD's output passes "
    "through patchkit and NCCL's own lines are read.",
)
@click.option(
    "--probe-dir", default=None, metavar="DIR", help="With --probe: keep the probe's per-process files in DIR."
)
@click.option(
    "--allow-stray", multiple=True, metavar="GLOB", help="With --probe: a STRAY matching GLOB is accepted. Repeatable."
)
@no_json_option(
    "stdout is CMD's own output, passed through",
    "`patchkit guard --json` prints the guard's verdict as JSON; CMD can print its own",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
def run(**kwargs: Any) -> int:
    """Guard the tree, then run CMD in it, passing its output and exit code through.

    CMD runs in the directory --repo names (default: the current
    directory), whatever directory patchkit was started from: a relative
    ./bench.sh is found there, and `sh -c 'pwd; git status'` sees that tree.
    CMD gets PATCHKIT_COMMIT, PATCHKIT_MANIFEST, PATCHKIT_MANIFEST_DIGEST and
    PATCHKIT_GUARD=ok in its environment. If the guard fails, CMD never starts.
    What --apply wrote is reverted when CMD exits (also on Ctrl-C), so
    `git bisect run patchkit run -m M --apply --bisect -- ./bench.sh` is a
    complete patched bisect. patchkit's own lines go to stderr, and it has no
    --json: stdout is CMD's (`patchkit guard --json` gives the verdict).
    """
    from patchkit.commands.run import run as run_cmd
    from patchkit.views.console import make_console

    return run_cmd(console=make_console(sys.stderr), **kwargs)


@cli.command(epilog=verb_epilog("capture"))
@click.option("--repo", default=".", show_default=True, metavar="DIR", help="The edited git checkout to capture.")
@click.option(
    "--name", required=True, metavar="NAME", help="Manifest name: writes manifests/NAME.toml and patches/NAME/."
)
@click.option(
    "--base", default=None, metavar="REV", help="The upstream commit the edits are on top of (default: HEAD)."
)
@click.option(
    "--out", default=None, metavar="DIR", help="Where manifests/ and patches/ go (default: current directory)."
)
@click.option("--force", is_flag=True, help="Replace an existing capture of the same NAME in --out.")
@json_option
def capture(**kwargs: Any) -> int:
    """Turn a hand-edited work tree into a manifest and payloads that reproduce it exactly.

    Structured ops where a change fits one, a zero-fuzz `diff` op where none
    does; verified at the base before anything is written.
    """
    from patchkit.commands.capture import capture as run

    return run(console=_console(), written=_written(), **kwargs)


@cli.command("import-diff", epilog=verb_epilog("import-diff"))
@click.argument("patch_file", metavar="FILE.patch")
@click.option("--repo", default=".", show_default=True, metavar="DIR", help="The upstream git checkout (not touched).")
@click.option(
    "--name", required=True, metavar="NAME", help="Manifest name: writes manifests/NAME.toml and patches/NAME/."
)
@click.option("--base", default=None, metavar="REV", help="The commit the patch applies to (default: HEAD).")
@click.option(
    "--out", default=None, metavar="DIR", help="Where manifests/ and patches/ go (default: current directory)."
)
@click.option("--force", is_flag=True, help="Replace an existing capture of the same NAME in --out.")
@json_option
def import_diff(**kwargs: Any) -> int:
    """Capture a .patch / git diff file: applied at the base in a temporary worktree, then captured.

    Your work tree is never touched.
    """
    from patchkit.commands.import_diff import import_diff as run

    return run(console=_console(), written=_written(), **kwargs)


STORE_HELP = (
    "The bench store (SQLite). Default: <git-common-dir>/patchkit/bench.sqlite. "
    "Run logs stay under <git-common-dir>/patchkit/bench-runs/ whatever the store."
)


def store_option(f: F) -> F:
    return click.option("--store", default=None, metavar="FILE", help=STORE_HELP)(f)


def bench_options(f: F) -> F:
    """The options bench and bisect share: manifests, repo, --repeat, --set, --worktree-root, --store, --json."""
    options: list[Callable[..., Any]] = [
        click.option(
            "-m",
            "--manifest",
            "manifests",
            multiple=True,
            required=True,
            metavar="MANIFEST",
            help=MANIFEST_HELP + " Repeatable: all are applied; exactly one has the [bench] table.",
        ),
        repo_option,
        click.option(
            "--repeat", type=click.IntRange(min=1), default=None, metavar="N", help="Measured client runs per job."
        ),
        click.option(
            "--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a [bench] variable. Repeatable."
        ),
        click.option(
            "--allow-dirty",
            is_flag=True,
            help="Changes outside patchkit's edits in a worktree do not refuse the run (recorded in the run).",
        ),
        click.option(
            "--worktree-root",
            default=None,
            metavar="DIR",
            help="Where the per-commit worktrees live (default: <git-common-dir>/patchkit/worktrees).",
        ),
        store_option,
        json_option,
    ]
    for option in reversed(options):
        f = option(f)
    return f


def executor_options(f: F, *, slots: bool = True) -> F:
    """Where launches run: --executor local (in-process, the default) or slurm, and the Slurm options.

    Every Slurm option has a default in the manifest's [bench.slurm] table; the command line wins.
    ``slots``: add --slots here (bisect has its own, which is also the search's probes per round)."""
    options: list[Callable[..., Any]] = [
        click.option(
            "--executor",
            type=click.Choice(["local", "slurm"]),
            default="local",
            show_default=True,
            help="local: each launch in this process, one at a time. slurm: each launch one Slurm job (submitit).",
        ),
        click.option(
            "--shared-dir",
            default=None,
            metavar="DIR",
            help="slurm: a directory every node sees at the same path; worktrees, run dirs and submitit's "
            "folder go there. Checked before anything is submitted.",
        ),
        click.option("--slurm-partition", default=None, metavar="NAME", help="slurm: the partition to submit to."),
        click.option(
            "--gpus-per-job",
            type=click.IntRange(min=0),
            default=None,
            metavar="N",
            help="slurm: GPUs per launch (default: the profile's `tp` variable when it has one; 0: none).",
        ),
        click.option(
            "--timeout-min",
            type=click.IntRange(min=1),
            default=None,
            metavar="MIN",
            help="slurm: each job's time limit in minutes (default 60; at least 2). submitit signals the job 90 s "
            "before it: the launch stops then and is recorded interrupted (state TIMEOUT), with its samples so far.",
        ),
        click.option(
            "--slurm-extra",
            multiple=True,
            metavar="KEY=VALUE",
            help="slurm: a site option passed to sbatch as --KEY=VALUE (account, qos, constraint). Repeatable.",
        ),
    ]
    if slots:
        options.append(
            click.option(
                "--slots",
                type=click.IntRange(min=1),
                default=None,
                metavar="K",
                help="slurm: at most K launches at once (the job array's parallelism; default 1).",
            )
        )
    for option in reversed(options):
        f = option(f)
    return f


FRESH_HELP = (
    "Start a new batch: run every launch again, even if an unfinished batch of this same command (interrupted, "
    "or its patchkit killed) holds some; without it that batch is resumed. The unfinished batch is set aside "
    "for good: the runs it stored stay in the store, and no later run resumes it. With --executor slurm its "
    "jobs not yet collected are cancelled (scancel): nothing would collect them, and they would take the "
    "slots and load the nodes the new launches measure."
)


def fresh_option(f: F, *, help_text: str = FRESH_HELP) -> F:
    return click.option("--fresh", is_flag=True, help=help_text)(f)


@cli.command(epilog=verb_epilog("bench"))
@bench_options
@executor_options
@fresh_option
@click.option(
    "--commit", "commits", multiple=True, metavar="REV", help="A commit to benchmark (default HEAD). Repeatable."
)
@click.option("--profile", "profiles", multiple=True, metavar="P", help="A [bench] profile (default: all). Repeatable.")
@click.option(
    "--launches",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Server launches per commit and profile, each with its warmup + repeat client runs "
    "(default: [bench].launches, else 1). Launches are the replicates compare uses: see below how many to plan.",
)
@click.option(
    "--no-interleave",
    is_flag=True,
    help="Run a commit's launches back to back instead of round-robin across commits (A1 B1 A2 B2 ...).",
)
@click.option(
    "--without",
    default=None,
    metavar="PATCH",
    help="Evidence for dropping a patch: bench one commit with every patch and with PATCH left out (ID, or "
    "MANIFEST:ID), launches alternating, then compare's verdict per profile: drop, keep, or how many launches "
    "would decide. The runs without it are stored as such.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=0.05,
    show_default=True,
    help="With --without: the band of 'same', as in compare (0.05 = 5 %).",
)
def bench(**kwargs: Any) -> int:
    """Benchmark patched trees: per commit and profile, start the server, run the client, store every run.

    Planning launches: run `patchkit noise` once for the host (or Slurm
    partition) and profile. With its spread σ as the prior, compare decides
    a change that clears its ±threshold by about 4.6σ with 1 launch a side,
    3.1σ with 2, 2.5σ with 3 and 1.5σ with 7 (99 % interval, a 10-launch
    prior); an `unknown` says how many launches per side would decide it.
    Without a prior, one launch a side decides nothing.

    Does a patch still earn its place (`port` names the ones upstream took
    in part)? `--without PATCH` benches the commit with and without it and
    says: SAME -> drop, worse without it -> keep, unknown -> the launches
    per side that would decide.

    Interrupted (Ctrl-C, SIGTERM, a crash)? The same command run again
    resumes its batch: the launches stored are read back, the rest run
    ("resuming batch ..." says so; --json: `batch.resumed`). `--fresh`
    runs every launch again instead.
    """
    from patchkit.bench.execution.launches import BenchArgs
    from patchkit.commands.bench import bench as run

    return run(BenchArgs.take(kwargs), console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("noise"))
@bench_options
@executor_options
@fresh_option
@click.option("--commit", default="HEAD", show_default=True, metavar="REV", help="The commit run against itself.")
@click.option("--profile", "profiles", multiple=True, metavar="P", help="A [bench] profile (default: all). Repeatable.")
@click.option(
    "--launches",
    type=click.IntRange(min=3),
    default=10,
    show_default=True,
    metavar="N",
    help="Server launches of the commit (the spread has N - 1 degrees of freedom).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=0.05,
    show_default=True,
    help="The band of the odd-against-even A/A check (0.05 = 5 %).",
)
@click.option(
    "--plan-step",
    type=click.FloatRange(min=0.001, max=0.9),
    default=0.05,
    show_default=True,
    metavar="F",
    help="Plan a bisect for a step of F (0.05 = 5 %): the launches it would likely take at the measured spread.",
)
@click.option(
    "--plan-commits",
    type=click.IntRange(min=3),
    default=64,
    show_default=True,
    metavar="N",
    help="... over N first-parent commits.",
)
def noise(**kwargs: Any) -> int:
    """Measure the launch-to-launch spread: one commit against itself over N launches.

    Per metric: each launch's median, the spread of their logs (0.03 is about
    3 %), and an A/A check (odd launches against even ones, which must not
    come out different). Run it before planning launches: its spread is what
    sets how many bench, compare and bisect need (`bench --help`); the
    default 10 launches give the prior 9 degrees of freedom. The spread is stored for the profile and where the
    launches ran: this host, or with --executor slurm the partition (and
    constraint), whatever node each job landed on, with the GPUs they ran on.
    compare and bisect use it as the prior, pooled with their own launches.
    Launches far from the others (a noisy neighbour, a cold cache) are left
    out of the spread and listed. Each stored spread also gets a plan: what a
    bisect for a step of --plan-step over --plan-commits commits would likely
    cost (the hunt simulated at that spread), with its power. Interrupted, the
    same command run again resumes its batch (the launches stored read back);
    `--fresh` runs every launch again instead.
    """
    from patchkit.bench.execution.launches import BenchArgs
    from patchkit.commands.noise import noise as run

    return run(BenchArgs.take(kwargs), console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("runs"))
@repo_option
@click.option("--commit", "commits", multiple=True, metavar="REV", help="Only runs of this commit. Repeatable.")
@click.option("--profile", "profiles", multiple=True, metavar="P", help="Only runs of this profile. Repeatable.")
@click.option(
    "--pending",
    is_flag=True,
    help="Instead: the launches submitted to Slurm and not collected yet, with their Slurm states now.",
)
@store_option
@json_option
@click.option(
    "--plot",
    default=None,
    metavar="METRIC",
    help="Draw METRIC over the runs' commits in the terminal instead, the latest bisect's first bad commit marked "
    "(for a person: not with --json, whose runs are what it draws, nor with --pending).",
)
def runs(**kwargs: Any) -> int:
    """List the benchmark runs in the bench store (or, with --plot, draw one metric)."""
    from patchkit.commands.runs import runs as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("show"))
@click.argument("run", metavar="RUN")
@repo_option
@store_option
@click.option(
    "--processes",
    "sections",
    flag_value="processes",
    multiple=True,
    help="Section: the processes the probe saw, and those it did not.",
)
@click.option(
    "--files",
    "sections",
    flag_value="files",
    multiple=True,
    help="Section: the files that ran, by class; every STRAY by path.",
)
@click.option(
    "--env",
    "sections",
    flag_value="env",
    multiple=True,
    help="Section: the effective environment per rank against the launch's.",
)
@click.option(
    "--nccl",
    "sections",
    flag_value="nccl",
    multiple=True,
    help="Section: NCCL's own lines and the NCCL/CUDA libraries mapped.",
)
@click.option(
    "--gpus",
    "sections",
    flag_value="gpus",
    multiple=True,
    help="Section: the GPU facts (nvidia-smi) and torch's CUDA stack.",
)
@click.option(
    "--clients",
    "sections",
    flag_value="clients",
    multiple=True,
    help="Section: the client runs and their metric values.",
)
@click.option(
    "--code",
    "sections",
    flag_value="code",
    multiple=True,
    help="Section, only when asked for: the code the probed processes ran (functions on Python 3.12+, else "
    "module files), the tree's files read, and what the probe could not see.",
)
@json_option
def show(**kwargs: Any) -> int:
    """Show one stored run whole: RUN is its number (`patchkit runs`) or `last`.

    The header (commit, profile, outcome, patch state, the proof's verdict),
    then the processes the probe saw, the files that ran by class (every
    STRAY by path), the effective environment per rank (marking what differs
    between ranks and from the launch), NCCL's lines and the libraries
    mapped, the GPU facts and the client runs. Section flags pick sections
    (combine them); the header is always shown. --code, what the probed
    processes ran, is shown only when asked for.
    """
    from patchkit.commands.show import show as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("report"))
@click.option(
    "-m",
    "--manifest",
    "manifests",
    multiple=True,
    required=True,
    metavar="MANIFEST",
    help=MANIFEST_HELP + " Repeatable: one band per patch and group of each.",
)
@repo_option
@click.option(
    "--range",
    "ranges",
    multiple=True,
    metavar="A..B",
    help="Commits as `git rev-list A..B` lists them, as `check` takes it (default: HEAD and its history). Repeatable.",
)
@click.option("--commit", "commits", multiple=True, metavar="REV", help="A single commit to add. Repeatable.")
@click.option("--metric", "metrics", multiple=True, metavar="NAME", help="A metric panel (default: every stored one).")
@click.option("--profile", "profiles", multiple=True, metavar="P", help="Only runs of this profile. Repeatable.")
@store_option
@click.option("-o", "--output", required=True, metavar="FILE", help="The HTML file to write (atomically).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N", help="As for `check`.")
@json_option
def report(**kwargs: Any) -> int:
    """Write one self-contained HTML page: patch bands and benchmark trends on one commit axis.

    It embeds `check --json` of every -m manifest over the range, `runs --json`
    and the latest bisect, and draws them with plotly.js inlined: open it with
    no network (copy it off a GPU host with scp).
    """
    from patchkit.commands.report import report as run

    return run(console=_console(), **kwargs)


@cli.command(epilog=verb_epilog("compare"))
@click.argument("runs", nargs=-1, metavar="[RUN_A RUN_B]")
@click.option(
    "--commit",
    "commits",
    multiple=True,
    metavar="REV",
    help="Compare the latest runs of two commits (give it twice) instead of run numbers.",
)
@click.option("--profile", default=None, metavar="P", help="With --commit: the profile whose runs to take.")
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=0.05,
    show_default=True,
    help="The band of 'same': a change within ±T is no change worth a verdict (0.05 = 5 %).",
)
@repo_option
@store_option
@json_option
def compare(**kwargs: Any) -> int:
    """Show two runs' metrics side by side, then what differs between them.

    Each side is a run's launches (the runs of its `bench --launches N`
    invocation, commit and profile). Verdict per metric, over the launches:
    the ratio B/A with its 99 % interval; `different` (better or worse) when
    the interval lies outside ±--threshold, `same` when inside, `unknown`
    when it straddles an edge (with the launches per side that would decide).
    Each side's spread is its own launches pooled with the `patchkit noise`
    prior of where it ran (one prior counted once when both ran in one
    place). Then the provenance diff: upstream
    commits between the two (first parent, with subjects), patch status
    changes, env, version and GPU differences.
    """
    from patchkit.commands.compare import compare as run

    return run(console=_console(), **kwargs)


def executor_options_without_slots(f: F) -> F:
    return executor_options(f, slots=False)


def bisect_fresh_option(f: F) -> F:
    return fresh_option(
        f,
        help_text="--executor slurm: start the search over: a killed bisect's rounds are not read back, its jobs "
        "not yet collected are cancelled (scancel) and its batch is set aside for good (the runs it stored stay "
        "in the store). A local bisect keeps no batch: it always starts over.",
    )


@cli.command(epilog=verb_epilog("bisect"))
@bench_options
@executor_options_without_slots
@bisect_fresh_option
@click.option("--good", required=True, metavar="REV", help="A commit where the metric is good.")
@click.option("--bad", required=True, metavar="REV", help="A later commit (first-parent line) where it is bad.")
@click.option("--metric", required=True, metavar="NAME", help="A [[bench.metric]] name.")
@click.option(
    "--min",
    "min_value",
    type=float,
    default=None,
    metavar="X",
    help="Optional: GOOD's first launch must be >= X, BAD's below X (a metric that is better higher).",
)
@click.option(
    "--max",
    "max_value",
    type=float,
    default=None,
    metavar="X",
    help="Optional: GOOD's first launch must be <= X, BAD's above X (a metric that is better lower).",
)
@click.option(
    "--ratio",
    type=float,
    default=None,
    metavar="R",
    help="Optional: BAD's first launch / GOOD's must be below R (better = higher: 0 < R <= 1) or above R "
    "(better = lower: R >= 1); a ratio that cannot hold is exit 2 before any launch.",
)
@click.option("--profile", default=None, metavar="P", help="The [bench] profile (default: the first).")
@click.option(
    "--max-launches",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="N",
    help="Server launches per commit at most; a commit still unclear at N is reported and the answer is a range.",
)
@click.option(
    "--slots",
    type=click.IntRange(min=1),
    default=None,
    metavar="K",
    help="Launches per round (speculative probes) where the executor runs K jobs at once: with --executor slurm "
    "the job array's parallelism (default: [bench.slurm].slots, else 1); the local executor has 1.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="The least change of BAD against GOOD worth hunting (0.05 = 5 %); 0: any change the launches show.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=2),
    default=None,
    metavar="N",
    help="Server launches of the whole search at most (default: 10 per binary-search step, log2(commits) + 2 "
    "of them, and at least 3 x --max-launches). When it runs out the answer is the credible range, with what "
    "would narrow it.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Check everything, launch nothing: list the suspects from GOOD's and BAD's stored runs, and say what the "
    "hunt would likely cost with pruning and without (simulated at the noise prior's spread, for a step of "
    "--threshold, or of 3, 5 and 10 times the spread).",
)
@click.option(
    "--every-commit",
    is_flag=True,
    help="Search every commit of the line: no pruning. By default a commit whose changes touch only code no "
    "launch ran (a function that never started, a module never imported, a file never read) is skipped as inert.",
)
def bisect(**kwargs: Any) -> int:
    """Find the first commit where a metric goes bad: a noise-aware search over first-parent history.

    Each probed commit gets server launches until the data says which side
    it is on (up to --max-launches). Launches are modelled robustly: one far
    from both levels is an outlier (shown as one) and moves no boundary. The
    answer is a first bad commit only with 1 - alpha of the posterior, two
    launches on each side of the boundary, and still named with any one of
    them left out; otherwise a range, with why and what would narrow it.
    A drift over the search is tested for and corrected (GOOD and BAD are
    launched again where it is not clearly zero); a second step on either
    side of the answer is reported with the bisect that would find it. A
    launch whose server did not come up is retried (3 tries per commit);
    a commit that cannot be launched is skipped. Commits where the manifests
    cannot apply are skipped without being benchmarked. Every run is stored.
    The `patchkit noise` spread of where the launches run (this host, or the
    Slurm partition) is the prior, checked against the search's own launches
    and refused when it was measured on other GPUs. As bench and compare do,
    it warns of a launch on a dirty GPU (another process, ECC errors,
    persistence off) and of launches on GPUs set up unlike GOOD's first
    (power limit, locked clocks, ...); "no GPU facts" without nvidia-smi.

    Pruning: the probe records what every launch ran; a commit whose changes
    touch only code that no launch ran (a function that never started, a
    module never imported, a file never read; a build input is never inert)
    is inert and takes the side of the relevant commit before it. Once GOOD and
    BAD have run, the suspects are listed: the commits that changed code that
    ran, each with what. Before a FIRST BAD stands, the commit just before it
    is launched, inert or not; if it reads BAD the hunt goes on over every
    commit. The report says how many commits were skipped and why, or why
    pruning was off (a Python process without the probe, a worker that is not
    Python). --every-commit turns it off.

    Planning launches: `--dry-run`, or benchmarks/bench_hunt.py: a step of
    5σ or more costs about 1.3-1.5 times the server starts of a plain
    one-launch bisect; about 2.5σ, 3-4 times; at 1.5σ or less most hunts
    end in a range at --max-launches 10. --slots 4 takes about a third of
    the rounds.
    """
    from patchkit.bench.execution.launches import BenchArgs
    from patchkit.commands.bisect import bisect as run

    return run(BenchArgs.take(kwargs, keep=("slots",)), console=_console(), **kwargs)


def _usage_line(exc: click.ClickException) -> str:
    """A click usage error as the documented single line."""
    message = exc.format_message().strip().rstrip(".")
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "patchkit"
    return f"{message}; see `{command} --help`"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    real_stdout = sys.stdout
    sys.stdout = _Output(real_stdout)
    try:
        return _main(args)
    finally:
        if isinstance(sys.stdout, _Output):  # click's EPIPE handling may have swapped in its own
            sys.stdout = real_stdout


class OutputError(OSError):
    """stdout refused a write (a full disk under a redirect, an I/O error): the system's answer, not a bug,
    and not a reader that left (that is a BrokenPipeError: exit 141)."""


class _Output:
    """``sys.stdout`` while a command runs: a write the system refuses becomes an ``OutputError``, so that
    ``main`` names stdout in its one line instead of reporting an OSError from deep inside the printing."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _main(args: list[str]) -> int:
    from patchkit.errors import WRITE_ERRNOS, PatchkitError, RefusedError
    from patchkit.git import GitFailed

    stdout = sys.stdout
    written = Written()
    try:
        rv = cli.main(args=args, prog_name="patchkit", standalone_mode=False, obj=written)
        sys.stdout.flush()  # what is still buffered fails here, in this try, not in the interpreter's exit
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        # click's and rich's answer to EPIPE on stdout is exit 1 (click swaps in a quiet stdout first;
        # rich raises it while handling the BrokenPipeError): that code means a required patch FAILs.
        if sys.stdout is stdout and not isinstance(exc.__context__, BrokenPipeError):
            raise
        sys.stdout = stdout
        return _quiet_on_closed_stdout()
    except click.exceptions.NoArgsIsHelpError as exc:
        # `patchkit` alone: the help text is the answer, as click prints it.
        click.echo(exc.format_message(), err=True)
        return ExitCode.USAGE
    except click.ClickException as exc:
        click.echo(f"patchkit: error: {_usage_line(exc)}", err=True)
        return ExitCode.USAGE
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns a Ctrl-C into Abort; either way, say what was and was not written.
        click.echo(f"patchkit: {_interrupted(args, written)}", err=True)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        return _quiet_on_closed_stdout()
    except PatchkitError as exc:
        click.echo(f"patchkit: error: {exc.one_line()}", err=True)
        if isinstance(exc, RefusedError):
            for item in exc.items:
                click.echo(f"  {item}", err=True)
        if _DEBUG:
            import traceback

            traceback.print_exc()
        return int(exc.exit_code)
    except GitFailed as exc:
        # git itself failed (it cannot read its config, packed-refs, an object, /dev/null): its words are the answer
        click.echo(f"patchkit: error: {_git_failed(exc)}", err=True)
        return ExitCode.USAGE
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            return _crash(exc, args)
        # The system said no where no caller had more specific words: the file, the errno, what to do.
        click.echo(f"patchkit: error: {_system_refused(exc, args, written)}", err=True)
        return ExitCode.REFUSED
    except Exception as exc:  # noqa: BLE001 (a bug: one crash line; the traceback goes to a log file
        return _crash(exc, args)
    if rv is None:
        return ExitCode.OK
    return int(rv)


def _git_failed(exc: Any) -> str:
    """One line for a git command that failed where no caller had more specific words: the command and
    what git said (its warnings name the file and the cause)."""
    return f"git {exc.args_[0] if exc.args_ else ''} failed: {exc.said()}"


def _system_refused(exc: OSError, args: list[str], written: Written) -> str:
    """One line for an OSError the system raised (EIO, ENOSPC, EDQUOT, EROFS, EACCES, EPERM): the file, the
    errno, what fixes that cause, and for the verbs that write the tree what they had written whole."""
    import os

    from patchkit.errors import write_advice

    code = exc.errno or 0
    name = errno.errorcode.get(code, str(code))
    if isinstance(exc, OutputError):
        try:
            target = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
        except (OSError, ValueError, AttributeError):
            target = ""
        what = f"cannot write the output to stdout{f' ({target})' if target.startswith('/') else ''}"
    else:
        what = str(exc.filename) if exc.filename is not None else "a file patchkit was using"
    line = f"{what}: {exc.strerror} ({name}); {write_advice(code)}"
    if {"apply", "revert"} & set(args):
        paths = written.distinct()
        line += f"; written whole before it: {', '.join(paths)}" if paths else "; nothing was written"
    return line


def _stdout_closed() -> bool:
    """Whether stdout's reader has gone (what a BrokenPipeError may be about: or a pipe of our own)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    return False


def _quiet_on_closed_stdout() -> int:
    """The reader of stdout left (``| head``): end quietly with 141, as a SIGPIPE'd tool does, never 1
    (which means a required patch FAILs).  stdout is pointed at /dev/null so that the interpreter's
    own flush at exit has nowhere to fail."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return ExitCode.CLOSED_STDOUT


def _interrupted(args: list[str], written: Written) -> str:
    """What an interrupted command leaves: for the verbs that write the tree, nothing or the files its
    finished (whole, recorded) writes changed; for capture and import-diff, nothing or the capture they
    published (whole); the others just stop (bench cleans up its own)."""
    if {"capture", "import-diff"} & set(args) and not {"apply", "revert"} & set(args):
        published = written.paths
        if not published:
            return "interrupted (Ctrl-C); nothing was written"
        return f"interrupted (Ctrl-C) after writing {' and '.join(published)} (whole); nothing else was written"
    if not {"apply", "revert"} & set(args):
        return "interrupted (Ctrl-C)"
    paths = written.distinct()
    if not paths:
        return "interrupted (Ctrl-C); nothing was written"
    return (
        f"interrupted (Ctrl-C) after writing {', '.join(paths)} (whole and recorded: `patchkit status` shows them); "
        "nothing else was written"
    )


def _crash(exc: Exception, args: list[str]) -> int:
    from patchkit.crash import write_report

    if _DEBUG:
        import traceback

        traceback.print_exc()
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
    log = write_report(exc, args)
    detail = (
        f"the traceback, versions and command line are in {log}; please attach it to the report"
        if log is not None
        else "no crash log could be written; rerun with --debug to see the traceback"
    )
    click.echo(
        f"patchkit: internal error: {type(exc).__name__}: {exc}{where}; this is a bug in patchkit {__version__}, "
        f"please report it ({detail})",
        err=True,
    )
    return int(ExitCode.INTERNAL)


def entry() -> None:
    """The console script: ``main``, then a quick exit.

    When ``main`` returns, every file, database and process it opened is
    closed (each command closes its own).  What is left is the interpreter's
    teardown: freeing every module, cached syntax tree and table one by one,
    which a process about to end does not need.  So the exit handlers run, the
    standard streams are flushed, and the process ends there with
    ``os._exit``.  If a stream cannot be flushed (a closed pipe), the normal
    exit takes over and reports it as usual.
    """
    code = main()
    import atexit
    import os

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(_quiet_on_closed_stdout())
    except (OSError, ValueError):
        sys.exit(code)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    entry()
