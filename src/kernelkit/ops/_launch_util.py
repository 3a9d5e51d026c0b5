"""Launch helpers shared by the element-wise families of issue 3 (add, saxpy, image ops).

The hot path of a call is: look up the rung's loaded kernels (cached per rung, dtype, params and
device), compute a grid, launch. Everything that can be resolved once is resolved once here.
"""
from __future__ import annotations

import functools
import os

import numpy as np
import torch

from ..ladder import Variant
from ..runtime import get_kernel

_loaded: dict[tuple, tuple] = {}


def load(op: str, variant: Variant, dtype: torch.dtype, dev: int, /, **params) -> tuple:
    """The rung's kernels (in the order of ``variant.kernels``), compiled together and loaded on ``dev``.

    Positional-only: ``params`` may hold a ``dtype`` of its own (normalize_image's output dtype).
    """
    key = (op, variant.name, dtype, dev, tuple(sorted(params.items())))
    ks = _loaded.get(key)
    if ks is None:
        recs = variant.kernels(dtype, **params)
        names = tuple(k.name for k in recs)
        ks = tuple(get_kernel(k.source, k.name, device_index=dev, names=names) for k in recs)
        _loaded[key] = ks
    return ks


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def i32(v: int) -> np.int32:
    return np.int32(v)


def f32(v: float) -> np.float32:
    return np.float32(v)


def serial_requested() -> bool:
    """KERNELKIT_SERIAL=1: grid-stride kernels launch as one block of one thread (printf debugging)."""
    return os.environ.get("KERNELKIT_SERIAL", "0") not in ("", "0", "false", "no")


def check_no_partial_overlap(op: str, out: torch.Tensor, **inputs: torch.Tensor) -> None:
    """``out`` may be an input itself (in place) but must not overlap one partially.

    A partial overlap (out = a[1:] viewing a's memory) would let one thread read what another
    already wrote; torch refuses the same for its out= arguments.
    """
    o0 = out.data_ptr()
    o1 = o0 + out.numel() * out.element_size()
    for name, t in inputs.items():
        t0 = t.data_ptr()
        t1 = t0 + t.numel() * t.element_size()
        if t0 < o1 and o0 < t1 and t0 != o0:
            raise ValueError(
                f"{op}: out partially overlaps {name} (they share memory at different offsets); pass "
                f"out={name} itself for an in-place result, or a separate tensor"
            )


_SMEM_PER_SM = {(8, 0): 167936, (8, 6): 102400, (8, 7): 167936, (8, 9): 102400, (9, 0): 233472}


@functools.cache
def occupancy_limiter(dev: int, blocks_per_sm: int) -> int:
    """Bytes of dynamic shared memory (never touched) that let ``blocks_per_sm`` blocks share an SM, not one more.

    Why: the 3-stream kernels (add, saxpy) ran ~1% faster on an H100 at 75% occupancy (six 256-thread
    blocks per SM) than at 100% (benchmarks/results/elementwise-tuning.json): fewer warps in flight,
    fewer DRAM pages open at once. Shared memory is the one knob that caps blocks per SM without
    touching the kernel. 0 where no size below the 48 KB default limit does it.
    """
    props = torch.cuda.get_device_properties(dev)
    per_sm = getattr(props, "shared_memory_per_multiprocessor", 0) or _SMEM_PER_SM.get((props.major, props.minor), 0)
    reserved = 1024  # the runtime's per-block reservation
    lo = per_sm // (blocks_per_sm + 1) - reserved + 1  # one block more must not fit
    hi = per_sm // blocks_per_sm - reserved  # blocks_per_sm must fit
    size = ((lo + hi) // 2) // 256 * 256
    return size if 0 < lo <= size <= hi and size <= 48 * 1024 else 0
