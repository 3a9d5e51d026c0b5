"""Sweep the fast unary rung's launch shape (unroll, block, grid cap, cache policy) on one GPU.

    KK_OP=gelu|relu KK_SIZES=268435456,16777216 KK_CAPS=8,16,64,0 KK_STREAMS=false,true python scripts/tune_unary.py
"""
import itertools
import sys

import numpy as np
import torch

import kernelkit
from kernelkit.bench import copy_bandwidth, time_cuda
from kernelkit.runtime import get_kernel, launch

import os
SIZES = [int(v) for v in os.environ.get("KK_SIZES", str(1 << 28)).split(",")]
CAPS = tuple(int(v) for v in os.environ.get("KK_CAPS", "8,16,64,0").split(","))
STREAMS = tuple(os.environ.get("KK_STREAMS", "false,true").split(","))
sms = torch.cuda.get_device_properties(0).multi_processor_count
print("copy GB/s", round(copy_bandwidth(None)))
OP = os.environ.get("KK_OP", "gelu")
FUNCTORS = {"gelu": [(torch.float32, "float", "kk::GeluTanh"), (torch.float16, "__half", "kk::GeluTanhFast")],
            "relu": [(torch.float32, "float", "kk::Relu"), (torch.float16, "__half", "kk::Relu")]}[OP]
OURS = {"gelu": kernelkit.gelu, "relu": kernelkit.relu}[OP]
THEIRS = {"gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relu": torch.relu}[OP]
for n, (dtype, ct, f) in itertools.product(SIZES, FUNCTORS):
    x = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    vec = 16 // x.element_size()
    nbytes = 2 * n * x.element_size()
    res = []
    for U, block, cap, stream in itertools.product((1, 2, 4), (128, 256, 512), CAPS, STREAMS):
        name = f"kk::unary_fast<{ct}, {f}, {U}, true, {stream}>"
        k = get_kernel(f"{OP}.cu", name, device_index=0)
        nvec = n // vec
        blocks = -(-nvec // (block * U))
        if cap:
            blocks = min(blocks, cap * sms)
        t = time_cuda(lambda: launch(k, blocks, block, out.data_ptr(), x.data_ptr(), n, 0), max_seconds=0.5)
        res.append((nbytes / t.seconds / 1e9, U, block, cap, stream))
    res.sort(reverse=True)
    print(dtype, n, "best 8:")
    for r in res[:8]:
        print(f"  {r[0]:7.0f} GB/s  U={r[1]} block={r[2]} cap={r[3]} streaming={r[4]}")
    print("  worst:", [f"{r[0]:.0f}" for r in res[-3:]])
    # the misaligned-input path: x[1:] into an aligned out
    xm = x[1:]
    om = torch.empty_like(xm)
    t = time_cuda(lambda: OURS(xm, out=om), max_seconds=0.5)
    print(f"  misaligned input (x[1:] -> aligned out): {2 * xm.numel() * x.element_size() / t.seconds / 1e9:.0f} GB/s")
    t = time_cuda(lambda: THEIRS(x), max_seconds=0.5)
    print(f"  torch: {nbytes / t.seconds / 1e9:.0f} GB/s")
    sys.stdout.flush()
