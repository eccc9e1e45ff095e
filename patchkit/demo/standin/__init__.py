"""The demo's stand-in SGLang server and benchmark client (``patchkit demo``'s bench, compare and bisect steps).

They are run as scripts (``python server.py``), never imported: data the demo
ships, on 127.0.0.1 only.  The tests have their own (tests/standin/).
"""
