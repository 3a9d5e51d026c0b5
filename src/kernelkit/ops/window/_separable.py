"""The separable filters' ladder and launch (gaussian_blur, box_filter): a dense one-pass rung on
filter2d's kernels, two 1-D passes through a float32 intermediate, the fused one-pass kernel of
csrc/window/separable.cu, the same on pipelined tiles, the register strips of one-channel uint8 images
(_strips.py) and `best` (default): the strips where they take the input and fill the device, else the
pipelined tiles."""
from __future__ import annotations

import functools
from typing import Sequence

import torch

from ...ladder import Kernel, Variant
from ...runtime import get_kernel
from .._shared.plans import plan_cache, remember
from ._common import (CXX, DTYPES, PIPE_MAX_TILES, SRC_FILTER, Planes, pipe_geometry, pipe_tile_bytes, pipe_tiles,
                      round4, rows_aligned, run_pipelined, run_tiled)
from ._strips import run_strips, strips_fill, strips_kernels, strips_take
from .filter2d import VECTOR_ROWS, _registers, _vector, filter_planes, reg_channels, reg_shape, vector_name

SRC_SEP = "window/separable.cu"
KMAX = (3, 5, 7, 15, 31)  # the fused kernel's compiled window widths: a kernel runs in the smallest that holds it


def kmax_for(k: int) -> int:
    return next(m for m in KMAX if m >= k)


def fused_name(dtype: torch.dtype, kmax: int, c: int) -> str:
    v, ry = reg_shape(dtype)
    return f"kk::sep_fused<{CXX[dtype]}, {kmax}, {c}, {v}, {ry}>"


def _fused(dtype):
    return tuple(Kernel(SRC_SEP, fused_name(dtype, m, c), load_bits=128, store_bits=128, block=256)
                 for m in KMAX for c in reg_channels(dtype))


def pipe_rows(dtype: torch.dtype, kmax: int) -> int:
    """Output rows a thread of the pipelined kernel: 4 (a tile of 32 rows: its halo rows' horizontal work
    adds (KH - 1) / 32), uint8 2 outside 5 and 7 taps (16 outputs a row: 64 accumulators crowd out the 3-tap
    and the grouped 15- and 31-tap windows)."""
    return 4 if dtype.itemsize > 1 or kmax in (5, 7) else 2


def pipe_name(dtype: torch.dtype, kmax: int, c: int, aligned: bool) -> str:
    return (f"kk::sep_pipelined<{CXX[dtype]}, {kmax}, {c}, {pipe_rows(dtype, kmax)}, "
            f"{'true' if aligned else 'false'}>")


def _pipelined(dtype):
    return tuple(Kernel(SRC_SEP, pipe_name(dtype, m, c, a), store_bits=128, sass=("LDGSTS.E.BYPASS.128",), block=256)
                 for m in KMAX for c in reg_channels(dtype) for a in (True, False))


def _two_pass(dtype):
    ks = [Kernel(SRC_FILTER, vector_name(dtype, torch.float32, ry), load_bits=128, block=256) for ry in VECTOR_ROWS]
    ks += [Kernel(SRC_FILTER, vector_name(torch.float32, dtype, ry), load_bits=128, block=256) for ry in VECTOR_ROWS]
    return tuple(dict.fromkeys(ks))


def ladder(what: str) -> tuple[Variant, ...]:
    return (
        Variant("dense", f"the {what} as its full KH x KW kernel on filter2d's best rung (one pass, KH*KW taps "
                "an output)", DTYPES, lambda dtype, **_: (*_registers(dtype), *_vector(dtype))),
        Variant("two_pass", "separable: a 1 x KW pass into a float32 intermediate, then a KH x 1 pass "
                "(KH + KW taps, the intermediate written and read once)", DTYPES, lambda dtype, **_: _two_pass(dtype)),
        Variant("fused", "separable in one pass: the tile with its halo in shared memory, the horizontal pass "
                "into a second shared buffer, the vertical pass from it; weights in registers, 16-byte "
                "vector loads and stores", DTYPES, lambda dtype, **_: _fused(dtype)),
        Variant("pipelined", "the fused passes on persistent blocks: the next tile's raw elements arrive by "
                "cp.async in a second buffer while one is computed, converted at the window read; uint8 "
                "rounded without F2I", DTYPES, lambda dtype, **_: _pipelined(dtype)),
        Variant("strips", "uint8, no shared memory: a warp walks down a column strip, each input row loaded "
                "and converted once into a ring of K rows of vertical sums in registers, the horizontal taps "
                "from the neighbouring lanes by shuffles; weights in the constant bank (kernels up to 7 x 7, "
                "16-byte aligned rows; other inputs run the pipelined rung)", (torch.uint8,),
                lambda dtype, **_: strips_kernels(dtype)),
        Variant("best", "the strips for uint8 images they take, the pipelined rung otherwise", DTYPES,
                lambda dtype, **_: (*strips_kernels(dtype), *_pipelined(dtype)), default=True),
    )


