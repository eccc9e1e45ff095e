"""What each commit changes, read from its blobs with no checkout: the footprints the hunt's pruning rule
judges (``patchkit.bench.stats.relevance``).

The package imports nothing when it loads: the statistics import ``changes`` and must not load git with it.

* ``changes``: the values (``Change``, ``Footprint``), standard library only: the pure rule imports them;
* ``kinds``: which kind of file a path is (Python, a build or dependency input, data), by name;
* ``code``: the pure part: which functions two versions of a Python file differ in, as CPython compiles
  them (bytes in, ``Change`` values out; tested with strings);
* ``regions``: the next version of a file against the last, compiling only the functions a hunk is in;
* ``line``: the git part: the footprints of a whole first-parent line, one ``git log --raw``, one
  ``git log -p -U0`` for the Python files' hunks and one ``cat-file`` process, with a cache by blob id.
"""
