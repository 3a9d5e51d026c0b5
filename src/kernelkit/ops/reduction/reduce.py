"""Reductions over a whole tensor or along dims: sum, mean, amax, amin (torch semantics).

The four ops share one kernel file (csrc/reduction/reduce.cu) and one dispatcher, so they share this
module (argument handling, lanes, the public functions, the ladder), _reduce_kernels.py (the kernels each
rung launches) and _reduce_plans.py (the launch rules and the plans). Every call becomes one of three
shapes over a contiguous tensor: a full reduction (one row of numel elements), rows reduced along their
last dim (a last-dim reduction, or several dims moved last), or an (outer, R, inner) volume reduced over R
(a leading or middle dim, default rung only: coalesced column reads; the teaching rungs move the dim last
instead). Accumulation is fp32 everywhere; the result has the input's dtype, as torch gives it, or for sum
and mean the ``dtype=`` asked for: the kernels write fp32 results straight from the accumulator, and
another dtype is that result rounded. The order of every combination depends only on the shape, the
alignment and the device's SM count: the same input gives the same bits every time.

A call is resolved once per (op, shape, strides, dtype, device, dims, rung, config) into a plan that
holds the loaded kernels and launch shapes; a later call with that key reads pointers and launches.
A plain eager call (no out=, variant= or config=) that the checked path has accepted once makes a lane
for its (op, shape, strides, dtype, device, dim, keepdim): later such calls allocate the result and run
the same plan, with no other work.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch

from ...ladder import FLOAT_DTYPES, Op, Variant, kind_variants, register
from ...runtime import lanes as _lanes_rt
from .._shared.checks import check_out, check_tensor, dtype_name
from .._shared.custom_op import out_op
from .._shared.plans import plan_cache, remember
from ._reduce_kernels import (  # noqa: F401  (the configurations, re-exported for tools and tests)
    COL_MIN_ROWS, FULL, ROWS, ROWS_BLOCKS, ROWS_UNROLL, ReduceConfig, _kernels, result_types, rows_config)
from ._reduce_plans import (  # noqa: F401  (the launch rules, re-exported for tools and tests)
    OPS, _plan_for, _reduce_into, blocks_per_row, col_group, col_split)

__all__ = ["sum", "mean", "amax", "amin"]

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


# The four ops' docstrings: their own first paragraphs, then the arguments and errors they share.
_ARGS_DOC = """``x``: a float32, float16 or bfloat16 CUDA tensor of any shape and layout (offset views,
    non-contiguous, 0-d, empty, more than 2^31 elements). ``dim``: None or () for every dim, an int, or
    a tuple or list of distinct ints (negative ones count from the end). ``keepdim``: keep each reduced
    dim with size 1.
    ``out``: optional result of the reduced shape and the result's dtype, on x's device; returned.
    ``variant``: a rung of ``kernelkit.ladder("{name}")`` (naive first); None takes the default (``fast``).
    Every rung gives the right answer for every input.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``ReduceConfig`` of kernelkit.ops.reduction.reduce: the fast rung's reduce_fast, for a reduction of
    the whole tensor or of its last dims); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor or non-float ``x`` (float64 included), a ``dim`` that is not an
    int or a sequence of ints, an ``out`` of the wrong dtype or a ``config`` that is not a
    ReduceConfig; ValueError for a CPU tensor, an ``out`` of the wrong shape or device, a dim named
    twice, an unknown variant or a config the input cannot take; IndexError for a dim out of range"""

_SUM_DOC = """torch.{name}(x, dim, keepdim, dtype=dtype): {what}

    {how}
    The result has x's dtype unless ``dtype`` is given, as in torch. {empty}

    ``dtype``: as torch's, the result's dtype: float32, float16 or bfloat16 (None: x's); other dtypes
    raise TypeError. The {name} is accumulated in fp32 whatever ``dtype`` is and written in ``dtype``
    (torch casts x to ``dtype`` first; for 16-bit x and ``dtype=torch.float32`` both give the fp32 {name}).

    {args}.
    """

_EXTREMUM_DOC = """torch.{name}(x, dim, keepdim): the {what} over every dim (dim=None) or the given dims.

    Exact, in x's dtype (torch.{name} takes no ``dtype``). NaN-propagating as torch's: a reduced slice
    holding a NaN gives NaN.

    {args}
    or a reduced dim of size 0 ({what} of nothing); RuntimeError for an empty tensor reduced over every
    dim, as in torch.
    """


def _call(op: str, x, dim, keepdim, out, variant, config, dtype=None) -> torch.Tensor:
    """The plain call (no out, variant, config or dtype) tries the fixed lane first."""
    if out is None and variant is None and config is None and dtype is None:
        got = _lane_call(op, x, dim, keepdim)
        if got is not None:
            return got
    return _reduce(op, x, dim, keepdim, out, variant, config, dtype)


def sum(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None,  # noqa: A001
        out: Optional[torch.Tensor] = None, variant: Optional[str] = None,
        config: Optional[ReduceConfig] = None) -> torch.Tensor:
    return _call("sum", x, dim, keepdim, out, variant, config, dtype)


def mean(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None,
         out: Optional[torch.Tensor] = None, variant: Optional[str] = None,
         config: Optional[ReduceConfig] = None) -> torch.Tensor:
    return _call("mean", x, dim, keepdim, out, variant, config, dtype)


def amax(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None, config: Optional[ReduceConfig] = None) -> torch.Tensor:
    return _call("amax", x, dim, keepdim, out, variant, config)


def amin(x: torch.Tensor, dim: Dim = None, keepdim: bool = False, *, out: Optional[torch.Tensor] = None,
         variant: Optional[str] = None, config: Optional[ReduceConfig] = None) -> torch.Tensor:
    return _call("amin", x, dim, keepdim, out, variant, config)


sum.__doc__ = _SUM_DOC.format(
    name="sum", what="the sum over every dim (dim=None) or the given dims.",
    how="Accumulated in fp32, in an order fixed by the shape, the alignment and the device: the same bits\n    "
        "every run.",
    empty="A 16-bit sum past the\n    dtype's range is inf, as torch's. An empty reduction gives 0; NaN and inf propagate.",
    args=_ARGS_DOC.format(name="sum"))
mean.__doc__ = _SUM_DOC.format(
    name="mean", what="the fp32 sum over the given dims times 1/count.",
    how="Accumulated in fp32 as ``sum`` (the same bits every run).",
    empty="An empty reduction gives NaN,\n    as in torch; NaN and inf propagate.",
    args=_ARGS_DOC.format(name="mean"))
amax.__doc__ = _EXTREMUM_DOC.format(name="amax", what="maximum", args=_ARGS_DOC.format(name="amax"))
amin.__doc__ = _EXTREMUM_DOC.format(name="amin", what="minimum", args=_ARGS_DOC.format(name="amin"))


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


for _name, _torch in (("sum", torch.sum), ("mean", torch.mean), ("amax", torch.amax), ("amin", torch.amin)):
    OPS[_name] = register(Op(
        name=_name, family="reduction", variants=_variants(_name), bytes_moved=_bytes,
        flops=lambda x, *a, **k: x.numel(), call=globals()[_name],
        torch_fn=(lambda f: lambda x, dim=None, keepdim=False: f(x) if dim is None else f(x, dim, keepdim))(_torch),
        example=_example, doc=f"torch.{_name}: full or per-dim reduction, fp32 accumulation",
        bench_shapes=((1 << 28,),),
    ))
