"""The example output in the README and the documentation pages is the real output of the code.

The refused-apply example (in the README and in docs/getting-started.md) is re-run on the demo repository that
``patchkit demo --keep`` leaves and compared line by line (in ``test_demo.py``,
on its one kept demo run); the range-check example,
recorded on a real SGLang clone that tests cannot fetch, is checked for what
the code decides: the manifest digest and the header naming the range as
written on the command line.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers import documented_pages, readme_commands

from patchkit.manifest.loader import load_manifest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED = "\n".join(page.read_text(encoding="utf-8") for page in documented_pages())


def test_readme_has_the_examples():
    verbs = [argv[0] for argv, _ in readme_commands()]
    assert "apply" in verbs and "check" in verbs


def test_every_manifest_digest_in_the_readme_is_the_current_one():
    digests = {name: load_manifest(name).digest for name in ("kimi-k25-eagle3", "eagle3-verify-timing")}
    shown = re.findall(r"manifest ([\w-]+) \((sha256:[0-9a-f]+)…\)", DOCUMENTED)
    assert shown
    for name, prefix in shown:
        assert digests[name].startswith(prefix), f"the docs show {name} {prefix}…, the manifest is {digests[name]}"


def test_check_example_header_names_the_range_of_its_command():
    for argv, output in readme_commands():
        if argv[0] != "check":
            continue
        ranges = [argv[i + 1] for i, a in enumerate(argv) if a == "--range"]
        header = output[0]
        assert header.startswith("patchkit check  manifest ")
        assert f"…)  {' '.join(ranges)}: " in header, (argv, header)
