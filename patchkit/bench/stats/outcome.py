"""How a launch ended: ``Outcome``.

Why here, among the statistics, and not with the record that stores it: the search and the
verdicts take measurements whose outcome says whether they count (only ``ok`` has a number;
a server that did not come up is worth a retry, an interrupted one ends the search).  The
statistics must say that without reading records, so the value type lives at the bottom;
``records.record`` stores it and re-exports it.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How a run ended.  Only ``ok`` runs have numbers that compare and bisect may use."""

    OK = "ok"
    REFUSED = "refused"  # nothing started: patches, guard, port, version or env check said no
    SERVER_FAILED = "server-failed"
    CLIENT_FAILED = "client-failed"
    METRIC_MISSING = "metric-missing"
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM: what was measured so far, and the logs

    @property
    def usable(self) -> bool:
        return self is Outcome.OK
