"""Launch each row op of interest twice (the first compiles) for ncu: softmax fp16/fp32 and layer_norm /
rms_norm fp16 at 1024x65536, softmax / layer_norm / rms_norm fp16 at 4096x4096 (`4096` as the argument:
those alone).

    ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
        -k regex:"softmax_rows|norm_" python scripts/ncu_rows.py
"""
import sys

import torch

import kernelkit

CASES = [(1024, 65536, torch.float16, ("softmax", "layer_norm", "rms_norm")),
         (1024, 65536, torch.float32, ("softmax",)),
         (4096, 4096, torch.float16, ("softmax", "layer_norm", "rms_norm"))]
for rows, cols, dtype, ops in CASES:
    if sys.argv[1:] and str(cols) not in sys.argv[1:]:
        continue
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    w, b = torch.randn(cols, device="cuda", dtype=dtype), torch.randn(cols, device="cuda", dtype=dtype)
    for op in ops:
        for _ in range(2):
            if op == "softmax":
                kernelkit.softmax(x)
            elif op == "layer_norm":
                kernelkit.layer_norm(x, (cols,), w, b)
            else:
                kernelkit.rms_norm(x, (cols,), w)
torch.cuda.synchronize()
