"""A few small launches of every shared-memory-resident row configuration the norms' rules can choose
(norm_smem), forced by config=, for compute-sanitizer (memcheck, racecheck): rows it holds exactly and
rows ending inside a chunk, more rows than a CTA's ring holds (the stages refill).

    compute-sanitizer --tool racecheck python scripts/race_smem.py [bfloat16,float16,float32]

KK_RACE_ROWS sets the rows (default: two rows a resident CTA and more, so every ring wraps around;
racecheck over that many 64K-element rows takes minutes, so pass a few there). A dtype whose rows the
rules never keep in shared memory can still be checked through the bf16 configurations.
"""
import os
import sys

import torch

import kernelkit
from kernelkit.ops.reduction import norm
from kernelkit.ops.reduction._rows import per_vec

dtypes = [getattr(torch, d) for d in (sys.argv[1] if len(sys.argv) > 1 else "bfloat16,float16,float32").split(",")]
cfgs = sorted({c for d in (torch.bfloat16, *dtypes) for c in norm.configs(d, form=norm.ALIGNED, rung="smem_rows")
               if isinstance(c, norm.SmemRows)}, key=repr)
for dtype in dtypes:
    n = per_vec(dtype)
    for cfg in cfgs:
        cap = cfg.capacity(dtype)
        for len_ in (cap, cap // 2 + 3 * n):
            x = torch.randn(int(os.environ.get("KK_RACE_ROWS", 2 * 132 * cfg.cluster + 5)), len_, device="cuda",
                            dtype=dtype)
            w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
            y = kernelkit.layer_norm(x, (len_,), w, b, config=cfg)
            ok = torch.allclose(y.float(), torch.nn.functional.layer_norm(x.float(), (len_,), w.float(), b.float()),
                                atol=5e-2)
            torch.cuda.synchronize()
            print("layer_norm", dtype, cfg, len_, "ok" if ok else "MISMATCH", flush=True)
