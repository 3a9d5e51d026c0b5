"""The reductions' plans (sum, mean, amax, amin; the public functions and the lanes are in reduce.py): the
kernel instantiations each rung launches, the launch rules (rows_config, blocks_per_row, col_split,
col_group), the workspace of split rows, and the plan a call resolves to, once per (op, shape, strides,
dtype, device, dims, rung, config): the loaded kernels and launch shapes of a full reduction, of rows
reduced along their last dim, or of an (outer, R, inner) volume reduced over R (coalesced columns)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from ...ladder import Kernel, Op
from ...runtime import get_kernel, launch, plain_launcher, resident_blocks, stream_handle
from .._shared.checks import pick_variant
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, f32, i32, sm_count
from .._shared.plans import plan_cache, remember

OPS: dict[str, Op] = {}  # the four ops, registered by reduce.py; a plan reads its rung from them

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
# Splits the last block of a column block sums itself at most (its 8 rows of threads take them 8 at a
# time, a chain of L2 round trips after the main loop); more go to reduce_cols_fold's 32 rows of threads.
TICKET_SPLITS_MAX = 48


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


def ticket_finish(rsplit: int, outer: int) -> bool:
    """Whether the last of a column block's ``rsplit`` blocks sums their partials (one launch), rather
    than reduce_cols_fold (a second launch, about a microsecond). The last block's 256 threads read the
    partials 8 rows at a time, one L2 round trip a round after the main loop: 50257 x 768 bf16 over dim
    0 splits 220 ways, 28 rounds, and ran at 56% of a same-bytes copy. The fold's 1024 threads a block
    take 32 rows a round, several rounds in flight. Its grid holds at most 65535 outer slabs."""
    return rsplit <= TICKET_SPLITS_MAX or outer > 65535


def _cols_plan(fn: str, dtype, dev: int, outer: int, R: int, inner: int, scale: float, window: bool, tout):
    """The plan of out[o, c] = reduce(x[o, :, c]) for a contiguous (outer, R, inner) input into out of
    dtype ``tout``: one launch of reduce_cols (``window``: its form for rows at any 16-byte phase, 31
    vectors of columns a block; else 32), its rows split by ``col_split``; the blocks of a split column
    block meet in the workspace and the last one writes the result (where ``ticket_finish`` says; else
    the grouped plan's two launches with groups of one row).
    """
    block = (32, COL_BLOCK_ROWS)
    col_blocks = cdiv(inner, (31 if window else 32) * _per_vec(dtype))
    kernel = _load(_cols_name(fn, dtype, tout, window), dev)
    tiles = col_blocks * outer
    rsplit = col_split(R, tiles, resident_blocks(kernel, 32 * COL_BLOCK_ROWS, 1, dev))
    rps = cdiv(R, rsplit)
    rsplit = cdiv(R, rps)
    if not ticket_finish(rsplit, outer):
        return _grouped_cols_plan(fn, dtype, dev, outer, R, inner, 1, scale, window, tout)
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
