"""torch.distributed's stand-in: re-exports distributed_c10d as torch does (``from .distributed_c10d import *``)."""

from .distributed_c10d import *  # noqa: F403
from .distributed_c10d import __all__  # noqa: F401
