"""One self-contained HTML file: the documents, plotly.js and the page's own script, nothing fetched.

Layout of the file (docs/json.md "report"):

- ``<script type="application/json" id="patchkit-report">``: a small index,
  plain JSON, naming the element that holds each document;
- one ``<script type="text/plain" data-encoding="gzip+base64">`` per
  document: base64 of the gzip of the exact bytes ``check --json`` (one per
  manifest), ``runs --json`` and ``bisect --json`` print, and the run
  records (``bench --json``'s ``runs``) for the provenance shown on hover;
- plotly.js, the version the ``plotly`` package pins, gzip+base64 as well,
  started from a ``blob:`` URL once the page has inflated it (the browser's
  own ``DecompressionStream``): plotly.js is most of the page, and
  compressed it leaves room for the documents of thousands of commits;
- ``assets/report.css`` and ``assets/report.js``: the page's layout and the
  code that draws the figures from the documents.

A Content-Security-Policy allows nothing to be fetched (``default-src
'none'``): opened from a laptop after ``scp``, the page makes no request.

The compressed plotly.js is cached under the git dir (``paths.report_cache``),
keyed by the path, size and modification time of the file the plotly
package ships: compressing it costs more than the warm checks the page
embeds, and so would importing plotly to find it, so neither is done twice.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib.resources import files
from pathlib import Path

from patchkit.engine.transaction import atomic_write
from patchkit.errors import InternalError

ASSETS = files("patchkit.report") / "assets"
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval' blob:; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True)
class Document:
    """One embedded document: its key in the index and its text, in pieces (``check --json``'s chunks)."""

    key: str
    element: str
    chunks: Sequence[str]
    label: str = ""


def gzip_base64(chunks: Iterable[str], level: int = 6) -> str:
    """base64 of the gzip of the UTF-8 text; each long chunk is encoded once, however often it repeats."""
    packer = zlib.compressobj(level, zlib.DEFLATED, 31)
    out: list[bytes] = []
    encoded: dict[int, bytes] = {}
    for chunk in chunks:
        if len(chunk) < 512:
            out.append(packer.compress(chunk.encode("utf-8")))
            continue
        data = encoded.get(id(chunk))
        if data is None:
            data = encoded[id(chunk)] = chunk.encode("utf-8")
        out.append(packer.compress(data))
    out.append(packer.flush())
    return base64.b64encode(b"".join(out)).decode("ascii")


def plotly_js_packed(cache_dir: Path | None) -> tuple[str, str]:
    """(plotly.js version, its gzip+base64 text), from the cache when it was made from this very file.

    The file is found without importing plotly (a large import): the cache key is its path, size and
    modification time, so a warm report reads the cached text and hashes nothing.
    """
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise InternalError("the plotly package is not installed: pip install -e . (it is a dependency)")
    package = Path(next(iter(spec.submodule_search_locations)))
    script = package / "package_data" / "plotly.min.js"
    version = _plotlyjs_version(package / "offline" / "_plotlyjs_version.py")
    info = script.stat()
    key = hashlib.sha256(f"{script}|{info.st_size}|{info.st_mtime_ns}".encode()).hexdigest()[:16]
    cached = cache_dir / f"plotly-{version}-{key}.b64" if cache_dir is not None else None
    if cached is not None:
        try:
            return version, cached.read_text(encoding="ascii")
        except OSError:
            pass
    packed = gzip_base64([script.read_text(encoding="utf-8")], level=9)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(cached, packed.encode("ascii"), 0o644)
        except OSError:
            pass  # a read-only git dir: compress again next time
    return version, packed


def _plotlyjs_version(path: Path) -> str:
    """The plotly.js version the package records (``__plotlyjs_version__ = "4.1.1"``), read as text."""
    try:
        found = re.search(r"""__plotlyjs_version__\s*=\s*["']([^"']+)""", path.read_text(encoding="utf-8"))
    except OSError:
        found = None
    return found[1] if found else "unknown"


def script_json(data: object) -> str:
    """JSON safe inside a <script> element: '<' only occurs in strings, where \\u003c means the same."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True).replace("<", "\\u003c")


def build_page(title: str, index: Mapping[str, object], documents: Sequence[Document], cache_dir: Path | None) -> bytes:
    plotly_version, plotly_packed = plotly_js_packed(cache_dir)
    full_index = {
        **index,
        "plotly": plotly_version,
        "documents": {d.key: d.element for d in documents if not d.key.startswith("check:")}
        | {"check": [d.element for d in documents if d.key.startswith("check:")]},
    }
    parts = [
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{escape(title)}</title>\n<style>\n",
        (ASSETS / "report.css").read_text(encoding="utf-8"),
        "</style>\n</head>\n<body>\n",
        (ASSETS / "body.html").read_text(encoding="utf-8").replace("{title}", escape(title)),
        f'<script type="application/json" id="patchkit-report">{script_json(full_index)}</script>\n',
    ]
    for document in documents:
        parts.append(
            f'<script type="text/plain" id="{document.element}" data-encoding="gzip+base64" '
            f'data-key="{escape(document.key)}">{gzip_base64(document.chunks)}</script>\n'
        )
    parts.append(
        f'<script type="text/plain" id="patchkit-plotly" data-encoding="gzip+base64">{plotly_packed}</script>\n'
    )
    parts += ["<script>\n", (ASSETS / "report.js").read_text(encoding="utf-8"), "</script>\n</body>\n</html>\n"]
    return "".join(parts).encode("utf-8")
