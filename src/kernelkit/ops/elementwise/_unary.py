"""The shared ladder and launcher of unary element-wise ops (out = f(x), one element to one).

A unary op supplies its .cu file and, per dtype and call parameters, the name of its C++ functor;
this module builds its rungs from the templates of csrc/elementwise.cuh and launches them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant
from ...runtime import get_kernel, launch
from .._shared.checks import pick_variant
from .._shared.cxx import CXX_PAIR, CXX_TYPE
from .._shared.launch_rules import grid_for
from .._shared.launch_rules import occupancy_limiter

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
BLOCK = 256
RUNG_BLOCKS_PER_SM = 32  # grid cap for the teaching rungs: enough resident warps to cover latency
# The fast rung's launch shape, from a sweep on an H100 (scripts/tune_unary.py; notes in
# benchmarks/NOTES.md): one 16-byte vector per thread and a grid covering the whole tensor (no
# grid-stride cap) reached 3026 GB/s fp32 / 3002 fp16 at 2^28, against 2760-2800 for 2 vectors per
# thread with the grid capped at 16 blocks per SM. Unrolling further did not help: the block
# scheduler already keeps enough loads in flight when every block is short-lived. 256 threads
# rather than 512: the best at 2^24 (2411 vs 2359 GB/s fp16), within 0.3% of 512 at 2^28.
FAST_UNROLL = 1
FAST_BLOCK = 256
FAST_STREAMING = "false"  # evict-first loads/stores measured no better (2991 vs 3026 GB/s fp32)
# From 128 MiB of input: 128-thread blocks, at most 13 an SM (81% occupancy, capped by unused dynamic
# shared memory). Why: torch's fp16 ReLU kernel (33 registers) fits only 12 of its 128-thread blocks an SM,
# and that is what kept it 0.2-2% ahead of every form of ours at 2^28 (sessions 9-15: block sizes, load
# and store hints, math forms, launch paths); its bf16 kernel (32 registers, 16 blocks) is slower.
# Session 15 (scripts/relu_occupancy.py, 2^28 elements, interleaved, % of torch; results/session15):
# on one H100 fast 128 x 13 relu fp16 / bf16 / fp32 1.002 / 1.009 / 1.012, gelu 1.006 / 1.004 / 1.011,
# against 0.997 / 1.004 / 1.007 and 1.003 / 1.003 / 1.010 for 512-thread blocks (the form until then);
# 128 x 12 0.994 and 128 x 11 0.974 for relu fp16: the cap is sharp. (At 2^24 256 threads stay.)
FAST_BLOCK_LARGE = 128
FAST_BLOCKS_PER_SM_LARGE = 13
LARGE_BYTES = 1 << 27


@dataclass(frozen=True)
class UnarySpec:
    """What distinguishes one unary op: its source and its functor per (dtype, fast?, params)."""

    source: str
    functor: Callable[..., str]  # functor(dtype, fast: bool, **params) -> C++ type name


def _kernels(spec: UnarySpec, kind: str, width: int, dtype, **params) -> tuple[Kernel, ...]:
    """The instantiations of one rung for one dtype, with the access widths their SASS must show."""
    ct, bits = CXX_TYPE[dtype], torch.finfo(dtype).bits
    fast = kind == "fast"
    f = spec.functor(dtype, fast, **params)
    if kind == "scalar":
        return (Kernel(spec.source, f"kk::unary_scalar<{ct}, {f}>", bits, bits),)
    if kind == "vector":
        n = width // bits
        return (Kernel(spec.source, f"kk::unary_vector<{ct}, {n}, {f}>", width, width),)
    if kind == "pairs":
        p = width // 32
        return (Kernel(spec.source, f"kk::unary_pairs<{CXX_PAIR[dtype]}, {p}, {f}>", width, width),)
    return (  # fast: input aligned like the output (16-byte loads), or not (element loads)
        Kernel(spec.source, f"kk::unary_fast<{ct}, {f}, {FAST_UNROLL}, true, {FAST_STREAMING}>", 128, 128,
               block=FAST_BLOCK),
        Kernel(spec.source, f"kk::unary_fast<{ct}, {f}, {FAST_UNROLL}, false, {FAST_STREAMING}>", None, 128,
               block=FAST_BLOCK),
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


@dataclass(frozen=True)
class _Plan:
    """What a launch needs, resolved once per (op, rung, dtype, params, device)."""

    kind: str
    per_item: int  # elements per work item of the rung's main loop
    kernels: tuple  # loaded cuda.core kernels, in the order of the rung's Kernel records
    names: tuple[str, ...]
    block: int
    esize: int  # bytes per element


_plans: dict[tuple, _Plan] = {}
NO_PARAMS: dict = {}


def _plan(spec: UnarySpec, variant: Variant, dtype: torch.dtype, dev: int, params: dict) -> _Plan:
    recs = variant.kernels(dtype, **params)
    names = tuple(k.name for k in recs)
    loaded = tuple(get_kernel(k.source, k.name, device_index=dev) for k in recs)
    kind, width = variant.params["kind"], variant.params["width"]
    bits = torch.finfo(dtype).bits
    per_item = {"scalar": 1, "fast": 128 // bits}.get(kind, width // bits if width else 1)
    plan = _Plan(kind, per_item, loaded, names, recs[0].block, bits // 8)
    _plans[(spec.source, variant.name, dtype, dev, *params.values())] = plan  # ops pass params in a fixed order
    return plan


def run_unary(spec: UnarySpec, variant: Variant, x: torch.Tensor, out: torch.Tensor, params: dict = NO_PARAMS) -> None:
    """Launch ``variant`` computing out = f(x); both contiguous, same dtype, same numel (> 0).

    The hot path of every eager unary call, kept to a few dict lookups and integer operations.
    """
    dev = x.get_device()
    p = _plans.get((spec.source, variant.name, x.dtype, dev, *params.values()))
    if p is None:
        p = _plan(spec, variant, x.dtype, dev, params)
    n = x.numel()
    xp, op = x.data_ptr(), out.data_ptr()
    if p.kind == "fast":
        head = min(n, ((-op) & 15) // p.esize)  # elements before out's first 16-byte boundary
        # the grid covers the tensor, one vector a thread; the epilogue's < per_item threads fit in block 0
        if n * p.esize >= LARGE_BYTES:
            block, shmem = FAST_BLOCK_LARGE, occupancy_limiter(dev, FAST_BLOCKS_PER_SM_LARGE)
        else:
            block, shmem = p.block, 0
        blocks = (n - head) // (p.per_item * block) + 1
        launch(p.kernels[(xp - op) & 15 != 0], blocks, block, op, xp, n, head, shmem=shmem, name=p.names[0],
               device_index=dev)
        return
    blocks = grid_for(max(n // p.per_item, 1), p.block, dev, RUNG_BLOCKS_PER_SM)
    args = (op, xp, n // 2, n) if p.kind == "pairs" else (op, xp, n)
    launch(p.kernels[0], blocks, p.block, *args, name=p.names[0], device_index=dev)


def unary_into(spec: UnarySpec, op: Op, x: torch.Tensor, out: torch.Tensor, variant: str | None,
               params: dict = NO_PARAMS) -> None:
    """out <- f(x) for any x and out layout (non-contiguous ones go through a contiguous copy): the
    eager body of every unary op and of its torch.library op."""
    if x.numel() == 0:
        return
    xc = x.contiguous()
    target = out if out.is_contiguous() else torch.empty_like(xc)
    v = op.default_variant if variant is None else pick_variant(op, variant, x.dtype, xc, target)
    run_unary(spec, v, xc, target, params)
    if target is not out:
        out.copy_(target)
