"""The reductions' plans (sum, mean, amax, amin; the public functions and the lanes are in reduce.py; the
kernel instantiations each rung launches in _reduce_kernels.py): the launch rules (blocks_per_row,
col_split, col_group), the workspace of split rows, and the plan a call resolves to, once per (op, shape, strides,
dtype, device, dims, rung, config): the loaded kernels and launch shapes of a full reduction, of rows
reduced along their last dim, or of an (outer, R, inner) volume reduced over R (coalesced columns)."""
from __future__ import annotations

import math
from typing import Optional

import torch

from ...ladder import Op
from ...runtime import get_kernel, launch, plain_launcher, resident_blocks, stream_handle
from .._shared.checks import pick_variant
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, compute_capability, f32, i32, sm_count
from .._shared.plans import plan_cache, remember
from ._reduce_kernels import (
    COL_BLOCK_ROWS, COL_CLUSTER_MAX, COL_CLUSTER_ROWS, COL_MIN_ROWS, F32, FOLD_ROWS, FULL, FUNCTOR, SRC,
    TICKET_SPLITS_MAX, TREE_BLOCK, TREE_RUNGS, VEC_BLOCK, VEC_BLOCKS_PER_SM, VEC_UNROLL, WARP_ROWS_BLOCK,
    WARP_ROWS_MAX, _cols_cluster_name, _cols_name, _fast_name, _finish_name, _fold_name, _per_vec, _tree_name,
    _warp_rows_name, ReduceConfig, rows_config)

OPS: dict[str, Op] = {}  # the four ops, registered by reduce.py; a plan reads its rung from them

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


def meet_in_clusters(rsplit: int, rps: int, dev: int) -> bool:
    """Whether the ``rsplit`` splits of ``rps`` rows of each column block meet in a cluster
    (reduce_cols_cluster, sm_90) rather than by reduce_cols' ticket. The cluster saves the ticket's chain
    of L2 round trips after the main pass (2.3 us at 64 x 197 x 768 bf16 over dim 1 on an H200), but its
    CTAs are placed by the GPC, less evenly than plain blocks: the main pass of 31 x 4099 x 1021 bf16 in
    clusters of 3 (1366 rows a split) ran 8% slower, clusters of 10 over 8192 x 8192 fp32 (819 rows) 12%.
    So: one portable cluster of at most COL_CLUSTER_MAX CTAs, where a split's main pass is short
    (at most COL_CLUSTER_ROWS rows) and the finish weighs most (docs/design/reductions.md)."""
    return 1 < rsplit <= COL_CLUSTER_MAX and rps <= COL_CLUSTER_ROWS and compute_capability(dev) >= 90


def _cluster_cols_plan(kernel, dev: int, outer: int, R: int, inner: int, col_blocks: int, rsplit: int,
                       rps: int, scale: float):
    """reduce_cols_cluster: the ``rsplit`` splits of each column block as one cluster of that many CTAs,
    met in rank 0's shared memory; one launch, no workspace."""
    block = (32, COL_BLOCK_ROWS)
    grid = col_blocks * outer * rsplit
    args = (R, inner, col_blocks, rps, f32(scale))

    def run(x, out):
        launch(kernel, grid, block, x.data_ptr(), out.data_ptr(), *args, cluster=rsplit, name="reduce_cols_cluster",
               device_index=dev)
    return run


def _cols_plan(fn: str, dtype, dev: int, outer: int, R: int, inner: int, scale: float, window: bool, tout):
    """The plan of out[o, c] = reduce(x[o, :, c]) for a contiguous (outer, R, inner) input into out of
    dtype ``tout``: one launch of reduce_cols (``window``: its form for rows at any 16-byte phase, 31
    vectors of columns a block; else 32), its rows split by ``col_split``; the blocks of a split column
    block meet in a cluster where ``meet_in_clusters`` says (sm_90), else in the workspace, where the last
    one writes the result (where ``ticket_finish`` says; else the grouped plan's two launches with groups
    of one row).
    """
    block = (32, COL_BLOCK_ROWS)
    col_blocks = cdiv(inner, (31 if window else 32) * _per_vec(dtype))
    kernel = _load(_cols_name(fn, dtype, tout, window), dev)
    tiles = col_blocks * outer
    rsplit = col_split(R, tiles, resident_blocks(kernel, 32 * COL_BLOCK_ROWS, 1, dev))
    rps = cdiv(R, rsplit)
    rsplit = cdiv(R, rps)
    if meet_in_clusters(rsplit, rps, dev):
        ck = _load(_cols_cluster_name(fn, dtype, tout, window), dev)
        if tiles * rsplit <= resident_blocks(ck, 32 * COL_BLOCK_ROWS, rsplit, dev):  # clusters fit fewer CTAs
            return _cluster_cols_plan(ck, dev, outer, R, inner, col_blocks, rsplit, rps, scale)
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
