"""Demo upstreams: deterministic git histories shaped like real projects.

``patchkit.demo.history`` builds git repositories from a list of commits in
one ``git fast-import``.  ``patchkit.demo.sglang`` uses it to build an
SGLang-shaped history (Kimi-K2.5 support, EAGLE-3 hooks, a renamed class on a
side branch) for ``patchkit demo``, the test suite and the benchmarks, from the
data in ``patchkit/demo/data/sglang/`` (one commit table, and file texts).
Every file in it is synthetic: upstream's names, layout and the statements the
manifests match, and our own code everywhere else.
"""
