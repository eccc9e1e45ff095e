"""Benchmark: `patchkit check` on a real history, against its physical floor.

Runs on any local clone of a real project (never committed here) and a
manifest over some of its files, and prints in one run:

  parse floor  the sum of ``ast.parse`` times over the distinct blobs the
               manifest's target files have in the range (read beforehand,
               not timed; the cycle collector paused, as patchkit pauses it
               while it parses), divided by the cores patchkit may use;
  git floor    listing the range's commits and the target files' changes:
               the two ``git log`` commands patchkit itself runs, run
               concurrently (as patchkit runs them), plus ``patchkit --help``
               (the tool's own start-up: it is paid by every run);
  cold         ``patchkit check --json`` with an empty verdict cache;
  warm         the same again, with the cache the cold run left;
  incremental  with the cache of ``A..B~N`` only (default N = 20: yesterday's
               range), a check of ``A..B``: the extra cost should be the new
               commits' new blobs only (their own parse floor is printed);

and the ratios cold / (parse floor + git floor) (target <= 1.2) and
warm / git floor (target <= 3).  It also counts the CPU seconds the cold run
used (patchkit, its git processes and its workers) against the floor's own
(the parse sum, both git logs, ``patchkit --help``): that CPU divided by the
cores is a time no schedule can beat, so where that bound alone is above 1.2,
the cold target needs less work, not more overlap.  It also times the
verdicts themselves: every distinct version evaluated in one fresh process,
as a worker does (``evaluate_file``), against the parse of the same texts.
What the verdicts add to the parse is work the floor does not count and no
check can skip (it is the answer); the floor's work plus that, spread
perfectly over the cores, is printed as a ratio to the floor too: where
even that is above 1.2, the target is out of reach on this many cores for
any schedule of this analysis.  Each round measures everything afresh, so
the ratios of one round come from one machine state; give --rounds to see
the spread.  The repository's own cache (``<git-dir>/patchkit/cache.sqlite``)
is set aside for the run and put back afterwards.

    python benchmarks/bench_real.py --repo PATH -m MANIFEST --range A..B \\
        [--rounds 3] [--jobs N] [--new 20] [--profile DIR]

``--profile DIR`` also writes cProfile stats of one cold and one warm run
(in-process, through ``patchkit.cli.main``) to DIR/cold.prof and
DIR/warm.prof and prints their top entries.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from patchkit.git import Repo
from patchkit.manifest import load_manifest


def compile_bytecode() -> None:
    """Write patchkit's bytecode first, as pip does at install: with PYTHONDONTWRITEBYTECODE set
    (or a source newer than its .pyc), every timed run would compile the changed modules again."""
    import compileall

    import patchkit

    compileall.compile_dir(str(Path(patchkit.__file__).parent), quiet=1)


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children, and of theirs that they waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cpu(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a command, its git and worker processes included."""
    cpu = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed, children_cpu() - cpu


def run(cmd: list[str], cwd: Path | None = None) -> float:
    return run_cpu(cmd, cwd)[0]


def git_floor(repo: Repo, spec: str, files: list[str], patchkit: list[str]) -> tuple[float, float]:
    """Both git logs patchkit runs (its own ``Repo`` calls), concurrently, plus the tool's start-up:
    (wall seconds, CPU seconds)."""
    cpu = children_cpu()
    start = time.perf_counter()
    pending = [repo.spawn_rev_list([spec]), repo.spawn_path_changes([spec], files)]
    for proc in pending:
        proc.bytes()
    listing = time.perf_counter() - start
    listing_cpu = children_cpu() - cpu
    wall, help_cpu = run_cpu([*patchkit, "--help"])
    return listing + wall, listing_cpu + help_cpu


def distinct_blobs(repo: Path, spec: str, files: list[str]) -> tuple[dict[str, bytes], list[tuple[str, str]]]:
    """Blob id -> bytes of every version the target files have in the range (tip versions included),
    and each distinct (path, blob id): what a check evaluates."""
    base, _, tip = spec.partition("..")
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--full-history", "--diff-merges=first-parent", "--raw", "--no-abbrev",
         "--no-renames", "--format=", spec, "--", *files],
        capture_output=True, check=True, text=True,
    ).stdout  # fmt: skip
    versions: dict[tuple[str, str], None] = {}
    for line in out.splitlines():
        if line.startswith(":"):
            meta, path = line.split("\t", 1)
            fields = meta.split()
            if fields[4] != "D" and fields[1].startswith("100"):
                versions[(path, fields[3])] = None
    # The versions the range's first commits inherit from outside it.
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", base or tip, "--", *files], capture_output=True, text=True, check=True
    ).stdout
    for line in listed.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind == "blob" and mode.startswith("100"):
            versions[(path, oid)] = None
    oids = {oid for _path, oid in versions}
    proc = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input="".join(f"{oid}\n" for oid in sorted(oids)).encode(),
        capture_output=True,
        check=True,
    )
    blobs: dict[str, bytes] = {}
    data, pos = proc.stdout, 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        name, _kind, size = data[pos:end].split()
        blobs[name.decode()] = data[end + 1 : end + 1 + int(size)]
        pos = end + 1 + int(size) + 1
    return blobs, list(versions)


