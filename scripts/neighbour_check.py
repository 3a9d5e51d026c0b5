"""Does what runs beside a kernel in the timing loop move its ratio to the copy? kernelkit.layer_norm timed in turn
with a same-bytes copy alone, with torch's layer_norm too (as benchmarks/record.py times it), and with kernelkit's
rms_norm and softmax (as the A/B scripts do), each loop shuffled, on one input.

    python scripts/neighbour_check.py [--shape 1024x65536] [--dtype float32] [--reps 200]

Session 20: on the 64K rows the recorder read 94.4-94.9% where the A/B loops read 92.3-92.8% for the same kernel.
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from rowbench import device_line, report, row_dims, shape_args


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float32")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    mine = ("kernelkit.layer_norm", lambda: kernelkit.layer_norm(x, (len_,), w, b, out=out))
    copy = ("copy", lambda: out.copy_(x))
    neighbours = {
        "alone with the copy": [],
        "beside torch's layer_norm": [("torch layer_norm", lambda: F.layer_norm(x, (len_,), w, b))],
        "beside kernelkit's rms_norm and softmax": [("kernelkit.rms_norm", lambda: kernelkit.rms_norm(x, (len_,), w, out=out)),
                                                    ("kernelkit.softmax", lambda: kernelkit.softmax(x, -1, out=out))],
    }
    for title, extra in neighbours.items():
        fns = [mine, *extra, copy]
        times = time_interleaved([f for _, f in fns], reps=a.reps, warmup=5, flush_l2=True, max_seconds=20, shuffle=True)
        report(f"{a.dtype} {a.shape}, {title}:", [n for n, _ in fns], times, nbytes, width=26)


if __name__ == "__main__":
    main()
