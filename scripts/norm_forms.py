"""layer_norm's one-CTA-a-row kernel (norm_rows) in each of its launch forms, built from one or more csrc
trees, timed in turn with kernelkit's default, rms_norm, torch and a same-bytes copy (interleaved rounds,
4 input copies rotated), each layer_norm form checked against float64 first. Forms:
  staged   persistent CTAs, weight and bias staged in shared memory once (norm.STAGED_ROWS)
  late     a CTA per row, weight and bias read from global memory (L1) at the output
  early    a CTA per row, weight and bias requested before the row

    python scripts/norm_forms.py [--trees src/kernelkit/csrc,out/other] [--shapes 4096x4096,16384x4096]
                                 [--dtypes float16] [--config 128x4] [--forms staged,late,early]
                                 [--ops layer_norm,rms_norm] [--reps 300]
"""
from __future__ import annotations

import argparse
import datetime
import importlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from kernelkit.ops._common import CXX_TYPE
from kernelkit.ops._rowwise import launch_persistent
from kernelkit.runtime import get_kernel
from kernelkit.runtime.launch import launch

norm = importlib.import_module("kernelkit.ops.norm")
TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}
FLAGS = {"staged": "false, true", "late": "false, false", "early": "true, false"}  # kEarlyWB, kStage


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="src/kernelkit/csrc")
    ap.add_argument("--shapes", default="4096x4096,16384x4096")
    ap.add_argument("--dtypes", default="float16")
    ap.add_argument("--config", default="128x4")
    ap.add_argument("--forms", default="staged,late,early")
    ap.add_argument("--ops", default="layer_norm")
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    group, vecs = map(int, a.config.split("x"))
    trees = [Path(t).resolve() for t in a.trees.split(",")]
    print(f"device {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  trees {a.trees}")
    for shape in a.shapes.split(","):
        rows, len_ = map(int, shape.split("x"))
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            nbytes = 2 * rows * len_ * torch.finfo(dtype).bits // 8
            copies = 4 if nbytes <= 4 * 50 * 2**20 else 1
            xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(copies)]
            w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
            out = torch.empty_like(xs[0])
            for op in a.ops.split(","):
                time_op(op, a, trees, rows, len_, dtype, xs, w, b, out, copies, nbytes, group, vecs)


def time_op(op, a, trees, rows, len_, dtype, xs, w, b, out, copies, nbytes, group, vecs) -> None:
    rms = op == "rms_norm"
    bias = None if rms else b
    ref = reference.rms_norm(xs[0], (len_,), w) if rms else reference.layer_norm(xs[0], (len_,), w, b)
    shmem = norm._staged_shared((group, vecs, 1))
    if rms:
        fns = {"kernelkit": lambda i: kernelkit.rms_norm(xs[i % copies], (len_,), w)}
    else:
        fns = {"kernelkit": lambda i: kernelkit.layer_norm(xs[i % copies], (len_,), w, b)}
    for tree in trees:
        for form in a.forms.split(","):
            name = f"kk::norm_rows<{CXX_TYPE[dtype]}, {group}, {vecs}, 1, true, false, {FLAGS[form]}>"
            k = get_kernel(str(tree / "norm.cu"), name, device_index=0)
            args = lambda i: (xs[i % copies].data_ptr(), out.data_ptr(), w.data_ptr(),  # noqa: E731
                              0 if bias is None else bias.data_ptr(), rows, len_, np.float32(1e-5), np.int32(rms))
            if form == "staged":
                run = lambda i, k=k: launch_persistent(k, rows, group, 1, shmem, *args(i), dev=0)  # noqa: E731
            else:
                run = lambda i, k=k: launch(k, rows, group, *args(i), device_index=0)  # noqa: E731
            out.fill_(float("nan"))
            run(0)
            # relative to 1 + |ref|: rms_norm outputs reach ~30, where a bf16 half-ulp is 0.06-0.12
            err = ((out.double() - ref).abs() / (1 + ref.abs())).max().item()
            assert err < TOL[dtype], (tree, form, err)
            fns[f"{tree.name} {form}"] = run
    if rms:
        fns["torch"] = lambda i: F.rms_norm(xs[i % copies], (len_,), w, 1e-5)
    else:
        fns["rms_norm"] = lambda i: kernelkit.rms_norm(xs[i % copies], (len_,), w, 1e-5)
        fns["torch"] = lambda i: F.layer_norm(xs[i % copies], (len_,), w, b)
    fns["copy"] = lambda i: out.copy_(xs[i % copies])
    times = time_interleaved(list(fns.values()), reps=a.reps, warmup=10, flush_l2=True, max_seconds=30)
    copy_t = times[-1].median_us
    print(f"{op} {str(dtype)[6:]} {rows}x{len_} ({group} x {vecs})")
    for label, t in zip(fns, times):
        print(f"  {label:24s} {t.median_us:8.2f} us  {nbytes / t.seconds / 1e9:7.0f} GB/s  "
              f"{copy_t / t.median_us:6.1%} of copy")


if __name__ == "__main__":
    main()
