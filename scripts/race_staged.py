"""A small workload for compute-sanitizer (memcheck, racecheck) over the norms' staged kernels, whose weight
and bias reach shared memory by asynchronous copies: fp16 and bf16 layer_norm and fp16 rms_norm on one-CTA
staged rows (rms_norm forced by config= at a row count outside its staged range), fp16 cluster rows (handed
out), fp32 rms_norm cluster rows, fp32 layer_norm's bulk-copy rows (norm_bulk) and its 32K cluster rows
(handed out), each twice, checked against torch.

    compute-sanitizer --tool racecheck python scripts/race_staged.py
"""
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.ops.reduction import norm

STAGED = norm.NormTile(128, 4, staged=True)
for dt, rows, len_ in ((torch.float16, 300, 4096), (torch.bfloat16, 300, 4096), (torch.float16, 70, 65536),
                       (torch.float32, 70, 65536), (torch.float32, 140, 32768)):
    x = torch.randn(rows, len_, device="cuda", dtype=dt) + 0.5
    w, b = torch.randn(2, len_, device="cuda", dtype=dt)
    config = STAGED if len_ == 4096 else None  # one-CTA rows staged by config= (auto reads them from L1)
    for _ in range(2):
        got = kernelkit.rms_norm(x, (len_,), w, 1e-5, config=config)
        want = F.rms_norm(x.float(), (len_,), w.float(), 1e-5)
        print("rms_norm", dt, rows, len_, float((got.float() - want).abs().max()), flush=True)
        got = kernelkit.layer_norm(x, (len_,), w, b)
        want = F.layer_norm(x.float(), (len_,), w.float(), b.float())
        print("layer_norm", dt, rows, len_, float((got.float() - want).abs().max()), flush=True)
