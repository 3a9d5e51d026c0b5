"""kernelkit.softmax, rms_norm and layer_norm on one 1024 x 65536 input (each called twice: the first
compiles), for ncu to compare the row kernels' launch shapes, stalls and per-SM balance:

    ncu --section LaunchStats --section Occupancy --section WarpStateStats \
        --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,dram__throughput.avg.pct_of_peak_sustained_elapsed \
        -k regex:"softmax_rows|norm_rows" python scripts/ncu_rows64k.py float16

Prints the persistent grid the norms launch (resident CTAs) first.
"""
import importlib
import sys

import torch

import kernelkit

norm = importlib.import_module("kernelkit.ops.norm")
dtype = getattr(torch, sys.argv[1] if len(sys.argv) > 1 else "float16")
rows, cols = 1024, 65536
x = torch.randn(rows, cols, device="cuda", dtype=dtype)
w, b = torch.randn(2, cols, device="cuda", dtype=dtype)
for _ in range(2):
    kernelkit.softmax(x, -1)
    kernelkit.rms_norm(x, (cols,), w)
    kernelkit.layer_norm(x, (cols,), w, b)
torch.cuda.synchronize()
from kernelkit.ops._rowwise import _resident  # noqa: E402  (the persistent grids asked of the driver)
print("resident CTAs by (kernel, block, cluster, dev, shmem):", {k[1:]: v for k, v in _resident.items()
                                                                  if not isinstance(k[0], str)})
