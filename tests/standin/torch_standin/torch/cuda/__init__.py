"""torch.cuda's stand-in: no GPU; torch.cuda.nccl is loaded with it, as real torch does."""

from . import nccl  # noqa: F401


def is_available() -> bool:
    return False
