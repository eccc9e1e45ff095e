"""torch.cuda.nccl's stand-in: the NCCL torch is linked with (a tuple, as torch 2.x returns)."""


def version() -> tuple[int, int, int]:
    return (2, 27, 5)
