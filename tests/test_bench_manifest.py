"""The [bench] table: a full SGLang example loads as written; errors name the key path and line, exit 2."""
# ruff: noqa: E501  (a full SGLang [bench] example, verbatim)

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli

from patchkit.errors import ManifestError
from patchkit.manifest import load_manifest

HEAD = """\
schema = 1
name = "b"

[[patch]]
id = "a"
op = "ensure-import"
file = "a.py"
import = "import os"
"""

EXAMPLE = r"""
[bench]
python = "python3"
pythonpath = ["python"]
import_check = ["sglang"]
server = "{python} -m sglang.launch_server --model-path {model} --tp-size {tp} --host 127.0.0.1 --port {port} {server_args}"
health = "http://127.0.0.1:{port}/health"
server_info = "http://127.0.0.1:{port}/get_server_info"
version_file = "python/sglang/version.py"
ready_timeout = 1800
client = "{python} -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port {port} --dataset-name random --num-prompts {prompts} --random-input-len 1024 --random-output-len 512 --output-file {output}"
warmup = 1
repeat = 3
env = { PATCHKIT_EAGLE3_VERIFY_TIMING = "1" }
vars = { model = "moonshotai/Kimi-K2.5", tp = "8", prompts = "200", server_args = "" }

[bench.profiles.eagle3]
vars = { server_args = "--speculative-algorithm EAGLE3 --speculative-draft-model-path AQ-MedAI/Kimi-K25-eagle3 --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4" }

[bench.profiles.baseline]
vars = { server_args = "" }

[[bench.metric]]
name = "output_tok_s"
source = "output-file"
key = "output_throughput"
better = "higher"

[[bench.metric]]
name = "output_tok_s_printed"
source = "stdout"
regex = ['Output token throughput \(tok/s\):\s+([0-9.]+)', 'Output token throughput \(token/s\):\s+([0-9.]+)']
better = "higher"

[[bench.metric]]
name = "verify_ms"
source = "server-log"
regex = ['\[patchkit\] eagle3 verify_ms=([0-9.]+)']
aggregate = "median"
better = "lower"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def test_the_issue_example_loads_as_written(tmp_path):
    bench = load_manifest(write(tmp_path, EXAMPLE)).bench
    assert bench is not None
    assert list(bench.profiles) == ["eagle3", "baseline"]
    assert [m.name for m in bench.metrics] == ["output_tok_s", "output_tok_s_printed", "verify_ms"]
    assert bench.metrics[1].regex[1] == r"Output token throughput \(token/s\):\s+([0-9.]+)"
    assert bench.resolve_vars("eagle3")["server_args"].startswith("--speculative-algorithm EAGLE3")
    assert bench.resolve_vars("baseline", {"prompts": "10"})["prompts"] == "10"
    assert (bench.warmup, bench.repeat, bench.ready_timeout) == (1, 3, 1800.0)


def test_a_manifest_without_bench_has_none(tmp_path):
    assert load_manifest(write(tmp_path, "")).bench is None


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate((HEAD + text).splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "key_path", "line_needle", "words"),
    [
        (
            'source = "stdout"',
            'source = "stdot"',
            "bench.metric[2].source",
            'source = "stdot"',
            "did you mean 'stdout'",
        ),
        ("{prompts}", "{promts}", "bench.client", "client =", "unknown placeholder {promts}; did you mean {prompts}"),
        ('aggregate = "median"', 'agregate = "median"', "bench.metric[3].agregate", "agregate", "unknown key"),
        ("repeat = 3", "repeat = 0", "bench.repeat", "repeat = 0", "must be at least 1"),
        (
            'key = "output_throughput"',
            'key = "output_throughput"\nregex = ["x(1)"]',
            "bench.metric[1].regex",
            'regex = ["x(1)"]',
            "reads `key`",
        ),
        ("verify_ms=([0-9.]+)", "verify_ms=[0-9.]+", "bench.metric[3].regex[1]", "verify_ms=", "exactly one group"),
        ('vars = { server_args = "" }', 'vars = { server_args = "{gpu}" }', None, None, None),
        ('health = "', 'helth = "', "bench.health", "[bench]", "missing required key"),
        (
            'name = "verify_ms"',
            'name = "output_tok_s"',
            "bench.metric[3].name",
            'name = "output_tok_s"\nsource = "server-log"',
            "duplicate metric name",
        ),
        ("[bench.profiles.baseline]", "[bench.profiles.Base]", "bench.profiles.Base", None, "not a profile name"),
    ],
)
def test_bench_errors_name_key_path_and_line(tmp_path, capsys, old, new, key_path, line_needle, words):
    text = EXAMPLE.replace(old, new, 1)
    assert text != EXAMPLE
    path = write(tmp_path, text)
    result = run_cli(capsys, "validate", "-m", path)
    if key_path is None:  # a profile var is not a template: a placeholder in it is just text
        assert result.code == 0, result.err
        return
    assert result.code == 2
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert f": {key_path}: " in result.err
    assert words in result.err
    if line_needle is not None:
        first = line_needle.split("\n")[0]
        if "\n" in line_needle:  # the line of the second match
            lines = (HEAD + text).splitlines()
            expected = next(
                i for i, line in enumerate(lines, 1) if first in line and i > line_of(text, "verify_ms") - 3
            )
        else:
            expected = line_of(text, first)
        assert f"m.toml:{expected}: " in result.err


def test_placeholder_known_in_one_profile_only(tmp_path, capsys):
    text = EXAMPLE.replace("{server_args}", "{server_args} {draft}").replace(
        'vars = { server_args = "" }', 'vars = { server_args = "", draft = "x" }'
    )
    result = run_cli(capsys, "validate", "-m", write(tmp_path, text))
    assert result.code == 2
    assert "bench.server: unknown placeholder {draft} for profile eagle3;" in result.err


def test_output_only_in_client(tmp_path, capsys):
    text = EXAMPLE.replace("--port {port} {server_args}", "--port {port} --log {output} {server_args}")
    result = run_cli(capsys, "validate", "-m", write(tmp_path, text))
    assert result.code == 2 and "bench.server: {output} is the client's per-run output file" in result.err


def test_builtin_cannot_be_set(tmp_path, capsys):
    text = EXAMPLE.replace('tp = "8",', 'tp = "8", output = "x",')
    result = run_cli(capsys, "validate", "-m", write(tmp_path, text))
    assert result.code == 2 and "bench.vars.output: {output} is built in" in result.err


def test_set_may_only_override_known_names(tmp_path):
    from patchkit.errors import UsageError

    bench = load_manifest(write(tmp_path, EXAMPLE)).bench
    assert bench is not None
    with pytest.raises(UsageError, match="'promts' is not a variable") as caught:
        bench.resolve_vars("eagle3", {"promts": "1"})
    assert caught.value.hint == "did you mean 'prompts'?"
    assert bench.resolve_vars("eagle3", {"port": "1234"})["port"] == "1234"


def test_kimi_manifest_bench_profiles_and_metrics(project_root):
    from pathlib import Path

    from patchkit.bench.records.metrics import extract

    bench = load_manifest(project_root / "manifests" / "kimi-k25-eagle3.toml").bench
    assert bench is not None
    assert list(bench.profiles) == ["eagle3", "baseline"]
    assert [m.name for m in bench.metrics] == ["output_tok_s", "output_tok_s_printed", "accept_length", "verify_ms"]
    eagle = bench.resolve_vars("eagle3")["server_args"].split()
    for flag in ("--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
                 "--speculative-eagle-topk", "--speculative-num-draft-tokens"):  # fmt: skip
        assert flag in eagle
    assert bench.resolve_vars("baseline")["server_args"] == ""
    assert bench.scm_version_file == "python/sglang/_version.py"
    # bench_serving prints "{:<40} {:<10.2f}"; both spellings are read.
    printed = bench.metric("output_tok_s_printed")
    for label in ("Output token throughput (tok/s):", "Output token throughput (token/s):"):
        line = f"{label:<40} {61.25:<10.2f}"
        assert extract(printed, stdout=line, output=Path("/nonexistent"), server_log="") == 61.25
    # The line the eagle3-verify-timing payload prints, once per rank and step: the run's median.
    timing = (project_root / "patches" / "eagle3_verify_timing.py").read_text(encoding="utf-8")
    assert 'print(f"[patchkit] eagle3 verify_ms={elapsed_ms:.1f}"' in timing
    log = "\n".join(f"[patchkit] eagle3 verify_ms={v:.1f}" for v in (29.0, 18.5, 19.5))
    assert extract(bench.metric("verify_ms"), stdout="", output=Path("/nonexistent"), server_log=log) == 19.5
    assert not bench.metric("accept_length").applies_to("baseline")
    assert bench.metric("output_tok_s").applies_to("baseline")


def test_metric_profiles_must_exist(tmp_path, capsys):
    text = EXAMPLE.replace('better = "lower"', 'better = "lower"\nprofiles = ["eagle"]')
    result = run_cli(capsys, "validate", "-m", write(tmp_path, text))
    assert result.code == 2
    assert "bench.metric[3].profiles[1]: no profile 'eagle' in [bench.profiles]; did you mean 'eagle3'?" in result.err


def test_bench_checks_are_remembered_with_the_schema_check(tmp_path):
    """With a marker directory (the guard's and the range check's), a [bench] table is checked on the
    first load of its bytes and built on first use after that; a bad one is never remembered."""
    cache = tmp_path / "checked"
    path = write(tmp_path, EXAMPLE)
    first = load_manifest(path, valid_cache=cache)
    assert list(cache.iterdir())  # remembered: schema and [bench] passed
    again = load_manifest(path, valid_cache=cache)
    assert again.bench == first.bench == load_manifest(path).bench
    assert again == first

    bad = write(tmp_path, EXAMPLE.replace("{prompts}", "{promts}", 1))
    for _ in range(2):  # the first load did not remember it: the second checks it again
        with pytest.raises(ManifestError, match=r"unknown placeholder \{promts\}"):
            load_manifest(bad, valid_cache=cache)
    assert len(list(cache.iterdir())) == 1


def test_a_warm_load_does_not_import_the_bench_parser(tmp_path):
    """What the guard gains: a manifest whose bytes passed before loads without the [bench] parser."""
    path = write(tmp_path, EXAMPLE)
    probe = (
        "import sys\nfrom pathlib import Path\nfrom patchkit.manifest import load_manifest\n"
        f"m = load_manifest(Path({str(path)!r}), valid_cache=Path({str(tmp_path / 'checked')!r}))\n"
        "built = m.bench is not None\n"
        "print('PARSER', 'patchkit.manifest.bench' in sys.modules, built)\n"
    )

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
        return out.splitlines()[-1]

    assert run() == "PARSER True True"  # first load: checked (and then used)
    assert run() == "PARSER True True"  # `.bench` imports it on first use
    probe = probe.replace("m.bench is not None", "'not used'")
    assert run() == "PARSER False not used"  # never imported
