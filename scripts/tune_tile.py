"""Fast unary rung, grid-strided (unary_fast) against block-contiguous (unary_tile) layouts, with torch
in the same interleaved rounds so that clock or thermal drift hits every candidate alike.

    KK_OP=relu|gelu KK_SIZES=268435456,16777216 KK_DTYPES=float16,float32 python scripts/tune_tile.py
"""
import itertools
import os
import statistics

import torch

import kernelkit

from kernelkit.bench import copy_bandwidth, time_cuda
from kernelkit.runtime import get_kernel, launch

OP = os.environ.get("KK_OP", "relu")
SIZES = [int(v) for v in os.environ.get("KK_SIZES", str(1 << 28)).split(",")]
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float16,bfloat16,float32").split(",")]
ROUNDS = int(os.environ.get("KK_ROUNDS", "5"))
CT = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}
FUNCTOR = {"relu": lambda d: "kk::Relu", "gelu": lambda d: "kk::GeluTanh" if d == torch.float32 else "kk::GeluTanhFast"}[OP]
OURS = {"gelu": lambda x: kernelkit.gelu(x), "relu": lambda x: kernelkit.relu(x)}[OP]
THEIRS = {"gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relu": torch.relu}[OP]

for n, dtype in itertools.product(SIZES, DTYPES):
    x = torch.randn(n, device="cuda", dtype=dtype)
    vec = 16 // x.element_size()
    nvec = n // vec
    nbytes = 2 * n * x.element_size()
    cands = {}
    packs = ("false", "true") if OP == "relu" and dtype != torch.float32 else ("false",)
    for block, packed in itertools.product((128, 256, 512), packs):
        k = get_kernel(f"{OP}.cu", f"kk::unary_fast<{CT[dtype]}, {FUNCTOR(dtype)}, 1, true, false, {packed}>",
                       device_index=0)
        cands[f"fast U=1 b={block}" + (" packed" if packed == "true" else "")] = (k, -(-nvec // block), block)
    for block in (256, 512):  # U=4 and U=8 lost to U<=2 at every size and dtype (2026-11-23 run)
        for U in (1, 2):
            k = get_kernel(f"{OP}.cu", f"kk::unary_tile<{CT[dtype]}, {FUNCTOR(dtype)}, {U}, true>", device_index=0)
            cands[f"tile U={U} b={block}"] = (k, -(-nvec // (block * U)), block)
    fns = {name: (lambda k=k, g=g, b=b: launch(k, g, b, torch.empty_like(x).data_ptr(), x.data_ptr(), n, 0))
           for name, (k, g, b) in cands.items()}
    fns["torch"] = lambda: THEIRS(x)
    fns["kernelkit default"] = lambda: OURS(x)
    fns["copy"] = lambda: torch.empty_like(x).copy_(x)
    res = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            res[name].append(nbytes / time_cuda(fn, working_set_bytes=nbytes, max_seconds=0.25).seconds / 1e9)
    med = sorted(((statistics.median(v), name) for name, v in res.items()), reverse=True)
    print(f"{OP} {dtype} n={n}: copy ceiling (large) {copy_bandwidth(None):.0f}")
    for g, name in med:
        print(f"  {g:7.1f} GB/s  {name}   rounds: {' '.join(f'{v:.0f}' for v in res[name])}")
