"""Planning of the rearrangement family (transpose, permute): pure index arithmetic, no torch.

Both ops compute ``out = y.contiguous()`` for a strided view ``y`` of ``x`` (``x.transpose(d0, d1)``
or ``x.permute(dims)``; ``x`` itself may be any view). The planner reduces y's (shape, strides) to
the fewest dims, then picks one of three kernels of csrc/rearrangement/ (transpose.cu, transpose_window.cu,
transpose_cute.cu):

* a contiguous run on both sides (a plain copy, or row moves where the innermost dim is contiguous)
  goes through the gather kernel with the element widened to 16 (8, 4, 2) bytes;
* a batched 2D transpose (one input dim of unit stride that becomes an outer output dim, at most one
  batch dim) goes to the rung's tile kernel: NCHW <-> NHWC, swapping the last two dims, and (after
  widening) moves of small inner groups all land here;
* anything else goes through the gather kernel element by element (up to 6 dims after reduction).

Everything is in units of the element carrier (1, 2, 4, 8 or 16 bytes), so no dtype is special.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MAX_DIMS = 6
SKINNY_MAX = 8  # the skinny kernels are instantiated for 2..8 rows (or columns)
CARRIER = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long", 16: "uint4"}
IDX32, IDX64 = "unsigned int", "unsigned long long"


def reduce_dims(shape, strides) -> list[tuple[int, int]]:
    """(size, stride) pairs, outermost first, with size-1 dims dropped and mergeable neighbours merged.

    Dims i and i+1 merge when stepping i is the same as stepping i+1 size[i+1] times; the output is
    contiguous in this order, so merging is valid on both sides.
    """
    dims: list[tuple[int, int]] = []
    for n, s in zip(shape, strides):
        if n == 1:
            continue
        if dims and dims[-1][1] == n * s:
            dims[-1] = (dims[-1][0] * n, s)
        else:
            dims.append((n, s))
    return dims


@dataclass(frozen=True)
class Plan:
    """One launch: ``kind`` "tile" (batched transpose) or "gather", in units of ``esize`` bytes.

    tile: ``args`` = (B, R, C, in_sb, in_sr, out_sb, out_sc); ``wide_ok``: R, C, strides multiples of
    16/esize and both pointers 16-byte aligned (the wide rungs' condition); ``skinny``: ("rows", R) or
    ("cols", C) where that side has 2..SKINNY_MAX elements and 16-byte vectors fit the other side;
    ``in_aligned`` / ``out_aligned``: every input row (of C elements) / output row (of R elements)
    starts on a 16-byte boundary (the window tile's promises).
    gather: ``args`` = (n, nd, sizes innermost first (6), strides (6)).
    """

    kind: str
    esize: int
    args: tuple
    wide_ok: bool = False
    skinny: tuple | None = None
    in_aligned: bool = False
    out_aligned: bool = False


def _widen(dims, esize: int, ptr_mod: int, max_width: int) -> int:
    """The widest carrier (<= max_width) for which the innermost contiguous run is whole vectors."""
    inner = dims[-1][0] * esize
    for w in (16, 8, 4, 2):
        if w <= esize or w > max_width:
            continue
        if inner % w == 0 and ptr_mod % w == 0 and all((s * esize) % w == 0 for _, s in dims[:-1]):
            return w
    return esize


def make_plan(shape, strides, esize: int, in_ptr: int, out_ptr: int, *, widen: bool = True,
              tiles: bool = True) -> Plan:
    """The launch computing ``out = y.contiguous()`` for y = (shape, strides) of ``esize``-byte elements.

    ``widen``: allow wider carriers for contiguous runs; ``tiles``: allow the tile kernels (the naive
    permute rung turns both off and gathers element by element).
    """
    numel = math.prod(shape)
    dims = reduce_dims(shape, strides)
    ptr_mod = math.gcd(in_ptr, out_ptr, 16) or 16
    if widen and dims and dims[-1][1] == 1:
        w = _widen(dims, esize, ptr_mod, 16)
        if w > esize:
            k = w // esize
            outer = [(n, s // k) for n, s in dims[:-1]]
            inner = dims[-1][0] // k
            dims = reduce_dims([n for n, _ in outer] + [inner], [s for _, s in outer] + [1])
            numel //= k
            esize = w
    if not dims:
        dims = [(1, 1)]
    if tiles and esize <= 8 and len(dims) in (2, 3) and dims[-1][1] != 1:
        unit = [i for i, (_, s) in enumerate(dims[:-1]) if s == 1]
        if len(unit) == 1:
            return _tile_plan(dims, unit[0], esize, math.gcd(in_ptr, 16) or 16, math.gcd(out_ptr, 16) or 16)
    if len(dims) > MAX_DIMS:
        raise ValueError(
            f"the permutation needs {len(dims)} strided dims after merging neighbours; kernelkit gathers "
            f"up to {MAX_DIMS} (reshape to merge dims, or split the permutation into two calls)"
        )
    sizes = [n for n, _ in reversed(dims)] + [1] * (MAX_DIMS - len(dims))
    strides_in = [s for _, s in reversed(dims)] + [0] * (MAX_DIMS - len(dims))
    return Plan("gather", esize, (numel, len(dims), *sizes, *strides_in))


def _tile_plan(dims, k: int, esize: int, in_mod: int, out_mod: int) -> Plan:
    """dims (2 or 3 of them): dim k has input stride 1 (it becomes the output's rows, C), the last
    dim is the input's rows (R, stride in_sr), the remaining one (if any) is the batch."""
    out_strides = [math.prod(n for n, _ in dims[i + 1:]) for i in range(len(dims))]
    R, in_sr = dims[-1]
    C = dims[k][0]
    batch = [i for i in range(len(dims) - 1) if i != k]
    if batch:
        B, in_sb = dims[batch[0]]
        out_sb = out_strides[batch[0]]
    else:
        B, in_sb, out_sb = 1, 0, 0
    out_sc = out_strides[k]
    v = 16 // esize
    in_aligned = in_mod % 16 == 0 and in_sb % v == 0 and in_sr % v == 0
    out_aligned = out_mod % 16 == 0 and out_sb % v == 0 and out_sc % v == 0
    aligned = in_mod % 16 == 0 and out_mod % 16 == 0 and in_sb % v == 0 and out_sb % v == 0
    wide_ok = in_aligned and out_aligned and R % v == 0 and C % v == 0
    skinny = None
    if aligned and R <= SKINNY_MAX and out_sc == R and C % v == 0 and in_sr % v == 0:
        skinny = ("rows", R)  # a few input rows: each output row (R elements) is contiguous
    elif aligned and C <= SKINNY_MAX and in_sr == C and R % v == 0 and out_sc % v == 0:
        skinny = ("cols", C)  # a few input columns: each input row (C elements) is contiguous
    return Plan("tile", esize, (B, R, C, in_sb, in_sr, out_sb, out_sc), wide_ok, skinny, in_aligned, out_aligned)


def idx_type(n: int) -> str:
    """The gather's index type: 32-bit while every linear index fits."""
    return IDX32 if n < 2**32 else IDX64
