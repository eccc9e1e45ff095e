"""The report: patch compatibility and benchmark trends on one commit axis.

``documents`` reads what the page embeds (the very JSON documents that
``check --json``, ``runs --json`` and ``bisect --json`` print, built by the
same functions); ``page`` writes one self-contained HTML file around them
(plotly.js inlined, nothing fetched at view time).  The terminal plot of
``runs --plot`` is a view: ``patchkit.views.plot``.
"""
