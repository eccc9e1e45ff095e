"""`port`: carry a manifest and its payloads forward to a later upstream commit.

``plan.py`` walks the first-parent line and decides every change (nothing is
written there); ``follow.py`` answers where a def or a class went and merges
one def three ways.  A package of its own, above ``engine`` (it evaluates and
checks with it) and ``capture`` (whose diffs it writes for ``edit-function``
payloads), which import neither it nor each other's users.
"""

from patchkit.port.plan import FileChange, How, PatchPort, PortChange, PortConflict, PortPlan, Start, find_start, port

__all__ = ["FileChange", "How", "PatchPort", "PortChange", "PortConflict", "PortPlan", "Start", "find_start", "port"]
