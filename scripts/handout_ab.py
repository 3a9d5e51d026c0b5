"""kernelkit.layer_norm / rms_norm with the persistent row kernels' rows handed out at run time
(norm.HANDOUT, the default) against rows dealt in a fixed stride, a same-bytes copy and torch,
interleaved, each checked against float64 first.

    python scripts/handout_ab.py [--shapes 4096x4096,1024x65536] [--dtypes float16] [--ops layer_norm,rms_norm]
"""
from __future__ import annotations

import argparse
import importlib

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from rowbench import case_args, cases, device_line, report

norm = importlib.import_module("kernelkit.ops.norm")
TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def main() -> None:
    ap = argparse.ArgumentParser()
    case_args(ap, shapes="4096x4096,2048x4096,8192x4096,1024x65536,2048x65536", dtypes="float16",
              ops="layer_norm,rms_norm", reps=300)
    a = ap.parse_args()
    print(device_line())
    for case in cases(a.shapes, a.dtypes):
        xs, w, b, out, copies, len_ = case.xs, case.w, case.b, case.out, case.copies, case.len_
        for op in a.ops.split(","):
            rms = op == "rms_norm"
            call = ((lambda x: kernelkit.rms_norm(x, (len_,), w, 1e-5, out=out)) if rms
                    else (lambda x: kernelkit.layer_norm(x, (len_,), w, b, out=out)))
            ref = reference.rms_norm(xs[0], (len_,), w, 1e-5) if rms else reference.layer_norm(xs[0], (len_,), w, b)

            def with_handout(on, call=call):
                def run(i):
                    norm.HANDOUT = on
                    call(xs[i % copies])
                    norm.HANDOUT = True
                return run
            fns = {"handout": with_handout(True), "fixed stride": with_handout(False)}
            for label, fn in fns.items():
                out.fill_(float("nan"))
                fn(0)
                err = (out.double() - ref).abs().max().item()
                assert err < TOL[case.dtype], f"{op} {case.shape} {label}: max error {err}"
            fns["torch"] = ((lambda i: F.rms_norm(xs[i % copies], (len_,), w, 1e-5)) if rms
                            else (lambda i: F.layer_norm(xs[i % copies], (len_,), w, b)))
            fns["copy"] = lambda i: out.copy_(xs[i % copies])
            times = time_interleaved(list(fns.values()), reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
            report(f"{op} {str(case.dtype)[6:]} {case.shape}:", fns, times, case.nbytes)


if __name__ == "__main__":
    main()
