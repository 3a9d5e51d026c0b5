"""One 1024 x 65536 layer_norm / rms_norm launch (after a compiling one) per norm_smem configuration
given as BLOCKxPERxCHUNKSxSTAGESxCLUSTER, for ncu (L1 hit rate of the weight and bias reads):

    ncu --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:norm_smem \
        python scripts/ncu_norm64k.py float16 1024x1x4x6x2 512x2x4x6x2

KK_CARVEOUT=PCT asks for that shared memory carveout on each kernel first.
"""
import importlib
import os
import sys

import torch

import kernelkit

norm = importlib.import_module("kernelkit.ops.norm")
dtype = getattr(torch, sys.argv[1])
rows, cols = 1024, 65536
x = torch.randn(rows, cols, device="cuda", dtype=dtype)
w, b = torch.randn(2, cols, device="cuda", dtype=dtype)
norm._cluster_rows_for = lambda *_a: None  # fp16 64K rows would take norm.CLUSTER_ROWS before _smem_for
for spec in sys.argv[2:]:
    cfg = tuple(map(int, spec.split("x")))
    norm._smem_for = lambda *_a, c=cfg: c
    norm._plans.clear()
    kernelkit.layer_norm(x, (cols,), w, b)  # compiles and loads
    if "KK_CARVEOUT" in os.environ:
        from rowbench import prefer_shared_carveout
        prefer_shared_carveout(norm._plans[next(iter(norm._plans))][0], int(os.environ["KK_CARVEOUT"]), 0)
    kernelkit.layer_norm(x, (cols,), w, b)
    for _ in range(2):
        kernelkit.rms_norm(x, (cols,), w)
torch.cuda.synchronize()
