"""layer_norm's staged one-CTA rows (norm_rows with weight and bias staged in shared memory by persistent
CTAs, norm.STAGED_ROWS) at other tile shapes than the table's, against kernelkit's default, rms_norm,
torch and a same-bytes copy, all timed in turn (4 input copies rotated), each checked against float64.

    python scripts/staged_rows_tune.py [--shapes 4096x4096,2048x4096] [--dtypes float16,bfloat16]
                                       [--configs 128x4,256x2,512x1] [--reps 300] [--parts]
"""
from __future__ import annotations

import argparse
import datetime
import importlib

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from kernelkit.ops._rowwise import launch_persistent, per_vec
from kernelkit.runtime import get_kernel

norm = importlib.import_module("kernelkit.ops.norm")
TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x4096,2048x4096")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--configs", default="128x4,256x2,512x1", help="GROUPxVECS[,...] (one CTA a row)")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--parts", action="store_true", help="also time each staged kernel without the bias, without "
                    "weight and bias, and with rms_norm's statistics (unchecked)")
    a = ap.parse_args()
    print(f"device {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    for shape in a.shapes.split(","):
        rows, len_ = map(int, shape.split("x"))
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            nbytes = 2 * rows * len_ * torch.finfo(dtype).bits // 8
            copies = 4 if nbytes <= 4 * 50 * 2**20 else 1
            xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(copies)]
            w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
            out = torch.empty_like(xs[0])
            ref = reference.layer_norm(xs[0], (len_,), w, b)
            cfgs = [(*map(int, s.split("x")), 1) for s in a.configs.split(",")]
            names = tuple(norm._staged_name(dtype, c) for c in cfgs)
            fns = {"kernelkit": lambda i: kernelkit.layer_norm(xs[i % copies], (len_,), w, b)}
            for c in cfgs:
                if c[0] * c[1] * per_vec(dtype) < len_:
                    continue  # does not hold the row
                k = get_kernel("norm.cu", norm._staged_name(dtype, c), device_index=0, names=names)

                def run(i, k=k, c=c):
                    launch_persistent(k, rows, c[0], 1, norm._staged_shared(c), xs[i % copies].data_ptr(),
                                      out.data_ptr(), w.data_ptr(), b.data_ptr(), rows, len_, np.float32(1e-5),
                                      np.int32(0), dev=0)
                out.fill_(float("nan"))
                run(0)
                err = (out.double() - ref).abs().max().item()
                assert err < TOL[dtype], (c, err)
                fns[f"staged {c[0]}x{c[1]}"] = run
                if a.parts:  # the same kernel without the bias, without both, and with rms_norm's statistics
                    for label, wp, bp, rms in (("no bias", w, None, 0), ("neither", None, None, 0), ("rms stats", w, b, 1)):
                        def part(i, k=k, c=c, wp=wp, bp=bp, rms=rms):
                            launch_persistent(k, rows, c[0], 1, norm._staged_shared(c), xs[i % copies].data_ptr(),
                                              out.data_ptr(), 0 if wp is None else wp.data_ptr(),
                                              0 if bp is None else bp.data_ptr(), rows, len_, np.float32(1e-5),
                                              np.int32(rms), dev=0)
                        fns[f"{c[0]}x{c[1]} {label}"] = part
            fns["rms_norm"] = lambda i: kernelkit.rms_norm(xs[i % copies], (len_,), w, 1e-5)
            fns["torch"] = lambda i: F.layer_norm(xs[i % copies], (len_,), w, b)
            fns["copy"] = lambda i: out.copy_(xs[i % copies])
            times = time_interleaved(list(fns.values()), reps=a.reps, warmup=10, flush_l2=True, max_seconds=30)
            copy_t = times[-1].median_us
            print(f"layer_norm {dt} {shape}")
            for label, t in zip(fns, times):
                print(f"  {label:16s} {t.median_us:8.2f} us  {nbytes / t.seconds / 1e9:7.0f} GB/s  "
                      f"{copy_t / t.median_us:6.1%} of copy")


if __name__ == "__main__":
    main()
