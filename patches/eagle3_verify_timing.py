"""Optional timing of EAGLE-3 verification in SGLang: the payload of manifests/eagle3-verify-timing.toml.

Measures the target model's forward pass of EAGLE's verify step (the one call
that scores every draft token of a step) wherever upstream SGLang has it:
``EAGLEWorker.verify`` (spec v1), ``EAGLEWorkerV2.verify`` (spec v2) or
``run_eagle_verify`` in ``eagle_worker_common.py``, and prints one line per
verify step to standard error, the same line in every place::

    [patchkit] eagle3 verify_ms=29.1

Switch it on with ``PATCHKIT_EAGLE3_VERIFY_TIMING=1`` (also ``true``, ``yes``,
``on``) in the server's environment.  The variable is read once, when the
patched module is imported, so set it before launching the server.

Why standard error and not ``logging``: SGLang configures its loggers from
``--log-level``, adds its own prefix, and may filter INFO lines away; a timing
run wants exactly this line, every step, whatever the log settings.  With
tensor parallelism every rank runs ``verify``, so expect one line per rank per
step (each in its own scheduler process).

The timer calls ``torch.cuda.synchronize()`` before reading the clock at start
and at stop (when torch is importable and CUDA is available), so the number is
the GPU time of the forward, not the time to enqueue its kernels.  That
synchronisation serialises the step: leave timing off in production.

When the variable is unset, the statements inserted into ``verify`` cost one
global flag check and one ``is not None`` test; nothing is called.

Layout of this file: the module-level definitions are added by
``add-definitions`` to each file whose verify variant applies (each file gets
its own copy, so no module imports another's helpers); the *bodies* of
``before_target_forward`` and ``after_target_forward`` are inserted around the
target forward call by a pair of ``insert`` patches per call shape.  The
statements use no ``self``, so one pair of bodies fits methods and the
module-level ``run_eagle_verify`` alike.  The imports mirror the manifest's
``ensure-import`` patches.
"""

import os
import sys
import time
from typing import Optional

# Read once, when the patched module is imported.
_PATCHKIT_VERIFY_TIMING = os.environ.get("PATCHKIT_EAGLE3_VERIFY_TIMING", "").strip().lower() in (
    "1",
    "true",
    "yes",
    "on",
)


def _patchkit_verify_cuda_sync() -> None:
    """Wait for queued GPU work, if there is a GPU: the clock then measures the GPU too."""
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _patchkit_verify_timer_start() -> Optional[float]:
    """Start timing one verify forward; ``None`` when timing is off."""
    if not _PATCHKIT_VERIFY_TIMING:
        return None
    _patchkit_verify_cuda_sync()
    return time.perf_counter()


def _patchkit_verify_timer_stop(t0: Optional[float]) -> None:
    """Print ``[patchkit] eagle3 verify_ms=<ms>`` for a timer started by the function above; no-op on ``None``."""
    if t0 is None:
        return
    _patchkit_verify_cuda_sync()
    elapsed_ms = (time.perf_counter() - t0) * 1000.0
    print(f"[patchkit] eagle3 verify_ms={elapsed_ms:.1f}", file=sys.stderr, flush=True)


# The two functions below are never called: their bodies (without the
# docstrings) are what the insert patches put into EAGLEWorker.verify, where
# ``_pk_t0`` is a local that the second statement reads.  (A linter sees an
# unused local in the first one; that is expected here.)


def before_target_forward() -> None:
    """Inserted before ``batch_result = self.target_worker.forward_batch_generation(...)``."""
    _pk_t0 = _patchkit_verify_timer_start() if _PATCHKIT_VERIFY_TIMING else None


def after_target_forward(_pk_t0: Optional[float]) -> None:
    """Inserted right after that call; ``_pk_t0`` is the local the statement above set."""
    if _pk_t0 is not None:
        _patchkit_verify_timer_stop(_pk_t0)
