"""Where a handed-out cluster-rows launch spends its time (session 18): norm.cu built with KK_TRACE=1 records,
for each cluster's rank-0 CTA, when it started, when its first row's statistics were done, when it
exited and how many rows it did. Launched after an L2 flush and a GPU spin, as the timed loop does.

    python scripts/trace_rows.py [--shape 1024x65536] [--dtype float16] [--cfg 256x4x8] [--bulk]

--bulk: the norm_bulk kernel that layer_norm takes for the shape (rows dealt in a fixed stride), the same
four times for each cluster's rank-0 CTA (session 19); --bulk-dyn: its form with rows handed out.
"""
from __future__ import annotations

import argparse
import importlib

import numpy as np
import torch

from kernelkit.bench.timing import _l2_flush
from kernelkit.ops._rowwise import allow_shared, launch_cluster, per_vec, resident_blocks, row_name
from kernelkit.runtime import get_kernel
from rowbench import device_line, row_shape, shape_args

norm = importlib.import_module("kernelkit.ops.norm")


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float16", cfg="256x4x8")
    ap.add_argument("--macros", default="", help="extra macros, '+' between them")
    ap.add_argument("--bulk", action="store_true", help="layer_norm's norm_bulk kernel for the shape (--cfg unused)")
    ap.add_argument("--bulk-dyn", action="store_true", help="with --bulk: its handed-out form (norm_bulk_dyn)")
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype, c = row_shape(a)
    opts = ("define_macro=KK_TRACE=1",) + tuple(f"define_macro={m}" for m in filter(None, a.macros.split("+")))
    if a.bulk:
        bulk = norm._bulk_for(dtype, len_, False)
        c = (bulk[0], bulk[1], bulk[2])
        name = norm._bulk_name(dtype, bulk, a.bulk_dyn)
    else:
        name = row_name("norm_rows_dyn", dtype, c, True, False)
    print(name)
    k = get_kernel("norm.cu", name, device_index=0, extra_options=opts)
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    flush = _l2_flush(0)
    for op in ("rms_norm", "layer_norm"):
        rms = op == "rms_norm"
        shmem = norm._bulk_shared(bulk, True, not rms) if a.bulk else c[0] * c[1] * 16 * (1 if rms else 2)
        allow_shared(k, shmem, 0)
        clusters = min(resident_blocks(k, c[0], c[2], 0, shmem) // c[2], rows)
        buf = torch.zeros(64 + 8 * clusters, dtype=torch.int32, device="cuda")
        # norm_rows_dyn: the handout counter, then the trace at counters + 64; norm_bulk: the trace alone
        trace = buf[64:].data_ptr() if a.bulk and not a.bulk_dyn else buf.data_ptr()
        args = (x.data_ptr(), out.data_ptr(), w.data_ptr(), 0 if rms else b.data_ptr(), rows, len_,
                np.float32(1e-5), np.int32(rms), trace)
        stats = []
        for rep in range(12):
            flush()
            torch.cuda._sleep(100000)
            launch_cluster(k, clusters * c[2], c[0], c[2], *args, dev=0, shmem=shmem)
            torch.cuda.synchronize()
            t = buf[64:].view(torch.int64).view(clusters, 4).cpu().numpy().astype(np.float64)
            if rep < 2:
                continue
            t0 = t[:, 0].min()
            start, first, end = (t[:, 0] - t0) / 1e3, (t[:, 1] - t0) / 1e3, (t[:, 2] - t0) / 1e3
            stats.append((end.max(), np.median(start), start.max(), first.min(), np.median(first), first.max(),
                          end.min(), np.median(end), (end.max() - end).mean(), t[:, 3].min(), t[:, 3].max()))
        s = np.median(np.array(stats), axis=0)
        print(f"{op} {a.dtype} {a.shape}, {clusters} clusters (medians of 10 launches, us from the first start):")
        print(f"  span {s[0]:.2f}; starts median {s[1]:.2f} max {s[2]:.2f}; first row done min {s[3]:.2f} "
              f"median {s[4]:.2f} max {s[5]:.2f}; exits min {s[6]:.2f} median {s[7]:.2f}; mean idle before the "
              f"last exit {s[8]:.2f}; rows a cluster {s[9]:.0f}-{s[10]:.0f}")


if __name__ == "__main__":
    main()
