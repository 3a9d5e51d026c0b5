"""A small workload for compute-sanitizer racecheck (slow on 1024-thread kernels): every bulk-copy ring the
norms' rules can choose, forced by config= onto rows it holds exactly, and the cluster softmax once on a
few rows, checked against torch.

    compute-sanitizer --tool racecheck python scripts/race_small.py      (KK_RACE_DTYPES=float32,float16)
"""
import os

import torch

import kernelkit
from kernelkit.ops.reduction import norm

DTYPES = [getattr(torch, d) for d in os.environ.get("KK_RACE_DTYPES", "float32,float16").split(",")]
for dt in DTYPES:
    for cfg in norm.configs(dt, form=norm.ALIGNED, rung="bulk_ring"):
        if not isinstance(cfg, norm.BulkRing):
            continue
        len_ = cfg.capacity(dt)
        x = torch.randn(40, len_, device="cuda", dtype=dt)
        w, b = torch.randn(len_, device="cuda", dtype=dt), torch.randn(len_, device="cuda", dtype=dt)
        got = kernelkit.layer_norm(x, (len_,), w, b, config=cfg)
        want = torch.nn.functional.layer_norm(x.float(), (len_,), w.float(), b.float())
        print(dt, cfg, float((got.float() - want).abs().max()), flush=True)
    x = torch.randn(8, 65536, device="cuda", dtype=dt)
    print("softmax", dt, float((kernelkit.softmax(x).float() - torch.softmax(x.float(), -1)).abs().max()), flush=True)
