"""``bench --without PATCH``: one commit benchmarked with every patch and with one left out, and what that says.

Why: a patch that upstream took in part, or replaced with code of its own
(``port`` names them), may no longer earn its place, and reading the code
cannot tell whether it still makes the server faster.  Only launches can:
the same commit, two trees (every patch; every patch but one), launched in
turn so that the machine's drift falls on both alike, and ``compare``'s
three-way verdict over the launches.

* ``leave_out``: the manifests with the patch taken out (in memory; the
  manifest file is never touched), its digest marked so that a reused
  worktree of the other side is never taken for this one.  A patch another
  patch ``requires``, or a variant of a ``[[group]]``, is refused: leaving it
  out would measure a different set of patches than the one named.
* ``evidence``: per profile, ``compare`` of the with side (A) and the without
  side (B) and a decision: every metric ``same`` -> drop (it makes no
  difference as large as the threshold); a metric worse without it -> keep;
  better without it -> drop (it costs); ``unknown`` -> undecided, with the
  launches per side that would decide.  A metric without ``better`` that is
  ``different`` -> keep: the patch changes it, and which way is good is not
  said.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from patchkit.bench.records.compare import Comparison, MetricDelta, compare
from patchkit.bench.records.record import Outcome, RunRecord
from patchkit.bench.stats.verdict import Noise
from patchkit.errors import UsageError
from patchkit.manifest import Manifest

DROP, KEEP, UNDECIDED = "drop", "keep", "undecided"


@dataclass(frozen=True)
class LeftOut:
    """The patch a without side lacks: its manifest (name and path) and id."""

    manifest: str
    display: str
    patch: str
    file: str  # its target file

    def to_json(self) -> dict[str, str]:
        return {"manifest": self.manifest, "patch": self.patch}


def leave_out(manifests: Sequence[Manifest], spec: str) -> tuple[tuple[Manifest, ...], LeftOut]:
    """The manifests with patch ``spec`` (``ID``, or ``MANIFEST:ID`` where two manifests have that id) left out."""
    name, sep, patch_id = spec.rpartition(":")
    candidates = [m for m in manifests if not sep or m.name == name]
    if not candidates:
        given = ", ".join(f"{m.name} ({m.display})" for m in manifests)
        raise UsageError(f"--without {spec}: no -m manifest is named {name!r} (given: {given})")
    holding = [m for m in candidates if any(p.id == patch_id for p in m.patches)]
    if not holding:
        ids = [", ".join(p.id for p in m.patches) or "none" for m in candidates]
        having = (
            ids[0]
            if len(candidates) == 1
            else "; ".join(f"{m.display}: {i}" for m, i in zip(candidates, ids, strict=True))
        )
        where = candidates[0].display if len(candidates) == 1 else "none of the -m manifests"
        raise UsageError(
            f"--without {spec}: {where} has no patch {patch_id!r} (its patches: {having})",
            hint="give one of those ids",
        )
    if len(holding) > 1:
        names = ", ".join(m.display for m in holding)
        raise UsageError(
            f"--without {spec}: patch {patch_id!r} is in {names}",
            hint=f"name its manifest: --without {holding[0].name}:{patch_id}",
        )
    manifest = holding[0]
    patch = manifest.patch(patch_id)
    if patch.group is not None:
        raise UsageError(
            f"--without {spec}: {patch_id} is a variant of group {patch.group} in {manifest.display}",
            hint="--without takes a patch outside [[group]] tables",
        )
    needing = [p.id for p in manifest.patches if patch_id in p.requires]
    if needing:
        raise UsageError(
            f"--without {spec}: {', '.join(needing)} in {manifest.display} require {patch_id}",
            hint="leaving it out would leave them out too; benchmark a manifest without them",
        )
    digest = hashlib.sha256(f"{manifest.digest}\0without {patch_id}".encode()).hexdigest()
    minus = replace(manifest, patches=tuple(p for p in manifest.patches if p.id != patch_id), digest=digest)
    out = tuple(minus if m is manifest else m for m in manifests)
    return out, LeftOut(manifest.name, manifest.display, patch_id, patch.file)


@dataclass(frozen=True)
class Evidence:
    """One profile's with-and-without verdict: the comparison (A: every patch, B: without the one), the decision
    and the line that says it."""

    left_out: LeftOut
    profile: str
    comparison: Comparison | None  # None: a side has no ok launch
    decision: str  # drop | keep | undecided
    why: str
    line: str

    def to_json(self) -> dict[str, object]:
        comparison = self.comparison
        return {
            **self.left_out.to_json(),
            "profile": self.profile,
            "decision": self.decision,
            "why": self.why,
            "line": self.line,
            "launches": None
            if comparison is None
            else {
                "with": [r.run_id for r in comparison.launches_a],
                "without": [r.run_id for r in comparison.launches_b],
            },
            "metrics": [] if comparison is None else [m.to_json() for m in comparison.metrics],
        }


def evidence(
    left: LeftOut,
    profile: str,
    records: Sequence[RunRecord],
    *,
    threshold: float,
    noise: Mapping[str, Noise] | None = None,
) -> Evidence:
    """The verdict of one profile's launches (both sides among ``records``); ``noise``: the prior where they ran."""
    mine = [r for r in records if r.profile == profile]
    with_side = [r for r in mine if r.without is None]
    without_side = [r for r in mine if r.without is not None]
    head = f"{left.patch}: with vs without at {(mine[0].commit.short if mine else '?')} ({profile})"
    if mine and _same_code(with_side, without_side, left.file):
        head = f"{left.patch}: upstream has its code at {mine[0].commit.short}; with vs without ({profile})"
    usable_a = [r for r in with_side if r.outcome is Outcome.OK]
    usable_b = [r for r in without_side if r.outcome is Outcome.OK]
    if not usable_a or not usable_b:
        side = "with" if not usable_a else "without"
        why = f"no ok launch {side} {left.patch}: nothing to compare (see the runs' reasons above)"
        return Evidence(left, profile, None, UNDECIDED, why, f"{head}: {why}")
    result = compare(
        usable_a[-1], usable_b[-1], threshold=threshold, launches_a=with_side, launches_b=without_side, noise=noise
    )
    decision, why = decide(result)
    calls = ", ".join(_call(m) for m in result.metrics)
    return Evidence(left, profile, result, decision, why, f"{head}: {calls} -> {decision}{f' ({why})' if why else ''}")


