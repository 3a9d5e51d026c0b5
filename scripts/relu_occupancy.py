"""The fast unary rung's launch for large tensors: ReLU (or GELU) at 2^28 with the blocks an SM capped (unused
dynamic shared memory, _launch_util.occupancy_limiter). The fast rung's kernel at several block sizes and caps,
and kernelkit's own call, beside torch, in one interleaved run. Its result is _unary.FAST_BLOCK_LARGE and
FAST_BLOCKS_PER_SM_LARGE (docs/design/elementwise.md).

    KK_OP=relu KK_DTYPES=float16,bfloat16 KK_TRIES=2 KK_CANDIDATES=512:0,128:12,128:13 \
        python scripts/relu_occupancy.py
"""
import os

import torch

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops._launch_util import occupancy_limiter
from kernelkit.runtime import get_kernel, launch
from rowbench import device_line

N = int(os.environ.get("KK_SIZE", str(1 << 28)))
TRIES = int(os.environ.get("KK_TRIES", "2"))
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float16,bfloat16").split(",")]
CT = {torch.float16: "__half", torch.bfloat16: "__nv_bfloat16", torch.float32: "float"}
# (block, blocks an SM or 0 for no cap)
CANDIDATES = [(int(b), int(c)) for b, c in (item.split(":") for item in os.environ.get(
    "KK_CANDIDATES", "512:0,128:12,128:13,128:14").split(","))]
OP = os.environ.get("KK_OP", "relu")
FUNCTOR = {"relu": lambda d: "kk::Relu",
           "gelu": lambda d: "kk::GeluTanh" if d == torch.float32 else "kk::GeluTanhFast"}[OP]
THEIRS = {"gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relu": torch.relu}[OP]
OURS = {"gelu": lambda x: kernelkit.gelu(x, approximate="tanh"), "relu": kernelkit.relu}[OP]
print(device_line())
for dtype in DTYPES:
    per = 16 // torch.tensor([], dtype=dtype).element_size()
    xs = [torch.randn(N, device="cuda", dtype=dtype) for _ in range(4)]
    nvec = N // per
    fast = get_kernel(f"{OP}.cu", f"kk::unary_fast<{CT[dtype]}, {FUNCTOR(dtype)}, 1, true, false>", device_index=0)
    fns = {f"torch {OP}": lambda i: THEIRS(xs[i % 4]), f"kernelkit.{OP}": lambda i: OURS(xs[i % 4])}
    for block, cap in CANDIDATES:
        shmem = occupancy_limiter(0, cap) if cap else 0
        if cap and not shmem:
            print(f"no shared-memory size caps {block}-thread blocks at {cap} an SM")
            continue
        fns[f"fast {block} x {cap or 'all'}"] = lambda i, b=block, s=shmem: launch(
            fast, nvec // b + 1, b, torch.empty_like(xs[i % 4]).data_ptr(), xs[i % 4].data_ptr(), N, 0, shmem=s)
    nbytes = 2 * N * xs[0].element_size()
    for t in range(TRIES):
        times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=300, max_seconds=4.0)
        print(f"{OP} {str(dtype)[6:]} n={N} try {t} ({times[0].reps} rounds):")
        for name, tm in zip(fns, times):
            print(f"  {nbytes / tm.seconds / 1e9:7.1f} GB/s  {times[0].median_ms / tm.median_ms:.4f}x torch  {name}")
