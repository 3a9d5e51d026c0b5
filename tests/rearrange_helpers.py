"""Shared pieces of the rearrangement tests: random bit patterns, offset views, exact checks (GPU); the
shared-memory bank model and the wide tile's constants and address formulas (the CPU emulators of
test_rearrange_banks_cpu.py and test_rearrange_window_cpu.py)."""
from __future__ import annotations

import math

import numpy as np
import torch

from kernelkit.ops.rearrangement._launch import TileConfig

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


# ----------------------------------------------------------------------------- CPU: banks, the wide tile

CARRIER_NP = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: None}


def wavefronts(addrs, width: int) -> int:
    """Shared-memory wavefronts of one warp instruction: lanes split into phases of 128 bytes (1 for
    <= 4-byte accesses, 2 half-warps for 8, 4 quarter-warps for 16); a phase costs as many wavefronts
    as the most distinct 4-byte words any bank must deliver."""
    lanes_per_phase = 32 if width <= 4 else 128 // width
    total = 0
    for ph in range(0, 32, lanes_per_phase):
        banks: dict[int, set] = {}
        for a in addrs[ph:ph + lanes_per_phase]:
            words = range(a // 4, (a + width - 1) // 4 + 1) if width >= 4 else (a // 4,)
            for w in words:
                banks.setdefault(w % 32, set()).add(w)
        total += max((len(s) for s in banks.values()), default=0)
    return total


class Wide:
    """transpose_wide<T_e, TR, TC, THREADS>'s constants and per-thread address formulas."""

    def __init__(self, e, tile: TileConfig):
        tr, tc, threads = tile.rows, tile.cols, tile.threads
        self.e, self.tr, self.tc, self.threads = e, tr, tc, threads
        self.V, self.U = 16 // e, max(4, e)
        self.P = self.U // e
        self.CH = tc * e // 16
        self.LOADS = tr * self.CH // threads
        self.JB, self.CB, self.WARPS = tr // (8 * self.V), tc // (4 * self.P), threads // 32
        self.ITEMS = self.JB * self.CB // self.WARPS

    def store_slot(self, tid, i):  # (tile row, chunk, physical chunk index)
        idx = tid + i * self.threads
        row, ch = divmod(idx, self.CH)
        return row, ch, row * self.CH + (ch ^ ((row // self.V) & 7))

    def read(self, tid, it, k):  # (byte address of unit k, row0, col)
        lane, warp = tid & 31, tid >> 5
        j, gq = lane & 7, lane >> 3
        item = warp + it * self.WARPS
        row0 = (item % self.JB * 8 + j) * self.V
        byte = (item // self.JB * 4 + gq) * self.P * self.e
        base = (((byte >> 4) ^ j) << 4) + (byte & 15)
        return base + (row0 + k) * (self.CH * 16), row0, (item // self.JB * 4 + gq) * self.P
