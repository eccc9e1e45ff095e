"""The ``[bench]`` table of a manifest: how to benchmark a patched tree.

The JSON Schema checks shapes; this module turns the table into a frozen
``BenchConfig`` and checks what a schema cannot: every ``{placeholder}`` in a
command, URL or env value must be known (built in, or a ``vars`` key of the
table or of every profile that uses it), regexes must compile and have one
group, a metric's source must come with what it reads (``key`` for
``output-file``, ``regex`` otherwise).  All of this happens at load time, so a
typo stops ``patchkit bench`` before any worktree, server or client exists.

Placeholders are ``str.format`` fields without conversions or format specs;
``{{`` and ``}}`` are literal braces.  Built-ins: ``{port}`` (a free loopback
port unless ``vars`` sets ``port``), ``{output}`` (a fresh per-run file),
``{tree}`` (the worktree) and ``{python}`` (the interpreter).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from patchkit.errors import ManifestError, UsageError
from patchkit.manifest.locate import key_path
from patchkit.manifest.resolve import close_matches

BUILTINS = ("port", "output", "tree", "python")
TEMPLATE_KEYS = ("server", "health", "server_info", "client")
DEFAULT_INHERIT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")

LineOf = Callable[[list[object]], int | None]


class MetricJson(TypedDict):
    """A ``Metric`` as records keep it (``RunRecord.metrics``)."""

    name: str
    profiles: list[str]
    source: str
    better: str
    key: str | None
    regex: list[str]
    aggregate: str
    unit: str | None


@dataclass(frozen=True)
class Metric:
    """A number to read from each run (``[[bench.metric]]``): where it comes from, which way is better,
    and how several matches in one run become one value."""

    name: str
    source: str  # "stdout" | "output-file" | "server-log"
    better: str  # "higher" | "lower"
    key: str | None = None  # output-file: a JSON key (dotted for nesting) of the last JSON line
    regex: tuple[str, ...] = ()  # stdout / server-log: alternatives, each with one group
    aggregate: str = "last"  # several matches in one run -> one value
    unit: str | None = None
    profiles: tuple[str, ...] = ()  # read only in these profiles (empty: all)

    def applies_to(self, profile: str) -> bool:
        return not self.profiles or profile in self.profiles

    def to_json(self) -> MetricJson:
        return {
            "name": self.name,
            "profiles": list(self.profiles),
            "source": self.source,
            "better": self.better,
            "key": self.key,
            "regex": list(self.regex),
            "aggregate": self.aggregate,
            "unit": self.unit,
        }


@dataclass(frozen=True)
class Profile:
    """A named server configuration (``[bench.profiles.<name>]``): the placeholder values and environment
    it adds to the table's own."""

    name: str
    vars: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    description: str | None = None


@dataclass(frozen=True)
class SlurmDefaults:
    """``[bench.slurm]``: defaults for ``--executor slurm``; each is overridden by its command-line option."""

    partition: str | None = None
    gpus_per_job: int | None = None
    timeout_min: int | None = None
    slots: int | None = None
    shared_dir: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)  # sbatch long options without the dashes


