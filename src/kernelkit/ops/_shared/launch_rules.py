"""Launch rules shared by the op families, written as functions of the problem and the device."""
from __future__ import annotations

import functools
import os

import numpy as np
import torch


@functools.cache
def sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.cache
def compute_capability(device_index: int) -> int:
    """``major * 10 + minor`` of a device (90 for an H100)."""
    major, minor = torch.cuda.get_device_capability(device_index)
    return major * 10 + minor


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def i32(v: int) -> np.int32:
    return np.int32(v)


def f32(v: float) -> np.float32:
    return np.float32(v)


def grid_for(items: int, block: int, device_index: int, blocks_per_sm: int) -> int:
    """Blocks for a grid-stride kernel: one thread per item, capped at ``blocks_per_sm`` per SM."""
    return max(1, min(cdiv(items, block), sm_count(device_index) * blocks_per_sm))


def serial_requested() -> bool:
    """KERNELKIT_SERIAL=1: grid-stride kernels launch as one block of one thread (printf debugging)."""
    return os.environ.get("KERNELKIT_SERIAL", "0") not in ("", "0", "false", "no")


# Shared memory per SM by compute capability, for torch builds whose device properties lack it.
_SMEM_PER_SM = {(8, 0): 167936, (8, 6): 102400, (8, 7): 167936, (8, 9): 102400, (9, 0): 233472}


@functools.cache
def occupancy_limiter(dev: int, blocks_per_sm: int) -> int:
    """Bytes of dynamic shared memory (never touched) that let ``blocks_per_sm`` blocks share an SM, not one more.

    Shared memory is the one knob that caps blocks per SM without touching the kernel: fewer warps
    in flight keep fewer DRAM pages open at once (docs/design/elementwise.md). 0 where no size below
    the 48 KB default limit does it.
    """
    props = torch.cuda.get_device_properties(dev)
    per_sm = getattr(props, "shared_memory_per_multiprocessor", 0) or _SMEM_PER_SM.get((props.major, props.minor), 0)
    reserved = 1024  # the runtime's per-block reservation
    lo = per_sm // (blocks_per_sm + 1) - reserved + 1  # one block more must not fit
    hi = per_sm // blocks_per_sm - reserved  # blocks_per_sm must fit
    size = ((lo + hi) // 2) // 256 * 256
    return size if 0 < lo <= size <= hi and size <= 48 * 1024 else 0
