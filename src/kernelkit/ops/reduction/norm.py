"""layer_norm and rms_norm (torch.nn.functional semantics): ladder and dispatch.

Both normalize each row of the trailing ``normalized_shape`` elements with fp32 statistics and share
every kernel (norm.cu takes `rms` as a run-time flag): Welford over a looping block, then the row in
registers (mean, then squared deviations from it: two passes over registers), then per row length
warp-packed rows, a CTA per row or a cluster per row.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np
import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, kind_variants, register
from ...runtime import launch
from .._shared.checks import check_tensor, output_for, pick_variant
from .._shared.cxx import CXX_TYPE
from ._rows import (SourceNames, allow_shared, grid_for_rows, handout_counters, has_clusters, launch_cluster,
                       launch_persistent, launch_smem_rows, per_vec, pick, resident_blocks, row_kernels, row_name,
                       smem_rows_configs, smem_rows_kernels, smem_rows_name, smem_rows_pick, vec_ok)
from .norm_tables import (  # noqa: F401  (tables read as norm's globals; scripts read norm.<name>)
    _FAST, TABLES, _UNALIGNED, _VEC_ONLY, _SPILLING, BULK, BULK_FROM, BULK_LAYER_NORM,
    BULK_LAYER_NORM_FROM, BULK_SPARES, CLUSTER_ROWS, CLUSTER_ROWS_FROM, CLUSTER_ROWS_LN, CLUSTER_ROWS_LN_FROM,
    CLUSTER_ROWS_RMS, SMEM, SMEM_FROM,
    SMEM_SPARES, STAGED_ROWS,
    STAGED_MAX_ROWS, STAGED_RMS_ROWS)

__all__ = ["layer_norm", "rms_norm"]

SRC = "reduction/norm.cu"
LOOP_BLOCK = 512
NAMES = SourceNames(SRC, ("layer_norm", "rms_norm"))
PERSISTENT = True  # cluster rows: a grid of resident CTAs looping over rows (False: one cluster per row)
# cluster rows: load the next row before reducing this one. Measured slower on an H100 (run 4: 1987 vs
# 2514 GB/s layer_norm fp32 32768^2, 1677 vs 1727 fp16): the second tile costs registers (64 -> 94),
# and so CTAs per SM, more than the overlap gains. Kept, tested, off.
PREFETCH = False
# CLUSTER_ROWS' persistent clusters take rows handed out at run time (norm_rows_dyn) rather than dealt in
# a fixed stride. Session 16 (scripts/handout_ab.py, persistent_grid.py --dynamic; H100, fp16): 1024 x 65536
# rms_norm 92.6-93.1% -> 95.4-95.7% of a same-bytes copy, layer_norm 90.3-91.1% -> 92.2-92.8%; 2048 x 65536
# 92.6% -> 98.0% and 91.5% -> 95.8%. STAGED_ROWS' one-CTA rows measured slower so (ncu, 4096 x 4096 fp16
# layer_norm: 23.6-24.9 us against 22.4-23.5 us) and keep the fixed stride. False: kept, tested, compared.
HANDOUT = True
# norm_bulk's one-CTA rings (16-bit layer_norm rows of 16K-32K) take rows handed out at run time
# (norm_bulk_dyn) rather than dealt in a fixed stride. Session 19 (scripts/bulk_ab.py --patch, H100,
# interleaved; results/session19/bulk-handout-ab.txt): 32768^2 fp16 layer_norm 1482 -> 1415 us (95.5% ->
# 100.0% of a same-bytes copy), 16384 x 32768 742 -> 710 us. False: kept, tested, compared.
BULK_HANDOUT = True


def smem_configs(dtype) -> list[tuple]:
    """Every shared-memory-resident configuration the fast rung may launch for dtype (tables + spares)."""
    return smem_rows_configs(SMEM.values(), SMEM_SPARES, dtype)


def _smem_for(dtype, len_: int, rms: bool):
    """The shared-memory-resident configuration for an aligned row on sm_90, or None."""
    return smem_rows_pick(SMEM["rms_norm" if rms else "layer_norm"], dtype, len_, SMEM_FROM)


def _cluster_rows_for(dtype, len_: int, rms: bool = False):
    """The tight register-tile cluster configuration for an aligned row on sm_90 (CLUSTER_ROWS, and
    CLUSTER_ROWS_RMS for rms_norm, CLUSTER_ROWS_LN for layer_norm's shorter rows), or None."""
    if len_ <= CLUSTER_ROWS_FROM:
        return pick(len_, CLUSTER_ROWS_LN.get(dtype, {})) if not rms and len_ > CLUSTER_ROWS_LN_FROM else None
    cfg = pick(len_, CLUSTER_ROWS.get(dtype, {}))
    return pick(len_, CLUSTER_ROWS_RMS.get(dtype, {})) if cfg is None and rms else cfg


def _staged_name(dtype, cfg) -> str:
    return f"kk::norm_rows<{CXX_TYPE[dtype]}, {cfg[0]}, {cfg[1]}, 1, true, false, false, true>"


def _cluster_rows_name(dtype, cfg, dyn: bool = True) -> str:
    """CLUSTER_ROWS' persistent clusters, weight and bias staged, rows handed out at run time (dyn) or
    dealt in a fixed stride."""
    return f"kk::{'norm_rows_dyn' if dyn else 'norm_rows'}<{CXX_TYPE[dtype]}, {cfg[0]}, {cfg[1]}, {cfg[2]}, true, false>"


def _row_read_name(dtype, cfg) -> str:
    """The same tile a CTA a row, weight and bias read at the output (past STAGED_MAX_ROWS)."""
    return f"kk::norm_rows<{CXX_TYPE[dtype]}, {cfg[0]}, {cfg[1]}, 1, true, false, false, false>"


def _staged_shared(cfg) -> int:
    return 2 * cfg[0] * cfg[1] * 16  # the CTA's weight and bias slices


def _bulk_name(dtype, cfg, dyn: bool = False) -> str:
    """norm_bulk for a configuration; dyn: its one-CTA form taking rows handed out at run time (norm_bulk_dyn)."""
    g, v, c, stages, wb, chunks = cfg
    kernel = "norm_bulk_dyn" if dyn else "norm_bulk"
    return f"kk::{kernel}<{CXX_TYPE[dtype]}, {g}, {v}, {c}, {stages}, {'true' if wb else 'false'}, {chunks}>"


def _bulk_kernels(dtype) -> tuple[Kernel, ...]:
    n = per_vec(dtype)
    cfgs = sorted(set(BULK[n].values()) | set(BULK_SPARES.get(n, ())))
    # 32 values a thread at 1024 threads (64 registers): ptxas spills some bytes for bf16 (allowed); the
    # handed-out rings (norm_bulk_dyn) take their rows by a global atomic (ATOMG)
    return tuple(Kernel(SRC, _bulk_name(dtype, c, dyn), 128, 128, block=c[0], min_sm=90,
                        sass=("UBLKCP", "ATOMG") if dyn else ("UBLKCP",),
                        spills=c[0] == 1024 and c[1] * n > 16, dyn_shared=_bulk_shared(c, True, True))
                 for c in cfgs for dyn in ((False, True) if _bulk_one_cta(c) else (False,)))


def _bulk_one_cta(cfg) -> bool:
    """A bulk configuration of one-CTA rings: the ones that come in a handed-out form too (norm_bulk_dyn)."""
    return cfg[2] == 1


def _bulk_config(dtype, len_: int):
    return pick(len_, BULK[per_vec(dtype)])


def _bulk_for(dtype, len_: int, rms: bool):
    """The bulk-copy configuration for an aligned row on sm_90, or None (a register-tile kernel)."""
    if len_ > BULK_FROM:
        return _bulk_config(dtype, len_)
    if not rms and len_ > BULK_LAYER_NORM_FROM:
        return pick(len_, BULK_LAYER_NORM.get(per_vec(dtype), {}))
    return None


def _bulk_shared(cfg, weight: bool, bias: bool) -> int:
    """Bytes of dynamic shared memory: the ring, then the staged weight and bias slices."""
    g, v, _c, stages, wb, chunks = cfg
    slice_bytes = g * v * 16
    return stages * slice_bytes // chunks + (int(weight) + int(bias) if wb else 0) * slice_bytes


def _welford(dtype) -> Kernel:
    bits = torch.finfo(dtype).bits
    return Kernel(SRC, f"kk::norm_welford<{CXX_TYPE[dtype]}, {LOOP_BLOCK}>", bits, bits, block=LOOP_BLOCK)


def _kernels(kind: str, dtype) -> tuple[Kernel, ...]:
    if kind == "welford":
        return (_welford(dtype),)
    vec_only = _VEC_ONLY[per_vec(dtype)] if kind == "fast" else frozenset()
    spilling = _SPILLING.get(per_vec(dtype), frozenset()) if kind == "fast" else frozenset()
    # every configuration's kernels, then welford (the fallback for rows longer than the table)
    bulk = _bulk_kernels(dtype) if kind == "fast" else ()
    smem = smem_rows_kernels(SRC, "norm_smem", dtype, smem_configs(dtype)) if kind == "fast" else ()
    # the staged kernels copy weight and bias into shared memory asynchronously (LDGSTS: cp.async)
    staged = tuple(Kernel(SRC, _staged_name(dtype, c), 128, 128, block=c[0], dyn_shared=_staged_shared(c),
                          sass=("LDGSTS",))
                   for c in sorted(STAGED_ROWS.get(per_vec(dtype), ()))) if kind == "fast" else ()
    staged += tuple(Kernel(SRC, _cluster_rows_name(dtype, c), 128, 128, block=c[0], min_sm=90,
                           dyn_shared=_staged_shared(c), sass=("LDGSTS",))
                    for c in sorted(set().union(*(t.get(dtype, {}).values()
                                                  for t in (CLUSTER_ROWS, CLUSTER_ROWS_RMS, CLUSTER_ROWS_LN))))
                    ) if kind == "fast" else ()
    if kind == "fast" and dtype in STAGED_MAX_ROWS:
        staged += tuple(Kernel(SRC, _row_read_name(dtype, c), 128, 128, block=c[0])
                        for c in sorted(STAGED_ROWS[per_vec(dtype)]))
    return (row_kernels(SRC, "norm_rows", TABLES, kind, dtype, _extras, vec_only, spilling) + staged + bulk + smem
            + (_welford(dtype),))


def _extras(cfg):
    """Cluster rows come with and without the prefetch of the next row, except at 1024 threads,
    where a second tile cannot fit the 64-register budget."""
    return [(False,), (True,)] if cfg[2] > 1 and cfg[0] < 1024 else [(False,)]


_plans: dict[tuple, tuple] = {}


def _plan(v: Variant, dtype, dev: int, len_: int, vec: bool, rms: bool, rows: int = 1):
    many = rows > STAGED_MAX_ROWS.get(dtype, rows)  # past the staged form's row range (STAGED_MAX_ROWS)
    lo, hi = STAGED_RMS_ROWS.get(dtype, (1, 0))
    rms_staged = rms and lo <= rows <= hi  # rms_norm's row range for the staged form
    key = (v.name, dtype, dev, len_, vec, rms, PREFETCH, HANDOUT, BULK_HANDOUT, many, rms_staged)
    plan = _plans.get(key)
    if plan is None:
        kind = v.params["kind"]
        if kind == "fast" and vec and has_clusters(dev):
            cfg = _cluster_rows_for(dtype, len_, rms)
            if cfg is not None:  # persistent clusters, weight and bias staged, rows handed out
                plan = _plans[key] = (NAMES.load(_cluster_rows_name(dtype, cfg, HANDOUT), dtype, dev),
                                      (*cfg, "handout") if HANDOUT else cfg)
                return plan
            cfg = _smem_for(dtype, len_, rms)
            if cfg is not None:
                plan = _plans[key] = (NAMES.load(smem_rows_name("norm_smem", dtype, cfg), dtype, dev), cfg)
                return plan
            cfg = _bulk_for(dtype, len_, rms)
            if cfg is not None:
                dyn = BULK_HANDOUT and _bulk_one_cta(cfg)  # rows handed out (norm_bulk_dyn)
                plan = _plans[key] = (NAMES.load(_bulk_name(dtype, cfg, dyn), dtype, dev),
                                      (*cfg, "bulk handout") if dyn else cfg)
                return plan
        cfg = None if kind == "welford" else pick(len_, TABLES.table(kind, dtype, dev))
        staged = cfg in STAGED_ROWS.get(per_vec(dtype), ()) and (rms_staged or not rms)
        if kind == "fast" and vec and staged:
            if many:
                plan = _plans[key] = (NAMES.load(_row_read_name(dtype, cfg), dtype, dev), cfg)
            else:
                plan = _plans[key] = (NAMES.load(_staged_name(dtype, cfg), dtype, dev), (*cfg, "staged"))
            return plan
        if cfg is not None and not vec and kind == "fast" and cfg in _VEC_ONLY[per_vec(dtype)]:
            cfg = _UNALIGNED[per_vec(dtype)] if has_clusters(dev) else None
        name = _welford(dtype).name if cfg is None else row_name("norm_rows", dtype, cfg, vec,
                                                                  PREFETCH and len(_extras(cfg)) > 1)
        plan = _plans[key] = (NAMES.load(name, dtype, dev), cfg)
    return plan


def _run(v, x, out, w, b, rows: int, len_: int, eps: float, rms: bool) -> None:
    dev = x.get_device()
    vec = vec_ok(len_, x.dtype, x, out, w, b)
    kernel, cfg = _plan(v, x.dtype, dev, len_, vec, rms, rows)
    wp = w.data_ptr() if w is not None else 0
    bp = b.data_ptr() if b is not None else 0
    flags = (np.float32(eps), np.int32(rms))
    if cfg is None:
        launch(kernel, rows, LOOP_BLOCK, x.data_ptr(), out.data_ptr(), wp, bp, len_, *flags, device_index=dev)
        return
    args = (x.data_ptr(), out.data_ptr(), wp, bp, rows, len_, *flags)
    if cfg[-1] == "staged":  # one CTA a row, persistent, weight and bias staged in shared memory (STAGED_ROWS)
        launch_persistent(kernel, rows, cfg[0], 1, _staged_shared(cfg), *args, dev=dev)
        return
    if cfg[-1] == "handout":  # CLUSTER_ROWS: persistent clusters, weight and bias staged, rows handed out
        # the bias slice's shared memory only where there is a bias (fp32 rms_norm: 2 CTAs an SM, not 1)
        shmem = _staged_shared(cfg) // 2 * (2 if b is not None else 1)
        launch_persistent(kernel, rows, cfg[0], cfg[2], shmem, *args, handout_counters(dev), dev=dev)
        return
    if len(cfg) == 5:  # norm_smem: rows resident in shared memory, persistent
        launch_smem_rows(kernel, cfg, rows, *args, dev=dev)
        return
    if cfg[-1] == "bulk handout":  # norm_bulk_dyn: persistent one-CTA rings, rows handed out by the stream's counter
        shmem = _bulk_shared(cfg[:6], w is not None, b is not None)
        launch_persistent(kernel, rows, cfg[0], 1, shmem, *args, handout_counters(dev), dev=dev)
        return
    if len(cfg) == 6:  # norm_bulk: persistent clusters, the ring of stages in dynamic shared memory
        block, cluster = cfg[0], cfg[2]
        shmem = _bulk_shared(cfg, w is not None, b is not None)
        allow_shared(kernel, shmem, dev)
        blocks = min(rows * cluster, resident_blocks(kernel, block, cluster, dev, shmem))
        launch_cluster(kernel, blocks, block, cluster, *args, dev=dev, shmem=shmem)
        return
    blocks, block, cluster = grid_for_rows(rows, cfg)
    if cluster == 1:
        launch(kernel, blocks, block, *args, device_index=dev)
        return
    # cluster rows: persistent, each CTA's weight and bias slice staged in shared memory
    shmem = 2 * cfg[0] * cfg[1] * per_vec(x.dtype) * x.element_size()
    allow_shared(kernel, shmem, dev)
    if PERSISTENT:
        blocks = min(blocks, resident_blocks(kernel, block, cluster, dev, shmem))
    launch_cluster(kernel, blocks, block, cluster, *args, dev=dev, shmem=shmem)


def _norm_into(x, out, weight, bias, len_: int, eps: float, rms: bool, variant: Optional[str]) -> None:
    if x.numel() == 0:
        return
    v = pick_variant(OPS["rms_norm" if rms else "layer_norm"], variant, x.dtype)
    xc = x.contiguous()
    w = None if weight is None else weight.contiguous()
    b = None if bias is None else bias.contiguous()
    rows = xc.numel() // len_
    if out.is_contiguous():
        _run(v, xc, out, w, b, rows, len_, eps, rms)
    else:
        tmp = torch.empty_like(xc)
        _run(v, xc, tmp, w, b, rows, len_, eps, rms)
        out.copy_(tmp)


@torch.library.custom_op("kernelkit::norm_out", mutates_args=("out",))
def _norm_out_op(x: torch.Tensor, out: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                 len_: int, eps: float, rms: bool, variant: Optional[str]) -> None:
    _norm_into(x, out, weight, bias, len_, eps, rms, variant)


@_norm_out_op.register_fake
def _(x, out, weight, bias, len_, eps, rms, variant):
    return None


Shape = Union[int, Sequence[int], torch.Size]


def _check(op: str, x, normalized_shape, weight, bias, out) -> tuple[int, torch.Tensor]:
    """Validate as torch does; returns (elements per row, out)."""
    check_tensor(x, "x", FLOAT_DTYPES, op)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not ns or any(not isinstance(s, int) or s < 0 for s in ns):
        raise ValueError(f"{op}: normalized_shape must be a non-empty sequence of sizes, got {normalized_shape!r}")
    if x.dim() < len(ns) or tuple(x.shape[x.dim() - len(ns):]) != ns:
        raise ValueError(f"{op}: normalized_shape={list(ns)} expects an input of shape [*, "
                         f"{', '.join(map(str, ns))}], got {list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        check_tensor(t, name, (x.dtype,), op)
        if t.device != x.device:
            raise ValueError(f"{op}: {name} is on {t.device}, x on {x.device}")
        if tuple(t.shape) != ns:
            raise ValueError(f"{op}: {name} has shape {list(t.shape)}, expected normalized_shape {list(ns)}")
    return math.prod(ns), output_for(out, x, op)


def layer_norm(x: torch.Tensor, normalized_shape: Shape, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5, *, out: Optional[torch.Tensor] = None,
               variant: Optional[str] = None) -> torch.Tensor:
    """torch.nn.functional.layer_norm: (x - mean) / sqrt(var + eps) * weight + bias over the trailing
    ``normalized_shape`` (biased variance, fp32 statistics); weight and bias in x's dtype."""
    len_, out = _check("layer_norm", x, normalized_shape, weight, bias, out)
    return _dispatch(x, out, weight, bias, len_, float(eps), False, variant)


def rms_norm(x: torch.Tensor, normalized_shape: Shape, weight: Optional[torch.Tensor] = None,
             eps: Optional[float] = None, *, out: Optional[torch.Tensor] = None,
             variant: Optional[str] = None) -> torch.Tensor:
    """torch.nn.functional.rms_norm: x / sqrt(mean(x^2) + eps) * weight; eps None is finfo(x.dtype).eps."""
    len_, out = _check("rms_norm", x, normalized_shape, weight, None, out)
    eps = torch.finfo(x.dtype).eps if eps is None else float(eps)
    return _dispatch(x, out, weight, None, len_, eps, True, variant)


def _dispatch(x, out, weight, bias, len_, eps, rms, variant):
    op = "rms_norm" if rms else "layer_norm"
    if variant is not None:
        OPS[op].variant(variant)
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.norm_out(x, out, weight, bias, len_, eps, rms, variant)
    else:
        _norm_into(x, out, weight, bias, len_, eps, rms, variant)
    return out


RUNGS = (
    ("welford", "one block per row: Welford (count, mean, M2) per thread in one read, merged by Chan's "
     "formula; a second read writes (2 reads + 1 write)"),
    ("registers", "one CTA per row holding it in registers: mean, then squared deviations (two passes "
     "over registers), then the output; one read, one write; > 16K elements fall back to welford"),
    ("fast", "per row length: rows packed into warps, a CTA per row, or a thread-block cluster per row "
     "merging (mean, M2) through distributed shared memory (sm_90), persistent (resident CTAs only) with weight and bias staged in shared "
     "memory once (by asynchronous copies, so that the first row's loads need not wait for them); past 32K elements on sm_90 (16-bit layer_norm: past 16K), aligned rows reach shared memory "
     "by bulk (TMA) copies issued rows ahead (16-bit layer_norm's one-CTA rings taking rows handed out at run "
     "time), 64K bf16 rows kept whole there (a CTA or a "
     "cluster of 2 a row), fp16 rows of 32K-64K as persistent 8 x 256 clusters held to 64 registers (4 CTAs "
     "an SM) that take their rows handed out at run time by a counter, fp32 rms_norm rows as such clusters "
     "of 4 x 512 and fp32 layer_norm rows of 31K-32K as clusters of 2 x 512 (weight and bias staged); fp16 rows of 2K-4K elements request weight and bias before the row (16-bit "
     "layer_norm, and fp16 rms_norm at 3.5K-5.5K rows: persistent CTAs staging them in shared memory once); "
     "welford beyond the tables"),
)


def _example(op: str):
    def make(shape, dtype):
        n = shape[-1]
        x = torch.randn(shape, dtype=dtype, device="cuda") * 2 + 0.5
        w = torch.randn(n, dtype=dtype, device="cuda")
        if op == "rms_norm":
            return (x, (n,), w), {}
        return (x, (n,), w, torch.randn(n, dtype=dtype, device="cuda")), {}
    return make


def _bytes(x, normalized_shape, weight=None, bias=None, *a, **k):
    extra = sum(t.numel() * t.element_size() for t in (weight, bias) if isinstance(t, torch.Tensor))
    return 2 * x.numel() * x.element_size() + extra


OPS: dict[str, Op] = {}
for _op, _fn, _torch in (
    ("layer_norm", layer_norm, lambda x, ns, w=None, b=None, eps=1e-5: torch.nn.functional.layer_norm(x, ns, w, b, eps)),
    ("rms_norm", rms_norm, lambda x, ns, w=None, eps=None: torch.nn.functional.rms_norm(x, ns, w, eps)),
):
    OPS[_op] = register(Op(
        name=_op, family="reduction",
        variants=kind_variants(RUNGS, _kernels),
        bytes_moved=_bytes,
        flops=lambda x, *a, **k: 8 * x.numel(),
        call=_fn, torch_fn=_torch, example=_example(_op),
        doc=f"torch.nn.functional.{_op}, fp32 statistics",
        bench_shapes=((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536)),
        bench_dtypes=(torch.float32, torch.float16),
    ))
