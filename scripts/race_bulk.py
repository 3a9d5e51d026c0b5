"""A small workload for compute-sanitizer (memcheck, racecheck) over layer_norm's one-CTA bulk-copy rings with
rows handed out (norm_bulk_dyn): fp16 and bf16 rows of 32768 and 20000 elements, more rows
than resident CTAs, each twice, checked against torch. (race_staged.py's kernels take too long under racecheck
to add these there.)"""
import torch
import torch.nn.functional as F

import kernelkit

for dt in (torch.float16, torch.bfloat16):
    for rows, len_ in ((150, 32768), (140, 20000)):
        x = torch.randn(rows, len_, device="cuda", dtype=dt) + 0.5
        w, b = torch.randn(2, len_, device="cuda", dtype=dt)
        for _ in range(2):
            got = kernelkit.layer_norm(x, (len_,), w, b)
            want = F.layer_norm(x.float(), (len_,), w.float(), b.float())
            print("layer_norm", dt, rows, len_, float((got.float() - want).abs().max()), flush=True)