def _same_code(with_side: Sequence[RunRecord], without_side: Sequence[RunRecord], file: str) -> bool:
    """Whether the patch's file is byte for byte the same in both trees (read from the launches' worktrees):
    upstream already has what the patch writes, so the two sides differ in nothing but the record."""
    trees = [Path(str(side[0].commands.get("cwd"))) for side in (with_side, without_side) if side and side[0].commands]
    if len(trees) != 2:
        return False
    try:
        return (trees[0] / file).read_bytes() == (trees[1] / file).read_bytes()
    except OSError:
        return False


def decide(result: Comparison) -> tuple[str, str]:
    """(drop | keep | undecided, why) from the metrics' calls, B (without) against A (with)."""
    worse = [m.metric for m in result.metrics if m.call == "different (worse)"]
    if worse:
        return KEEP, f"without it {', '.join(worse)} {'is' if len(worse) == 1 else 'are'} worse"
    moved = [m.metric for m in result.metrics if m.call in ("different (higher)", "different (lower)")]
    if moved:
        return (
            KEEP,
            f"without it {', '.join(moved)} change{'s' if len(moved) == 1 else ''} (no `better` says which way)",
        )
    unknown = [m for m in result.metrics if m.verdict is None or m.verdict.call.value == "unknown"]
    if unknown:
        needed = [m.verdict.launches_needed for m in unknown if m.verdict is not None]
        if needed and all(n is not None for n in needed):
            return UNDECIDED, f"about {max(n for n in needed if n is not None)} launches per side would decide"
        nexts = [m.verdict.next or m.verdict.why for m in unknown if m.verdict is not None]
        return UNDECIDED, nexts[0] if nexts else "no metric has a value on both sides"
    better = [m.metric for m in result.metrics if m.call == "different (better)"]
    if better:
        return DROP, f"without it {', '.join(better)} {'is' if len(better) == 1 else 'are'} better"
    return DROP, ""


def _call(m: MetricDelta) -> str:
    """``output_tok_s SAME (-0.3 % [-1.1, 0.6])``: the call, and B's change against A with its interval, in %."""
    v = m.verdict
    if v is None or v.ratio is None:
        return f"{m.metric} UNKNOWN (no value on both sides)"
    word = v.call.value.upper()
    if v.low is None or v.high is None:
        return f"{m.metric} {word} ({(v.ratio - 1) * 100:+.1f} %)"
    return f"{m.metric} {word} ({(v.ratio - 1) * 100:+.1f} % [{(v.low - 1) * 100:+.1f}, {(v.high - 1) * 100:+.1f}])"
