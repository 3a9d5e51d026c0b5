"""Reductions over a whole tensor or along dims: sum, mean, amax, amin (torch semantics).

The four ops share one kernel file (csrc/reduction/reduce.cu) and one dispatcher, so they share this
module. Every call becomes one of three shapes over a contiguous tensor: a full reduction (one row of
numel elements), rows reduced along their last dim (a last-dim reduction, or several dims moved last),
or an (outer, R, inner) volume reduced over R (a leading or middle dim, default rung only: coalesced
column reads; the teaching rungs move the dim last instead). Accumulation is fp32 everywhere; the
result has the input's dtype, as torch gives it, or for sum and mean the ``dtype=`` asked for: the
kernels write fp32 results straight from the accumulator, and another dtype is that result rounded.
The order of every combination depends only on the shape, the alignment and the device's SM count:
the same input gives the same bits every time.

A call is resolved once per (op, shape, strides, dtype, device, dims, rung, config) into a plan that
holds the loaded kernels and launch shapes; a later call with that key reads pointers and launches.
A plain eager call (no out=, variant= or config=) that the checked path has accepted once makes a lane
for its (op, shape, strides, dtype, device, dim, keepdim): later such calls allocate the result and run
the same plan, with no other work.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, kind_variants, register
from ...runtime import get_kernel, launch, plain_launcher, resident_blocks, stream_handle
from ...runtime import lanes as _lanes_rt
from .._shared.checks import check_out, check_tensor, dtype_name, pick_variant
from .._shared.custom_op import out_op
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, f32, i32, sm_count
from .._shared.plans import plan_cache, remember

__all__ = ["sum", "mean", "amax", "amin"]

SRC = "reduction/reduce.cu"
FUNCTOR = {"sum": "kk::SumOp", "mean": "kk::SumOp", "amax": "kk::MaxOp", "amin": "kk::MinOp"}
F32 = torch.float32
TREE_RUNGS = ("interleaved", "sequential", "first_add", "warp_shuffle")
TREE_BLOCK = 256  # the tree rungs: one (or two) elements a thread, a 256-float tree in shared memory
VEC_BLOCK, VEC_UNROLL, VEC_BLOCKS_PER_SM = 256, 2, 8  # the two-pass vector rung
WARP_ROWS_MAX = 2048  # rows up to this length: one warp each (a block per row would idle its warps)
WARP_ROWS_BLOCK = 256
COL_BLOCK_ROWS = 8  # reduce_cols' threadIdx.y extent (kColRows in reduce.cu)
COL_MIN_ROWS = 64  # least rows per split of a column reduction
FOLD_ROWS = 32  # reduce_cols_fold's threadIdx.y extent (kFoldRows in reduce.cu)


@dataclass(frozen=True)
class ReduceConfig:
    """A launch of reduce_fast, the fast rung's kernel for rows (a full reduction is one row).

    ``block``: threads a block, a power of two from 32 to 1024. ``unroll``: 16-byte loads in flight a
    thread (1 to 16). ``blocks_per_sm``: the grid's target over all rows, in blocks an SM; while rows
    are fewer than that, each row is split over several blocks and the last of them to finish combines
    their partials.
    """

    block: int
    unroll: int
    blocks_per_sm: int

    def __post_init__(self):
        if self.block not in (32, 64, 128, 256, 512, 1024):
            raise ValueError(f"ReduceConfig: block must be a power of two from 32 to 1024, got {self.block}")
        if not 1 <= self.unroll <= 16:
            raise ValueError(f"ReduceConfig: unroll must be 1 to 16, got {self.unroll}")
        if self.blocks_per_sm < 1:
            raise ValueError(f"ReduceConfig: blocks_per_sm must be at least 1, got {self.blocks_per_sm}")


# One row (a full reduction): one full-occupancy wave of 1024-thread blocks, two 16-byte loads in flight
# a thread: 3091 GB/s fp32 on an H100 against 3036 for 512 x 4 x 4 (docs/design/reductions.md).
FULL = ReduceConfig(block=1024, unroll=2, blocks_per_sm=2)
# Several rows: a block a row (or a share of one), four 16-byte loads in flight a thread, as few threads
# as take the row in one round of them (``rows_config``). At 1024 threads a block per 8K-element 16-bit
# row held one vector a thread (2017 GB/s against 2805 for 512 x 4 x 4 summing 16384 x 8192 fp16 over
# dim 1); ROWS is the longest rows' launch.
ROWS_UNROLL = 4
ROWS_BLOCKS = (128, 256, 512)
ROWS = ReduceConfig(block=512, unroll=ROWS_UNROLL, blocks_per_sm=4)


def rows_config(len_: int, dtype: torch.dtype) -> ReduceConfig:
    """reduce_fast's launch for rows longer than a warp takes: the fewest threads from 128 to 512 (a
    power of two) that cover the row in one round of ROWS_UNROLL 16-byte loads each, so that each
    thread keeps as many loads in flight as the row allows (a block of 512 left two a thread on an
    8192-element 16-bit row); as many blocks an SM as 2048 threads make (the kernel's 16-bit forms
    are held to full occupancy; fp32 reaches it at the compiler's own register count)."""
    threads = cdiv(cdiv(len_, _per_vec(dtype)), ROWS_UNROLL)
    block = min(ROWS_BLOCKS[-1], max(ROWS_BLOCKS[0], 1 << max(0, threads - 1).bit_length()))
    return ReduceConfig(block=block, unroll=ROWS_UNROLL, blocks_per_sm=2048 // block)


def _per_vec(dtype: torch.dtype) -> int:
    return 16 // dtype.itemsize  # elements per 16-byte vector


def _bits(dtype: torch.dtype) -> int:
    return 8 * dtype.itemsize


def _tree_name(kind: str, fn: str, tin, tout) -> str:
    return f"kk::reduce_{kind}<{CXX_TYPE[tin]}, {CXX_TYPE[tout]}, {fn}, {TREE_BLOCK}>"


def _fast_name(fn: str, dtype, cfg: ReduceConfig, tout) -> str:
    return f"kk::reduce_fast<{CXX_TYPE[dtype]}, {CXX_TYPE[tout]}, {fn}, {cfg.block}, {cfg.unroll}>"


def _warp_rows_name(fn: str, dtype, tout) -> str:
    return f"kk::reduce_warp_rows<{CXX_TYPE[dtype]}, {CXX_TYPE[tout]}, {fn}, {WARP_ROWS_BLOCK}>"


def _finish_name(fn: str, tout) -> str:
    return f"kk::reduce_finish<{CXX_TYPE[tout]}, {fn}, {VEC_BLOCK}>"


def result_types(op: str, dtype) -> tuple:
    """The result types the kernels write for an input of ``dtype``: its own, and for sum and mean of a
    16-bit input fp32 too (``dtype=`` other than the input's: fp32, or fp32 then rounded)."""
    return (dtype,) if op in ("amax", "amin") or dtype == F32 else (dtype, F32)


def _cols_name(fn: str, tin, tout, window: bool) -> str:
    return f"kk::reduce_cols<{CXX_TYPE[tin]}, {CXX_TYPE[tout]}, {fn}, {_per_vec(tin)}, {str(window).lower()}>"


def _fold_name(fn: str, tin, tout) -> str:
    return f"kk::reduce_cols_fold<{CXX_TYPE[tin]}, {CXX_TYPE[tout]}, {fn}>"


def _kernels(op: str, kind: str, dtype) -> tuple[Kernel, ...]:
    """Every instantiation rung ``kind`` launches for ``dtype`` (each pass, each path, each result type)."""
    fn, ct = FUNCTOR[op], CXX_TYPE[dtype]
    touts = result_types(op, dtype)
    if kind in TREE_RUNGS:
        # first pass from the input (to partials or straight to the result), later passes from fp32
        pairs = dict.fromkeys([(dtype, F32), (dtype, dtype), (F32, F32), (F32, dtype)])
        return tuple(Kernel(SRC, _tree_name(kind, fn, a, b), _bits(a), _bits(b), block=TREE_BLOCK) for a, b in pairs)
    if kind == "vector":
        return (Kernel(SRC, f"kk::reduce_vector<{ct}, {fn}, {VEC_BLOCK}, {VEC_UNROLL}>", 128, 32, block=VEC_BLOCK),
                *(Kernel(SRC, _finish_name(fn, t), 32, _bits(t), block=VEC_BLOCK) for t in touts))
    n = _per_vec(dtype)
    ks = []
    for t in touts:
        ks += [Kernel(SRC, _fast_name(fn, dtype, FULL, t), 128, 32, block=FULL.block),
               *(Kernel(SRC, _fast_name(fn, dtype, ReduceConfig(b, ROWS_UNROLL, 1), t), 128, 32, block=b)
                 for b in ROWS_BLOCKS),
               Kernel(SRC, _warp_rows_name(fn, dtype, t), 128, _bits(t), block=WARP_ROWS_BLOCK)]
    # a column reduction (one launch, split rows finished by the last block): 16-byte loads, of rows
    # that start on 16-byte boundaries or of each row's aligned window
    for t in touts:
        for window in (False, True):
            ks.append(Kernel(SRC, _cols_name(fn, dtype, t, window), 128, 32,  # 32: the fp32 partials
                             block=32 * COL_BLOCK_ROWS))
    # narrow rows read in groups: reduce_cols into fp32 partials, then their fold (scalar fp32 loads)
    for window in (False, True):
        ks.append(Kernel(SRC, _cols_name(fn, dtype, F32, window), 128, 32, block=32 * COL_BLOCK_ROWS))
    for t in touts:
        ks.append(Kernel(SRC, _fold_name(fn, dtype, t), 32, _bits(t), block=32 * FOLD_ROWS))
    return tuple(dict.fromkeys(ks))


# ---------------------------------------------------------------- workspace

# Device memory, not plans: clear_plans() leaves it, since a captured CUDA graph may still point at it
# (for the same reason, outgrown buffers stay alive in _keep).
_workspaces: dict[tuple[int, int], tuple] = {}
_keep: list[torch.Tensor] = []


def _workspace(dev: int, floats: int, counters: int) -> tuple[int, int]:
    """Addresses of reduce_fast's fp32 partials and zeroed tickets on device ``dev`` for torch's current
    stream there. The kernel leaves every ticket at 0 (atomicInc wraps) and launches on one stream run
    in order, so the buffers are reused; each (device, stream) has its own."""
    key = (dev, stream_handle(dev))
    ws = _workspaces.get(key)
    if ws is None or ws[2] < floats or ws[3] < counters:
        if ws is not None:
            _keep.extend(ws[:2])
        f = max(floats, 2 * (ws[2] if ws else 0), 4096)
        c = max(counters, 2 * (ws[3] if ws else 0), 1024)
        device = torch.device("cuda", dev)
        part, tick = torch.empty(f, dtype=F32, device=device), torch.zeros(c, dtype=torch.int32, device=device)
        ws = _workspaces[key] = (part, tick, f, c, part.data_ptr(), tick.data_ptr())
    return ws[4], ws[5]


# ---------------------------------------------------------------- plans
# A plan is a function run(x, out) for one key: x has the key's shape, strides, dtype and device, out is
# contiguous. It holds the loaded kernels and launch shapes, so a call reads pointers and launches.

def _fast_plan(kernel, grid: int, block: int, rows: int, args: tuple, dev: int):
    """reduce_fast over ``rows`` rows in ``grid`` blocks: one launch; where a row is split over several
    blocks, they meet in the workspace and the last one finishes the row."""
    launcher = plain_launcher(kernel, dev, "reduce_fast")
    if grid == rows:
        def run(x, out):
            o = out.data_ptr()
            launcher(grid, block, 0, (x.data_ptr(), o, o, o, *args))
    else:
        def run(x, out):
            part, tick = _workspace(dev, grid, rows)
            launcher(grid, block, 0, (x.data_ptr(), out.data_ptr(), part, tick, *args))
    return run


def _single_plan(kernel, grid: int, block: int, args: tuple, dev: int, name: str):
    """One launch reading x and writing out (reduce_warp_rows)."""
    launcher = plain_launcher(kernel, dev, name)

    def run(x, out):
        launcher(grid, block, 0, (x.data_ptr(), out.data_ptr(), *args))
    return run


def _passes_plan(passes: tuple, dev: int):
    """Launches in order through fp32 partials: each pass (kernel, grid, block, arguments after the
    pointers, fp32 elements it writes, or 0 for the last pass, which writes out)."""
    def run(x, out):
        src, keep = x.data_ptr(), None
        for kernel, grid, block, args, floats in passes:
            part = torch.empty(floats, dtype=F32, device=x.device) if floats else None
            dst = part.data_ptr() if floats else out.data_ptr()
            launch(kernel, grid, block, src, dst, *args, device_index=dev)
            src, keep = dst, part  # keep: the partials stay allocated until the pass reading them is queued
    return run


def _aligned_or_not_plan(aligned, unaligned):
    """``aligned`` where x starts on a 16-byte boundary, ``unaligned`` elsewhere."""
    def run(x, out):
        (aligned if x.data_ptr() & 15 == 0 else unaligned)(x, out)
    return run


def _moved_plan(plan, perm: Optional[tuple], copy: bool):
    """``plan`` on x with dims moved by ``perm`` (None: none) and then copied if ``copy``."""
    def run(x, out):
        if perm is not None:
            x = x.permute(perm)
        plan(x.contiguous() if copy else x, out)
    return run


def _copy_plan(x, out):
    """A 0-d tensor reduced over its dim 0: the value itself (the mean of one element is itself)."""
    out.copy_(x.reshape(out.shape))


def _fill_plan(value: float):
    """An empty reduction: sum 0, mean NaN (amax and amin refuse it before)."""
    def run(x, out):
        out.fill_(value)
    return run


def _empty_plan(x, out):
    """An empty result: nothing to write."""


def _load(name: str, dev: int):
    return get_kernel(SRC, name, device_index=dev)


def blocks_per_row(rows: int, len_: int, per_vec: int, block: int, unroll: int, wave: int) -> int:
    """Blocks a row is split over: as many as keep all rows' blocks within ``wave`` (the blocks resident
    at once), so that no block runs in a second, near-empty wave (127 rows split 5 ways took 635 blocks
    where 528 fit), but no block left without a full round of ``unroll`` vectors a thread."""
    return max(1, min(wave // rows, cdiv(len_, block * per_vec * unroll)))


def _rows_plan(kind: str, op: str, dtype, dev: int, rows: int, len_: int, scale: float,
               config: Optional[ReduceConfig], tout):
    """The plan of out[r] = reduce(x[r, :]) for a contiguous (rows, len_) input on rung ``kind``, out of
    dtype ``tout``."""
    fn, ct = FUNCTOR[op], CXX_TYPE[dtype]
    if kind in TREE_RUNGS:  # pass after pass, each TREE_BLOCK (or twice that) times shorter, through fp32
        per_block = TREE_BLOCK * (2 if kind in ("first_add", "warp_shuffle") else 1)
        passes, tin, length = [], dtype, len_
        while True:
            bpr = cdiv(length, per_block)
            final = bpr == 1
            k = _load(_tree_name(kind, fn, tin, tout if final else F32), dev)
            passes.append((k, rows * bpr, TREE_BLOCK, (length, bpr, f32(scale if final else 1.0)),
                           0 if final else rows * bpr))
            if final:
                return _passes_plan(tuple(passes), dev)
            tin, length = F32, bpr
    if kind == "vector":
        bpr = blocks_per_row(rows, len_, _per_vec(dtype), VEC_BLOCK, VEC_UNROLL, sm_count(dev) * VEC_BLOCKS_PER_SM)
        first = _load(f"kk::reduce_vector<{ct}, {fn}, {VEC_BLOCK}, {VEC_UNROLL}>", dev)
        finish = _load(_finish_name(fn, tout), dev)
        return _passes_plan(((first, rows * bpr, VEC_BLOCK, (len_, i32(bpr)), rows * bpr),
                             (finish, rows, VEC_BLOCK, (i32(bpr), f32(scale)), 0)), dev)
    if config is None and rows > 1 and len_ <= WARP_ROWS_MAX:
        return _single_plan(_load(_warp_rows_name(fn, dtype, tout), dev), cdiv(rows, WARP_ROWS_BLOCK // 32),
                            WARP_ROWS_BLOCK, (rows, len_, f32(scale)), dev, "reduce_warp_rows")
    cfg = config or (FULL if rows == 1 else rows_config(len_, dtype))
    bpr = blocks_per_row(rows, len_, _per_vec(dtype), cfg.block, cfg.unroll, sm_count(dev) * cfg.blocks_per_sm)
    return _fast_plan(_load(_fast_name(fn, dtype, cfg, tout), dev), rows * bpr, cfg.block, rows,
                      (len_, i32(bpr), f32(scale)), dev)


def col_split(R: int, tiles: int, wave: int) -> int:
    """Blocks the R rows of a column reduction are split over, for ``tiles`` (outer x column blocks) and
    ``wave`` blocks resident on the device at once: the most that keep the grid within one wave, so that
    no block runs in a second, near-empty wave (one in 32 of 8192 x 8192 fp32 over dim 0 did, split by
    a grid target of 8 blocks an SM) and each split keeps at least COL_MIN_ROWS rows."""
    if tiles >= wave:
        return 1
    return max(1, min(wave // tiles, R // COL_MIN_ROWS))


def _cols_plan(fn: str, dtype, dev: int, outer: int, R: int, inner: int, scale: float, window: bool, tout):
    """The plan of out[o, c] = reduce(x[o, :, c]) for a contiguous (outer, R, inner) input into out of
    dtype ``tout``: one launch of reduce_cols (``window``: its form for rows at any 16-byte phase, 31
    vectors of columns a block; else 32), its rows split by ``col_split``; the blocks of a split column
    block meet in the workspace and the last one writes the result.
    """
    block = (32, COL_BLOCK_ROWS)
    col_blocks = cdiv(inner, (31 if window else 32) * _per_vec(dtype))
    kernel = _load(_cols_name(fn, dtype, tout, window), dev)
    tiles = col_blocks * outer
    rsplit = col_split(R, tiles, resident_blocks(kernel, 32 * COL_BLOCK_ROWS, 1, dev))
    rps = cdiv(R, rsplit)
    rsplit = cdiv(R, rps)
    args = (R, inner, col_blocks, rsplit, rps, f32(scale))
    if rsplit == 1:
        def run(x, out):
            o = out.data_ptr()
            launch(kernel, tiles, block, x.data_ptr(), o, o, o, *args, name="reduce_cols", device_index=dev)
    else:
        def run(x, out):
            part, tick = _workspace(dev, outer * rsplit * inner, tiles)
            launch(kernel, tiles * rsplit, block, x.data_ptr(), out.data_ptr(), part, tick, *args,
                   name="reduce_cols", device_index=dev)
    return run


def col_group(outer: int, R: int, inner: int, dtype) -> int:
    """Rows of a column reduction read as one row (1: none grouped). Where a row's bytes are no multiple
    of 16 (``inner * size``), g = 16 / gcd(inner * size, 16) consecutive rows are a whole number of
    16-byte vectors: read as one row of g * inner columns, full warps read whole vectors. Grouped when
    a block's lanes would otherwise idle (the window form's column blocks, 31 vectors each, hold more
    than 8/7 of inner: 127 16-bit columns fill 16 of 31 vectors), the rows make at least two splits
    of COL_MIN_ROWS groups, and the groups tile each outer slab (outer == 1, or g divides R; the fold's
    grid takes at most 65535 outer slabs)."""
    g = 16 // math.gcd(inner * dtype.itemsize, 16)
    width = 31 * _per_vec(dtype)
    if g == 1 or 8 * inner > 7 * cdiv(inner, width) * width or R // g < 2 * COL_MIN_ROWS:
        return 1
    return g if outer == 1 or (R % g == 0 and outer <= 65535) else 1


def _grouped_cols_plan(fn: str, dtype, dev: int, outer: int, R: int, inner: int, g: int, scale: float,
                       window: bool, tout):
    """The plan of out[o, c] = reduce(x[o, :, c]) with rows read in groups of ``g`` (``col_group``):
    reduce_cols over the (outer, R // g, g * inner) view writes fp32 partials, split as ``col_split``
    takes it with no finishing ticket; reduce_cols_fold reduces each column's g partial columns of every
    split, then the R % g rows past the last group (outer == 1), and applies the scale. Two launches."""
    Rg, rem = divmod(R, g)
    wide = g * inner
    block = (32, COL_BLOCK_ROWS)
    col_blocks = cdiv(wide, (31 if window else 32) * _per_vec(dtype))
    kernel = _load(_cols_name(fn, dtype, F32, window), dev)
    fold = _load(_fold_name(fn, dtype, tout), dev)
    tiles = col_blocks * outer
    rsplit = col_split(Rg, tiles, resident_blocks(kernel, 32 * COL_BLOCK_ROWS, 1, dev))
    rps = cdiv(Rg, rsplit)
    rsplit = cdiv(Rg, rps)
    P = rsplit * g  # partial rows of inner columns, per outer index
    args = (Rg, wide, col_blocks, rsplit, rps, f32(1.0))
    tail_at = Rg * g * inner * dtype.itemsize  # bytes from x's start to the first row past the groups
    fold_args = (P, inner, R * inner, i32(rem), f32(scale))
    fold_grid, fold_block = (cdiv(inner, 32), outer), (32, FOLD_ROWS)

    def run(x, out):
        part, _ = _workspace(dev, outer * P * inner, 0)
        xp = x.data_ptr()
        launch(kernel, tiles * rsplit, block, xp, part, part, 0, *args, name="reduce_cols", device_index=dev)
        launch(fold, fold_grid, fold_block, part, xp + tail_at, out.data_ptr(), *fold_args,
               name="reduce_cols_fold", device_index=dev)
    return run


def _make_plan(op: str, x: torch.Tensor, dims: tuple[int, ...], variant: Optional[str],
               config: Optional[ReduceConfig], dev: int, tout):
    """The plan of reducing x (its shape, strides, dtype and device) over ``dims`` (sorted) by ``op`` into
    a result of dtype ``tout`` (x's, or fp32: ``result_types``)."""
    v = pick_variant(OPS[op], variant, x.dtype)
    kind = v.params["kind"]
    if config is not None and kind != "fast":
        raise ValueError(f"{op}: config sets the fast rung's launch; variant {v.name!r} has no configuration")
    shape, nd = x.shape, x.dim()
    if not dims:
        return _copy_plan
    K = math.prod(shape[d] for d in dims)
    M = math.prod(shape[d] for d in range(nd) if d not in dims)
    if M == 0:
        return _empty_plan
    if K == 0:
        return _fill_plan(0.0 if op == "sum" else float("nan"))
    scale = 1.0 / K if op == "mean" else 1.0
    if len(dims) == 1 and kind == "fast" and dims[0] != nd - 1 and math.prod(shape[dims[0] + 1:]) > 1:
        if config is not None:
            raise ValueError(f"{op}: config sets reduce_fast's launch, but a reduction over dim {dims[0]} of a "
                             f"{nd}-dim tensor reads columns (reduce_cols), which takes no configuration")
        d, fn, n = dims[0], FUNCTOR[op], _per_vec(x.dtype)
        outer, inner = math.prod(shape[:d]), math.prod(shape[d + 1:])
        g = col_group(outer, shape[d], inner, x.dtype)
        if g > 1:  # groups of rows are whole vectors: the aligned form where x starts on a 16-byte boundary
            plan = _aligned_or_not_plan(
                *(_grouped_cols_plan(fn, x.dtype, dev, outer, shape[d], inner, g, scale, w, tout) for w in (False, True)))
            return plan if x.is_contiguous() else _moved_plan(plan, None, True)
        plan = _cols_plan(fn, x.dtype, dev, outer, shape[d], inner, scale, True, tout)
        if inner % n == 0:  # every row on a 16-byte boundary where the input starts on one
            plan = _aligned_or_not_plan(_cols_plan(fn, x.dtype, dev, outer, shape[d], inner, scale, False, tout), plan)
        return plan if x.is_contiguous() else _moved_plan(plan, None, True)
    plan = _rows_plan(kind, op, x.dtype, dev, M, K, scale, config, tout)
    kept = [d for d in range(nd) if d not in dims]
    perm = (*kept, *dims) if any(d > dims[0] and shape[d] != 1 for d in kept) else None  # reduced dims last
    copy = not (x.permute(perm) if perm else x).is_contiguous()
    return _moved_plan(plan, perm, copy) if perm or copy else plan


_plans = plan_cache()


def _plan_for(op: str, x: torch.Tensor, dims: list[int], variant: Optional[str], config: Optional[list[int]],
              tout: torch.dtype):
    dev = x.get_device()
    key = (op, variant, config and tuple(config), x.shape, x.stride(), x.dtype, dev, tout, *dims)
    plan = _plans.get(key)
    if plan is None:
        cfg = None if config is None else ReduceConfig(*config)
        plan = remember(_plans, key, _make_plan(op, x, tuple(dims), variant, cfg, dev, tout))
    return plan


def _reduce_into(x: torch.Tensor, out: torch.Tensor, op: str, dims: list[int], variant: Optional[str],
                 config: Optional[list[int]]) -> None:
    """out <- op(x) over ``dims`` (sorted, possibly none); out has the result's shape, and x's dtype or
    (sum, mean) another float dtype. ``config``: the fields of a ReduceConfig, or None for the rule's
    launch. The kernels write x's dtype or fp32 (the accumulator's); any other result is the fp32 one
    rounded."""
    tout = out.dtype if out.dtype == x.dtype else F32
    plan = _plan_for(op, x, dims, variant, config, tout)
    if out.dtype == tout and out.is_contiguous():
        plan(x, out)
    else:
        dst = torch.empty(out.shape, dtype=tout, device=out.device)
        plan(x, dst)
        out.copy_(dst)


_reduce_out = out_op("reduce_out", _reduce_into)


# ---------------------------------------------------------------- argument handling

def wrap_dim(dim, ndim: int, op: str) -> int:
    """``dim`` as a non-negative index (a 0-d tensor accepts 0 and -1, as in torch)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor of {ndim} dims (expected in [{-n}, {n - 1}])")
    return dim % n


def reduced_dims(dim, ndim: int, op: str) -> tuple[int, ...]:
    """The sorted dims a reduction runs over (all of them for None or ())."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int) and not isinstance(dim, bool):
        dims = [dim]
    elif isinstance(dim, (tuple, list)):
        dims = list(dim)
    else:
        raise TypeError(f"{op}: dim must be None, an int or a tuple of ints, got {type(dim).__name__}")
    if not dims:
        return tuple(range(ndim))
    wrapped = [wrap_dim(d, ndim, op) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise ValueError(f"{op}: dim {dims} names a dimension more than once")
    return tuple(sorted(d for d in wrapped if d < ndim))  # a 0-d tensor's dim 0 reduces nothing


def dim_as_key(dim):
    """``dim`` as a cache key: None, an int, or a tuple of ints (from a tuple or list of plain ints);
    False for anything else (bools, floats, numpy ints: equal and hashing equal to ints, refused by
    reduced_dims), which is never looked up."""
    if dim is None or type(dim) is int:
        return dim
    if type(dim) is not tuple and type(dim) is not list:
        return False
    for d in dim:
        if type(d) is not int:
            return False
    return tuple(dim)


def _resolve_call(op: str, shape: torch.Size, dim, keepdim: bool, variant: Optional[str],
                  config: Optional[ReduceConfig]) -> tuple:
    """(result shape, dims as a list, config as a list or None) of a call; raises on bad arguments."""
    dims = reduced_dims(dim, len(shape), op)
    if op in ("amax", "amin") and math.prod(shape) == 0:
        if dim is None or (isinstance(dim, (tuple, list)) and not dim):
            raise RuntimeError(f"{op}: cannot reduce an empty tensor over all dims (no identity); give dim")
        for d in dims:
            if shape[d] == 0 and math.prod(shape[e] for e in range(len(shape)) if e not in dims) > 0:
                raise IndexError(f"{op}: reduction dim {d} has size 0 (max/min of nothing is undefined)")
    if variant is not None:
        OPS[op].variant(variant)  # unknown names fail here, before any tracing
    if config is not None and not isinstance(config, ReduceConfig):
        raise TypeError(f"{op}: config must be a ReduceConfig, got {type(config).__name__}")
    if keepdim:
        out_shape = tuple(1 if i in dims else s for i, s in enumerate(shape))
    else:
        out_shape = tuple(s for i, s in enumerate(shape) if i not in dims)
    return out_shape, list(dims), None if config is None else [config.block, config.unroll, config.blocks_per_sm]


_calls = plan_cache()


def check_dtype(op: str, dtype) -> None:
    """Raise TypeError unless ``dtype`` (sum's and mean's ``dtype=``, given) is a result dtype the
    kernels can write: float32, float16 or bfloat16."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{op}: dtype must be a torch.dtype or None, got {type(dtype).__name__}")
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"{op}: dtype must be float32, float16 or bfloat16 (the result of the fp32 accumulation, "
                        f"rounded to it), got {dtype_name(dtype)}")


def _reduce(op: str, x, dim, keepdim: bool, out, variant, config, dtype=None) -> torch.Tensor:
    if dtype is not None:
        check_dtype(op, dtype)
    check_tensor(x, "x", FLOAT_DTYPES, op)
    rdtype = x.dtype if dtype is None else dtype
    dim_key = dim_as_key(dim)
    # no cache lookups while tracing (shapes may be symbolic), nor for a dim that is not one as a key
    # (True or 1.0 would find the call of 1): resolving it raises
    if dim_key is False or torch.compiler.is_compiling():
        call = _resolve_call(op, x.shape, dim, keepdim, variant, config)
    else:
        dim = dim_key
        key = (op, x.shape, dim, keepdim, variant, config)
        try:
            call = _calls.get(key)
        except TypeError:  # an unhashable argument: resolving it names the bad one
            call = _resolve_call(op, x.shape, dim, keepdim, variant, config)
        if call is None:
            call = remember(_calls, key, _resolve_call(op, x.shape, dim, keepdim, variant, config))
    out_shape, dims, cfg = call
    fresh = out is None
    if fresh:
        out = x.new_empty(out_shape, dtype=rdtype)
    elif not (isinstance(out, torch.Tensor) and out.shape == out_shape and out.dtype == rdtype
              and out.get_device() == x.get_device()):
        check_out(out, x.new_empty((), dtype=rdtype).expand(out_shape), op)  # names what is wrong
    _reduce_out(x, out, op, dims, variant, cfg)
    if fresh and variant is None and config is None and dtype is None:
        _make_lane(op, x, dim, keepdim, out_shape, dims)
    return out


# ---- the lanes: op(x, dim, keepdim) of a CUDA tensor whose call resolved before, checks made once ---
_lanes = plan_cache()
_Tensor = torch.Tensor
_compiling = torch.compiler.is_compiling


def _lane_call(op: str, x, dim, keepdim):
    """op(x, dim, keepdim) into a new tensor when x is a CUDA tensor whose (shape, strides, dtype,
    device) and (dim, keepdim) have a lane; else None (the caller takes the checked path, which makes
    the lane)."""
    if type(x) is not _Tensor or (keepdim is not False and keepdim is not True) or _compiling():
        return None
    if dim is not None and type(dim) is not int:
        dim = dim_as_key(dim)
        if dim is False:
            return None
    lane = _lanes.get((op, x.shape, x.stride(), x.dtype, x.device, dim, keepdim))
    if lane is None:
        return None
    template, plan = lane
    out = _lanes_rt.new_like(template)
    plan(x, out)
    return out


_scalars = plan_cache()  # (dtype, device) -> a 0-d tensor: the lanes' templates expand it


def result_template(dtype: torch.dtype, device: torch.device, shape: tuple) -> torch.Tensor:
    """A tensor whose empty_like is a new result of ``shape``, ``dtype`` and ``device`` laid out as
    new_empty lays it out: a cached 0-d tensor expanded (one element of memory, whatever the shape;
    empty_like of it is contiguous), or for at most one element a tensor of that shape itself (an
    expanded one would keep its zero strides)."""
    if math.prod(shape) <= 1:
        return torch.empty(shape, dtype=dtype, device=device)
    scalar = _scalars.get((dtype, device))
    if scalar is None:
        scalar = remember(_scalars, (dtype, device), torch.empty((), dtype=dtype, device=device))
    return scalar.expand(shape)


def _make_lane(op: str, x: torch.Tensor, dim, keepdim, out_shape: tuple, dims: list[int]) -> None:
    """The lane of this call's (op, shape, strides, dtype, device, dim, keepdim), made once the checked
    path has accepted it: (a template of the result, the checked path's plan)."""
    if type(x) is not _Tensor or (keepdim is not False and keepdim is not True) or _compiling():
        return
    dim = dim_as_key(dim)
    key = (op, x.shape, x.stride(), x.dtype, x.device, dim, keepdim)
    if dim is False or key in _lanes:
        return
    remember(_lanes, key, (result_template(x.dtype, x.device, out_shape), _plan_for(op, x, dims, None, None, x.dtype)))


Dim = Union[None, int, Sequence[int]]


def sum(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None,  # noqa: A001
        out: Optional[torch.Tensor] = None, variant: Optional[str] = None,
        config: Optional[ReduceConfig] = None) -> torch.Tensor:
    """torch.sum(x, dim, keepdim, dtype=dtype): the sum over every dim (dim=None) or the given dims.

    Accumulated in fp32, in an order fixed by the shape, the alignment and the device: the same bits
    every run. The result has x's dtype unless ``dtype`` is given, as in torch; a 16-bit sum past the
    dtype's range is inf, as torch's. An empty reduction gives 0; NaN and inf propagate.

    ``dtype``: as torch's, the result's dtype: float32, float16 or bfloat16 (None: x's); other dtypes
    raise TypeError. The sum is accumulated in fp32 whatever ``dtype`` is and written in ``dtype``
    (torch casts x to ``dtype`` first; for 16-bit x and ``dtype=torch.float32`` both give the fp32 sum).

    ``x``: a float32, float16 or bfloat16 CUDA tensor of any shape and layout (offset views,
    non-contiguous, 0-d, empty, more than 2^31 elements). ``dim``: None or () for every dim, an int, or
    a tuple or list of distinct ints (negative ones count from the end). ``keepdim``: keep each reduced
    dim with size 1.
    ``out``: optional result of the reduced shape and the result's dtype, on x's device; returned.
    ``variant``: a rung of ``kernelkit.ladder("sum")`` (naive first); None takes the default (``fast``).
    Every rung gives the right answer for every input.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``ReduceConfig`` of kernelkit.ops.reduction.reduce: the fast rung's reduce_fast, for a reduction of
    the whole tensor or of its last dims); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor or non-float ``x`` (float64 included), a ``dim`` that is not an
    int or a sequence of ints, an ``out`` of the wrong dtype or a ``config`` that is not a
    ReduceConfig; ValueError for a CPU tensor, an ``out`` of the wrong shape or device, a dim named
    twice, an unknown variant or a config the input cannot take; IndexError for a dim out of range.
    """
    if out is None and variant is None and config is None and dtype is None:
        got = _lane_call("sum", x, dim, keepdim)
        if got is not None:
            return got
    return _reduce("sum", x, dim, keepdim, out, variant, config, dtype)


def mean(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None,
         out: Optional[torch.Tensor] = None, variant: Optional[str] = None,
         config: Optional[ReduceConfig] = None) -> torch.Tensor:
    """torch.mean(x, dim, keepdim, dtype=dtype): the fp32 sum over the given dims times 1/count.

    Accumulated in fp32 as ``sum`` (the same bits every run). The result has x's dtype unless
    ``dtype`` is given, as in torch. An empty reduction gives NaN, as in torch; NaN and inf propagate.

    ``dtype``: as torch's, the result's dtype: float32, float16 or bfloat16 (None: x's); other dtypes
    raise TypeError. The mean is accumulated in fp32 whatever ``dtype`` is and written in ``dtype``
    (torch casts x to ``dtype`` first; for 16-bit x and ``dtype=torch.float32`` both give the fp32 mean).

    ``x``: a float32, float16 or bfloat16 CUDA tensor of any shape and layout (offset views,
    non-contiguous, 0-d, empty, more than 2^31 elements). ``dim``: None or () for every dim, an int, or
    a tuple or list of distinct ints (negative ones count from the end). ``keepdim``: keep each reduced
    dim with size 1.
    ``out``: optional result of the reduced shape and the result's dtype, on x's device; returned.
    ``variant``: a rung of ``kernelkit.ladder("mean")`` (naive first); None takes the default (``fast``).
    Every rung gives the right answer for every input.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``ReduceConfig`` of kernelkit.ops.reduction.reduce: the fast rung's reduce_fast, for a reduction of
    the whole tensor or of its last dims); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor or non-float ``x`` (float64 included), a ``dim`` that is not an
    int or a sequence of ints, an ``out`` of the wrong dtype or a ``config`` that is not a
    ReduceConfig; ValueError for a CPU tensor, an ``out`` of the wrong shape or device, a dim named
    twice, an unknown variant or a config the input cannot take; IndexError for a dim out of range.
    """
    if out is None and variant is None and config is None and dtype is None:
        got = _lane_call("mean", x, dim, keepdim)
        if got is not None:
            return got
    return _reduce("mean", x, dim, keepdim, out, variant, config, dtype)


def amax(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None, config: Optional[ReduceConfig] = None) -> torch.Tensor:
    """torch.amax(x, dim, keepdim): the maximum over every dim (dim=None) or the given dims.

    Exact, in x's dtype (torch.amax takes no ``dtype``). NaN-propagating as torch's: a reduced slice
    holding a NaN gives NaN.

    ``x``: a float32, float16 or bfloat16 CUDA tensor of any shape and layout (offset views,
    non-contiguous, 0-d, empty, more than 2^31 elements). ``dim``: None or () for every dim, an int, or
    a tuple or list of distinct ints (negative ones count from the end). ``keepdim``: keep each reduced
    dim with size 1.
    ``out``: optional result of the reduced shape and the result's dtype, on x's device; returned.
    ``variant``: a rung of ``kernelkit.ladder("amax")`` (naive first); None takes the default (``fast``).
    Every rung gives the right answer for every input.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``ReduceConfig`` of kernelkit.ops.reduction.reduce: the fast rung's reduce_fast, for a reduction of
    the whole tensor or of its last dims); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor or non-float ``x`` (float64 included), a ``dim`` that is not an
    int or a sequence of ints, an ``out`` of the wrong dtype or a ``config`` that is not a
    ReduceConfig; ValueError for a CPU tensor, an ``out`` of the wrong shape or device, a dim named
    twice, an unknown variant or a config the input cannot take; IndexError for a dim out of range or
    a reduced dim of size 0 (max or min of nothing); RuntimeError for an empty tensor reduced over
    every dim, as in torch.
    """
    if out is None and variant is None and config is None:
        got = _lane_call("amax", x, dim, keepdim)
        if got is not None:
            return got
    return _reduce("amax", x, dim, keepdim, out, variant, config)


def amin(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None, config: Optional[ReduceConfig] = None) -> torch.Tensor:
    """torch.amin(x, dim, keepdim): the minimum over every dim (dim=None) or the given dims.

    Exact, in x's dtype (torch.amin takes no ``dtype``). NaN-propagating as torch's: a reduced slice
    holding a NaN gives NaN.

    ``x``: a float32, float16 or bfloat16 CUDA tensor of any shape and layout (offset views,
    non-contiguous, 0-d, empty, more than 2^31 elements). ``dim``: None or () for every dim, an int, or
    a tuple or list of distinct ints (negative ones count from the end). ``keepdim``: keep each reduced
    dim with size 1.
    ``out``: optional result of the reduced shape and the result's dtype, on x's device; returned.
    ``variant``: a rung of ``kernelkit.ladder("amin")`` (naive first); None takes the default (``fast``).
    Every rung gives the right answer for every input.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``ReduceConfig`` of kernelkit.ops.reduction.reduce: the fast rung's reduce_fast, for a reduction of
    the whole tensor or of its last dims); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor or non-float ``x`` (float64 included), a ``dim`` that is not an
    int or a sequence of ints, an ``out`` of the wrong dtype or a ``config`` that is not a
    ReduceConfig; ValueError for a CPU tensor, an ``out`` of the wrong shape or device, a dim named
    twice, an unknown variant or a config the input cannot take; IndexError for a dim out of range or
    a reduced dim of size 0 (max or min of nothing); RuntimeError for an empty tensor reduced over
    every dim, as in torch.
    """
    if out is None and variant is None and config is None:
        got = _lane_call("amin", x, dim, keepdim)
        if got is not None:
            return got
    return _reduce("amin", x, dim, keepdim, out, variant, config)


# ---------------------------------------------------------------- ladders

RUNGS = (
    ("interleaved", "one element per thread, shared-memory tree with interleaved addressing (tid % 2s: "
     "divergent warps), one pass per 256x reduction"),
    ("sequential", "sequential addressing: the first s threads stay active (no divergence, no bank conflicts)"),
    ("first_add", "two elements added during the global load: half the blocks, no idle first step"),
    ("warp_shuffle", "first add + shared-memory tree to 64 values, the last warp by shuffles (no barriers)"),
    ("vector", "grid-stride 16-byte loads (2 in flight), fixed grid of 8 blocks/SM, shuffle block "
     "reduction; a second fixed-order pass"),
    ("fast", "16-byte loads (2 in flight per thread, one full-occupancy wave of 1024-thread blocks), "
     "last-block finish by integer ticket (one launch, no float atomics); a warp per short row, a block of the "
     "fewest threads that take a longer row in one round of 4 loads; leading and middle dims as 16-byte column "
     "vectors at any alignment"),
)


def _variants(op: str) -> tuple[Variant, ...]:
    return kind_variants(RUNGS, lambda kind, dtype: _kernels(op, kind, dtype))


def _example(shape, dtype):
    return (torch.randn(shape, dtype=dtype, device="cuda"),), {}


def _bytes(x, dim=None, keepdim=False, **_):
    return x.numel() * x.element_size()  # the input, read once (the result is negligible or counted apart)


OPS: dict[str, Op] = {}
for _name, _torch in (("sum", torch.sum), ("mean", torch.mean), ("amax", torch.amax), ("amin", torch.amin)):
    OPS[_name] = register(Op(
        name=_name, family="reduction", variants=_variants(_name), bytes_moved=_bytes,
        flops=lambda x, *a, **k: x.numel(), call=globals()[_name],
        torch_fn=(lambda f: lambda x, dim=None, keepdim=False: f(x) if dim is None else f(x, dim, keepdim))(_torch),
        example=_example, doc=f"torch.{_name}: full or per-dim reduction, fp32 accumulation",
        bench_shapes=((1 << 28,),),
    ))
