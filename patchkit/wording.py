"""Wording shared by every layer: counts with their nouns, and other small pieces of English.

It imports only the standard library, so the pure statistics, the engine and the
probe's readers can word a message without loading the terminal views (rich).
"""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 launch``, ``2 launches``: the count and the noun that agrees with it (``many``: an irregular plural)."""
    return f"{count} {agree(count, word, many or word + 's')}"


def agree(count: int, one: str, many: str) -> str:
    """The word of two that agrees with ``count``, without the count: ``its payload`` / ``its payloads``, a verb
    after a list (``a still targets`` / ``a, b still target``)."""
    return one if count == 1 else many
