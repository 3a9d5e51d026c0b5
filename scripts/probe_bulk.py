"""Which persistent grids the bulk norm configurations get (resident clusters), and one fp16 layer_norm
at 1024 x 65536 for ncu to profile: python scripts/probe_bulk.py [--profile CFG]."""
import sys

import torch

import kernelkit
from kernelkit.ops import _rowwise
from kernelkit.ops._rowwise import per_vec, resident_blocks

norm = sys.modules["kernelkit.ops.norm"]
for dt in (torch.float32, torch.float16):
    n = per_vec(dt)
    for cfg in sorted(set(norm.BULK[n].values()) | set(norm.BULK_SPARES[n])):
        k = norm.NAMES.load(norm._bulk_name(dt, cfg), dt, 0)
        for wb in ((True, True), (True, False)):
            shmem = norm._bulk_shared(cfg, *wb)
            _rowwise.allow_shared(k, shmem, 0)
            blocks = resident_blocks(k, cfg[0], cfg[2], 0, shmem)
            print(f"{str(dt)[6:]:8s} {cfg} shmem={shmem // 1024}KB w/b={wb}: {blocks} CTAs = {blocks // cfg[2]} clusters; "
                  f"1024 rows -> {-(-1024 // (blocks // cfg[2]))} rounds ({1024 / (blocks // cfg[2]):.2f})")
if "--profile" in sys.argv:
    x = torch.randn(1024, 65536, device="cuda", dtype=torch.float16)
    w, b = torch.randn(65536, device="cuda", dtype=x.dtype), torch.randn(65536, device="cuda", dtype=x.dtype)
    for _ in range(3):
        kernelkit.layer_norm(x, (65536,), w, b)
    torch.cuda.synchronize()