@dataclass(frozen=True)
class BenchConfig:
    """The checked ``[bench]`` table: how to start, probe and stop the server, how to run the client,
    the metrics to read, and how many launches and client runs a measurement takes."""

    server: str
    health: str
    client: str
    metrics: tuple[Metric, ...]
    python: str = "python3"
    pythonpath: tuple[str, ...] = ()
    import_check: tuple[str, ...] = ()
    server_info: str | None = None
    version_file: str | None = None
    scm_version_file: str | None = None
    ready_timeout: float = 1800.0
    client_timeout: float = 7200.0
    stop_grace: float = 15.0
    log_wait: float = 1.0  # seconds a client run's server-log metric lines may come after its last response
    warmup: int = 1
    repeat: int = 3
    launches: int = 1  # server launches per (commit, profile): the replicates of a comparison
    env: Mapping[str, str] = field(default_factory=dict)
    inherit: tuple[str, ...] = DEFAULT_INHERIT
    vars: Mapping[str, str] = field(default_factory=dict)
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    probe: bool = True  # the probe in every Python process of the server (patchkit/proof)
    allow_stray: tuple[str, ...] = ()  # fnmatch globs on absolute paths: STRAY files the user accepts
    slurm: SlurmDefaults = field(default_factory=SlurmDefaults)

    def profile_names(self) -> list[str]:
        """Declared profiles in file order; one implicit ``default`` when there are none."""
        return list(self.profiles) or ["default"]

    def profile(self, name: str) -> Profile:
        if not self.profiles and name == "default":
            return Profile("default")
        if name not in self.profiles:
            raise UsageError(f"the manifest's [bench] has no profile {name!r}", hint=_close(name, self.profile_names()))
        return self.profiles[name]

    def metric(self, name: str) -> Metric:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise UsageError(
            f"the manifest's [bench] has no metric {name!r}", hint=_close(name, [m.name for m in self.metrics])
        )

    def resolve_vars(self, profile: str, overrides: Mapping[str, str] = {}) -> dict[str, str]:
        """vars, then the profile's vars, then ``--set`` (which may only set known names or ``port``)."""
        chosen = self.profile(profile)
        values = {**self.vars, **chosen.vars}
        for key in overrides:
            if key not in values and key != "port":
                raise UsageError(
                    f"--set {key}=...: {key!r} is not a variable of [bench] or of profile {profile!r}",
                    hint=_close(key, sorted(values)),
                )
        values.update(overrides)
        return values

    def to_json(self) -> dict[str, object]:
        return {
            "python": self.python,
            "pythonpath": list(self.pythonpath),
            "server": self.server,
            "health": self.health,
            "server_info": self.server_info,
            "client": self.client,
            "warmup": self.warmup,
            "repeat": self.repeat,
            "launches": self.launches,
            "env": dict(self.env),
            "vars": dict(self.vars),
            "profiles": sorted(self.profiles),
            "metrics": [m.to_json() for m in self.metrics],
            "probe": self.probe,
            "allow_stray": list(self.allow_stray),
        }


def _close(name: str, known: list[str]) -> str:
    """The hint for an unknown name: the closest known one, or all of them."""
    close = close_matches(name, known)
    return f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known) or '(none)'}"


