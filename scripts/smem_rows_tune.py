"""Rows kept whole in shared memory (norm_smem, softmax_smem): every configuration that holds the row
against kernelkit's current default, torch and a same-bytes copy, all timed in turn (interleaved rounds,
4 input copies rotated when the working set is near L2), each checked against float64 first.
--rows adds the norms' register-tile cluster configurations (norm_rows, GROUPxVECSxCLUSTER) that hold
the row, each launched persistent (resident CTAs looping over rows) and one cluster per row.

    python scripts/smem_rows_tune.py [--shapes 1024x65536] [--dtypes float16,float32]
                                     [--ops softmax,layer_norm,rms_norm] [--reps 200] [--rows 256x4x8,...]
"""
from __future__ import annotations

import argparse
import importlib

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel
from rowbench import case_args, cases, device_line, prefer_shared_carveout
norm = importlib.import_module("kernelkit.ops.norm")  # (kernelkit.ops.softmax is the function)
softmax = importlib.import_module("kernelkit.ops.softmax")
from kernelkit.ops._rowwise import (allow_shared, grid_for_rows, launch_cluster, launch_smem_rows, per_vec,
                                    resident_blocks, row_name, smem_rows_capacity, smem_rows_name,
                                    smem_rows_shared)

MODULES = {"softmax": softmax, "layer_norm": norm, "rms_norm": norm}
KERNEL = {"softmax": "softmax_smem", "layer_norm": "norm_smem", "rms_norm": "norm_smem"}
TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def main() -> None:
    ap = argparse.ArgumentParser()
    case_args(ap, shapes="1024x65536", dtypes="float16,float32", ops="softmax,layer_norm,rms_norm", reps=200)
    ap.add_argument("--rows", default="", help="norm_rows cluster configurations GxVxC[,...]")
    ap.add_argument("--carveout", type=int, default=-1,
                    help="shared memory carveout (percent) asked for every shared-memory-resident kernel timed")
    a = ap.parse_args()
    print(device_line())
    for case in cases(a.shapes, a.dtypes):
        shape, rows, len_, dtype, dt = case.shape, case.rows, case.len_, case.dtype, str(case.dtype)[6:]
        nbytes, copies, xs, w, b, out = case.nbytes, case.copies, case.xs, case.w, case.b, case.out
        for op in a.ops.split(","):
            mod = MODULES[op]
            n = per_vec(dtype)
            cfgs = [c for c in mod.smem_configs(dtype)  # those that hold the row and not twice over
                    if len_ <= smem_rows_capacity(dtype, c) < 2 * len_]
            if op == "softmax":
                args = lambda x: (x.data_ptr(), out.data_ptr(), rows, len_)  # noqa: E731
                ours = lambda i: kernelkit.softmax(xs[i % copies])  # noqa: E731
                theirs = lambda i: torch.softmax(xs[i % copies], -1)  # noqa: E731
                ref = reference.softmax(xs[0])
            else:
                rms = op == "rms_norm"
                bias = None if rms else b
                args = lambda x, bias=bias, rms=rms: (x.data_ptr(), out.data_ptr(), w.data_ptr(),  # noqa: E731
                                                      0 if bias is None else bias.data_ptr(), rows, len_,
                                                      np.float32(1e-5), np.int32(rms))
                if rms:
                    ours = lambda i: kernelkit.rms_norm(xs[i % copies], (len_,), w, 1e-5)  # noqa: E731
                    theirs = lambda i: F.rms_norm(xs[i % copies], (len_,), w, 1e-5)  # noqa: E731
                    ref = reference.rms_norm(xs[0], (len_,), w, 1e-5)
                else:
                    ours = lambda i: kernelkit.layer_norm(xs[i % copies], (len_,), w, b)  # noqa: E731
                    theirs = lambda i: F.layer_norm(xs[i % copies], (len_,), w, b)  # noqa: E731
                    ref = reference.layer_norm(xs[0], (len_,), w, b)
            fns = {"kernelkit": ours}

            def add_checked(label, run, ref=ref, fns=fns):  # timed only if it matches float64
                out.fill_(float("nan"))
                run(0)
                err = (out.double() - ref).abs().max().item()
                if err < TOL[dtype]:
                    fns[label] = run
                else:
                    print(f"  {op} {dt} {shape} {label}: WRONG (max error {err})")
            for c in cfgs:
                k = mod.NAMES.load(smem_rows_name(KERNEL[op], dtype, c), dtype, 0)
                run = lambda i, k=k, c=c: launch_smem_rows(k, c, rows, *args(xs[i % copies]), dev=0)  # noqa: E731
                allow_shared(k, smem_rows_shared(c), 0)  # before the occupancy query (launch_smem_rows' order)
                if a.carveout >= 0:
                    prefer_shared_carveout(k, a.carveout, 0)
                resident = resident_blocks(k, c[0], c[4], 0, smem_rows_shared(c))  # CTAs launched (persistent)
                add_checked(f"{c} {resident} CTAs", run)
            for spec in (filter(None, a.rows.split(",")) if op != "softmax" else ()):
                c = tuple(map(int, spec.split("x")))
                if c[0] * c[1] * c[2] * n < len_:
                    continue
                k = mod.NAMES.load(row_name("norm_rows", dtype, c, True, False), dtype, 0)
                shmem = 2 * c[0] * c[1] * n * xs[0].element_size()
                allow_shared(k, shmem, 0)
                blocks, block, cluster = grid_for_rows(rows, c)
                for persistent in (True, False):
                    g = min(blocks, resident_blocks(k, block, cluster, 0, shmem)) if persistent else blocks
                    run = lambda i, k=k, g=g, c=c, shmem=shmem: launch_cluster(  # noqa: E731
                        k, g, c[0], c[2], *args(xs[i % copies]), dev=0, shmem=shmem)
                    add_checked(f"rows {spec} {'persistent' if persistent else 'per row'}", run)
            # ... and one cluster per row reading weight and bias from global memory (not staged),
            # at the output or before the row (early), as softmax's clusters run
            for spec in (filter(None, a.rows.split(",")) if op != "softmax" else ()):
                c = tuple(map(int, spec.split("x")))
                if c[0] * c[1] * c[2] * n < len_:
                    continue
                blocks, block, cluster = grid_for_rows(rows, c)
                for early in (False, True):
                    name = row_name("norm_rows", dtype, c, True, False)[:-1] + f", {'true' if early else 'false'}, false>"
                    k = get_kernel("norm.cu", name, device_index=0)
                    run = lambda i, k=k, c=c, blocks=blocks: launch_cluster(  # noqa: E731
                        k, blocks, c[0], c[2], *args(xs[i % copies]), dev=0)
                    add_checked(f"rows {spec} unstaged{' early' if early else ''}", run)
            fns["torch"] = theirs
            fns["copy"] = lambda i: out.copy_(xs[i % copies])
            times = time_interleaved(list(fns.values()), reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
            copy_t = times[-1].median_us
            print(f"{op} {dt} {shape} (default {mod._smem_for(dtype, len_, op == 'rms_norm') if mod is norm else mod._smem_for(dtype, len_)}):")
            for (label, _), t in sorted(zip(fns.items(), times), key=lambda p: p[1].median_us):
                print(f"  {label:24s} {t.median_us:8.2f} us  {nbytes / t.seconds / 1e9:7.0f} GB/s  "
                      f"{copy_t / t.median_us:6.1%} of copy")


if __name__ == "__main__":
    main()
