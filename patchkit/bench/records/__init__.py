"""What launches leave behind: the record, its metrics and provenance, the store, and reading them.

``record`` (``RunRecord``), ``metrics`` (numbers out of a run's output), ``provenance`` (host,
interpreter, torch and GPU facts), ``store`` (SQLite, its schema and migrations), ``runview``
and ``hygiene`` (reading a stored run), ``compare`` and ``aa`` (two runs, or a place's A/A
launches, judged with ``stats``), ``rows`` (the values bench's table and ``--json`` share).
Why a package of its own: reading records never loads the launch machinery; it may use
``stats``, never ``execution``.
"""
