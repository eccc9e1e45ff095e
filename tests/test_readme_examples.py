"""Issue 7, item 17: the README's example output is the real output of the code.

The refused-apply example is re-run on the demo repository (built by
``patchkit demo --keep``) and compared line by line; the range-check example,
recorded on a real SGLang clone that tests cannot fetch, is checked for what
the code decides: the manifest digest and the header naming the range as
written on the command line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from helpers import run_script

from patchkit.manifest.loader import load_manifest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks_with_commands() -> list[tuple[list[str], list[str]]]:
    """(argv after `patchkit`, output lines) for every fenced block that starts with `$ patchkit`."""
    out = []
    block: list[str] | None = None
    for line in README.splitlines():
        if line.startswith("```"):
            if block is None:
                block = []
                continue
            if block and block[0].startswith("$ patchkit "):
                out.append((shlex.split(block[0])[2:], block[1:]))
            block = None
        elif block is not None:
            block.append(line)
    return out


def test_readme_has_the_examples():
    verbs = [argv[0] for argv, _ in blocks_with_commands()]
    assert "apply" in verbs and "check" in verbs


def test_every_manifest_digest_in_the_readme_is_the_current_one():
    digests = {name: load_manifest(name).digest for name in ("kimi-k25-eagle3", "eagle3-verify-timing")}
    shown = re.findall(r"manifest ([\w-]+) \((sha256:[0-9a-f]+)…\)", README)
    assert shown
    for name, prefix in shown:
        assert digests[name].startswith(prefix), f"README shows {name} {prefix}…, the manifest is {digests[name]}"


def test_check_example_header_names_the_range_of_its_command():
    for argv, output in blocks_with_commands():
        if argv[0] != "check":
            continue
        ranges = [argv[i + 1] for i, a in enumerate(argv) if a == "--range"]
        header = output[0]
        assert header.startswith("patchkit check  manifest ")
        assert f"…)  {' '.join(ranges)}: " in header, (argv, header)


def test_refused_apply_example_is_the_real_output(tmp_path):
    demo = tmp_path / "demo"
    built = run_script("demo", "--keep", demo)
    assert built.code == 0, built.err
    (argv, expected) = next((a, o) for a, o in blocks_with_commands() if a[0] == "apply")
    argv = [a.replace("/src/demo", str(demo)) for a in argv]
    r = run_script(*argv, cwd=tmp_path)
    assert r.code == 1
    got = r.out.replace(str(demo), "/src/demo").splitlines()
    assert got == expected, "README block differs; the real output is:\n" + "\n".join(got)
