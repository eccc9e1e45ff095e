"""Adopting patchkit from what a team already has.

``capture`` turns a hand-edited work tree into a manifest and payloads
(``core.py``), choosing structured operations where a change fits one
(``python.py``) and a zero-fuzz ``diff`` op where none does
(``textdiff.py``).  ``import_diff`` does the same from a patch file, applied
in a temporary worktree so the user's tree is never touched.
"""
