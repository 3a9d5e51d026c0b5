"""Shared pieces of the rearrangement GPU tests: random bit patterns, offset views, exact checks."""
from __future__ import annotations

import math

import torch

# One dtype per element size, plus the ones whose bits need care (bool, complex).
BY_SIZE = (torch.uint8, torch.float16, torch.float32, torch.float64)
EXTRA = (torch.bool, torch.int8, torch.bfloat16, torch.int16, torch.int32, torch.int64, torch.complex64,
         torch.float8_e4m3fn, torch.uint16)


def random_tensor(shape, dtype: torch.dtype, offset: int = 0) -> torch.Tensor:
    """Random bit patterns of ``shape``, as a view ``offset`` elements into a fresh buffer (NaN
    payloads and denormals included: a rearrangement must move them untouched)."""
    n = math.prod(shape)
    if dtype == torch.bool:  # only 0 and 1 are bools
        base = torch.randint(0, 2, (n + offset,), device="cuda").bool()
    else:
        raw = torch.randint(0, 256, ((n + offset) * dtype.itemsize,), device="cuda", dtype=torch.uint8)
        base = raw.view(dtype)
    return base[offset:].view(shape)


def poisoned(shape, dtype: torch.dtype, offset: int = 0) -> torch.Tensor:
    """An output buffer filled with 0xA5 bytes (so an unwritten element fails the check)."""
    n = math.prod(shape)
    buf = torch.full(((n + offset) * dtype.itemsize,), 0xA5, device="cuda", dtype=torch.uint8)
    return buf.view(dtype)[offset:].view(shape)


def assert_same_bits(out: torch.Tensor, ref: torch.Tensor, what: str = "") -> None:
    """Exact equality, byte for byte; shows the first differing elements."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    assert out.dtype == ref.dtype and out.is_contiguous(), what
    a = out.reshape(-1).view(torch.uint8).view(-1, out.dtype.itemsize)
    b = ref.contiguous().reshape(-1).view(torch.uint8).view(-1, ref.dtype.itemsize)
    bad = (a != b).any(dim=1).nonzero().flatten()
    if bad.numel():
        idx = bad[:8].tolist()
        raise AssertionError(f"{what}: {bad.numel()} of {ref.numel()} elements differ; first at flat "
                             f"{idx}: out={a[idx].tolist()} ref={b[idx].tolist()}")
