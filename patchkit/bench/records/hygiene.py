"""GPU hygiene: was each GPU in the same, clean state for both sides of a comparison?

pyperf's ``system show``/``tune`` is the anchor, for CPUs: a benchmark number
is only as good as the machine's state when it was taken.  For GPUs, at the
start of each launch (before the server starts) and at its end (after it
stopped), nvidia-smi is asked, per GPU:

* the SM and memory clocks against their maximum, and whether application
  clocks are set away from their defaults (``nvidia-smi -ac``: locked);
* the power limit and persistence mode;
* the ECC mode and its volatile corrected/uncorrected error counts, and the
  temperature;
* every compute process (``--query-compute-apps``): at both moments no
  process of the launch runs, so any is another's.

Three queries, so that a field one driver does not know (``nvidia-smi``
refuses a whole query for one unknown field) costs that query's facts only:
the base query of ``provenance.QUERY_FIELDS`` (the record's ``gpus``), the
extra fields here, and the compute processes.  Every value nvidia-smi does not
give is None, and None never counts as a difference or a problem: hygiene
only says what it knows.

The queries themselves run in ``execution.smi`` (``snapshot``); this module reads what they
answered, and what a stored record's snapshots say.

``problems`` names a dirty GPU ("GPU 3 had another process, pid 812 (python3),
14.0 GiB, at the start of launch 2"), uncorrected ECC errors, persistence
mode off; ``differences`` names what differs between two sides' GPUs (power
limit, locked clocks, ...).  ``bench``, ``compare``, ``bisect`` and ``show`` print them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from patchkit.bench.records.provenance import parse_query_csv

if TYPE_CHECKING:
    from patchkit.bench.records.record import RunRecord

EXTRA_FIELDS = (
    "index",
    "clocks.max.memory",
    "clocks.applications.graphics",
    "clocks.default_applications.graphics",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
)
APPS_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")
# nvidia-smi's CSV header names (units stripped) -> our keys
_EXTRA = {
    "clocks.max.memory": "max_mem_clock_mhz",
    "clocks.applications.graphics": "app_clock_mhz",
    "clocks.default_applications.graphics": "default_app_clock_mhz",
    "ecc.errors.corrected.volatile.total": "ecc_corrected",
    "ecc.errors.uncorrected.volatile.total": "ecc_uncorrected",
}
_APPS = {"gpu_uuid": "gpu_uuid", "pid": "pid", "process_name": "name", "used_gpu_memory": "used_mib"}
# what a side's GPU is compared on (key, how a person names it); temperature by TEMPERATURE_GAP
COMPARED = (
    ("name", "model"),
    ("app_clocks_locked", "application clocks locked"),
    ("app_clock_mhz", "application SM clock (MHz)"),
    ("max_sm_clock_mhz", "max SM clock (MHz)"),
    ("max_mem_clock_mhz", "max memory clock (MHz)"),
    ("power_limit_w", "power limit (W)"),
    ("persistence_mode", "persistence mode"),
    ("ecc_mode", "ECC mode"),
)
TEMPERATURE_GAP = 15  # degrees C between the sides' starts that is worth a warning
NO_GPU_FACTS = "no GPU facts (no nvidia-smi answered): clocks, power, ECC and other GPU processes were not checked"


def _number(value: object) -> int | float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    try:
        text = str(value).split()[0]
        number = float(text)
    except (IndexError, ValueError):
        return None
    return int(number) if number.is_integer() else number


def parse_apps(text: str) -> list[dict[str, object]]:
    """Rows of ``nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv``."""
    out = []
    for row in parse_query_csv(text):
        item = {_APPS.get(k, k): v for k, v in row.items()}
        item["pid"] = _number(item.get("pid"))
        item["used_mib"] = _number(item.get("used_mib"))
        out.append(item)
    return out


def snapshot_from(base: Sequence[Mapping[str, Any]], extra_csv: str | None, apps_csv: str | None) -> dict[str, object]:
    """One moment's hygiene from nvidia-smi's answers: ``base`` (the parsed base query, ``provenance.gpu_facts``),
    the extra query's CSV and the compute processes' CSV (None: that query failed)."""
    extra = {}
    for item in parse_query_csv(extra_csv or ""):
        extra[_number(item.get("index"))] = {_EXTRA[k]: _number(v) for k, v in item.items() if k in _EXTRA}
    gpus = []
    for row in base:
        index = row.get("index")
        gpu = {
            "index": index,
            "uuid": row.get("uuid"),
            "name": row.get("name"),
            "sm_clock_mhz": row.get("sm_clock_mhz"),
            "max_sm_clock_mhz": row.get("max_sm_clock_mhz"),
            "mem_clock_mhz": row.get("mem_clock_mhz"),
            "power_limit_w": row.get("power_limit_w"),
            "persistence_mode": row.get("persistence_mode"),
            "ecc_mode": row.get("ecc_mode"),
            "temperature_c": row.get("temperature_c"),
            "memory_used_mib": row.get("memory_used_mib"),
            "max_mem_clock_mhz": None,
            "app_clock_mhz": None,
            "default_app_clock_mhz": None,
            "ecc_corrected": None,
            "ecc_uncorrected": None,
            **extra.get(index, {}),
        }
        app, default = gpu["app_clock_mhz"], gpu["default_app_clock_mhz"]
        gpu["app_clocks_locked"] = None if app is None or default is None else app != default
        gpus.append(gpu)
    uuids = {g["uuid"]: g["index"] for g in gpus}
    known = apps_csv is not None and _has_column(apps_csv, "pid")  # else not the compute-process query's answer
    apps = [{**a, "gpu": uuids.get(a.get("gpu_uuid"))} for a in parse_apps(apps_csv or "")] if known else []
    return {"gpus": gpus, "apps": apps, "apps_known": known}


def _has_column(csv: str, name: str) -> bool:
    """Whether an nvidia-smi CSV answer's header names ``name``: an answer to another query (a wrapper that prints
    the same text whatever it is asked) holds no process, and is unknown, not "no other process"."""
    header = next((line for line in csv.splitlines() if line.strip()), "")
    return name in (h.strip().split(" [", 1)[0] for h in header.split(","))


def problems(hygiene: Mapping[str, Any] | None, launch: int) -> list[str]:
    """What made a launch's GPUs dirty: another compute process, uncorrected ECC errors (or new ones during the
    launch), persistence mode off."""
    if not hygiene:
        return []
    out: list[str] = []
    start, end = hygiene.get("start"), hygiene.get("end")
    for when, snap in (("start", start), ("end", end)):
        for app in (snap or {}).get("apps") or ():
            used = app.get("used_mib")
            size = f", {used / 1024:.1f} GiB" if isinstance(used, (int, float)) else ""
            gpu = app.get("gpu") if app.get("gpu") is not None else app.get("gpu_uuid")
            out.append(
                f"GPU {gpu} had another process, pid {app.get('pid')} ({app.get('name') or '?'}){size}, "
                f"at the {when} of launch {launch}"
            )
    for gpu in (start or {}).get("gpus") or ():
        if isinstance(gpu.get("ecc_uncorrected"), int) and gpu["ecc_uncorrected"] > 0:
            out.append(f"GPU {gpu['index']} had {gpu['ecc_uncorrected']} uncorrected ECC errors (volatile) "
                       f"at the start of launch {launch}")  # fmt: skip
        if gpu.get("persistence_mode") == "Disabled":
            out.append(f"GPU {gpu['index']} ran with persistence mode off in launch {launch}")
    before = {g["index"]: g.get("ecc_uncorrected") for g in (start or {}).get("gpus") or ()}
    for gpu in (end or {}).get("gpus") or ():
        was, now = before.get(gpu["index"]), gpu.get("ecc_uncorrected")
        if isinstance(was, int) and isinstance(now, int) and now > was:
            out.append(f"GPU {gpu['index']} counted {now - was} new uncorrected ECC errors during launch {launch}")
    return out


def differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """What differs between two launches' GPUs at their starts: model, locked clocks, power, persistence, ECC
    mode, and a temperature gap of TEMPERATURE_GAP or more.  Only what both sides know is compared."""
    gpus_a = {g["index"]: g for g in ((a or {}).get("start") or {}).get("gpus") or ()}
    gpus_b = {g["index"]: g for g in ((b or {}).get("start") or {}).get("gpus") or ()}
    out = []
    for index in sorted(set(gpus_a) & set(gpus_b), key=str):
        x, y = gpus_a[index], gpus_b[index]
        for key, label in COMPARED:
            if x.get(key) is not None and y.get(key) is not None and x[key] != y[key]:
                out.append(f"GPU {index} {label}: A {_show(x[key])}, B {_show(y[key])}")
        ta, tb = x.get("temperature_c"), y.get("temperature_c")
        if isinstance(ta, (int, float)) and isinstance(tb, (int, float)) and abs(ta - tb) >= TEMPERATURE_GAP:
            out.append(f"GPU {index} temperature at start: A {ta} C, B {tb} C")
    if len(gpus_a) != len(gpus_b) and gpus_a and gpus_b:
        out.append(f"GPUs: A has {len(gpus_a)}, B has {len(gpus_b)}")
    return out


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def side_warnings(records: Iterable[RunRecord]) -> list[str]:
    """Each launch's problems, as ``run N: ...`` lines (``records``: RunRecords)."""
    out = []
    for record in records:
        for line in problems(record.gpu_hygiene, record.launch):
            out.append(f"run {record.run_id}: {line}")
    return out


