"""softmax(x, dim): the ladder from three passes to rows held in registers (and clusters), dispatch.

The kernels work on the last dim of a contiguous tensor; another dim is moved last (a copy in, a copy
out: the correct path, not the fast one).
"""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, kind_variants, register
from ...runtime import launch
from .._shared.checks import check_tensor, output_for, pick_variant
from .._shared.cxx import CXX_TYPE
from ._rows import (RowTables, SourceNames, flat, grid_for_rows, has_clusters, launch_cluster, launch_smem_rows,
                       pick, row_kernels, row_name, smem_rows_configs, smem_rows_kernels, smem_rows_name,
                       smem_rows_pick, vec_ok)
from .reduce import wrap_dim

__all__ = ["softmax"]

SRC = "reduction/softmax.cu"
LOOP_BLOCK = 512  # the looping kernels (three-pass, online): one block of 512 threads per row
NAMES = SourceNames(SRC, ("softmax",))

# (group, vecs, cluster) by capacity. Small rows pack into warps; then a CTA per row, up to 1024
# threads x 32 values; past that a cluster splits the row. Chosen on an H100 (benchmarks/reduction_tuning.py, run 1): one 1024-thread
# CTA per 32K row beat a cluster of 4 x 256 (3016 vs 2882 GB/s fp32, 2985 vs 2662 fp16), and at 1K
# 16-bit rows a 128-thread CTA per row beat a warp per row (2888 vs 2480 GB/s). Run 2: 64K 16-bit rows
# as 2 x 512 threads x 64 values (exponentials recomputed) read 1710 GB/s against 2370 for 8 x 256.
# Run 7 (statistics pushed by st.async, no cluster barrier): 64K fp32 rows as 4 x 512 read 2810 GB/s
# against 2687 for 8 x 256 and 2575 for 2 x 1024; 16-bit 8 x 256 stays (2524 vs 2483 for 4 x 512).
_FAST = {
    4: {128: (32, 1, 1), 256: (32, 2, 1), 512: (32, 4, 1), 1024: (32, 8, 1), 2048: (128, 4, 1),
        4096: (256, 4, 1), 8192: (256, 8, 1), 16384: (512, 8, 1), 32768: (1024, 8, 1), 65536: (512, 8, 4),
        131072: (512, 8, 8), 262144: (1024, 8, 8)},
    8: {256: (32, 1, 1), 512: (32, 2, 1), 1024: (128, 1, 1), 2048: (128, 2, 1), 4096: (128, 4, 1),
        8192: (256, 4, 1), 16384: (512, 4, 1), 32768: (1024, 4, 1), 65536: (256, 4, 8), 131072: (512, 4, 8),
        262144: (1024, 4, 8)},
}
TABLES = RowTables(
    fast=_FAST,
    fast_flat=flat(_FAST, {}),  # longer rows: online
    registers={
        4: {512: (128, 1, 1), 1024: (128, 2, 1), 2048: (128, 4, 1), 4096: (256, 4, 1), 8192: (256, 8, 1),
            16384: (512, 8, 1), 32768: (1024, 8, 1)},
        8: {1024: (128, 1, 1), 2048: (128, 2, 1), 4096: (128, 4, 1), 8192: (256, 4, 1), 16384: (512, 4, 1),
            32768: (1024, 4, 1)},
    },
)

# Long aligned rows on sm_90 kept whole in shared memory (softmax_smem, csrc/smemrows.cuh): (threads,
# vectors a thread per chunk, chunks a slice, ring stages, CTAs per cluster) by capacity, for rows longer
# than SMEM_FROM; as in norm.py. Session 12 (scripts/smem_rows_tune.py, H100, 1024 x 65536): 91.7%
# (fp16, one 512-thread CTA a row) and 94.4% (fp32, clusters of 2) of a same-bytes copy, against 98.2%
# for both with the register-tile clusters above (since their cluster start no longer waits on a release
# barrier), so the table is empty: these are measured alternatives, compiled and GPU-tested with the rung.
SMEM: dict[int, dict[int, tuple]] = {4: {}, 8: {}}
SMEM_FROM = 32768
SMEM_SPARES = {4: [(512, 4, 4, 7, 2)], 8: [(512, 4, 4, 7, 1)]}


def smem_configs(dtype) -> list[tuple]:
    """Every shared-memory-resident configuration the fast rung may launch for dtype (table + spares)."""
    return smem_rows_configs((SMEM,), SMEM_SPARES, dtype)


def _smem_for(dtype, len_: int):
    """The shared-memory-resident configuration for an aligned row on sm_90, or None."""
    return smem_rows_pick(SMEM, dtype, len_, SMEM_FROM)


def _loop_kernel(kind: str, dtype) -> Kernel:
    bits = torch.finfo(dtype).bits
    return Kernel(SRC, f"kk::softmax_{kind}<{CXX_TYPE[dtype]}, {LOOP_BLOCK}>", bits, bits, block=LOOP_BLOCK)


def _kernels(kind: str, dtype) -> tuple[Kernel, ...]:
    if kind in ("three_pass", "online"):
        return (_loop_kernel(kind, dtype),)
    # rows too long for any configuration fall back to the online kernel
    smem = smem_rows_kernels(SRC, "softmax_smem", dtype, smem_configs(dtype)) if kind == "fast" else ()
    return row_kernels(SRC, "softmax_rows", TABLES, kind, dtype) + smem + (_loop_kernel("online", dtype),)


