"""A small workload of the mma.sync rungs (mma: fp16, bf16, tf32, int8; dmma: fp64), for compute-sanitizer
(memcheck and racecheck):

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 python scripts/mma_rungs_workload.py
    compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9 python scripts/mma_rungs_workload.py

Odd sizes (partial tiles in M, N and K), the operand layouts each dtype's copy-only kernel reads (row-major
and transposed views), enough K tiles that the ring of stages wraps. Prints each result's largest difference
from a float64 torch result; the correctness bounds are tests/test_matmul_gpu.py's.
"""
import torch

import kernelkit

torch.manual_seed(0)
m, n, k = 200, 136, 520
for dtype, variant, tf32 in ((torch.float16, "mma", False), (torch.bfloat16, "mma", False),
                             (torch.float32, "mma", True), (torch.float64, "dmma", False)):
    for ta in (False, True):
        for tb in (False, True):
            a = torch.randn(k, m, device="cuda", dtype=dtype).t() if ta else torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(n, k, device="cuda", dtype=dtype).t() if tb else torch.randn(k, n, device="cuda", dtype=dtype)
            c = kernelkit.matmul(a, b, variant=variant, allow_tf32=tf32)
            err = (c.double() - a.double() @ b.double()).abs().max().item()
            print(f"{variant} {str(dtype)[6:]} A{'ᵀ' if ta else ''} B{'ᵀ' if tb else ''}: {err:.3g}")
a8 = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8)
b8 = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8).t()  # torch._int_mm's fast layout
c8 = kernelkit.matmul(a8, b8, variant="mma")
print("mma int8:", (c8.cpu().long() - a8.cpu().long() @ b8.cpu().long()).abs().max().item())  # no int64 matmul on CUDA
torch.cuda.synchronize()
