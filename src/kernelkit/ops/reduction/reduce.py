"""Reductions: sum, mean, amax, amin (torch semantics), their ladder and launchers.

Every call becomes one of three shapes over a contiguous tensor: a full reduction (one row of numel
elements), rows reduced along their last dim (a last-dim reduction, or several dims moved last), or an
(outer, R, inner) volume reduced over R (a leading or middle dim, default rung only: coalesced
column reads; the teaching rungs move the dim last instead). Accumulation is fp32 everywhere; the
result has the input's dtype, as torch gives it. The order of every combination depends only on the
shape, the alignment and the device's SM count: the same input gives the same bits every time.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, kind_variants, register
from ...runtime import launch
from .._shared.checks import check_out, check_tensor, pick_variant
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import sm_count
from .._shared.launch_rules import f32, i32
from ._rows import SourceNames, per_vec

__all__ = ["sum", "mean", "amax", "amin"]

SRC = "reduction/reduce.cu"
FUNCTOR = {"sum": "kk::SumOp", "mean": "kk::SumOp", "amax": "kk::MaxOp", "amin": "kk::MinOp"}
TREE_BLOCK = 256  # rungs 1-4: one (or two) elements per thread, a 256-float tree in shared memory
VEC_BLOCK, VEC_UNROLL, VEC_BLOCKS_PER_SM = 256, 2, 8  # rung 5: the plain vectorized two-pass rung
# rung 6 (default): 1024 threads x 2 16-byte loads in flight, one wave of 2 blocks per SM (full
# occupancy). Swept on an H100 (benchmarks/reduction_tuning.py, run 1: block 256-1024, 2-8 loads,
# 2-8 blocks/SM): 1024 x 2 x 2 read 3091 GB/s fp32, 3033 fp16, 3036 bf16, where the first choice,
# 512 x 4 x 4, read 3036 / 2923 / 2995. Unrolling further bought nothing: 2 x 16 B x 2048 threads is
# already 64 KB in flight per SM.
FAST_BLOCK, FAST_UNROLL, FAST_BLOCKS_PER_SM = 1024, 2, 2
# Several rows (a last-dim reduction): 512 x 4 x 4. With the full-reduction shape a block per 8K
# 16-bit row is 1024 threads of one vector each, and summing 16384 x 8192 fp16 over dim 1 fell from
# 2805 GB/s (512 x 4, run 1) to 2017 (run 2).
ROWS_BLOCK, ROWS_UNROLL, ROWS_BLOCKS_PER_SM = 512, 4, 4
WARP_ROWS_MAX = 2048  # rows up to this length: one warp each (a block per row would idle its warps)
COL_BLOCK_ROWS = 8  # reduce_cols' threadIdx.y extent (kColRows in reduce.cu)
COL_MIN_ROWS = 64  # least rows per split of a column reduction

NAMES = SourceNames(SRC, ("sum", "mean", "amax", "amin"))
F32 = torch.float32


def _tree_name(kind: str, fn: str, tin, tout) -> str:
    return f"kk::reduce_{kind}<{CXX_TYPE[tin]}, {CXX_TYPE[tout]}, {fn}, {TREE_BLOCK}>"


def _cols_name(fn: str, tin, tout, v: int) -> str:
    return f"kk::reduce_cols<{CXX_TYPE[tin]}, {CXX_TYPE[tout]}, {fn}, {v}>"


def _kernels(op: str, kind: str, dtype) -> tuple[Kernel, ...]:
    """Every instantiation rung ``kind`` launches for ``dtype`` (each pass, each path)."""
    fn, ct, bits = FUNCTOR[op], CXX_TYPE[dtype], torch.finfo(dtype).bits
    if kind in ("interleaved", "sequential", "first_add", "warp_shuffle"):
        # first pass from the input (to partials or straight to the result), later passes from fp32
        pairs = dict.fromkeys([(dtype, F32), (dtype, dtype), (F32, F32), (F32, dtype)])
        return tuple(Kernel(SRC, _tree_name(kind, fn, a, b), torch.finfo(a).bits, torch.finfo(b).bits,
                            block=TREE_BLOCK) for a, b in pairs)
    if kind == "vector":
        return (Kernel(SRC, f"kk::reduce_vector<{ct}, {fn}, {VEC_BLOCK}, {VEC_UNROLL}>", 128, 32, block=VEC_BLOCK),
                Kernel(SRC, f"kk::reduce_finish<{ct}, {fn}, {VEC_BLOCK}>", 32, bits, block=VEC_BLOCK))
    n = per_vec(dtype)
    ks = [Kernel(SRC, f"kk::reduce_fast<{ct}, {ct}, {fn}, {FAST_BLOCK}, {FAST_UNROLL}>", 128, 32, block=FAST_BLOCK),
          Kernel(SRC, f"kk::reduce_fast<{ct}, {ct}, {fn}, {ROWS_BLOCK}, {ROWS_UNROLL}>", 128, 32, block=ROWS_BLOCK),
          Kernel(SRC, f"kk::reduce_warp_rows<{ct}, {ct}, {fn}, 256>", 128, bits, block=256)]
    for tin, tout, v in ((dtype, dtype, n), (dtype, dtype, 1), (dtype, F32, n), (dtype, F32, 1), (F32, dtype, 4),
                         (F32, dtype, 1)):
        ks.append(Kernel(SRC, _cols_name(fn, tin, tout, v), 128 if v > 1 else torch.finfo(tin).bits,
                         torch.finfo(tout).bits, block=32 * COL_BLOCK_ROWS))
    return tuple(dict.fromkeys(ks))


# ---------------------------------------------------------------- workspace

_workspaces: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
_keep: list[torch.Tensor] = []  # outgrown buffers stay alive: a captured CUDA graph may point at them


def _workspace(dev: int, floats: int, counters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-(device, stream) partials and zeroed tickets of reduce_fast. The kernel leaves every ticket
    at 0 (atomicInc wraps), and launches on one stream run in order, so the buffers are reused."""
    key = (dev, torch._C._cuda_getCurrentRawStream(dev))
    ws = _workspaces.get(key)
    if ws is None or ws[0].numel() < floats or ws[1].numel() < counters:
        if ws is not None:
            _keep.extend(ws)
        f = max(floats, 2 * (ws[0].numel() if ws else 0), 4096)
        c = max(counters, 2 * (ws[1].numel() if ws else 0), 1024)
        ws = (torch.empty(f, dtype=F32, device=f"cuda:{dev}"), torch.zeros(c, dtype=torch.int32, device=f"cuda:{dev}"))
        _workspaces[key] = ws
    return ws


