"""A few small launches of every shared-memory-resident row configuration (softmax_smem, norm_smem), for
compute-sanitizer (memcheck, racecheck): rows it holds exactly and rows ending inside a chunk, more rows
than a CTA's ring holds (the stages refill).

    compute-sanitizer --tool racecheck python scripts/race_smem.py [float16,float32]

KK_RACE_ROWS sets the rows (default: two rows a resident CTA and more, so every ring wraps around;
racecheck over that many 64K-element rows takes minutes, so pass a few there).
"""
import os
import sys

import torch

import kernelkit
import importlib

norm = importlib.import_module("kernelkit.ops.norm")
softmax = importlib.import_module("kernelkit.ops.softmax")
from kernelkit.ops._rowwise import per_vec, smem_rows_capacity

dtypes = [getattr(torch, d) for d in (sys.argv[1] if len(sys.argv) > 1 else "float16,float32").split(",")]
for dtype in dtypes:
    n = per_vec(dtype)
    for mod, name in ((norm, "norm"), (softmax, "softmax")):
        if mod is norm:  # fp16 64K rows take norm.CLUSTER_ROWS before _smem_for: force the shared-memory rows
            norm._cluster_rows_for = lambda *_a: None
        for cfg in mod.smem_configs(dtype):
            mod._smem_for = lambda *_a, c=cfg: c
            mod._plans.clear()
            cap = smem_rows_capacity(dtype, cfg)
            for len_ in (cap, cap // 2 + 3 * n):
                x = torch.randn(int(os.environ.get("KK_RACE_ROWS", 2 * 132 * cfg[4] + 5)), len_, device="cuda", dtype=dtype)
                w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
                if name == "norm":
                    y = kernelkit.layer_norm(x, (len_,), w, b)
                    ok = torch.allclose(y.float(), torch.nn.functional.layer_norm(x.float(), (len_,), w.float(), b.float()), atol=5e-2)
                else:
                    y = kernelkit.softmax(x)
                    ok = torch.allclose(y.float(), torch.softmax(x.float(), -1), atol=1e-3)
                torch.cuda.synchronize()
                print(name, dtype, cfg, len_, "ok" if ok else "MISMATCH", flush=True)
