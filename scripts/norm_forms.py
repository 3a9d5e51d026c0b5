"""The norms' one-CTA-a-row kernel (norm_rows) in each of its launch forms and tiles, built from one or
more csrc trees, timed in turn with kernelkit's default, torch and a same-bytes copy (interleaved rounds,
4 input copies rotated), each form checked against float64 first. Forms:
  staged   persistent CTAs, weight and bias staged in shared memory once (norm.STAGED_ROWS)
  late     a CTA per row, weight and bias read from global memory (L1) at the output
  early    a CTA per row, weight and bias requested before the row
--parts adds, for each staged layer_norm kernel, the same launch without the bias, without weight and
bias, and with rms_norm's statistics (timed, not checked).

    python scripts/norm_forms.py [--trees src/kernelkit/csrc,out/other] [--shapes 4096x4096,16384x4096]
                                 [--dtypes float16] [--configs 128x4,256x2] [--forms staged,late,early]
                                 [--ops layer_norm,rms_norm] [--parts] [--reps 300]
"""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from kernelkit.ops._common import CXX_TYPE
from kernelkit.ops._rowwise import launch_persistent, per_vec
from kernelkit.runtime import get_kernel
from kernelkit.runtime.launch import launch
from rowbench import case_args, cases, device_line, report

norm = importlib.import_module("kernelkit.ops.norm")
TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}
FLAGS = {"staged": "false, true", "late": "false, false", "early": "true, false"}  # kEarlyWB, kStage


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="src/kernelkit/csrc")
    case_args(ap, shapes="4096x4096,16384x4096", dtypes="float16", ops="layer_norm", reps=300)
    ap.add_argument("--configs", default="128x4", help="GROUPxVECS[,...] (one CTA a row)")
    ap.add_argument("--forms", default="staged,late,early")
    ap.add_argument("--parts", action="store_true")
    a = ap.parse_args()
    trees = [Path(t).resolve() for t in a.trees.split(",")]
    configs = [tuple(map(int, c.split("x"))) for c in a.configs.split(",")]
    print(device_line(f"trees {a.trees}"))
    for case in cases(a.shapes, a.dtypes):
        for op in a.ops.split(","):
            time_op(op, a, trees, configs, case)


def time_op(op: str, a, trees, configs, case) -> None:
    rms = op == "rms_norm"
    x, w, b, out, rows, len_ = case.x, case.w, case.b, case.out, case.rows, case.len_
    bias = None if rms else b
    ref = reference.rms_norm(x(0), (len_,), w) if rms else reference.layer_norm(x(0), (len_,), w, b)
    ours = (lambda i: kernelkit.rms_norm(x(i), (len_,), w)) if rms else (lambda i: kernelkit.layer_norm(x(i), (len_,), w, b))
    fns = {"kernelkit": ours}

    def launcher(k, form, group, shmem, wp, bp, rms_flag):
        args = lambda i: (x(i).data_ptr(), out.data_ptr(), 0 if wp is None else wp.data_ptr(),  # noqa: E731
                          0 if bp is None else bp.data_ptr(), rows, len_, np.float32(1e-5), np.int32(rms_flag))
        if form == "staged":
            return lambda i: launch_persistent(k, rows, group, 1, shmem, *args(i), dev=0)
        return lambda i: launch(k, rows, group, *args(i), device_index=0)

    for tree in trees:
        for group, vecs in configs:
            if group * vecs * per_vec(case.dtype) < len_:
                continue  # does not hold the row
            shmem = norm._staged_shared((group, vecs, 1))
            for form in a.forms.split(","):
                name = f"kk::norm_rows<{CXX_TYPE[case.dtype]}, {group}, {vecs}, 1, true, false, {FLAGS[form]}>"
                k = get_kernel(str(tree / "norm.cu"), name, device_index=0)
                run = launcher(k, form, group, shmem, w, bias, rms)
                out.fill_(float("nan"))
                run(0)
                # relative to 1 + |ref|: rms_norm outputs reach ~30, where a bf16 half-ulp is 0.06-0.12
                err = ((out.double() - ref).abs() / (1 + ref.abs())).max().item()
                assert err < TOL[case.dtype], (tree, form, err)
                label = f"{tree.name} {form}" + (f" {group}x{vecs}" if len(configs) > 1 else "")
                fns[label] = run
                if a.parts and form == "staged" and not rms:
                    for part, wp, bp, flag in (("no bias", w, None, 0), ("neither", None, None, 0),
                                               ("rms stats", w, b, 1)):
                        fns[f"{label} {part}"] = launcher(k, form, group, shmem, wp, bp, flag)
    if rms:
        fns["torch"] = lambda i: F.rms_norm(x(i), (len_,), w, 1e-5)
    else:
        fns["rms_norm"] = lambda i: kernelkit.rms_norm(x(i), (len_,), w, 1e-5)
        fns["torch"] = lambda i: F.layer_norm(x(i), (len_,), w, b)
    fns["copy"] = lambda i: out.copy_(x(i))
    times = time_interleaved(list(fns.values()), reps=a.reps, warmup=10, flush_l2=True, max_seconds=30)
    report(f"{op} {str(case.dtype)[6:]} {case.shape}", fns, times, case.nbytes)


if __name__ == "__main__":
    main()
