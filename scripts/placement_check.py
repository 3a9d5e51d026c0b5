"""Is a small gap to torch the kernel or where the output lands? Time torch's kernel and ours writing
into the same preallocated buffers (several placements), interleaved in rounds.

    KK_OP=relu|gelu KK_SIZES=268435456 KK_DTYPES=float16 python scripts/placement_check.py
"""
import itertools
import os
import statistics

import torch

import kernelkit
from kernelkit.bench import time_cuda

OP = os.environ.get("KK_OP", "relu")
SIZES = [int(v) for v in os.environ.get("KK_SIZES", str(1 << 28)).split(",")]
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float16,bfloat16,float32").split(",")]
ROUNDS = int(os.environ.get("KK_ROUNDS", "3"))
PLACES = int(os.environ.get("KK_PLACES", "3"))
# torch's own kernels with an out= argument (relu is clamp_min(x, 0) in ATen: the same kernel)
THEIRS = {"relu": lambda x, o: torch.clamp_min(x, 0, out=o),
          "gelu": lambda x, o: torch.ops.aten.gelu.out(x, approximate="tanh", out=o)}[OP]
OURS = {"relu": lambda x, o: kernelkit.relu(x, out=o), "gelu": lambda x, o: kernelkit.gelu(x, out=o)}[OP]

for n, dtype in itertools.product(SIZES, DTYPES):
    x = torch.randn(n, device="cuda", dtype=dtype)
    outs = [torch.empty_like(x) for _ in range(PLACES)]
    nbytes = 2 * n * x.element_size()
    res = {}
    for _ in range(ROUNDS):
        for p, o in enumerate(outs):
            for who, fn in (("torch", THEIRS), ("kernelkit", OURS)):
                t = time_cuda(lambda: fn(x, o), working_set_bytes=nbytes, max_seconds=0.25)
                res.setdefault((p, who), []).append(nbytes / t.seconds / 1e9)
    print(f"{OP} {dtype} n={n}: GB/s per output placement (median of {ROUNDS} interleaved rounds)")
    for p in range(PLACES):
        t, k = statistics.median(res[(p, "torch")]), statistics.median(res[(p, "kernelkit")])
        print(f"  out #{p} (+{(outs[p].data_ptr() - x.data_ptr()) / 2**20:.0f} MiB from x): torch {t:7.1f}  "
              f"kernelkit {k:7.1f}  ratio {k / t:.4f}")
