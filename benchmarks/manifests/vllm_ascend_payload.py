"""Payload of the vllm-ascend benchmark manifest (benchmarks/manifests/vllm-ascend-timing.toml)."""

import time


class NPUModelRunner:
    def load_seconds(self):
        return getattr(self, "_patchkit_load_seconds", None)


def before_load(self):
    _patchkit_t0 = time.perf_counter()


def after_get_model(self, _patchkit_t0):
    """Inserted after get_model; `_patchkit_t0` is the local the statement before it set."""
    self._patchkit_load_seconds = time.perf_counter() - _patchkit_t0


def patchkit_bench_tag():
    return "patchkit-bench"
