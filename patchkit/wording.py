"""Wording shared by every layer: counts with their nouns, and other small pieces of English.

It imports only the standard library, so the pure statistics, the engine and the
probe's readers can word a message without loading the terminal views (rich).
Agreement lives here so that a count is never printed with a noun or a verb of
the other number (``1 commit that touch``, ``1 launches settle``): ``plural`` for
the noun, ``agree`` for the verb or phrase that follows it.
"""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 launch``, ``2 launches``: the count and the noun that agrees with it (``many``: an irregular plural)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def agree(count: int, one: str, many: str) -> str:
    """The verb (or phrase) that agrees with ``count`` things: ``agree(1, "touches", "touch")`` is ``touches``."""
    return one if count == 1 else many


def labelled(label: str, detail: str | None) -> str:
    """``label: detail``, unless the detail already says the label (``interrupted (Ctrl-C)`` for the label
    ``interrupted``: not ``interrupted: interrupted (Ctrl-C)``); the label alone without a detail."""
    if not detail:
        return label
    says_it = detail == label or detail.startswith((f"{label} ", f"{label}:", f"{label};"))
    return detail if says_it else f"{label}: {detail}"


def place_label(place: str) -> str:
    """A noise prior's key (``RunRecord.place``) for people: ``host gpu-1``, or ``Slurm partition gpu, constraint
    h100``: a bare host name (``vm``) reads as a word of the sentence around it."""
    if not place.startswith("slurm:"):
        return f"host {place}"
    partition, _, constraint = place.removeprefix("slurm:").partition(",constraint=")
    return f"Slurm partition {partition}" + (f", constraint {constraint}" if constraint else "")
