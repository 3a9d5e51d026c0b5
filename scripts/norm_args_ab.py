"""layer_norm with and without weight and bias against rms_norm and a same-bytes copy, interleaved over
rotating inputs: how much of layer_norm's time at a shape is the staged bias (or weight) and how much its
statistics (session 18, 4096 x 4096 fp16, whose staged CTAs copy 16 KB of weight and bias each).

    python scripts/norm_args_ab.py [--shape 4096x4096] [--dtype float16] [--rotate 4] [--reps 400]
"""
from __future__ import annotations

import argparse

import torch

import kernelkit
from kernelkit.bench import time_interleaved
from rowbench import Rotation, device_line, report, row_dims, shape_args


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="4096x4096", dtype="float16")
    ap.add_argument("--rotate", type=int, default=4)
    ap.add_argument("--reps", type=int, default=400)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    inputs = Rotation(rows, len_, dtype, a.rotate)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    cases = {
        "layer_norm(w, b)": lambda x, o: kernelkit.layer_norm(x, (len_,), w, b, out=o),
        "layer_norm(w)": lambda x, o: kernelkit.layer_norm(x, (len_,), w, None, out=o),
        "layer_norm(None, b)": lambda x, o: kernelkit.layer_norm(x, (len_,), None, b, out=o),
        "layer_norm()": lambda x, o: kernelkit.layer_norm(x, (len_,), out=o),
        "rms_norm(w)": lambda x, o: kernelkit.rms_norm(x, (len_,), w, out=o),
        "rms_norm()": lambda x, o: kernelkit.rms_norm(x, (len_,), out=o),
        "copy": lambda x, o: o.copy_(x),
    }
    times = time_interleaved([inputs.each(f) for f in cases.values()], reps=a.reps, warmup=5, flush_l2=True,
                             max_seconds=30)
    report(f"{a.dtype} {a.shape}, {a.rotate} rotating inputs:", list(cases), times, inputs.nbytes, width=24)


if __name__ == "__main__":
    main()
