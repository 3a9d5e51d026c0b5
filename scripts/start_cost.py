"""Where the norms' long-row kernels' fixed cost per launch goes (session 18): layer_norm at 64K-element
rows runs at 99% (fp16) and 96% (fp32) of a copy's per-row rate, but each launch carries 4-9 us more than
a copy. This times, interleaved with the L2 flush as the benchmarks do, empty kernels launched with the
norms' grid shapes, and kernelkit's layer_norm at a few row counts; then the spread of CTA start times.

    python scripts/start_cost.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops._rowwise import allow_shared, launch_cluster
from kernelkit.runtime import get_kernel, launch
from rowbench import device_line

SRC = str(Path(__file__).with_name("start_cost.cu"))


def main() -> None:
    print(device_line())
    k = get_kernel(SRC, "start_probe", device_index=0)
    allow_shared(k, 200 * 1024, 0)
    t = torch.zeros(1024, dtype=torch.int64, device="cuda")
    shapes = {  # label: (CTAs, threads, cluster, dynamic shared memory)
        "bulk fp32 120x1024 c8 193K": (120, 1024, 8, 193 * 1024),
        "bulk fp32 120x1024 c8 0K": (120, 1024, 8, 0),
        "120x1024 no cluster 193K": (120, 1024, 1, 193 * 1024),
        "120x1024 no cluster 0K": (120, 1024, 1, 0),
        "rows fp16 496x256 c8 32K": (496, 256, 8, 32 * 1024),
        "rows fp16 496x256 c8 0K": (496, 256, 8, 0),
    }
    fns, labels = [], []
    for label, (blocks, threads, cluster, shmem) in shapes.items():
        def run(blocks=blocks, threads=threads, cluster=cluster, shmem=shmem, rec=0):
            if cluster > 1:
                launch_cluster(k, blocks, threads, cluster, t.data_ptr(), np.int32(rec), dev=0, shmem=shmem)
            else:
                launch(k, (blocks,), (threads,), t.data_ptr(), np.int32(rec), shmem=shmem)
        fns.append(run)
        labels.append(label)
    for dtype, rows in ((torch.float32, (15, 120, 960)), (torch.float16, (62, 496, 992))):
        for r in rows:
            x = torch.randn(r, 65536, device="cuda", dtype=dtype)
            w, b = torch.randn(2, 65536, device="cuda", dtype=dtype)
            out = torch.empty_like(x)
            fns.append(lambda x=x, w=w, b=b, out=out: kernelkit.layer_norm(x, (65536,), w, b, out=out))
            labels.append(f"layer_norm {str(dtype)[6:]} {r}x65536")
            fns.append(lambda x=x, out=out: out.copy_(x))
            labels.append(f"copy {str(dtype)[6:]} {r}x65536")
    times = time_interleaved(fns, reps=100, warmup=5, flush_l2=True, max_seconds=20)
    for label, tm in zip(labels, times):
        print(f"  {label:32s} {tm.median_us:9.2f} us")
    # CTA start spread, after a flush and a sleep as in the timed loop
    for label, (blocks, threads, cluster, shmem) in shapes.items():
        spreads = []
        for _ in range(20):
            torch.cuda._sleep(100000)
            if cluster > 1:
                launch_cluster(k, blocks, threads, cluster, t.data_ptr(), np.int32(1), dev=0, shmem=shmem)
            else:
                launch(k, (blocks,), (threads,), t.data_ptr(), np.int32(1), shmem=shmem)
            torch.cuda.synchronize()
            s = t[:blocks]
            spreads.append((s.max() - s.min()).item())
        spreads.sort()
        print(f"  start spread {label:32s} median {spreads[10] / 1e3:.2f} us, max {spreads[-1] / 1e3:.2f} us")


if __name__ == "__main__":
    main()