def placeholders(template: str) -> list[str]:
    """Field names in a template, in order; raises ValueError for bad braces, conversions or specs."""
    names = []
    for _literal, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if spec or conversion:
            raise ValueError(f"{{{name}}} may not have a format spec or conversion")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"{{{name}}} is not a placeholder name (letters, digits, '_')")
        names.append(name)
    return names


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill a template validated at load time."""
    return template.format_map(dict(values))


def parse_bench(table: Mapping[str, Any], display: str, line_of: LineOf) -> BenchConfig:
    """A schema-valid ``[bench]`` table -> BenchConfig, or a ManifestError naming the key path."""

    def fail(path: list[object], message: str, hint: str | None = None) -> ManifestError:

        return ManifestError(message, file=display, key_path=key_path(path), line=line_of(path), hint=hint)

    metrics: list[Metric] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(table["metric"]):
        path: list[object] = ["bench", "metric", index]
        name = item["name"]
        if name in seen:
            raise fail([*path, "name"], f"duplicate metric name {name!r} (bench.metric[{seen[name] + 1}] has it too)")
        seen[name] = index
        source = item["source"]
        regexes = tuple(item.get("regex", ()))
        if source == "output-file":
            if "key" not in item:
                raise fail(
                    [*path, "key"], "missing required key 'key' for source \"output-file\"", "the JSON key to read"
                )
            if regexes:
                raise fail([*path, "regex"], 'source "output-file" reads `key`, not `regex`', "drop `regex`")
        else:
            if not regexes:
                raise fail([*path, "regex"], f"missing required key 'regex' for source {source!r}", "a list of regexes")
            if "key" in item:
                raise fail([*path, "key"], f"source {source!r} reads `regex`, not `key`", "drop `key`")
        for position, pattern in enumerate(regexes):
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise fail([*path, "regex", position], f"not a valid regex: {exc}") from None
            if compiled.groups != 1:
                raise fail(
                    [*path, "regex", position],
                    f"must have exactly one group (the number), has {compiled.groups}",
                    r"e.g. 'verify_ms=([0-9.]+)'; use (?:...) for other groups",
                )
        metrics.append(
            Metric(
                name=name,
                source=source,
                better=item["better"],
                key=item.get("key"),
                regex=regexes,
                aggregate=item.get("aggregate", "last"),
                unit=item.get("unit"),
                profiles=tuple(item.get("profiles", ())),
            )
        )

    profiles = {
        name: Profile(name, dict(p.get("vars", {})), dict(p.get("env", {})), p.get("description"))
        for name, p in table.get("profiles", {}).items()
    }
    base_vars = dict(table.get("vars", {}))
    for index, metric in enumerate(metrics):
        for position, name in enumerate(metric.profiles):
            if name not in profiles:
                raise fail(
                    ["bench", "metric", index, "profiles", position],
                    f"no profile {name!r} in [bench.profiles]",
                    _close(name, list(profiles)),
                )
    for builtin in ("output", "tree", "python"):
        for where, values in [(["bench", "vars"], base_vars)] + [
            (["bench", "profiles", n, "vars"], dict(p.vars)) for n, p in profiles.items()
        ]:
            if builtin in values:
                raise fail([*where, builtin], f"{{{builtin}}} is built in and cannot be set", None)

    # Every placeholder must be known for every profile.
    scopes = [(n, {**base_vars, **p.vars}) for n, p in profiles.items()] or [("default", base_vars)]
    templated: list[tuple[list[object], str]] = [(["bench", k], table[k]) for k in TEMPLATE_KEYS if k in table]
    templated += [(["bench", "env", k], v) for k, v in table.get("env", {}).items()]
    for name, p in profiles.items():
        templated += [(["bench", "profiles", name, "env", k], v) for k, v in p.env.items()]
    for path, template in templated:
        try:
            names = placeholders(template)
        except ValueError as exc:
            raise fail(path, f"bad placeholder: {exc}", "write literal braces as {{ and }}") from None
        for placeholder in names:
            if placeholder == "output" and path != ["bench", "client"]:
                raise fail(path, "{output} is the client's per-run output file: only `client` may use it")
            if placeholder in BUILTINS:
                continue
            missing = [n for n, values in scopes if placeholder not in values]
            if path[1] == "profiles":
                missing = [n for n in missing if n == path[2]]
            if missing:
                known = sorted(set(BUILTINS) | set(base_vars))
                close = close_matches(placeholder, known)
                named = "profile" if len(missing) == 1 else "profiles"
                where = "" if len(missing) == len(scopes) else f" for {named} {', '.join(missing)}"
                raise fail(
                    path,
                    f"unknown placeholder {{{placeholder}}}{where}",
                    f"did you mean {{{close[0]}}}?"
                    if close
                    else f"define it in [bench].vars; known: {', '.join('{' + k + '}' for k in known)}",
                )

    return BenchConfig(
        server=table["server"],
        health=table["health"],
        client=table["client"],
        metrics=tuple(metrics),
        python=table.get("python", "python3"),
        pythonpath=tuple(table.get("pythonpath", ())),
        import_check=tuple(table.get("import_check", ())),
        server_info=table.get("server_info"),
        version_file=table.get("version_file"),
        scm_version_file=table.get("scm_version_file"),
        ready_timeout=float(table.get("ready_timeout", 1800)),
        client_timeout=float(table.get("client_timeout", 7200)),
        stop_grace=float(table.get("stop_grace", 15)),
        log_wait=float(table.get("log_wait", 1)),
        warmup=int(table.get("warmup", 1)),
        repeat=int(table.get("repeat", 3)),
        launches=int(table.get("launches", 1)),
        env=dict(table.get("env", {})),
        inherit=tuple(table.get("inherit", DEFAULT_INHERIT)),
        vars=base_vars,
        profiles=profiles,
        probe=bool(table.get("probe", True)),
        allow_stray=tuple(table.get("allow_stray", ())),
        slurm=_slurm_defaults(table.get("slurm", {})),
    )


def _slurm_defaults(table: Mapping[str, Any]) -> SlurmDefaults:
    """The schema has checked every key and type of ``[bench.slurm]``."""
    return SlurmDefaults(
        partition=table.get("partition"),
        gpus_per_job=table.get("gpus_per_job"),
        timeout_min=table.get("timeout_min"),
        slots=table.get("slots"),
        shared_dir=table.get("shared_dir"),
        extra=dict(table.get("extra", {})),
    )
