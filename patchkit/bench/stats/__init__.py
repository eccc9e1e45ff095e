"""Pure statistics and search over launch values: every function returns a frozen report.

``spread`` (a place's noise), ``verdict`` (is a launch good, bad or an outlier), ``hunt`` (the
noise-aware search), ``search`` (bisect's report over commits), ``plan`` (what a search will
cost), ``outcome`` (how a launch ended), ``delta`` (a comparison's per-metric deltas),
``relevance`` (which commits could change what ran) and ``pruning`` (the contract between the
pruned hunt and its judge).  Why a package of its own: these are the parts a reviewer checks by
reading, and a test by calling with numbers; they import nothing from ``execution`` or
``records``, nor subprocess, psutil, sqlite3 or submitit (``tools/import_graph.py`` fails the
build if one does).
"""
