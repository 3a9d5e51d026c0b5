"""torch's ReLU and ours on 2^28 16-bit elements, twice each, for ncu: what launch shape torch's
fp16 kernel (0.3% ahead of ours at 2^28) and its bf16 kernel (0.3% behind) use.

    ncu --section LaunchStats --section SpeedOfLight --section MemoryWorkloadAnalysis python scripts/ncu_relu.py
"""
import torch

import kernelkit

for dtype in (torch.float16, torch.bfloat16):
    x = torch.randn(1 << 28, device="cuda", dtype=dtype)
    for _ in range(2):
        torch.relu(x)
        kernelkit.relu(x)
torch.cuda.synchronize()
