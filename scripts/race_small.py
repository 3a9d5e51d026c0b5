"""A small workload for compute-sanitizer racecheck (slow on 1024-thread kernels): every bulk norm
configuration and the cluster softmax once on a few rows, checked against torch."""
import os
import sys

import torch

import kernelkit
from kernelkit.ops._rowwise import per_vec

norm = sys.modules["kernelkit.ops.norm"]
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_RACE_DTYPES", "float32,float16").split(",")]
for dt in DTYPES:
    n = per_vec(dt)
    for cfg in sorted(set(norm.BULK[n].values()) | set(norm.BULK_SPARES[n])):
        norm._bulk_config = lambda _d, _n, c=cfg: c
        norm.BULK_FROM = 0
        norm._plans.clear()
        g, v, c = cfg[:3]
        len_ = g * v * n * c
        x = torch.randn(40, len_, device="cuda", dtype=dt)
        w, b = torch.randn(len_, device="cuda", dtype=dt), torch.randn(len_, device="cuda", dtype=dt)
        got = kernelkit.layer_norm(x, (len_,), w, b)
        want = torch.nn.functional.layer_norm(x.float(), (len_,), w.float(), b.float())
        print(dt, cfg, float((got.float() - want).abs().max()), flush=True)
    x = torch.randn(8, 65536, device="cuda", dtype=dt)
    print("softmax", dt, float((kernelkit.softmax(x).float() - torch.softmax(x.float(), -1)).abs().max()), flush=True)