def parse_seconds(blobs: dict[str, bytes]) -> float:
    """The sum of ``ast.parse`` times, with the cycle collector paused as patchkit pauses it
    (``engine.evaluate.gc_paused``): the parse itself, not the collector's scans of the heap."""
    total = 0.0
    gc.disable()
    try:
        for data in blobs.values():
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                continue
            start = time.perf_counter()
            with contextlib.suppress(SyntaxError, ValueError):
                ast.parse(text)
            total += time.perf_counter() - start
    finally:
        gc.enable()
    return total


def verdict_seconds(manifest: str, blobs: dict[str, bytes], versions: list[tuple[str, str]]) -> tuple[float, float]:
    """(evaluate, parse): seconds to evaluate every distinct version, and to parse the same texts,
    in a forked process that has evaluated nothing before (patchkit's memos start empty in a
    worker too).  ``evaluate_file`` pauses the cycle collector itself; the parse is timed as
    ``parse_seconds`` times it."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(1, mp_context=get_context("fork")) as pool:
        return pool.submit(_verdict_seconds, manifest, blobs, versions).result()


def _verdict_seconds(manifest: str, blobs: dict[str, bytes], versions: list[tuple[str, str]]) -> tuple[float, float]:
    from patchkit.engine.evaluate import evaluate_file
    from patchkit.sources.base import FileRead, FileState

    by_file: dict[str, list] = {}
    for patch in load_manifest(manifest).patches:
        by_file.setdefault(patch.file, []).append(patch)
    reads = [(FileRead(path, FileState.OK, blobs[oid], oid, 0o644), by_file[path]) for path, oid in versions]
    start = time.perf_counter()
    for read, patches in reads:
        evaluate_file(read, patches, {})
    evaluate = time.perf_counter() - start
    return evaluate, parse_seconds({f"{path}:{oid}": blobs[oid] for path, oid in versions})


def profile(patchkit_args: list[str], out: Path, cache: Path) -> None:
    import cProfile
    import io
    import pstats

    from patchkit.cli import main as cli_main

    def one(name: str) -> None:
        prof = cProfile.Profile()
        saved = sys.stdout
        sys.stdout = io.StringIO()
        try:
            prof.runcall(cli_main, patchkit_args)
        except SystemExit:
            pass
        finally:
            sys.stdout = saved
        prof.dump_stats(str(out / f"{name}.prof"))
        print(f"\n-- {name} profile (top 25 by cumulative time; full stats in {out / (name + '.prof')})")
        pstats.Stats(str(out / f"{name}.prof")).sort_stats("cumulative").print_stats(25)

    out.mkdir(parents=True, exist_ok=True)
    cache.unlink(missing_ok=True)
    one("cold")
    one("warm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("-m", "--manifest", required=True)
    parser.add_argument("--range", dest="spec", required=True, help="A..B")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--new", type=int, default=20, help="commits the incremental case adds on top")
    parser.add_argument("--jobs", type=int, default=None, help="passed to patchkit check --jobs, if given")
    parser.add_argument("--profile", type=Path, help="write cProfile stats of a cold and a warm run here")
    args = parser.parse_args()
    compile_bytecode()

    if ".." not in args.spec or "..." in args.spec:
        raise SystemExit("--range must be A..B")
    repo = Repo.discover(args.repo)
    manifest = load_manifest(args.manifest)
    files = list(manifest.files())
    base, _, tip = args.spec.partition("..")
    tip = tip or "HEAD"
    older = f"{base}..{tip}~{args.new}"

    bindir = Path(sys.executable).parent
    patchkit = [str(bindir / "patchkit")] if (bindir / "patchkit").exists() else [sys.executable, "-m", "patchkit"]
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    cores = args.jobs or os.cpu_count() or 1

    def check(spec: str, *extra: str) -> list[str]:
        return [*patchkit, "check", "-m", args.manifest, "--repo", str(args.repo), "--range", spec, "--json",
                *jobs, *extra]  # fmt: skip

    commits = int(
        subprocess.run(
            ["git", "-C", str(args.repo), "rev-list", "--count", args.spec], capture_output=True, text=True
        ).stdout.strip()
        or 0
    )
    blobs, versions = distinct_blobs(args.repo, args.spec, files)
    old_blobs, _ = distinct_blobs(args.repo, older, files)
    new_blobs = {oid: data for oid, data in blobs.items() if oid not in old_blobs}
    print(f"repo {args.repo}  range {args.spec}: {commits} commits; manifest {args.manifest}: {len(manifest.patches)}")
    print(f"  patches on {len(files)} files; {len(blobs)} distinct target blobs ({sum(map(len, blobs.values())):,} B)")
    print(
        f"  incremental: {older} then {args.spec}: {len(new_blobs)} new blobs; "
        f"cores used: {cores} (machine: {os.cpu_count()})"
    )

    cache = repo.common_dir / "patchkit" / "cache.sqlite"
    saved = cache.with_name("cache.sqlite.bench-saved")
    if cache.exists():
        shutil.move(str(cache), str(saved))
    rows: list[dict[str, float]] = []
    try:
        run([*patchkit, "--help"])  # bytecode compiled, page cache warm
        for n in range(1, args.rounds + 1):
            r: dict[str, float] = {}
            r["parse_cpu"] = parse_seconds(blobs)
            r["parse"] = r["parse_cpu"] / cores
            r["parse_new"] = parse_seconds(new_blobs) / cores
            r["git"], r["git_cpu"] = min(git_floor(repo, args.spec, files, patchkit) for _ in range(3))
            r["evaluate_cpu"], r["evaluate_parse"] = verdict_seconds(args.manifest, blobs, versions)
            r["verdicts_cpu"] = max(0.0, r["evaluate_cpu"] - r["evaluate_parse"])
            cache.unlink(missing_ok=True)
            r["cold"], r["cold_cpu"] = run_cpu(check(args.spec))
            r["warm"] = min(run(check(args.spec)) for _ in range(3))
            cache.unlink(missing_ok=True)
            run(check(older))
            r["incremental"] = run(check(args.spec))
            r["cold_ratio"] = r["cold"] / (r["parse"] + r["git"])
            r["warm_ratio"] = r["warm"] / r["git"]
            r["inc_extra"] = r["incremental"] - r["warm"]
            r["cpu_bound"] = r["cold_cpu"] / cores / (r["parse"] + r["git"])
            r["verdict_bound"] = (r["parse_cpu"] + r["git_cpu"] + r["verdicts_cpu"]) / cores / (r["parse"] + r["git"])
            rows.append(r)
            print(
                f"round {n}: parse floor {r['parse']:.3f}s  git floor {r['git']:.3f}s  "
                f"cold {r['cold']:.3f}s  warm {r['warm']:.3f}s  incremental {r['incremental']:.3f}s "
                f"(extra over warm {r['inc_extra']:.3f}s; new blobs' parse floor {r['parse_new']:.3f}s)"
            )
            print(
                f"         cold/(parse+git) = {r['cold_ratio']:.2f} (target <= 1.2)   "
                f"warm/git = {r['warm_ratio']:.2f} (target <= 3)"
            )
            print(
                f"         cold used {r['cold_cpu']:.3f} CPU-s "
                f"(the floor's own work: {r['parse_cpu'] + r['git_cpu']:.3f}); "
                f"on {cores} cores no schedule of it beats {r['cpu_bound']:.2f}x the floor"
            )
            print(
                f"         verdicts: {r['evaluate_cpu']:.3f} CPU-s to evaluate the {len(versions)} versions in one "
                f"process, of which their parse {r['evaluate_parse']:.3f}; the floor's work plus the verdicts' "
                f"own {r['verdicts_cpu']:.3f} beats no better than {r['verdict_bound']:.2f}x the floor on {cores} cores"
            )
        if args.rounds > 1:
            for key in ("cold_ratio", "warm_ratio", "cpu_bound", "verdict_bound"):
                values = [r[key] for r in rows]
                print(f"{key}: median {statistics.median(values):.2f}  min {min(values):.2f}  max {max(values):.2f}")
        if args.profile:
            profile(check(args.spec)[len(patchkit) :], args.profile, cache)
    finally:
        cache.unlink(missing_ok=True)
        if saved.exists():
            shutil.move(str(saved), str(cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
