"""One launch each (after a compiling one) of kernelkit.softmax and of norm_rows as one cluster a row,
rms_norm then layer_norm, with no weight or bias (or with them, staged in shared memory: --weight), on
one rows x 65536 fp16 input: for ncu to compare what the row kernels execute and where they stall.

    ncu --section WarpStateStats --section SpeedOfLight --metrics smsp__inst_executed.sum \
        -k regex:"softmax_rows|norm_rows" python scripts/ncu_rows_compare.py [ROWS] [--weight]
"""
import sys

import numpy as np
import torch

import kernelkit
from kernelkit.ops._rowwise import allow_shared, launch_cluster, row_name
from kernelkit.runtime import get_kernel

rows = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1984
weighted = "--weight" in sys.argv
len_, cfg = 65536, (256, 4, 8)
x = torch.randn(rows, len_, device="cuda", dtype=torch.float16)
w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
out = torch.empty_like(x)
name = row_name("norm_rows", torch.float16, cfg, True, False)
k = get_kernel("norm.cu", name, device_index=0)
shmem = 2 * cfg[0] * cfg[1] * 16
allow_shared(k, shmem, 0)
for _ in range(2):
    kernelkit.softmax(x, -1, out=out)
    for rms in (1, 0):
        wp = w.data_ptr() if weighted else 0
        bp = b.data_ptr() if weighted and not rms else 0
        launch_cluster(k, rows * cfg[2], cfg[0], cfg[2], x.data_ptr(), out.data_ptr(), wp, bp, rows, len_,
                       np.float32(1e-5), np.int32(rms), dev=0, shmem=shmem)
torch.cuda.synchronize()
