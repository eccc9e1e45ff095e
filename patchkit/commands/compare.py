"""`patchkit compare RUN_A RUN_B` (or `--commit A --commit B`): metrics side by side, then what changed.

A change is *significant* when the medians differ by more than ``--threshold``
(default 5 %) AND the min-max ranges of the two runs do not overlap.  The
provenance diff lists what the engineer of the regression hunt assembled by
hand: the upstream commits between the two (``git log --first-parent``, with
subjects), patch status changes, and every difference in env, vars, versions,
torch and GPU facts (pstate, clocks, PCIe width...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from patchkit.bench.job import RunRecord
from patchkit.bench.session import open_store
from patchkit.commands.bench import fmt
from patchkit.errors import ExitCode, UsageError
from patchkit.git import Repo
from patchkit.render import emit, print_json


def compare(
    *,
    runs: Sequence[str],
    commits: Sequence[str],
    profile: str | None,
    threshold: float,
    repo: str,
    store: str | None,
    json_out: bool,
    console: Console,
) -> int:
    with Repo.discover(Path(repo)) as git_repo:
        with open_store(git_repo, store) as opened:
            a, b = _pick(opened, git_repo, runs, commits, profile)
        result = compare_records(git_repo, a, b, threshold=threshold)
        if json_out:
            print_json(result)
        else:
            show(console, result)
        return int(ExitCode.OK)


def _pick(store: Any, repo: Repo, runs: Sequence[str], commits: Sequence[str], profile: str | None) -> tuple[Any, Any]:
    if runs and commits:
        raise UsageError("give two run numbers or two --commit options, not both")
    if runs:
        if len(runs) != 2:
            raise UsageError(f"compare needs two runs, got {len(runs)}", hint="e.g. `patchkit compare 3 7`")
        ids = []
        for value in runs:
            try:
                ids.append(int(value))
            except ValueError:
                raise UsageError(f"{value!r} is not a run number", hint="see `patchkit runs`") from None
        return store.get(ids[0]), store.get(ids[1])
    if len(commits) != 2:
        raise UsageError("compare needs RUN_A RUN_B or --commit A --commit B", hint="see `patchkit runs`")
    picked = []
    for rev in commits:
        sha = repo.resolve(rev)
        latest = store.latest(sha, profile)
        if latest is None:
            where = f" with profile {profile!r}" if profile else ""
            raise UsageError(
                f"no stored run for {rev} ({sha[:10]}){where}", hint=f"run `patchkit bench --commit {rev}`"
            )
        if profile is None:
            profile = latest.profile  # the second commit's run must use the same profile
        picked.append(latest)
    return picked[0], picked[1]


def metric_rows(a: RunRecord, b: RunRecord, threshold: float, better: Mapping[str, str]) -> list[dict[str, Any]]:
    sa, sb = a.stats(), b.stats()
    rows = []
    for name in dict.fromkeys([*sa, *sb]):
        x, y = sa.get(name, {}), sb.get(name, {})
        ma, mb = x.get("median"), y.get("median")
        ratio = mb / ma if ma and mb is not None else None
        overlap = None
        if None not in (x.get("min"), x.get("max"), y.get("min"), y.get("max")):
            overlap = not (x["max"] < y["min"] or y["max"] < x["min"])
        significant = bool(ratio is not None and abs(ratio - 1) > threshold and overlap is False)
        direction = None
        if significant and ratio is not None and name in better:
            up = ratio > 1
            direction = "better" if up == (better[name] == "higher") else "worse"
        rows.append(
            {
                "metric": name,
                "a": x or None,
                "b": y or None,
                "ratio": ratio,
                "ranges_overlap": overlap,
                "significant": significant,
                "direction": direction,
            }
        )
    return rows


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), item, out)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
        for index, item in enumerate(value):
            _flat(f"{prefix}[{index}]", item, out)
    else:
        out[prefix] = value


def _differences(a: Any, b: Any, prefix: str) -> list[dict[str, Any]]:
    fa: dict[str, Any] = {}
    fb: dict[str, Any] = {}
    _flat(prefix, a, fa)
    _flat(prefix, b, fb)
    return [{"key": k, "a": fa.get(k), "b": fb.get(k)} for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)]


def patch_changes(a: RunRecord, b: RunRecord) -> list[dict[str, Any]]:
    def table(record: RunRecord) -> dict[tuple[str, str], str]:
        out = {}
        for manifest in record.manifests:
            for r in manifest["results"]:
                out[(manifest["name"], r["patch"])] = f"{r['status']} {r.get('reason') or ''}".strip()
        return out

    ta, tb = table(a), table(b)
    return [
        {"manifest": m, "patch": p, "a": ta.get((m, p)), "b": tb.get((m, p))}
        for (m, p) in dict.fromkeys([*ta, *tb])
        if ta.get((m, p)) != tb.get((m, p))
    ]


def commits_between(repo: Repo, a: str, b: str) -> dict[str, Any]:
    """First-parent commits from a (excluded) to b (included), newest first; or the other way round."""
    if a == b:
        return {"direction": "same", "commits": []}
    forward = repo.rev_list(["--first-parent", f"{a}..{b}"])
    backward = repo.rev_list(["--first-parent", f"{b}..{a}"])
    if forward and not backward:
        direction, listed = "forward", forward
    elif backward and not forward:
        direction, listed = "backward", backward
    else:
        direction, listed = "diverged", forward
    return {
        "direction": direction,
        "commits": [{"commit": c.sha, "subject": c.subject, "date": c.date} for c in reversed(listed)],
    }


def compare_records(repo: Repo, a: RunRecord, b: RunRecord, *, threshold: float) -> dict[str, Any]:
    better = {m["name"]: m["better"] for record in (a, b) for m in record.metrics}
    provenance = {
        "between": commits_between(repo, a.commit["sha"], b.commit["sha"]),
        "patches": patch_changes(a, b),
        "env": _differences(_env_shape(a), _env_shape(b), "env"),
        "vars": _differences(
            {k: v for k, v in a.vars.items() if k != "port"}, {k: v for k, v in b.vars.items() if k != "port"}, "vars"
        ),
        "versions": _differences(
            {"interpreter": a.interpreter, "torch": a.torch, "server_info": a.server_info},
            {"interpreter": b.interpreter, "torch": b.torch, "server_info": b.server_info},
            "",
        ),
        "gpus": _differences(list(a.gpus or []), list(b.gpus or []), "gpus"),
        "host": _differences(a.host, b.host, "host"),
    }
    return {
        "version": 1,
        "command": "compare",
        "threshold": threshold,
        "a": a.ident(),
        "b": b.ident(),
        "metrics": metric_rows(a, b, threshold, better),
        "provenance": provenance,
    }


def _env_shape(record: RunRecord) -> dict[str, str]:
    """The env with the per-commit parts (worktree path, commit) written as placeholders: they always differ."""
    tree = record.env.get("PATCHKIT_BENCH_TREE")
    out = {}
    for key, value in record.env.items():
        if key in ("PATCHKIT_BENCH_COMMIT", "PATCHKIT_BENCH_TREE"):
            continue
        out[key] = value.replace(tree, "{tree}") if tree else value
    return out


def show(console: Console, result: dict[str, Any]) -> None:
    a, b = result["a"], result["b"]
    console.print(
        Text.assemble(
            ("patchkit compare", "bold"),
            f"  A = run {a['run']} {a['commit'][:10]} {a['profile']} ({a['outcome']})"
            f"  B = run {b['run']} {b['commit'][:10]} {b['profile']} ({b['outcome']})",
        )
    )
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name in ("metric", "A median", "A min-max", "B median", "B min-max", "B/A", "significant"):
        table.add_column(name, no_wrap=True, justify="left" if name in ("metric", "significant") else "right")
    for row in result["metrics"]:
        x, y = row["a"] or {}, row["b"] or {}
        verdict = "-"
        if row["significant"]:
            verdict = f"yes ({row['direction'] or 'changed'})"
        elif row["ratio"] is not None:
            verdict = "no" + (" (ranges overlap)" if row["ranges_overlap"] else "")
        table.add_row(
            row["metric"],
            fmt(x.get("median")),
            f"{fmt(x.get('min'))}-{fmt(x.get('max'))}",
            fmt(y.get("median")),
            f"{fmt(y.get('min'))}-{fmt(y.get('max'))}",
            fmt(row["ratio"], 3),
            Text(verdict, style="bold red" if row["direction"] == "worse" else ""),
        )
    emit(console, table)
    prov = result["provenance"]
    between = prov["between"]
    word = {"forward": "A..B", "backward": "B..A (B is older)", "diverged": "A..B (diverged)", "same": "same commit"}
    console.print(f"\nupstream commits {word[between['direction']]}: {len(between['commits'])}", style="bold")
    for c in between["commits"]:
        console.print(f"  {c['commit'][:10]} {c['date'][:10]} {c['subject']}", markup=False, highlight=False)
    for title, key in (("patch status changes", "patches"),):
        console.print(f"{title}: {len(prov[key]) or 'none'}", style="bold")
        for item in prov[key]:
            console.print(f"  {item['manifest']}:{item['patch']}  {item['a']} -> {item['b']}", markup=False)
    for title, key in (
        ("env differences", "env"),
        ("vars differences", "vars"),
        ("version differences", "versions"),
        ("GPU differences", "gpus"),
        ("host differences", "host"),
    ):
        console.print(f"{title}: {len(prov[key]) or 'none'}", style="bold")
        for item in prov[key]:
            console.print(f"  {item['key']}: {item['a']!r} -> {item['b']!r}", markup=False, highlight=False)
