"""The reductions' kernels: the instantiations each rung launches (``_kernels``), their names, and the
launch configurations of the fast rung (``ReduceConfig``, ``rows_config``) with the constants the kernels
were written for (block shapes of the tree, vector, row and column kernels). _reduce_plans.py builds the
plans from them."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...ladder import Kernel
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv

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
# Splits the last block of a column block sums itself at most: its 8 rows of threads take them 8 at a
# time, a chain of L2 round trips after the main loop; past 3 rounds reduce_cols_fold's 32 rows of threads
# (a second launch, about 2 round trips) finish sooner (H100: 38 splits 23.6 us walked, 20.9 folded; 19
# splits 29.2 walked, 30.9 folded; 20-23 the same either way: docs/design/reductions.md).
TICKET_SPLITS_MAX = 24
# Column splits met in a cluster on sm_90 (reduce_cols_cluster, kColClusterMax in reduce.cu): at most 8
# CTAs (the portable size), each split at most COL_CLUSTER_ROWS rows (``meet_in_clusters``).
COL_CLUSTER_MAX = 8
COL_CLUSTER_ROWS = 512


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


def _cols_cluster_name(fn: str, tin, tout, window: bool) -> str:
    return (f"kk::reduce_cols_cluster<{CXX_TYPE[tin]}, {CXX_TYPE[tout]}, {fn}, {_per_vec(tin)}, "
            f"{str(window).lower()}>")


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
    # sm_90: short splits of a column block met in a cluster (st.async into rank 0's shared memory)
    for t in touts:
        for window in (False, True):
            ks.append(Kernel(SRC, _cols_cluster_name(fn, dtype, t, window), 128, _bits(t), block=32 * COL_BLOCK_ROWS,
                             min_sm=90, sass=("SYNCS",)))  # writes only the result (no partials)
    # narrow rows read in groups: reduce_cols into fp32 partials, then their fold (scalar fp32 loads)
    for window in (False, True):
        ks.append(Kernel(SRC, _cols_name(fn, dtype, F32, window), 128, 32, block=32 * COL_BLOCK_ROWS))
    for t in touts:
        ks.append(Kernel(SRC, _fold_name(fn, dtype, t), 32, _bits(t), block=32 * FOLD_ROWS))
    return tuple(dict.fromkeys(ks))
