"""How operations word what they found: code shown in a message, and the names near a missing one.

Every not-found verdict says what is there instead (``what_is_there``):
the names that look alike, or a handful of those the file defines, never a
bare "not found".  These functions take plain text and ``ast`` nodes only;
the lookups (``lookup.py``) and the model (``code.py``) word their findings
with them.
"""

from __future__ import annotations

import ast
import difflib
import heapq
from collections.abc import Mapping, Sequence
from functools import lru_cache


def one_line(code: str, limit: int = 80) -> str:
    """Code shown inside a message: first line, trimmed."""
    text = " ".join(part.strip() for part in code.strip().splitlines())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unparse_short(node: ast.AST, limit: int = 80) -> str:
    try:
        return one_line(ast.unparse(node), limit)
    except Exception:  # noqa: BLE001 (ast.unparse is best-effort on odd nodes; a message must not crash
        return type(node).__name__


def closest(name: str, candidates: Sequence[tuple[str, int]], limit: int = 3) -> list[tuple[str, int]]:
    """Candidates that look like ``name`` (best first), with their lines."""
    by_name: dict[str, int] = {}
    for candidate, line in candidates:
        by_name.setdefault(candidate, line)
    keys = list(by_name)
    matches = difflib.get_close_matches(name, keys, n=limit, cutoff=0.6)
    # Also a rename that keeps the stem: KimiK25ForX -> KimiK25VLForX scores high
    # already; a suffix match catches Outer.Inner moved under another class.
    tail = name.rsplit(".", 1)[-1]
    for key in keys:
        if key not in matches and key.rsplit(".", 1)[-1] == tail and len(matches) < limit:
            matches.append(key)
    return [(match, by_name[match]) for match in matches]


SHOWN = 5  # how many names a not-found message lists when none is close
UNLIMITED = 1 << 30  # for one_line(): show the code in full


def alike_first(
    name: str, candidates: Sequence[tuple[str, int]], ratios: Mapping[str, float] | None = None
) -> list[tuple[str, int]]:
    """Every candidate (once, first line kept), most similar to ``name`` first, then by line.

    ``ratios``: the candidates' similarity to ``name``, if the caller has them."""
    by_name: dict[str, int] = {}
    for candidate, line in candidates:
        by_name.setdefault(candidate, line)
    if ratios is None:
        ratios = {text: difflib.SequenceMatcher(None, name, text).ratio() for text in by_name}
    return sorted(by_name.items(), key=lambda item: (-ratios[item[0]], item[1]))


def listed_with_more(items: Sequence[str], total: int) -> str:
    more = total - len(items)
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


def what_is_there(kind: str, name: str, candidates: Sequence[tuple[str, int]], scope: str = "in this file") -> str:
    """What a not-found message shows: never a bare "not found".

    "; closest classes in this file: A (line 3)" when some names look alike;
    otherwise the names the file does define, a handful with their lines, most
    alike first, and how many more ("; the 9 classes in this file, most alike
    first: B (line 4), ... and 4 more"); or "; there are no classes in this
    file".
    """
    matches = closest(name, candidates)
    if matches:
        return f"; closest {kind} {scope}: " + ", ".join(f"{n} (line {line})" for n, line in matches)
    ranked = alike_first(name, candidates)
    if not ranked:
        return f"; there are no {kind} {scope}"
    shown = [f"{n} (line {line})" for n, line in ranked[:SHOWN]]
    if len(ranked) <= SHOWN:
        return f"; {kind} {scope}: {', '.join(shown)}"
    return f"; the {len(ranked)} {kind} {scope}, most alike first: " + listed_with_more(shown, len(ranked))


def first_difference(a: str, b: str, context: int = 12) -> str:
    """Where two texts first differ: "at character 27: `…, b)` here, `…, b, extra=1)` there"."""
    index = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        index += 1
    start = max(0, index - context)
    lead = "…" if start else ""

    def piece(text: str) -> str:
        rest = text[start : index + 2 * context]
        if index >= len(text):
            return f"`{lead}{rest}` (it ends there)" if rest else "nothing more (it ends there)"
        tail = "…" if index + 2 * context < len(text) else ""
        return f"`{lead}{rest}{tail}`"

    return f"they first differ at character {index + 1}: the anchor has {piece(a)}, the statement has {piece(b)}"


def close_matches(wanted: str, texts: tuple[str, ...]) -> list[str]:
    """``difflib.get_close_matches(wanted, texts, n=2, cutoff=0.5)``, exactly, for less.

    Each statement's scores are remembered (the versions of a function a
    range check reads differ in a statement or two), and ``ratio()``, the
    costly score, is computed in falling order of ``quick_ratio()``, its upper
    bound, until no statement left can reach the second best: the code near
    an anchor holds a statement or two much like it, and dozens that only
    share its letters.  Ties are broken as ``heapq.nlargest`` breaks them.
    """
    bounds = sorted(((b, text) for text in texts if (b := _close_bound(wanted, text)) is not None), reverse=True)
    scored: list[tuple[float, str]] = []
    for bound, text in bounds:
        if len(scored) >= 2 and bound < heapq.nlargest(2, scored)[1][0]:
            break  # ratio() <= quick_ratio(): neither this one nor any after it can enter the top two
        score = close_ratio(wanted, text)
        if score >= 0.5:
            scored.append((score, text))
    return [text for _score, text in heapq.nlargest(2, scored)]


@lru_cache(maxsize=65536)
def _close_bound(wanted: str, text: str) -> float | None:
    """``quick_ratio()`` as get_close_matches computes it, if ``text`` passes its cheap cutoffs (else None)."""
    matcher = difflib.SequenceMatcher(None, text, wanted)
    if matcher.real_quick_ratio() >= 0.5 and (bound := matcher.quick_ratio()) >= 0.5:
        return bound
    return None


@lru_cache(maxsize=65536)
def close_ratio(wanted: str, text: str) -> float:
    """The ``ratio()`` get_close_matches scores ``text`` with (remembered: a range check asks again)."""
    return difflib.SequenceMatcher(None, text, wanted).ratio()


def similarities(wanted: str, texts: tuple[str, ...]) -> dict[str, float]:
    """Each text's ``SequenceMatcher`` ratio to ``wanted`` (what ``alike_first`` ranks by), remembered."""
    return {text: _ratio(wanted, text) for text in texts}


@lru_cache(maxsize=65536)
def _ratio(wanted: str, text: str) -> float:
    return difflib.SequenceMatcher(None, wanted, text).ratio()
