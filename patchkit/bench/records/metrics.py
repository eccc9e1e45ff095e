"""Reading metrics out of one client run, and summarising samples.

A metric is read from the client's stdout, from the last JSON line of the
run's ``{output}`` file, or from the server's log lines that are this run's:
from its start to the next run's start, or to the server's stop (the job
chooses them: ``bench.execution.job._run_log``).  A metric that is not there
is ``None`` (missing), never 0.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from patchkit.bench.stats.delta import Summary
from patchkit.manifest.bench import Metric

_AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "median": statistics.median,
    "mean": statistics.fmean,
    "min": min,
    "max": max,
    "first": lambda values: values[0],
    "last": lambda values: values[-1],
    "sum": sum,
}


def last_json_line(path: Path) -> dict[str, object] | None:
    """The last line of a JSONL file that parses as a JSON object, or None."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _lookup(data: dict[str, object], key: str) -> object:
    if key in data:
        return data[key]
    node: object = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def extract(metric: Metric, *, stdout: str, output: Path, server_log: str) -> float | None:
    """One value for one run, or None when the run does not produce the metric."""
    if metric.source == "output-file":
        data = last_json_line(output)
        if data is None or metric.key is None:
            return None
        value = _lookup(data, metric.key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)
    text = stdout if metric.source == "stdout" else server_log
    found: list[tuple[int, float]] = []
    for pattern in metric.regex:
        for match in re.finditer(pattern, text):
            try:
                found.append((match.start(), float(match.group(1))))
            except (TypeError, ValueError):
                continue
    if not found:
        return None
    values = [v for _, v in sorted(found)]
    return float(_AGGREGATE[metric.aggregate](values))


def summary(samples: Sequence[float | None]) -> Summary:
    """median, min, max and counts over the present samples (None where there are none)."""
    present = [s for s in samples if s is not None]
    if not present:
        return {"median": None, "min": None, "max": None, "n": 0, "missing": len(samples)}
    return {
        "median": statistics.median(present),
        "min": min(present),
        "max": max(present),
        "n": len(present),
        "missing": len(samples) - len(present),
    }