# ---------------------------------------------------------------- launchers

def _run_rows(v: Variant, op: str, x: torch.Tensor, out: torch.Tensor, rows: int, len_: int, scale: float) -> None:
    """out[r] = reduce(x[r, :]) for a contiguous (rows, len_) x, by rung ``v``."""
    dev, dt, kind = x.get_device(), x.dtype, v.params["kind"]
    fn = FUNCTOR[op]
    load = lambda name: NAMES.load(name, dt, dev)  # noqa: E731
    if kind in ("interleaved", "sequential", "first_add", "warp_shuffle"):
        per_block = TREE_BLOCK * (2 if kind in ("first_add", "warp_shuffle") else 1)
        src, tin, length = x, dt, len_
        while True:  # pass after pass until one value per row is left
            bpr = -(-length // per_block)
            final = bpr == 1
            dst = out if final else torch.empty(rows * bpr, dtype=F32, device=x.device)
            k = load(_tree_name(kind, fn, tin, dt if final else F32))
            launch(k, rows * bpr, TREE_BLOCK, src.data_ptr(), dst.data_ptr(), length, bpr,
                   f32(scale if final else 1.0), device_index=dev)
            if final:
                return
            src, tin, length = dst, F32, bpr
    if kind == "vector":
        n = per_vec(dt)
        bpr = max(1, min(-(-sm_count(dev) * VEC_BLOCKS_PER_SM // rows), -(-len_ // (VEC_BLOCK * n * VEC_UNROLL))))
        part = torch.empty(rows * bpr, dtype=F32, device=x.device)
        ct = CXX_TYPE[dt]
        launch(load(f"kk::reduce_vector<{ct}, {fn}, {VEC_BLOCK}, {VEC_UNROLL}>"), rows * bpr, VEC_BLOCK,
               x.data_ptr(), part.data_ptr(), len_, i32(bpr), device_index=dev)
        launch(load(f"kk::reduce_finish<{ct}, {fn}, {VEC_BLOCK}>"), rows, VEC_BLOCK, part.data_ptr(),
               out.data_ptr(), i32(bpr), f32(scale), device_index=dev)
        return
    ct = CXX_TYPE[dt]
    if rows > 1 and len_ <= WARP_ROWS_MAX:
        launch(load(f"kk::reduce_warp_rows<{ct}, {ct}, {fn}, 256>"), -(-rows // 8), 256, x.data_ptr(),
               out.data_ptr(), rows, len_, f32(scale), device_index=dev)
        return
    n = per_vec(dt)
    block, unroll, per_sm = (FAST_BLOCK, FAST_UNROLL, FAST_BLOCKS_PER_SM) if rows == 1 else \
        (ROWS_BLOCK, ROWS_UNROLL, ROWS_BLOCKS_PER_SM)
    target = sm_count(dev) * per_sm
    bpr = max(1, min(-(-target // rows), -(-len_ // (block * n * unroll))))
    part, tick = _workspace(dev, rows * bpr, rows) if bpr > 1 else (out, out)
    launch(load(f"kk::reduce_fast<{ct}, {ct}, {fn}, {block}, {unroll}>"), rows * bpr, block,
           x.data_ptr(), out.data_ptr(), part.data_ptr(), tick.data_ptr(), len_, i32(bpr), f32(scale),
           device_index=dev)


def _run_cols(op: str, x: torch.Tensor, out: torch.Tensor, outer: int, R: int, inner: int, scale: float) -> None:
    """out[o, c] = reduce(x[o, :, c]) for a contiguous (outer, R, inner) x, inner > 1."""
    dev, dt, fn = x.get_device(), x.dtype, FUNCTOR[op]
    n = per_vec(dt)
    v = n if inner % n == 0 and x.data_ptr() % 16 == 0 else 1
    col_blocks = -(-inner // (32 * v))
    target = sm_count(dev) * 8
    rsplit = 1
    if col_blocks * outer < target and R >= 2 * COL_MIN_ROWS:
        rsplit = min(-(-target // (col_blocks * outer)), R // COL_MIN_ROWS)
    rps = -(-R // rsplit)
    rsplit = -(-R // rps)
    block = (32, COL_BLOCK_ROWS)
    if rsplit == 1:
        k = NAMES.load(_cols_name(fn, dt, dt, v), dt, dev)
        launch(k, col_blocks * outer, block, x.data_ptr(), out.data_ptr(), R, inner, col_blocks, 1, rps,
               f32(scale), device_index=dev)
        return
    part = torch.empty(outer * rsplit * inner, dtype=F32, device=x.device)
    k = NAMES.load(_cols_name(fn, dt, F32, v), dt, dev)
    launch(k, col_blocks * rsplit * outer, block, x.data_ptr(), part.data_ptr(), R, inner, col_blocks, rsplit,
           rps, f32(1.0), device_index=dev)
    v2 = 4 if inner % 4 == 0 else 1
    cb2 = -(-inner // (32 * v2))
    k = NAMES.load(_cols_name(fn, F32, dt, v2), dt, dev)
    launch(k, cb2 * outer, block, part.data_ptr(), out.data_ptr(), rsplit, inner, cb2, 1, rsplit, f32(scale),
           device_index=dev)


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
    dims = [dim] if isinstance(dim, int) and not isinstance(dim, bool) else list(dim) if isinstance(dim, (tuple, list)) else None
    if dims is None:
        raise TypeError(f"{op}: dim must be None, an int or a tuple of ints, got {type(dim).__name__}")
    if not dims:
        return tuple(range(ndim))
    wrapped = [wrap_dim(d, ndim, op) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise ValueError(f"{op}: dim {dims} names a dimension more than once")
    return tuple(sorted(d for d in wrapped if d < ndim))  # a 0-d tensor's dim 0 reduces nothing


def _out_shape(shape, dims, keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _reduce_into(x: torch.Tensor, out: torch.Tensor, op: str, dims: Sequence[int], variant: Optional[str]) -> None:
    """out <- reduction of x over ``dims`` (non-empty, sorted); out has the result's numel."""
    v = pick_variant(OPS[op], variant, x.dtype)
    dims = tuple(dims)
    K = math.prod(x.shape[d] for d in dims)
    M = out.numel()
    if M == 0:
        return
    if K == 0:  # an empty reduction: sum 0, mean NaN (amax/amin were refused before)
        out.fill_(0.0 if op == "sum" else float("nan"))
        return
    scale = 1.0 / K if op == "mean" else 1.0
    dst = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    nd = x.dim()
    if len(dims) == 1 and v.params["kind"] == "fast" and dims[0] != nd - 1:
        d = dims[0]
        inner = math.prod(x.shape[d + 1:])
        if inner > 1:
            _run_cols(op, x.contiguous(), dst, math.prod(x.shape[:d]), x.shape[d], inner, scale)
            if dst is not out:
                out.copy_(dst.view(out.shape))
            return
    kept = [d for d in range(nd) if d not in dims]
    if any(d > dims[0] and x.shape[d] != 1 for d in kept):  # move the reduced dims last (a copy)
        x = x.permute(*kept, *dims)
    x = x.contiguous()
    _run_rows(v, op, x, dst, M, K, scale)
    if dst is not out:
        out.copy_(dst.view(out.shape))


@torch.library.custom_op("kernelkit::reduce_out", mutates_args=("out",))
def _reduce_out_op(x: torch.Tensor, out: torch.Tensor, op: str, dims: list[int], variant: Optional[str]) -> None:
    _reduce_into(x, out, op, dims, variant)


@_reduce_out_op.register_fake
def _(x, out, op, dims, variant):
    return None


def _reduce(op: str, x, dim, keepdim: bool, out, variant) -> torch.Tensor:
    check_tensor(x, "x", FLOAT_DTYPES, op)
    dims = reduced_dims(dim, x.dim(), op)
    if op in ("amax", "amin") and x.numel() == 0:
        if dim is None or (isinstance(dim, (tuple, list)) and not dim):
            raise RuntimeError(f"{op}: cannot reduce an empty tensor over all dims (no identity); give dim")
        for d in dims:
            if x.shape[d] == 0 and math.prod(x.shape[e] for e in range(x.dim()) if e not in dims) > 0:
                raise IndexError(f"{op}: reduction dim {d} has size 0 (max/min of nothing is undefined)")
    shape = _out_shape(x.shape, dims, keepdim)
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    else:
        check_out(out, _Like(shape, x), op)
    if variant is not None:
        OPS[op].variant(variant)
    if not dims:  # a 0-d tensor reduced over its dim 0: a copy (mean of one element is itself)
        out.copy_(x.reshape(shape))
        return out
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.reduce_out(x, out, op, list(dims), variant)
    else:
        _reduce_into(x, out, op, dims, variant)
    return out


class _Like:
    """What check_out compares ``out`` with, without allocating the expected result."""

    def __init__(self, shape, x: torch.Tensor):
        self.shape, self.dtype, self.device = torch.Size(shape), x.dtype, x.device

    def get_device(self) -> int:
        return self.device.index


Dim = Union[None, int, Sequence[int]]


def sum(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,  # noqa: A001
        variant: Optional[str] = None) -> torch.Tensor:
    """torch.sum: over every dim (dim=None) or the given dim(s); fp32 accumulation, x's dtype out."""
    return _reduce("sum", x, dim, keepdim, out, variant)


def mean(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None) -> torch.Tensor:
    """torch.mean: the fp32 sum times 1/count, in x's dtype (NaN for an empty reduction)."""
    return _reduce("mean", x, dim, keepdim, out, variant)


def amax(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None) -> torch.Tensor:
    """torch.amax: NaN-propagating maximum; an empty reduced dim raises, as in torch."""
    return _reduce("amax", x, dim, keepdim, out, variant)


def amin(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None) -> torch.Tensor:
    """torch.amin: NaN-propagating minimum; an empty reduced dim raises, as in torch."""
    return _reduce("amin", x, dim, keepdim, out, variant)


# ---------------------------------------------------------------- ladders

RUNGS = (
    ("interleaved", "one element per thread, shared-memory tree with interleaved addressing (tid % 2s: "
     "divergent warps), one pass per 256x reduction"),
    ("sequential", "sequential addressing: the first s threads stay active (no divergence, no bank conflicts)"),
    ("first_add", "two elements added during the global load: half the blocks, no idle first step"),
    ("warp_shuffle", "first add + shared-memory tree to 64 values, the last warp by shuffles (no barriers)"),
    ("vector", "grid-stride 16-byte loads (2 in flight), fixed grid of 8 blocks/SM, shuffle block "
     "reduction; a second fixed-order pass"),
    ("fast", "16-byte loads (2 in flight per thread, one full-occupancy wave of 1024-thread blocks), last-block finish by "
     "integer ticket (one launch, no float atomics); a warp per short row; coalesced column reads "
     "for leading dims"),
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
