"""How a file's content is named: one digest for records, journals and the guard.

Kept apart from ``transaction`` (temp files, journals) so that the read-only
paths (``status``, the guard before every benchmark, ``check``) do not load
what only a write needs.  Which paths patchkit may touch is
``patchkit.sources.safety``'s to say: the sources read through it too.
"""

from __future__ import annotations

import hashlib


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
