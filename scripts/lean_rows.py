"""norm_lean (one cluster a row, the op fixed at compile time, values converted once, weight and bias by
bulk copies) against kernelkit's default for the shape, torch, kernelkit.softmax and a same-bytes copy,
interleaved, each checked against float64 first.

    python scripts/lean_rows.py [--shapes 1024x65536,1984x65536] [--dtypes float16,float32]
                                [--cfg float16=256x4x8,float32=512x8x4] [--reps 200]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from kernelkit.ops._common import CXX_TYPE
from kernelkit.ops._rowwise import allow_shared, launch_cluster
from kernelkit.runtime import get_kernel
from rowbench import case_args, cases, device_line, report

TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def main() -> None:
    ap = argparse.ArgumentParser()
    case_args(ap, shapes="1024x65536,1984x65536", dtypes="float16,float32", ops="layer_norm,rms_norm", reps=200)
    ap.add_argument("--cfg", default="float16=256x4x8,bfloat16=256x4x8,float32=512x8x4")
    a = ap.parse_args()
    cfgs = {d: tuple(map(int, c.split("x"))) for d, c in (e.split("=") for e in a.cfg.split(","))}
    print(device_line())
    for case in cases(a.shapes, a.dtypes):
        rows, len_, dtype, xs, w, b, out = case.rows, case.len_, case.dtype, case.xs, case.w, case.b, case.out
        copies = case.copies
        g, v, c = cfgs[str(dtype)[6:]]
        shmem = 2 * g * v * 16
        for op in a.ops.split(","):
            rms = op == "rms_norm"
            name = f"kk::norm_lean<{CXX_TYPE[dtype]}, {g}, {v}, {c}, {'true' if rms else 'false'}>"
            k = get_kernel("norm.cu", name, device_index=0)
            allow_shared(k, shmem, 0)
            bias = None if rms else b
            if rms:
                ours = lambda i: kernelkit.rms_norm(xs[i % copies], (len_,), w, 1e-5, out=out)  # noqa: E731
                theirs = lambda i: F.rms_norm(xs[i % copies], (len_,), w, 1e-5)  # noqa: E731
                ref = reference.rms_norm(xs[0], (len_,), w, 1e-5)
            else:
                ours = lambda i: kernelkit.layer_norm(xs[i % copies], (len_,), w, b, out=out)  # noqa: E731
                theirs = lambda i: F.layer_norm(xs[i % copies], (len_,), w, b)  # noqa: E731
                ref = reference.layer_norm(xs[0], (len_,), w, b)
            lean = lambda i, k=k, bias=bias: launch_cluster(  # noqa: E731
                k, rows * c, g, c, xs[i % copies].data_ptr(), out.data_ptr(), w.data_ptr(),
                0 if bias is None else bias.data_ptr(), rows, len_, np.float32(1e-5), dev=0, shmem=shmem)
            fns = {}
            for label, fn in (("kernelkit", ours), (f"lean {g}x{v}x{c}", lean)):
                out.fill_(float("nan"))
                fn(0)
                err = (out.double() - ref).abs().max().item()
                if err < TOL[dtype]:
                    fns[label] = fn
                else:
                    print(f"  {op} {case.shape} {label}: WRONG (max error {err})")
            fns["softmax"] = lambda i: kernelkit.softmax(xs[i % copies], -1, out=out)
            fns["torch"] = theirs
            fns["copy"] = lambda i: out.copy_(xs[i % copies])
            times = time_interleaved(list(fns.values()), reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
            report(f"{op} {str(dtype)[6:]} {case.shape}:", fns, times, case.nbytes)


if __name__ == "__main__":
    main()
