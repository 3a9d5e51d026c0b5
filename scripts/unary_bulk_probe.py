"""The bulk-copy unary kernel (unary_bulk, sm_90) against the fast rung and torch: every configuration
(threads, tile bytes, stages) checked bit for bit against the fast rung, then all timed in one
interleaved run rotating through four input copies (as scripts/unary_blocks.py).

    KK_OP=relu|gelu KK_SIZES=268435456,16777216 KK_DTYPES=float16,bfloat16,float32 \
        KK_CONFIGS=256x16384x4,256x32768x3 python scripts/unary_bulk_probe.py
"""
import itertools
import os

import torch

from kernelkit.bench import time_interleaved
from kernelkit.ops._rowwise import allow_shared, resident_blocks
from kernelkit.runtime import get_kernel, launch
from rowbench import device_line

OP = os.environ.get("KK_OP", "relu")
SIZES = [int(v) for v in os.environ.get("KK_SIZES", str(1 << 28)).split(",")]
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float16,bfloat16,float32").split(",")]
CONFIGS = [tuple(map(int, c.split("x"))) for c in
           os.environ.get("KK_CONFIGS", "256x16384x4,256x32768x3,128x8192x8,256x16384x2,512x32768x6").split(",")]
CT = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}
FUNCTOR = {"relu": lambda d: "kk::Relu",
           "gelu": lambda d: "kk::GeluTanh" if d == torch.float32 else "kk::GeluTanhFast"}[OP]
THEIRS = {"gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relu": torch.relu}[OP]

print(device_line())


def check_odd_sizes(dtype):
    """Odd lengths and views offset by one element (input and output alike): prologue, a partial last
    tile and the epilogue, each against the fast rung bit for bit."""
    fast = get_kernel(f"{OP}.cu", f"kk::unary_fast<{CT[dtype]}, {FUNCTOR(dtype)}, 1, true, false>", device_index=0)
    for threads, tile, stages in CONFIGS:
        k = get_kernel(f"{OP}.cu", f"kk::unary_bulk<{CT[dtype]}, {FUNCTOR(dtype)}, {threads}, {tile}, {stages}>",
                       device_index=0)
        allow_shared(k, tile * stages, 0)
        bad = []
        for n in (1, 9, 4097, (1 << 20) + 3, 3 * tile + 40, 40 * tile):
            for off in (0, 1):
                base = torch.randn(n + off, device="cuda", dtype=dtype)
                x = base[off:]
                got, want = torch.full_like(base, float("nan"))[off:], torch.full_like(base, float("nan"))[off:]
                head = ((16 - got.data_ptr() % 16) % 16) // x.element_size()
                head = min(head, n)
                nvec = (n - head) * x.element_size() // 16
                launch(fast, nvec // 256 + 1, 256, want.data_ptr(), x.data_ptr(), n, head)
                grid = min(132 * 2, max(1, -(-n * x.element_size() // tile)))
                launch(k, grid, threads, got.data_ptr(), x.data_ptr(), n, head, shmem=tile * stages)
                if not torch.equal(got, want):
                    bad.append((n, off))
        print(f"  odd sizes {dtype} bulk {threads}x{tile}x{stages}: {'ok' if not bad else f'WRONG at {bad}'}")


for dtype in DTYPES:
    check_odd_sizes(dtype)
for n, dtype in itertools.product(SIZES, DTYPES):
    xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(4)]
    outs = [torch.empty_like(xs[0]) for _ in range(4)]
    fast = get_kernel(f"{OP}.cu", f"kk::unary_fast<{CT[dtype]}, {FUNCTOR(dtype)}, 1, true, false>", device_index=0)
    nvec = n * xs[0].element_size() // 16
    # every timed call allocates its output as torch's does (the same placement, see unary_blocks.py)
    fns = {"torch": lambda i: THEIRS(xs[i % 4]),
           "fast 512": lambda i: launch(fast, nvec // 512 + 1, 512, torch.empty_like(xs[i % 4]).data_ptr(),
                                        xs[i % 4].data_ptr(), n, 0)}
    launch(fast, nvec // 512 + 1, 512, outs[0].data_ptr(), xs[0].data_ptr(), n, 0)
    want = outs[0].clone()
    for threads, tile, stages in CONFIGS:
        k = get_kernel(f"{OP}.cu", f"kk::unary_bulk<{CT[dtype]}, {FUNCTOR(dtype)}, {threads}, {tile}, {stages}>",
                       device_index=0)
        shmem = tile * stages
        allow_shared(k, shmem, 0)
        tiles = -(-n * xs[0].element_size() // tile)
        grid = min(tiles, resident_blocks(k, threads, 1, 0, shmem))
        run = lambda i, k=k, g=grid, b=threads, s=shmem, o=None: launch(
            k, g, b, (torch.empty_like(xs[i % 4]) if o is None else o).data_ptr(), xs[i % 4].data_ptr(), n, 0, shmem=s)
        outs[0].fill_(float("nan"))
        run(0, o=outs[0])
        same = torch.equal(outs[0], want)
        print(f"  bulk {threads}x{tile}x{stages} grid {grid}: {'bit-identical to fast' if same else 'WRONG'}")
        if same:
            fns[f"bulk {threads}x{tile}x{stages} ({grid} CTAs)"] = run
    nbytes = 2 * n * xs[0].element_size()
    times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=300, max_seconds=4.0)
    print(f"{OP} {dtype} n={n} ({times[0].reps} rounds, 4 input copies):")
    for name, t in sorted(zip(fns, times), key=lambda p: p[1].median_ms):
        print(f"  {nbytes / t.seconds / 1e9:7.1f} GB/s  {name:34s} (p20 {nbytes / t.p20_ms / 1e6:.0f}, "
              f"p80 {nbytes / t.p80_ms / 1e6:.0f})  vs torch {times[0].median_ms / t.median_ms:.3f}")
