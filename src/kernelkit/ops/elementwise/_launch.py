"""The launch shape of the element-wise fast rungs, and what every one of them shares to apply it.

Every fast rung of the family launches one 16-byte vector a thread over a grid covering the tensor;
what its rule chooses is the block size and how many blocks may share an SM. ``ElementwiseLaunch``
records that choice, so that a tuner or a test can launch another through an op's ``config=``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._shared.launch_rules import i32, occupancy_limiter

SMALL_I32 = tuple(i32(v) for v in range(16))  # int kernel parameters below 16 (alignment offsets), made once


@dataclass(frozen=True)
class ElementwiseLaunch:
    """``block`` threads a block (a multiple of 32, at most 1024); at most ``blocks_per_sm`` blocks
    resident on an SM, held there by dynamic shared memory the kernel never touches (0: as many as
    the kernel's registers and threads allow)."""

    block: int
    blocks_per_sm: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.block, bool) or not isinstance(self.block, int) or not 32 <= self.block <= 1024 \
                or self.block % 32:
            raise ValueError(f"ElementwiseLaunch: block must be a multiple of 32 from 32 to 1024, got {self.block!r}")
        if isinstance(self.blocks_per_sm, bool) or not isinstance(self.blocks_per_sm, int) or self.blocks_per_sm < 0:
            raise ValueError(f"ElementwiseLaunch: blocks_per_sm must be an int >= 0, got {self.blocks_per_sm!r}")


def launch_shape(op: str, config: ElementwiseLaunch, dev: int) -> tuple[int, int]:
    """(block, bytes of dynamic shared memory) that launch ``config`` on device ``dev``.

    Raises ValueError where the device cannot run it: more resident threads than an SM holds, or a
    residency no shared-memory size gives.
    """
    if not config.blocks_per_sm:
        return config.block, 0
    props = torch.cuda.get_device_properties(dev)
    if config.block * config.blocks_per_sm > props.max_threads_per_multi_processor:
        raise ValueError(f"{op}: {config.blocks_per_sm} blocks of {config.block} threads exceed the "
                         f"{props.max_threads_per_multi_processor} threads an SM of cuda:{dev} holds")
    shmem = occupancy_limiter(dev, config.blocks_per_sm)
    if shmem == 0:
        raise ValueError(f"{op}: no shared-memory size holds blocks to {config.blocks_per_sm} an SM on cuda:{dev}")
    return config.block, shmem


def check_config(op: str, config, variant: str | None, fast: str = "fast") -> None:
    """``config`` is an ElementwiseLaunch for the fast rung (``variant`` None or ``fast``)."""
    if not isinstance(config, ElementwiseLaunch):
        raise TypeError(f"{op}: config must be a kernelkit.ops.elementwise.ElementwiseLaunch, got "
                        f"{type(config).__name__}")
    if variant is not None and variant != fast:
        raise ValueError(f"{op}: config sets the launch of the {fast!r} rung, not of {variant!r}")
    if torch.compiler.is_compiling():
        raise ValueError(f"{op}: config= is for eager calls (tuning and tests), not under torch.compile")
