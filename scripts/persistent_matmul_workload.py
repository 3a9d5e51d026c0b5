"""A small workload of the persistent Hopper matmul rungs (persistent, cluster, tma_store), for compute-sanitizer (memcheck and racecheck):

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 python scripts/persistent_matmul_workload.py
    compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9 python scripts/persistent_matmul_workload.py

More tiles than SMs (each block walks several, its producer running ahead across tiles), both tile widths,
a batch whose tiles a block walks across, and linear's fused epilogue (GELU and a residual: the fp32
staging in halves), on both rungs; the cluster rung also with an odd row of tiles (a pair's second tile
past M) and an n-major B (multicast in 64-column boxes); tma_store also into an output off the 16-byte grid
(its threads' stores). Prints each result's largest difference from an fp32 torch result; the correctness
bounds are tests/test_hopper_gpu.py's. Needs compute capability 9.0.
"""
import torch

import kernelkit
from kernelkit.ops.gemm import WgmmaTile

torch.manual_seed(0)
dt = torch.bfloat16
a = torch.randn(1544, 72, device="cuda", dtype=dt)
b = torch.randn(72, 1672, device="cuda", dtype=dt)
bt = torch.randn(1672, 72, device="cuda", dtype=dt).t()  # k-major B
for rung in ("persistent", "cluster", "tma_store"):
    for cfg in (WgmmaTile(128, 2), WgmmaTile(256, 3)):
        for bb in (b, bt):
            c = kernelkit.matmul(a[:1420], bb, variant=rung, config=cfg)  # 12 rows of tiles; 1420 / 128: odd pairs
            print(rung, cfg, (c.float() - a[:1420].float() @ bb.float()).abs().max().item())
    x = torch.randn(3, 100, 72, device="cuda", dtype=dt)
    w = torch.randn(1000, 72, device="cuda", dtype=dt)
    bias = torch.randn(1000, device="cuda", dtype=dt)
    r = torch.randn(3, 100, 1000, device="cuda", dtype=dt)
    y = kernelkit.linear(x, w, bias, activation="gelu", residual=r, variant=rung)
    want = torch.nn.functional.gelu(x.float() @ w.float().t() + bias.float()) + r.float()
    print(rung, "linear gelu + residual", (y.float() - want).abs().max().item())
    a3 = torch.randn(20, 130, 72, device="cuda", dtype=dt)
    b3 = torch.randn(20, 72, 260, device="cuda", dtype=dt)
    c3 = kernelkit.matmul(a3, b3, variant=rung)
    print(rung, "batch of 20", (c3.float() - a3.float() @ b3.float()).abs().max().item())
o = torch.empty(1420 * 1672 + 1, device="cuda", dtype=dt)[1:].view(1420, 1672)  # 2 bytes off the grid
kernelkit.matmul(a[:1420], b, out=o, variant="tma_store")
print("tma_store, C off the grid", (o.float() - a[:1420].float() @ b.float()).abs().max().item())
torch.cuda.synchronize()
