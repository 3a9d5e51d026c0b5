"""The unary ladder shared by gelu and relu (out = f(x), one element to one) and its launcher.

A unary op supplies its .cu file and, per dtype, rung kind and op parameter, the name of its C++
functor; this module builds the rungs from the templates of csrc/elementwise/unary.cuh, resolves a
plan once per (rung, dtype, device, parameter, launch) and launches it, and makes the plain call's
C lane per (dtype, device, parameter) (runtime.lanes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant
from ...runtime import launch
from ...runtime.lanes import make_lane as make_c_lane
from .._shared.checks import output_for, pick_variant
from .._shared.cxx import CXX_PAIR, CXX_TYPE
from .._shared.launch_rules import grid_for, occupancy_limiter
from .._shared.plans import load, plan_cache, remember
from ._lane import COMPILING
from ._launch import ElementwiseLaunch, check_config, launch_shape

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
BLOCK = 256
RUNG_BLOCKS_PER_SM = 32  # grid cap of the teaching rungs: enough resident warps to cover latency
# The fast rung launches one 16-byte vector a thread over a grid covering the tensor: 256-thread
# blocks, and from 128 MiB of input 128-thread blocks held to 13 an SM, the occupancy of torch's own
# 16-bit kernels, which at 2^28 elements is what set the rate (12 or 14 an SM: slower; more vectors a
# thread, capped grids or evict-first accesses: no faster). Numbers: docs/design/elementwise.md.
FAST = ElementwiseLaunch(block=256)
FAST_LARGE = ElementwiseLaunch(block=128, blocks_per_sm=13)
LARGE_BYTES = 1 << 27


@dataclass(frozen=True)
class UnarySpec:
    """What distinguishes one unary op: its source, its functor per (dtype, fast?, params), the name
    of its one keyword that changes the kernels (gelu's ``approximate``; None where there is none),
    and the cache of its launch plans."""

    source: str
    functor: Callable[..., str]  # functor(dtype, fast: bool, **params) -> C++ type name
    param: Optional[str] = None
    plans: dict = field(default_factory=plan_cache, compare=False, repr=False)
    lanes: dict = field(default_factory=plan_cache, compare=False, repr=False)


def _kernels(spec: UnarySpec, kind: str, width: int, dtype, **params) -> tuple[Kernel, ...]:
    """The instantiations of one rung for one dtype, with the access widths their SASS must show."""
    ct, bits = CXX_TYPE[dtype], torch.finfo(dtype).bits
    f = spec.functor(dtype, kind == "fast", **params)
    if kind == "scalar":
        return (Kernel(spec.source, f"kk::unary_scalar<{ct}, {f}>", bits, bits),)
    if kind == "vector":
        n = width // bits
        return (Kernel(spec.source, f"kk::unary_vector<{ct}, {n}, {f}>", width, width),)
    if kind == "pairs":
        p = width // 32
        return (Kernel(spec.source, f"kk::unary_pairs<{CXX_PAIR[dtype]}, {p}, {f}>", width, width),)
    return (  # fast: input aligned like the output (16-byte loads), or not (element loads)
        Kernel(spec.source, f"kk::unary_fast<{ct}, {f}, true>", 128, 128, block=FAST.block),
        Kernel(spec.source, f"kk::unary_fast<{ct}, {f}, false>", None, 128, block=FAST.block),
    )


def unary_ladder(spec: UnarySpec, *, pair_rungs: bool = True, fast_note: str = "") -> tuple[Variant, ...]:
    """scalar, float2, float4, [half2 x 32/64/128-bit, bf16x2 x 32/64/128-bit], fast (the default)."""

    def rung(name, technique, dtypes, kind, width=0, align=0, default=False):
        return Variant(
            name=name,
            technique=technique,
            dtypes=dtypes,
            kernels=lambda dtype, _k=kind, _w=width, **p: _kernels(spec, _k, _w, dtype, **p),
            align=align,
            default=default,
            params={"kind": kind, "width": width},
        )

    rungs = [
        rung("scalar", "grid-stride loop, one element per iteration: one 32-bit (fp32) or 16-bit access each",
             FLOAT_DTYPES, "scalar"),
        rung("float2", "float2 vector loads and stores (LDG.E.64), scalar tail", (F32,), "vector", 64, 8),
        rung("float4", "float4 vector loads and stores (LDG.E.128), scalar tail", (F32,), "vector", 128, 16),
    ]
    if pair_rungs:
        for dt, tag in ((F16, "half2"), (BF16, "bf16x2")):
            rungs += [
                rung(tag, f"{tag} SIMD math, one packed pair per 32-bit access", (dt,), "pairs", 32, 4),
                rung(f"{tag}_x2", f"{tag} SIMD math, two pairs per 64-bit access", (dt,), "pairs", 64, 8),
                rung(f"{tag}_x4", f"{tag} SIMD math, four pairs per 128-bit access", (dt,), "pairs", 128, 16),
            ]
    rungs.append(
        rung("fast", "one 16-byte access per thread over a grid covering the tensor (256-thread blocks; from "
             "128 MiB of input 128-thread blocks, at most 13 an SM), prologue/main/epilogue for any alignment"
             + fast_note, FLOAT_DTYPES, "fast",
             default=True)
    )
    return tuple(rungs)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a launch needs beyond its pointers, resolved once per plan key."""

    fast: bool
    pairs: bool  # the pair rungs take the number of pairs as well as of elements
    kernels: tuple  # loaded kernels, in the order of the rung's Kernel records
    name: str
    esize: int  # bytes per element
    per_item: int  # elements per work item of the rung's main loop
    small: tuple[int, int]  # (block, dynamic shared bytes) below LARGE_BYTES of input
    large: tuple[int, int]  # ... and from LARGE_BYTES (the fast rung's rule differs there)


def _plan(spec: UnarySpec, op: Op, key: tuple) -> _Plan:
    variant, dtype, dev, param, config = key
    v = pick_variant(op, variant, dtype)
    recs = v.kernels(dtype) if spec.param is None else v.kernels(dtype, **{spec.param: param})
    kind, width = v.params["kind"], v.params["width"]
    bits = torch.finfo(dtype).bits
    if config is not None:
        small = large = launch_shape(op.name, config, dev)
    elif kind == "fast":
        small = (FAST.block, 0)
        large = (FAST_LARGE.block, occupancy_limiter(dev, FAST_LARGE.blocks_per_sm))
    else:
        small = large = (recs[0].block, 0)
    per_item = {"scalar": 1, "fast": 128 // bits}.get(kind, width // bits if width else 1)
    plan = _Plan(kind == "fast", kind == "pairs", load(recs, dev), recs[0].name, bits // 8, per_item, small, large)
    return remember(spec.plans, key, plan)


def unary_into(spec: UnarySpec, op: Op, x: torch.Tensor, out: torch.Tensor, variant: Optional[str],
               param: Optional[str] = None, config: Optional[ElementwiseLaunch] = None) -> None:
    """out <- f(x) for x and out of the same shape and dtype, any layout (non-contiguous ones go
    through a contiguous copy): the eager body of every unary op and of its torch.library op.

    The hot path of every eager unary call, kept to a few dict lookups and integer operations.
    """
    n = x.numel()
    if n == 0:
        return
    if not (x.is_contiguous() and out.is_contiguous()):
        _through_contiguous(spec, op, x, out, variant, param, config)
        return
    dev = x.get_device()
    key = (variant, x.dtype, dev, param, config)
    p = spec.plans.get(key)
    if p is None:
        p = _plan(spec, op, key)
    xp, op_ = x.data_ptr(), out.data_ptr()
    if p.fast:
        head = min(n, ((-op_) & 15) // p.esize)  # elements before out's first 16-byte boundary
        block, shmem = p.large if n * p.esize >= LARGE_BYTES else p.small
        # the grid covers the tensor, one vector a thread; the epilogue's < per_item threads fit in it
        blocks = (n - head) // (p.per_item * block) + 1
        launch(p.kernels[(xp - op_) & 15 != 0], blocks, block, op_, xp, n, head, shmem=shmem, name=p.name,
               device_index=dev)
        return
    pick_variant(op, variant, x.dtype, x, out)  # the teaching rungs' alignment needs
    block = p.small[0]
    blocks = grid_for(max(n // p.per_item, 1), block, dev, RUNG_BLOCKS_PER_SM)
    args = (op_, xp, n // 2, n) if p.pairs else (op_, xp, n)
    launch(p.kernels[0], blocks, block, *args, name=p.name, device_index=dev)


def _through_contiguous(spec: UnarySpec, op: Op, x: torch.Tensor, out: torch.Tensor, variant: Optional[str],
                        param: Optional[str], config: Optional[ElementwiseLaunch]) -> None:
    xc = x.contiguous()
    target = out if out.is_contiguous() else torch.empty_like(xc)
    unary_into(spec, op, xc, target, variant, param, config)
    if target is not out:
        out.copy_(target)


def unary_checked(spec: UnarySpec, op: Op, x: torch.Tensor, out: Optional[torch.Tensor], variant: Optional[str],
                  config: Optional[ElementwiseLaunch], param: Optional[str],
                  dispatch: Callable[[torch.Tensor], None]) -> torch.Tensor:
    """The checked path of gelu and relu once x and the op's own keywords passed their checks: the
    output, the rung's name, then ``dispatch(out)`` (the op's custom-op call) or, with ``config``, a
    tuning launch. A plain call of a contiguous x makes the C lane that later plain calls take (runtime.lanes.run_unary)."""
    out = output_for(out, x, op.name)
    if variant is not None:
        op.variant(variant)  # unknown names fail here, before any tracing
    if config is None:
        dispatch(out)
        if variant is None and x.is_contiguous() and not COMPILING():
            make_lane(spec, op, x.dtype, x.get_device(), param)
    else:
        check_config(op.name, config, variant)
        unary_into(spec, op, x, out, variant, param, config)
    return out


def make_lane(spec: UnarySpec, op: Op, dtype: torch.dtype, dev: int, param: Optional[str]) -> None:
    """Make the fast rung's C lane for (dtype, device, parameter) (runtime.lanes): called once the
    checked path has accepted such an input, so that later plain calls (``run_unary``) skip the checks.
    It launches what ``unary_into`` launches for a fresh output."""
    key = (dtype, dev, param)
    if key in spec.lanes:
        return
    p = spec.plans.get((None, dtype, dev, param, None)) or _plan(spec, op, (None, dtype, dev, param, None))
    lane = make_c_lane(p.kernels, (p.name, p.name), dev, p.esize, (p.small, p.large), LARGE_BYTES // p.esize)
    if lane is not None:
        remember(spec.lanes, key, lane)
