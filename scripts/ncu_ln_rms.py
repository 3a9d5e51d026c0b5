"""One launch each of the fp16 cluster rows (norm_rows_dyn, 8 x 256, rows handed out) for rms_norm,
layer_norm, and layer_norm built with rms_norm's statistics (KK_LN_STATS_AS_RMS: a wrong result, timed only),
after a warm-up of each, on 1024 x 65536 fp16 with weight (and bias): for ncu to compare instruction counts and
stalls.

    ncu --section WarpStateStats --section SpeedOfLight --section InstructionStats \
        --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum \
        -k regex:norm_rows --launch-skip 3 python scripts/ncu_ln_rms.py
"""
import numpy as np
import torch

from kernelkit.ops._rowwise import handout_counters, launch_persistent
from kernelkit.runtime import get_kernel

rows, len_, cfg = 1024, 65536, (256, 4, 8)
x = torch.randn(rows, len_, device="cuda", dtype=torch.float16)
w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
out = torch.empty_like(x)
name = "kk::norm_rows_dyn<__half, 256, 4, 8, true, false>"
plain = get_kernel("norm.cu", name, device_index=0)
as_rms = get_kernel("norm.cu", name, device_index=0, extra_options=("define_macro=KK_LN_STATS_AS_RMS=1",))
slice_bytes = cfg[0] * cfg[1] * 16
runs = [(plain, 1, None), (plain, 0, b), (as_rms, 0, b)]  # rms_norm, layer_norm, layer_norm with rms stats
for _ in range(2):
    for k, rms, bias in runs:
        args = (x.data_ptr(), out.data_ptr(), w.data_ptr(), 0 if bias is None else bias.data_ptr(), rows, len_,
                np.float32(1e-5), np.int32(rms), handout_counters(0))
        launch_persistent(k, rows, cfg[0], cfg[2], slice_bytes * (1 if bias is None else 2), *args, dev=0)
torch.cuda.synchronize()
print("done")