_plans: dict[tuple, tuple] = {}


def _plan(v: Variant, dtype, dev: int, len_: int, vec: bool):
    """(kernel, blocks, block, cluster) for rows of len_ (blocks per row when cluster == 0: looping)."""
    key = (v.name, dtype, dev, len_, vec)
    plan = _plans.get(key)
    if plan is None:
        kind = v.params["kind"]
        cfg = None if kind in ("three_pass", "online") else pick(len_, TABLES.table(kind, dtype, dev))
        smem = _smem_for(dtype, len_) if kind == "fast" and vec and has_clusters(dev) else None
        if smem is not None:
            plan = (NAMES.load(smem_rows_name("softmax_smem", dtype, smem), dtype, dev), smem)
        elif cfg is None:
            k = _loop_kernel("online" if kind != "three_pass" else kind, dtype)
            plan = (NAMES.load(k.name, dtype, dev), None)
        else:
            plan = (NAMES.load(row_name("softmax_rows", dtype, cfg, vec), dtype, dev), cfg)
        _plans[key] = plan
    return plan


def _run(v: Variant, x: torch.Tensor, out: torch.Tensor, rows: int, len_: int) -> None:
    """Softmax of each row of contiguous (rows, len_) x into contiguous out."""
    dev = x.get_device()
    vec = vec_ok(len_, x.dtype, x, out)
    kernel, cfg = _plan(v, x.dtype, dev, len_, vec)
    if cfg is None:
        launch(kernel, rows, LOOP_BLOCK, x.data_ptr(), out.data_ptr(), len_, device_index=dev)
        return
    args = (x.data_ptr(), out.data_ptr(), rows, len_)
    if len(cfg) == 5:  # softmax_smem: rows resident in shared memory, persistent
        launch_smem_rows(kernel, cfg, rows, *args, dev=dev)
        return
    blocks, block, cluster = grid_for_rows(rows, cfg)
    if cluster > 1:
        launch_cluster(kernel, blocks, block, cluster, *args, dev=dev)
    else:
        launch(kernel, blocks, block, *args, device_index=dev)


def _softmax_into(x: torch.Tensor, out: torch.Tensor, dim: int, variant: Optional[str]) -> None:
    if x.numel() == 0:
        return
    v = pick_variant(OP, variant, x.dtype)
    last = x.dim() <= 1 or dim == x.dim() - 1
    xc = (x if last else x.movedim(dim, -1)).contiguous()
    len_ = xc.shape[-1] if xc.dim() else 1
    rows = xc.numel() // len_
    if last and out.is_contiguous():
        _run(v, xc, out, rows, len_)
        return
    tmp = torch.empty_like(xc)
    _run(v, xc, tmp, rows, len_)
    out.copy_(tmp if last else tmp.movedim(-1, dim))


@torch.library.custom_op("kernelkit::softmax_out", mutates_args=("out",))
def _softmax_out_op(x: torch.Tensor, out: torch.Tensor, dim: int, variant: Optional[str]) -> None:
    _softmax_into(x, out, dim, variant)


@_softmax_out_op.register_fake
def _(x, out, dim, variant):
    return None


def softmax(x: torch.Tensor, dim: int = -1, *, out: Optional[torch.Tensor] = None,
            variant: Optional[str] = None) -> torch.Tensor:
    """torch.softmax(x, dim): exp(x - max) / sum along ``dim`` with fp32 statistics, in x's dtype.

    Rows holding +inf or NaN come out NaN and a row of -inf is NaN, as in torch. ``out``: optional
    result tensor of x's shape and dtype (may be x itself). ``variant``: a rung of
    ``kernelkit.ladder("softmax")``; None picks the fastest for the row length.
    """
    check_tensor(x, "x", FLOAT_DTYPES, "softmax")
    d = wrap_dim(dim, x.dim(), "softmax")
    out = output_for(out, x, "softmax")
    if variant is not None:
        OP.variant(variant)
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.softmax_out(x, out, d, variant)
    else:
        _softmax_into(x, out, d, variant)
    return out


RUNGS = (
    ("three_pass", "one block per row: a read for the max, a read for the sum of exp(x - max), a read "
     "and a write for the result (3 reads + 1 write)"),
    ("online", "online softmax: running (max, sum) per thread in one read, rescaled when the max grows, "
     "merged over the block; a second read writes (2 reads + 1 write)"),
    ("registers", "one CTA per row holding it in registers (16-byte loads): one read, one write; rows "
     "over 32K elements fall back to online"),
    ("fast", "per row length: rows packed into warps (fp32 <= 1K), a CTA per row up to 1024 threads x 32 "
     "values, a thread-block cluster per row exchanging (max, sum) through distributed shared memory "
     "(sm_90, <= 256K); online beyond"),
)

OP = register(Op(
    name="softmax", family="reduction",
    variants=kind_variants(RUNGS, _kernels),
    bytes_moved=lambda x, dim=-1, **_: 2 * x.numel() * x.element_size(),
    flops=lambda x, dim=-1, **_: 5 * x.numel(),  # max, subtract, exp, add, scale
    call=softmax,
    torch_fn=lambda x, dim=-1: torch.softmax(x, dim),
    example=lambda shape, dtype: ((torch.randn(shape, dtype=dtype, device="cuda") * 3,), {}),
    doc="softmax along a dim (torch.softmax), fp32 statistics",
    bench_shapes=((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536)),
    bench_dtypes=(torch.float32, torch.float16),
))
