"""One module per CLI verb: a function of plain keyword arguments returning an exit code.

They load inputs, call the engine and render its report; they never parse
arguments (``patchkit.cli`` does) and never call ``sys.exit``.
"""
