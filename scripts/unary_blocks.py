"""The fast unary rung's block size (and, through unused dynamic shared memory, how many blocks an SM
holds) against torch, all candidates in one interleaved run rotating through four input copies
(placement-fair; see benchmarks/NOTES.md, session 9 and 11).

    KK_OP=gelu|relu KK_SIZES=16777216 KK_DTYPES=float16,bfloat16 KK_BLOCKS=256,512 \
        KK_SHMEM=0,32768 KK_STREAM=0,1 python scripts/unary_blocks.py

KK_STREAM=1 adds the streaming (evict-first, ld.global.cs) load form of each candidate.
"""
import itertools
import os

import torch

from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch

OP = os.environ.get("KK_OP", "gelu")
SIZES = [int(v) for v in os.environ.get("KK_SIZES", str(1 << 24)).split(",")]
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float16,bfloat16,float32").split(",")]
BLOCKS = [int(v) for v in os.environ.get("KK_BLOCKS", "128,256,512,1024").split(",")]
# dynamic shared memory the kernel never touches: it only caps the blocks an SM holds (<= 48 KB, no opt-in)
SHMEM = [int(v) for v in os.environ.get("KK_SHMEM", "0").split(",")]
STREAM = [v == "1" for v in os.environ.get("KK_STREAM", "0").split(",")]
CT = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}
FUNCTOR = {"relu": lambda d: "kk::Relu",
           "gelu": lambda d: "kk::GeluTanh" if d == torch.float32 else "kk::GeluTanhFast"}[OP]
THEIRS = {"gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relu": torch.relu}[OP]

for n, dtype in itertools.product(SIZES, DTYPES):
    xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(4)]
    kernels = {st: get_kernel(f"{OP}.cu", f"kk::unary_fast<{CT[dtype]}, {FUNCTOR(dtype)}, 1, true, "
                              f"{'true' if st else 'false'}>", device_index=0) for st in STREAM}
    nvec = n * xs[0].element_size() // 16
    fns, names = [lambda i: THEIRS(xs[i % 4])], ["torch"]
    for b, sm, st in itertools.product(BLOCKS, SHMEM, STREAM):
        fns.append(lambda i, b=b, sm=sm, k=kernels[st]: launch(k, nvec // b + 1, b, torch.empty_like(xs[i % 4]).data_ptr(),
                                                              xs[i % 4].data_ptr(), n, 0, shmem=sm))
        per_sm = torch.cuda.get_device_properties(0).max_threads_per_multi_processor // b
        if sm:
            per_sm = min(per_sm, (228 << 10) // (sm + 1024))
        names.append(f"fast block={b} shmem={sm >> 10}K (<= {per_sm} blocks/SM){' streaming' if st else ''}")
    nbytes = 2 * n * xs[0].element_size()
    times = time_interleaved(fns, working_set_bytes=nbytes, reps=400, max_seconds=3.0)
    print(f"{OP} {dtype} n={n} ({times[0].reps} rounds, 4 input copies):")
    for name, t in sorted(zip(names, times), key=lambda p: p[1].median_ms):
        print(f"  {nbytes / t.seconds / 1e9:7.1f} GB/s  {name}  (p20 {nbytes / t.p20_ms / 1e6:.0f}, "
              f"p80 {nbytes / t.p80_ms / 1e6:.0f})  vs torch {times[0].median_ms / t.median_ms:.3f}")
