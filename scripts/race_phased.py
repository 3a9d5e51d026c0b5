"""A small run of the norms' phased tiles for compute-sanitizer (memcheck, racecheck): rows at any alignment,
with grids that keep each group's phase and grids that change it (the slots shifted again).

    compute-sanitizer --tool memcheck python scripts/race_phased.py
"""
import torch

import kernelkit
from kernelkit.ops.reduction import norm, norm_configs

rule_grid = norm_configs.phased_grid
for dtype in (torch.float16, torch.bfloat16, torch.float32):
    for len_, threads, vecs in ((257, 16, 3), (509, 32, 4), (1025, 64, 3), (4097, 160, 4)):
        n = 16 // dtype.itemsize
        vecs = max(vecs, -(-(len_ + n - 1) // (threads * n)))
        cfg = norm.NormTile(threads, vecs, phased=True)
        for grid in (None, 3):
            norm_configs.phased_grid = rule_grid if grid is None else (lambda rows, units, resident, phases, g=grid: g)
            x = torch.randn(37 * len_ + 1, device="cuda", dtype=dtype)[1:].view(37, len_)
            w = torch.randn(len_ + 3, device="cuda", dtype=dtype)[3:]
            b = torch.randn(len_ + 5, device="cuda", dtype=dtype)[5:]
            kernelkit.layer_norm(x, (len_,), w, b, config=cfg)
            kernelkit.rms_norm(x, (len_,), w, config=cfg)
torch.cuda.synchronize()
print("ok")
