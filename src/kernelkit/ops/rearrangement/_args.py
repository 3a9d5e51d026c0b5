"""What transpose and permute share on the argument side: dims, tile configurations and ``out`` checked
with messages that name the argument, lazy views resolved, the bytes a call moves and a benchmark input."""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from .._shared.checks import check_out
from ._launch import TileConfig


def wrap(d, ndim: int, name: str, op: str) -> int:
    """Dim ``d`` as a non-negative index (a 0-d tensor takes 0 and -1, as in torch)."""
    n = max(ndim, 1)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError(f"{op}: {name} must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"{op}: {name}={d} is out of range for a {ndim}-dim tensor (expected {-n} to {n - 1})")
    return int(d) % n


def check_config(config, op: str) -> Optional[list[int]]:
    """``config`` (a TileConfig or None) as the custom op takes it: its fields as a list."""
    if config is None:
        return None
    if not isinstance(config, TileConfig):
        raise TypeError(f"{op}: config must be a TileConfig, got {type(config).__name__}")
    return [config.rows, config.cols, config.threads]


def check_result(out: torch.Tensor, x: torch.Tensor, shape: tuple, op: str) -> None:
    """The caller's ``out`` must have the result's ``shape``, x's dtype and device, and no memory of x."""
    if not (isinstance(out, torch.Tensor) and out.shape == shape and out.dtype == x.dtype
            and out.get_device() == x.get_device()):
        check_out(out, x.new_empty(()).expand(shape), op)  # names what is wrong (no allocation of the shape)
    if out.numel() and overlaps(out, x):
        raise ValueError(f"{op}: out shares memory with x; a rearrangement cannot run in place")


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the memory spans of two tensors meet."""
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def _span(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, last byte + 1) of the memory a tensor can reach."""
    lo = t.data_ptr()
    if t.is_contiguous():
        return lo, lo + t.numel() * t.element_size()
    return lo, lo + (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


def resolved(x: torch.Tensor) -> torch.Tensor:
    """x with a lazy conjugate or negation applied (the bits in memory of such views are not the values)."""
    return x.resolve_conj().resolve_neg()


def nbytes(x: torch.Tensor, *args, **kwargs) -> int:
    return 2 * x.numel() * x.element_size()  # read x once, write out once


def random_input(shape, dtype) -> torch.Tensor:
    if dtype.is_complex:
        return torch.randn(shape, device="cuda", dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, device="cuda").to(dtype)
    return torch.randint(0, 2 if dtype == torch.bool else 100, shape, device="cuda").to(dtype)
