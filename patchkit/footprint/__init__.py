"""What each commit changes, read from its blobs with no checkout: the footprints the hunt's pruning rule
judges (``patchkit.bench.stats.relevance``).

* ``kinds``: which kind of file a path is (Python, a build or dependency input, data), by name;
* ``code``: the pure part: which functions two versions of a Python file differ in, as CPython compiles
  them (bytes in, ``Change`` values out; tested with strings);
* ``line``: the git part: the footprints of a whole first-parent line, one ``git log --raw`` and one
  ``cat-file`` process, with a cache by blob id.
"""

from patchkit.footprint.code import python_changes
from patchkit.footprint.kinds import PathKind, path_kind
from patchkit.footprint.line import FootprintCache, line_footprints

__all__ = ["FootprintCache", "PathKind", "line_footprints", "path_kind", "python_changes"]
