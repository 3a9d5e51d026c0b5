"""The norms' persistent cluster rows at 1024 x 65536 (or --shape) with grids of several sizes, against
kernelkit's own choice, kernelkit.softmax on the same input and a same-bytes copy, interleaved: does the
number of resident clusters (and so rows a cluster) set the rate?

    python scripts/persistent_grid.py [--shape 1024x65536] [--dtype float16] [--cfg 256x4x8]
        [--clusters 0,64,62,60,56,52,48] [--dynamic] [--staged] [--no-weight] [--no-bias]
        [--shmem 0,16384] [--reps 200]

--cfg GROUPxVECSxCLUSTER is a norm.NormTile (staged: clusters always stage weight and bias); --dynamic
hands rows out at run time (handout=True: norm_rows_dyn, with the host's counter buffer for the stream);
--staged with a cluster of 1 is the one-CTA staged form. --clusters: 0 every resident cluster, -1 one
cluster a row. A launch whose result is wrong is reported and not timed. Used to choose
norm_configs.CLUSTER_ROWS_RMS and CLUSTER_ROWS_LN (docs/design/row-reductions.md); the chosen
configurations are then reachable through config=.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops.reduction import norm
from kernelkit.ops.reduction._rows import handout_counters
from kernelkit.runtime import allow_shared, get_kernel, launch, resident_blocks
from rowbench import device_line, report, row_shape, shape_args


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float16", cfg="256x4x8")
    ap.add_argument("--clusters", default="0,64,62,60,56,52,48")  # 0: every resident cluster, -1: one a row
    ap.add_argument("--no-weight", action="store_true", help="weight and bias None (no staged reads)")
    ap.add_argument("--no-bias", action="store_true", help="layer_norm's bias None (the weight kept)")
    ap.add_argument("--shmem", default="", help="dynamic shared memory sizes (bytes) to launch with besides the "
                    "staged slices' (the kernel reads only what its weight and bias need)")
    ap.add_argument("--staged", action="store_true", help="GxVx1 staged (one persistent CTA a row)")
    ap.add_argument("--dynamic", action="store_true", help="rows handed out at run time (norm_rows_dyn)")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype, (g, v, c) = row_shape(a)
    cfg = norm.NormTile(g, v, c, staged=c > 1 or a.staged, handout=a.dynamic)
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    k = get_kernel(norm.SRC, cfg.name(dtype, True), device_index=0)
    shmem = 2 * g * v * 16  # the weight and bias slices
    allow_shared(k, shmem, 0)
    resident = resident_blocks(k, cfg.block, c, 0, shmem) // c
    print(f"{cfg}: {resident} resident clusters of {c}")
    for op in ("rms_norm", "layer_norm"):
        rms = op == "rms_norm"
        wt, bt = (None, None) if a.no_weight else (w, None if rms or a.no_bias else b)
        wp, bp = (0 if t is None else t.data_ptr() for t in (wt, bt))
        ref = (F.rms_norm(x.float(), (len_,), None if wt is None else wt.float(), 1e-5) if rms else
               F.layer_norm(x.float(), (len_,), *(None if t is None else t.float() for t in (wt, bt))))
        fns, labels = [], []
        sizes = [shmem] + [int(s) for s in filter(None, a.shmem.split(","))]
        need = cfg.shared_bytes(wt is not None, bt is not None)  # the staged slices the kernel reads
        for n, sm in [(n, sm) for sm in sizes for n in map(int, a.clusters.split(",")) if sm >= need]:
            allow_shared(k, max(sm, shmem), 0)
            grid = rows if n == -1 else min(resident if n == 0 else n, rows)
            if n == 0 and sm != shmem:  # the resident grid at this shared memory size
                grid = min(resident_blocks(k, cfg.block, c, 0, sm) // c, rows)
            args = (x.data_ptr(), out.data_ptr(), wp, bp, rows, len_, np.float32(1e-5), np.int32(rms),
                    *((handout_counters(0),) if a.dynamic else ()))
            run = lambda grid=grid, sm=sm, args=args: launch(k, grid * c, cfg.block, *args, shmem=sm,  # noqa: E731
                                                             cluster=c, device_index=0)
            out.fill_(float("nan"))
            run()
            err = (out.float() - ref).abs().max().item()
            if err > 2e-2:
                print(f"  {grid} clusters: WRONG ({err})")
                continue
            fns.append(run)
            labels.append((f"{grid} clusters ({-(-rows // grid)} rows a cluster)" if n != -1 else "a cluster a row")
                          + (f" shmem {sm}" if sm != shmem else ""))
        fns.append((lambda: kernelkit.rms_norm(x, (len_,), wt, 1e-5, out=out)) if rms else
                   (lambda: kernelkit.layer_norm(x, (len_,), wt, bt, out=out)))
        labels.append(f"kernelkit.{op}")
        fns.append(lambda: kernelkit.softmax(x, -1, out=out))
        labels.append("kernelkit.softmax")
        fns.append(lambda: out.copy_(x))
        labels.append("copy")
        times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
        report(f"{op} {a.dtype} {a.shape}:", labels, times, nbytes, width=32)


if __name__ == "__main__":
    main()