@functools.cache
def _smem_limit(dev: int) -> int:
    props = torch.cuda.get_device_properties(dev)
    return getattr(props, "shared_memory_per_block_optin", 0) or 48 * 1024


_plans = plan_cache()


def fused_shmem(dtype: torch.dtype, kmax: int, c: int, kh: int) -> int:
    v, ry = reg_shape(dtype)
    ld = 31 * v + round4(v + (kmax - 1) * c)
    rows = 8 * ry + kh - 1
    return (rows * ld + rows * 32 * v) * 4


def pipe_shmem(dtype: torch.dtype, kmax: int, c: int, kh: int, aligned: bool) -> tuple[int, int, int]:
    """(tile_w, tile_h, dynamic shared bytes) of the pipelined kernel: the float results of the horizontal
    pass (tile rows x tile_w), then the two raw tile buffers."""
    tw, th, ld = pipe_geometry(dtype.itemsize, kmax // 2, c, pipe_rows(dtype, kmax), aligned)
    rows = th + kh - 1
    return tw, th, rows * tw * 4 + pipe_tile_bytes(dtype.itemsize, rows, ld, aligned)


def run_separable(kind: str, p: Planes, out: torch.Tensor, wx: torch.Tensor, wy: torch.Tensor,
                  w_both: torch.Tensor, mode: int, bounded: bool = False,
                  host: tuple[Sequence[float], Sequence[float]] = ((), ())) -> None:
    """out <- the separable filter (wy as a column) x (wx as a row) of p. ``w_both``: wx then wy, one
    float32 device tensor (the fused kernels' argument); ``host``: the same (wx, wy) as Python floats (the
    strips take them as a parameter). ``bounded``: every weight is non-negative and each 1-D kernel sums
    to at most 1 (rounding aside), so uint8 results need no clamp."""
    KH, KW = wy.numel(), wx.numel()
    dev = out.get_device()
    dtype = out.dtype
    if kind in ("best", "strips"):
        # best: where the strips fill the device; the strips rung: wherever they can run
        if strips_take(p, KH, KW) and (kind == "strips" or strips_fill(p, KH, KW, bounded, dev)):
            run_strips(p, out, host[0], host[1], mode, bounded)
            return
        kind = "pipelined"
    if kind == "dense":
        filter_planes("best", p, out, torch.outer(wy, wx).contiguous(), None, 1, KH, KW, mode)
        return
    if kind == "pipelined" and p.C in reg_channels(dtype):
        aligned = rows_aligned(p)
        key = ("pipelined", dtype, dev, p.C, KH, KW, aligned)
        plan = _plans.get(key)
        if plan is None:
            m = kmax_for(max(KH, KW))
            tw, th, shmem = pipe_shmem(dtype, m, p.C, KH, aligned)
            if shmem + 2 * m * 4 <= _smem_limit(dev):  # the kernel's static weights beside the dynamic part
                name = pipe_name(dtype, m, p.C, aligned)
                plan = (get_kernel(SRC_SEP, name, device_index=dev), name, tw, th, shmem)
            else:
                plan = False  # the tiles do not fit this device: two passes
            remember(_plans, key, plan)
        if plan and pipe_tiles(p, plan[2], plan[3]) <= PIPE_MAX_TILES:
            kernel, name, tw, th, shmem = plan
            run_pipelined(kernel, name, p, out.data_ptr(), w_both.data_ptr(), 0, 1, KH, KW, mode, tw, th, shmem, dev,
                          int(bounded))
            return
        kind = "fused"
    if kind == "fused" and p.C in reg_channels(dtype):
        key = (dtype, dev, p.C, KH, KW)
        plan = _plans.get(key)
        if plan is None:
            m = kmax_for(max(KH, KW))
            shmem = fused_shmem(dtype, m, p.C, KH)
            if shmem <= _smem_limit(dev):
                v, ry = reg_shape(dtype)
                name = fused_name(dtype, m, p.C)
                plan = (get_kernel(SRC_SEP, name, device_index=dev), name, 32 * v, 8 * ry, shmem)
            else:
                plan = False  # the tile does not fit this device: two passes
            remember(_plans, key, plan)
        if plan:
            kernel, name, tw, th, shmem = plan
            run_tiled(kernel, name, p, out.data_ptr(), w_both.data_ptr(), 0, 1, KH, KW, mode, tw, th, shmem, dev)
            return
    # two passes: rows into a float32 intermediate (contiguous planes), then columns from it
    mid = torch.empty((p.planes, p.H, p.WC), dtype=torch.float32, device=out.device)
    filter_planes("vector", p, mid, wx, None, 1, 1, KW, mode)
    q = Planes(mid, p.planes, p.H, p.W, p.C, p.H * p.WC, p.WC)
    filter_planes("vector", q, out, wy, None, 1, KH, 1, mode)