def _facts(records: Sequence[RunRecord]) -> bool:
    """False when no launch that started a server had nvidia-smi's answers ("no GPU facts", said once)."""
    ran = [r for r in records if r.commands.get("server")]
    return any(r.gpus is not None for r in ran) or not ran


def hunt_report(records: Sequence[RunRecord], good: str) -> dict[str, object]:
    """What bisect says of its launches' GPUs: ``facts`` and ``problems`` as ``report``; ``differences``: every
    other launch against GOOD's first (A), each difference once with the runs that show it.  A hunt runs for hours
    and compares every commit's level with GOOD's: clocks locked half-way through, or a Slurm node set up unlike
    GOOD's, moves the boundary whichever commit's launch it hit, so no launch is left out."""
    differences_seen: list[str] = []
    out: dict[str, object] = {
        "facts": _facts(records),
        "problems": side_warnings(records),
        "differences": differences_seen,
    }
    base = next((r for r in records if r.commit.sha == good and r.gpu_hygiene is not None), None)
    if base is None:
        return out
    shown: dict[str, list[int | None]] = {}
    for record in records:
        if record is not base and record.gpu_hygiene is not None:
            for line in differences(base.gpu_hygiene, record.gpu_hygiene):
                shown.setdefault(line, []).append(record.run_id)
    for line, runs in shown.items():
        which = f"run {runs[0]}" if len(runs) == 1 else f"runs {', '.join(map(str, runs))}"
        differences_seen.append(f"GOOD {base.commit.short} run {base.run_id} (A) vs {which} (B): {line}")
    return out


def report(records: Sequence[RunRecord]) -> dict[str, object]:
    """What bench says of its launches' GPUs: ``facts`` (False: no launch that started a server had nvidia-smi's
    answers: "no GPU facts", said once), each launch's ``problems``, and the ``differences`` between each commit's
    first launch and the first commit's."""
    facts = _facts(records)
    firsts: dict[str, RunRecord] = {}
    for record in records:
        if record.gpu_hygiene is not None:
            firsts.setdefault(record.commit.sha, record)
    base = next(iter(firsts.values()), None)
    diffs = []
    for sha, record in firsts.items():
        if base is not None and sha != base.commit.sha:
            for line in differences(base.gpu_hygiene, record.gpu_hygiene):
                diffs.append(f"{base.commit.short} (A) vs {record.commit.short} (B): {line}")
    return {"facts": facts, "problems": side_warnings(records), "differences": diffs}
