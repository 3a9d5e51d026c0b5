"""What transpose and permute share: their dtypes, the instantiations of the csrc/rearrangement kernels
(transpose.cu, transpose_window.cu, transpose_cute.cu; ``source_of`` gives a kernel's file), the rungs'
tile choices, the tile configuration, and turning a planner's Plan into a launch. Argument checks: _args.py.

Both ops write ``y.contiguous()`` for a view ``y = x.permute(perm)`` through the same kernels; an op module
keeps its plans keyed by what it was given and calls ``make_launch`` once per key. A launch is a function
``run(in_ptr, out_ptr)`` holding the loaded kernel, the grid and every argument but the two pointers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

from ...ladder import Kernel, Op, Variant
from ...runtime import get_kernel, launch
from .._shared.checks import pick_variant
from .._shared.launch_rules import cdiv
from ._rearrange import CARRIER, IDX32, IDX64, SKINNY_MAX, Plan, idx_type, make_plan

SOURCE = "rearrangement/transpose.cu"  # naive, shared/padded, wide, skinny, gather
WINDOW_SOURCE = "rearrangement/transpose_window.cu"  # the window and skew tiles (16-byte accesses at any alignment)
CUTE_SOURCE = "rearrangement/transpose_cute.cu"  # the cute rung's tile (the CuTe header set)
DTYPES = (
    torch.uint8, torch.int8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2,
    torch.int16, torch.uint16, torch.float16, torch.bfloat16,
    torch.int32, torch.uint32, torch.float32, torch.complex32,
    torch.int64, torch.uint64, torch.float64, torch.complex64,
)
ACCEPTED = dict.fromkeys(DTYPES)  # for check_tensor: a hashed membership test, the order kept for its message
MAX_GRID = 2**31 - 1
GATHER_BLOCK = 256
NAIVE_TILE = (8, 32)  # transpose_naive: a 32 x 8 block over 8 rows x 32 columns
SHARED_TILE = 32  # transpose_tile: 32 x 32 elements, 256 threads


@dataclass(frozen=True, order=True)
class TileConfig:
    """A tile of transpose_wide: ``rows`` x ``cols`` elements (of the element size moved) staged in shared
    memory by ``threads`` threads. It must cover whole 128-byte groups of 16-byte vectors and divide
    evenly over the threads (``check``)."""

    rows: int
    cols: int
    threads: int

    def _limits(self, esize: int) -> Optional[str]:
        """What every tile kernel needs: whole warps, at most 1024 threads, at most 48 KB of tile."""
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            return f"threads must be a multiple of 32 from 32 to 1024, got {self.threads}"
        if self.rows * self.cols * esize > 48 * 1024:
            return f"a {self.rows} x {self.cols} tile of {esize}-byte elements is over 48 KB of shared memory"
        return None

    def check(self, esize: int) -> Optional[str]:
        """Why this tile cannot be built for ``esize``-byte elements, or None when it can."""
        tr, tc, threads = self.rows, self.cols, self.threads
        v, u = 16 // esize, max(4, esize)
        if why := self._limits(esize):
            return why
        if tr <= 0 or tc <= 0 or tc * esize % 128 or tr % (8 * v):
            return (f"a tile of {esize}-byte elements needs cols a multiple of {128 // esize} and rows a "
                    f"multiple of {8 * v}, got {tr} x {tc}")
        chunks = tc * esize // 16
        items = (tr // (8 * v)) * (tc // (4 * (u // esize)))
        if tr * chunks % threads or items % (threads // 32):
            return f"{threads} threads do not divide a {tr} x {tc} tile of {esize}-byte elements evenly"
        return None

    def check_window(self, esize: int) -> Optional[str]:
        """Why this tile cannot be transpose_window's for ``esize``-byte elements, or None when it can:
        rows of a power-of-two count of 4 or more 16-byte chunks, a multiple of 8 vectors' rows, at most
        8 16-byte loads (two registers of 16 bytes each) a thread, even division over the threads."""
        tr, tc, threads = self.rows, self.cols, self.threads
        if esize > 4:
            return f"the window tile moves elements of 1, 2 or 4 bytes, not {esize}"
        v = 16 // esize
        if why := self._limits(esize):
            return why
        chunks = tc * esize // 16 if tc > 0 else 0
        if tr <= 0 or tc * esize % 16 or chunks < 4 or chunks & (chunks - 1) or tr % (8 * v):
            return (f"a window tile of {esize}-byte elements needs cols a power of two from {64 // esize} and rows a "
                    f"multiple of {8 * v}, got {tr} x {tc}")
        if tr * chunks % threads or (tr // (8 * v)) * chunks % (threads // 32):
            return f"{threads} threads do not divide a {tr} x {tc} tile of {esize}-byte elements evenly"
        if tr * chunks // threads > 8:
            return f"{threads} threads would hold {tr * chunks // threads} loads each (at most 8)"
        return None

    def check_skew(self, esize: int) -> Optional[str]:
        """Why this tile cannot be transpose_skew's for ``esize``-byte elements, or None when it can: rows a
        multiple of 8 vectors' rows (``rows`` loaded, ``rows - 16 // esize`` written a column), whole 16-byte
        chunks a row, one V-row column chunk a thread, 2- or 4-byte elements."""
        tr, tc, threads = self.rows, self.cols, self.threads
        if esize not in (2, 4):
            return f"the skew tile moves elements of 2 or 4 bytes, not {esize}"
        v = 16 // esize
        if why := self._limits(esize):
            return why
        if tr <= 0 or tc <= 0 or tc * esize % 16 or tr % (8 * v):
            return (f"a skew tile of {esize}-byte elements needs cols a multiple of {16 // esize} and rows a multiple "
                    f"of {8 * v}, got {tr} x {tc}")
        if (tr // v) * (tc * esize // 16) != threads:
            return f"a {tr} x {tc} skew tile of {esize}-byte elements takes {(tr // v) * (tc * esize // 16)} threads"
        return None

    def skew_rows(self, esize: int) -> int:
        """Output rows a skew tile writes a column: its rows less the V it shares with the tile above."""
        return self.rows - 16 // esize


# transpose_wide's tiles (rows, cols, threads) per element size. WIDE_TILE: the wide rung's, 16 KB of
# tile, 4 vectors a thread each way. BEST_TILES: the best rung's candidates in order of preference, from
# a sweep on an H100 (docs/design/rearrangement.md); a call takes the one that wastes the least of its
# tiles on the matrix edges (a 64-channel NCHW -> NHWC must not run 128-row tiles half empty). 8-byte
# elements have none: the padded tile (8-byte accesses, 8 KB, 8 blocks an SM) read 2911 GB/s against
# 2856-2862 for every wide tile (8192^2 float64).
WIDE_TILE = {1: TileConfig(128, 128, 256), 2: TileConfig(128, 64, 256), 4: TileConfig(64, 64, 256),
             8: TileConfig(32, 64, 256)}
BEST_TILES = {
    1: (TileConfig(128, 128, 256),),
    2: (TileConfig(128, 128, 512), TileConfig(64, 128, 256), TileConfig(128, 64, 512)),
    4: (TileConfig(64, 64, 512), TileConfig(32, 64, 256)),
    8: (),
}


# transpose_window's tiles per element size, in order of preference: 16 KB, 256 threads, four 16-byte
# loads a thread (each with its neighbour chunk), as the wide tile that reached 96-97% of a copy; the
# other shapes are for a short side (a 31-column matrix fills a 32-column tile, not half a 64-column one).
WINDOW_TILES = {
    1: (TileConfig(128, 128, 256), TileConfig(256, 64, 256)),
    2: (TileConfig(128, 64, 256), TileConfig(64, 128, 256), TileConfig(256, 32, 256)),
    4: (TileConfig(64, 64, 256), TileConfig(128, 32, 256), TileConfig(32, 128, 256)),
}


# transpose_skew's tiles per element size, in order of preference: 16 KB, one 16-byte column chunk of V rows
# a thread. Tall and narrow first: 248 (124) output rows a column, 496-byte runs of stores (H100, six odd
# shapes: bf16 256 x 32 74-91% of a copy, fp32 128 x 32 85-94%; 112-byte runs 66-85%;
# benchmarks/results/rearrangement-skew-h100.json); the others for a short side.
SKEW_TILES = {
    2: (TileConfig(256, 32, 128), TileConfig(128, 64, 128), TileConfig(64, 128, 128)),
    4: (TileConfig(128, 32, 256), TileConfig(64, 64, 256), TileConfig(32, 128, 256)),
}


def best_skew_tile(esize: int, R: int, C: int) -> TileConfig:
    """The skew tile for an R x C transpose: the earliest whose tiles hold at least 1/1.15 of the largest share
    of the matrix that any holds. Tiles step ``skew_rows`` over R + V - 1 rows (the V rows a tile shares with
    the one above are L2 hits: no waste). A later tile's shorter store runs cost about 10 points of the copy
    (64 x 197 x 768 fp32: 75% with 112-byte runs, 85% with 496-byte runs that hold 10% less of the matrix),
    so it must waste 15% less to be taken."""
    v = 16 // esize

    def useful(t: TileConfig) -> float:
        return R / (cdiv(R + v - 1, t.skew_rows(esize)) * t.skew_rows(esize)) * C / (cdiv(C, t.cols) * t.cols)

    top = max(map(useful, SKEW_TILES[esize]))
    return next(t for t in SKEW_TILES[esize] if 1.15 * useful(t) >= top)


def best_tile(esize: int, R: int, C: int, tiles=None) -> TileConfig:
    """The best rung's tile for an R x C transpose among ``tiles`` (the wide ones by default): the one
    whose tiles hold the largest share of the matrix, earliest on ties. A tile's loads in flight carry
    only the elements inside the matrix, so the share is the share of the memory parallelism used."""
    def useful(t: TileConfig) -> float:
        return R / (cdiv(R, t.rows) * t.rows) * C / (cdiv(C, t.cols) * t.cols)

    return max(BEST_TILES[esize] if tiles is None else tiles, key=useful)


def tile_kernel(mode: str, esize: int, tile: Optional[TileConfig] = None,
                aligned: tuple[bool, bool] = (False, False)) -> tuple[str, int, int, int]:
    """(name expression, block, tile rows, tile cols) of a rung's tile kernel for one element size;
    ``tile``: the wide or window tile (the wide rung's by default, the first window tile); ``aligned``:
    the window tile's promises (input rows, output rows on 16-byte boundaries)."""
    t = CARRIER[esize]
    if mode == "naive":
        return f"kk::transpose_naive<{t}>", 256, *NAIVE_TILE
    if mode in ("shared", "padded"):  # padding: one 4-byte bank word a row (1 element of >= 4 bytes)
        pad = max(1, 4 // esize) if mode == "padded" else 0
        return f"kk::transpose_tile<{t}, {pad}>", 256, SHARED_TILE, SHARED_TILE
    if mode == "cute":  # the 32 x 32 tile, swizzled instead of padded
        return f"kk::transpose_cute<{t}>", 256, SHARED_TILE, SHARED_TILE
    if mode == "skew":
        tile = tile or SKEW_TILES[esize][0]
        return (f"kk::transpose_skew<{t}, {tile.rows}, {tile.cols}, {tile.threads}, {str(aligned[0]).lower()}>",
                tile.threads, tile.skew_rows(esize), tile.cols)
    if mode == "window":
        tile = tile or WINDOW_TILES[esize][0]
        ia, oa = (str(a).lower() for a in aligned)
        return (f"kk::transpose_window<{t}, {tile.rows}, {tile.cols}, {tile.threads}, {ia}, {oa}>", tile.threads,
                tile.rows, tile.cols)
    tile = tile or WIDE_TILE[esize]
    return f"kk::transpose_wide<{t}, {tile.rows}, {tile.cols}, {tile.threads}>", tile.threads, tile.rows, tile.cols


def source_of(name: str) -> str:
    """The source file of a tile, skinny or gather kernel."""
    if name.startswith("kk::transpose_cute"):
        return CUTE_SOURCE
    return WINDOW_SOURCE if name.startswith(("kk::transpose_window", "kk::transpose_skew")) else SOURCE


def skinny_kernel(esize: int, skinny: tuple[str, int]) -> str:
    side, n = skinny
    return f"kk::transpose_skinny_{side}<{CARRIER[esize]}, {n}>"


def _sizes(start: int, stop: int) -> list[int]:
    return [e for e in (1, 2, 4, 8, 16) if start <= e <= stop]


def rung_kernels(mode: Optional[str], widen: bool, dtype: torch.dtype) -> tuple[Kernel, ...]:
    """Every instantiation a rung can launch for ``dtype``: widening may turn its elements into any
    wider carrier, so the tile kernels of each reachable size and the gathers of each are listed."""
    e0 = dtype.itemsize
    out, spilling = [], set()
    if mode is not None:
        for e in _sizes(e0, 8 if widen else e0):
            if mode == "best":  # every candidate tile, the skinny kernels, the fallbacks (8-byte: padded)
                cands = [tile_kernel("best", e, t) for t in BEST_TILES[e]]
                if e == 8:
                    cands.append(tile_kernel("padded", e))
                for t in WINDOW_TILES.get(e, ()):
                    for a in WINDOW_ALIGNED if e not in SKEW_TILES else ((False, True),):  # else the skew tile's
                        cands.append(tile_kernel("window", e, t, a))
                        if not a[0]:
                            # misaligned input rows at 64 registers: sm_80's allocation keeps one 4-byte value
                            # in local memory (a store a launch, a load a tile); sm_90's none
                            spilling.add(cands[-1][0])
                for t in SKEW_TILES.get(e, ()):
                    cands += [tile_kernel("skew", e, t, (ia, False)) for ia in (False, True)]
                cands += [(skinny_kernel(e, (side, n)), 256) for side in ("rows", "cols")
                          for n in range(2, SKINNY_MAX + 1)]
            else:
                cands = [tile_kernel(mode, e)]
            for name, block, *_ in cands:
                bits = 128 if any(k in name for k in ("wide", "skinny", "window", "skew")) else 8 * e  # 16-byte vectors
                out.append(Kernel(source_of(name), name, bits, bits, block=block, spills=name in spilling))
    for e in _sizes(e0, 16 if widen else e0):
        for idx in (IDX32, IDX64):
            name = f"kk::gather<{CARRIER[e]}, {idx}>"
            out.append(Kernel(source_of(name), name, 8 * e, 8 * e, block=GATHER_BLOCK))
    return tuple(out)


def rung(name: str, technique: str, mode: Optional[str], widen: bool = True, default: bool = False) -> Variant:
    """A rung: ``mode`` names its tile kernel (None: no tiles, everything gathered), ``widen`` lets
    contiguous runs move as wider elements."""
    return Variant(name=name, technique=technique, dtypes=DTYPES, default=default,
                   kernels=lambda dtype, _m=mode, _w=widen, **_: rung_kernels(_m, _w, dtype),
                   params={"tile": mode, "widen": widen})


# The window tile's instantiations by (input rows aligned, output rows aligned): both aligned takes the
# last (2- and 4-byte elements reach the window tile only with aligned output rows: else the skew tile).
WINDOW_ALIGNED = ((False, False), (True, False), (False, True))


def window_aligned(p: Plan) -> tuple[bool, bool]:
    return (p.in_aligned and not p.out_aligned, p.out_aligned)


# ---------------------------------------------------------------- launches

def _nothing(in_ptr: int, out_ptr: int) -> None:
    """An empty result: nothing to move."""


def make_launch(op: Op, x: torch.Tensor, perm, in_align: int, out_align: int, variant: Optional[str],
                config: Optional[TileConfig], dev: int) -> Callable[[int, int], None]:
    """The launch writing x.permute(perm) into a contiguous out, for x's shape, strides and dtype, on
    device ``dev``; ``in_align``, ``out_align``: the low 4 bits of x's and out's addresses."""
    v = pick_variant(op, variant, x.dtype)
    mode = v.params["tile"]
    if config is not None and mode not in ("wide", "best"):
        raise ValueError(f"{op.name}: config sets a wide tile; variant {v.name!r} launches no wide tile")
    if x.numel() == 0:
        return _nothing
    shape, strides = [x.shape[d] for d in perm], [x.stride(d) for d in perm]
    p = make_plan(shape, strides, x.element_size(), in_align, out_align, widen=v.params["widen"],
                  tiles=mode is not None)
    if p.kind == "tile":
        return _tile_launch(op, mode, p, config, dev)
    if config is not None:
        raise ValueError(f"{op.name}: config sets a wide tile, but this {op.name} is no 2-d transpose once its dims "
                         "are merged (it is a copy or a gather)")
    n = p.args[0]
    return _launch_of(f"kk::gather<{CARRIER[p.esize]}, {idx_type(n)}>", max(1, min(cdiv(n, GATHER_BLOCK), MAX_GRID)),
                      GATHER_BLOCK, (n, np.int32(p.args[1]), *p.args[2:]), dev)


def _tile_launch(op: Op, mode: str, p: Plan, config: Optional[TileConfig], dev: int) -> Callable[[int, int], None]:
    """A batched-transpose plan on rung ``mode``'s tile kernel (or ``config``'s wide tile)."""
    B, R, C = p.args[:3]
    tile, aligned = None, (False, False)
    skew = not p.out_aligned and p.esize in SKEW_TILES  # where best's odd shapes take the skew tile
    if config is not None and mode == "best" and not p.wide_ok and p.esize <= 4:  # the window or skew tile's
        why = config.check_skew(p.esize) if skew else config.check_window(p.esize)
        if why:
            raise ValueError(f"{op.name}: config {config} cannot run: {why}")
        mode, tile, aligned = ("skew", config, (p.in_aligned, False)) if skew else ("window", config, window_aligned(p))
    elif config is not None:
        why = config.check(p.esize)
        if why:
            raise ValueError(f"{op.name}: config {config} cannot run: {why}")
        if not p.wide_ok:
            raise ValueError(f"{op.name}: config sets a wide tile, but {_wide_needs(p)}")
        mode, tile = "wide", config
    elif mode == "best" and p.skinny:  # one 16-byte vector a thread and side, no tile
        name, block = skinny_kernel(p.esize, p.skinny), 256
        n = B * (C if p.skinny[0] == "rows" else R) // (16 // p.esize)
        return _launch_of(name, min(cdiv(n, block), MAX_GRID), block, p.args, dev)
    elif mode == "best":
        if p.wide_ok and BEST_TILES[p.esize]:
            tile = best_tile(p.esize, R, C)
        elif p.esize == 8:  # 8-byte elements: the padded tile (docs/design/rearrangement.md)
            mode = "padded"
        elif skew:  # output rows off 16-byte boundaries
            mode, tile, aligned = "skew", best_skew_tile(p.esize, R, C), (p.in_aligned, False)
        else:  # odd shapes: 16-byte accesses at any alignment
            mode, tile, aligned = "window", best_tile(p.esize, R, C, WINDOW_TILES[p.esize]), window_aligned(p)
    elif mode == "wide" and not p.wide_ok:
        raise ValueError(f"{op.name}: variant 'wide' moves 16-byte vectors: {_wide_needs(p)}; the default "
                         "variant handles any shape")
    name, block, tr, tc = tile_kernel(mode, p.esize, tile, aligned)
    rows = R + 16 // p.esize - 1 if mode == "skew" else R  # skew tiles cover rows [-o, R) of every output row
    return _launch_of(name, min(B * cdiv(rows, tr) * cdiv(C, tc), MAX_GRID), block, p.args, dev)


def _wide_needs(p: Plan) -> str:
    return (f"it needs the transposed rows and columns ({p.args[1]} x {p.args[2]} elements of {p.esize} bytes) and "
            f"every stride to be multiples of {16 // p.esize}, and 16-byte aligned data")


def _launch_of(name: str, grid: int, block: int, args: tuple, dev: int) -> Callable[[int, int], None]:
    """run(in_ptr, out_ptr): kernel ``name`` launched with the pointers, then ``args``."""
    kernel = get_kernel(source_of(name), name, device_index=dev)

    def run(in_ptr: int, out_ptr: int) -> None:
        launch(kernel, grid, block, out_ptr, in_ptr, *args, name=name, device_index=dev)
    return run
