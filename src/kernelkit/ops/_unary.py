"""The shared ladder and launcher of unary element-wise ops (out = f(x), one element to one).

A unary op supplies its .cu file and, per dtype and call parameters, the name of its C++ functor;
this module builds its rungs from the templates of csrc/elementwise.cuh and launches them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..ladder import FLOAT_DTYPES, Kernel, Variant
from ..runtime import get_kernel, launch
from ._common import CXX_PAIR, CXX_TYPE, grid_for

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
BLOCK = 256
RUNG_BLOCKS_PER_SM = 32  # grid cap for the teaching rungs: enough resident warps to cover latency
FAST_UNROLL = 2  # 16-byte vectors in flight per thread in the fast rung
FAST_BLOCKS_PER_SM = 16


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
        Kernel(spec.source, f"kk::unary_fast<{ct}, {f}, {FAST_UNROLL}, true>", 128, 128),
        Kernel(spec.source, f"kk::unary_fast<{ct}, {f}, {FAST_UNROLL}, false>", None, 128),
    )


def unary_ladder(spec: UnarySpec, *, pair_rungs: bool = True) -> tuple[Variant, ...]:
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
        rung("fast", f"16-byte accesses, {FAST_UNROLL} in flight per thread, prologue/main/epilogue for any "
             "alignment, hardware tanh for 16-bit types", FLOAT_DTYPES, "fast", default=True)
    )
    return tuple(rungs)


def run_unary(spec: UnarySpec, variant: Variant, x: torch.Tensor, out: torch.Tensor, **params) -> None:
    """Launch ``variant`` computing out = f(x); both contiguous, same dtype, same numel (> 0)."""
    n = x.numel()
    dev = x.device.index
    kind, width = variant.params["kind"], variant.params["width"]
    kernels = variant.kernels(x.dtype, **params)
    names = tuple(k.name for k in kernels)
    esize = x.element_size()
    if kind == "fast":
        head = min(n, ((-out.data_ptr()) % 16) // esize)
        same = (x.data_ptr() - out.data_ptr()) % 16 == 0
        k = kernels[0] if same else kernels[1]
        work = (n - head) // (16 // esize) + 1
        blocks = grid_for(work, BLOCK * FAST_UNROLL, dev, FAST_BLOCKS_PER_SM)
        args = (out.data_ptr(), x.data_ptr(), n, _int32(head))
    else:
        k = kernels[0]
        per_item = 1 if kind == "scalar" else width // (esize * 8)
        items = max(n // per_item, 1)
        blocks = grid_for(items, BLOCK, dev, RUNG_BLOCKS_PER_SM)
        args = (out.data_ptr(), x.data_ptr(), n) if kind != "pairs" else (out.data_ptr(), x.data_ptr(), n // 2, n)
    kern = get_kernel(k.source, k.name, device_index=dev, names=names)
    launch(kern, blocks, BLOCK, *args, name=k.name)


def _int32(v: int):
    import numpy as np

    return np.int32(v)
