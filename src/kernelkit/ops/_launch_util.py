"""Launch helpers shared by the element-wise families of issue 3 (add, saxpy, image ops).

The hot path of a call is: look up the rung's loaded kernels (cached per rung, dtype, params and
device), compute a grid, launch. Everything that can be resolved once is resolved once here.
"""
from __future__ import annotations

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
