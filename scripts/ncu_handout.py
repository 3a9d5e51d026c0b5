"""kernelkit.layer_norm and rms_norm with rows handed out (norm.HANDOUT) and in a fixed stride, a few
calls each after a compiling one, for ncu's kernel durations (no host time, caches flushed):

    ncu --metrics gpu__time_duration.sum -k regex:norm_rows python scripts/ncu_handout.py 4096x4096 1024x65536
"""
import importlib
import sys

import torch

import kernelkit

norm = importlib.import_module("kernelkit.ops.norm")
for shape in sys.argv[1:] or ["4096x4096"]:
    rows, len_ = map(int, shape.split("x"))
    x = torch.randn(rows, len_, device="cuda", dtype=torch.float16)
    w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    for on in (True, False, True, False):
        norm.HANDOUT = on
        for _ in range(3):
            kernelkit.layer_norm(x, (len_,), w, b, out=out)
            kernelkit.rms_norm(x, (len_,), w, out=out)
    norm.HANDOUT = True
torch.cuda.synchronize()
