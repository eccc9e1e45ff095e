"""Terminal views: everything patchkit prints for a person, by job.

- ``console``: the console (rich on a terminal, ``PlainConsole`` off one), ``emit`` (a table as the terminal
  allows it), ``say``, ``hang``, ``print_json``; ``Console``, the type every verb takes.
- ``text`` and ``grid``: the drawing primitives (cell widths, where a line may break; ``Grid``, the table
  that prints the same text with or without rich).
- ``patches``: the per-patch and per-group verdict tables of ``apply``, ``status`` and ``guard``.
- ``guard``: the guard's report; ``proof``: the accounting and per-process facts of ``run --probe``.
- ``bench``, ``runs``, ``plot``, ``compare``, ``bisect``, ``noise``, ``progress``: the bench verbs' tables,
  lines and progress.

Why a package of its own: printing is one job with one set of rules (colours off a terminal, no markup,
nothing cut mid-identifier), and it reads values, never computes one that ``--json`` prints (those live
beside the data, e.g. ``patchkit.bench.records.rows``).  Only the front ends import it: ``patchkit.cli``,
``patchkit.commands`` and the pytest plugin (``tools/import_graph.py`` enforces it), and rich is imported
nowhere else.  This ``__init__`` imports nothing, so a verb loads only the views it prints with.
"""
