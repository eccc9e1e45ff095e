"""Demo upstreams: deterministic git histories shaped like real projects.

``patchkit.demo.sglang`` builds an SGLang-shaped history (Kimi-K2.5 support,
EAGLE-3 hooks, a renamed class on a side branch) for the test suite, the demo
and the benchmarks.  Every file in it is synthetic: written for patchkit, in
SGLang's layout, not copied from SGLang.
"""
