"""`port`: carry a manifest and its payloads forward to a later upstream commit.

``plan.py`` puts the jobs together (see its doc): ``walk.py`` walks the
first-parent line, ``carry.py`` carries an anchor over one step, ``merge.py``
merges a payload three ways, ``assemble.py`` reports each patch, ``result.py``
holds the values; nothing is written there.  ``follow.py`` answers where a def
or a class went and merges one def three ways.  What an op is to port (what it
is anchored to, which region its payload merges) is the op's ``port_traits``:
no module here names an op.  A package of its own, above ``engine`` (it
evaluates and checks with it) and ``capture`` (whose diffs it writes for diff
payloads), which import neither it nor each other's users.
"""

from patchkit.port.plan import port
from patchkit.port.result import Bound, FileChange, How, PatchPort, PortChange, PortConflict, PortPlan
from patchkit.port.walk import Start, find_start

__all__ = [
    "Bound",
    "FileChange",
    "How",
    "PatchPort",
    "PortChange",
    "PortConflict",
    "PortPlan",
    "Start",
    "find_start",
    "port",
]
